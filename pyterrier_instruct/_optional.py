"""Optional heavy dependencies: availability checks and one ImportError that names the extra to install."""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


def is_available(module: str) -> bool:
    """True if ``module`` can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str) -> ModuleType:
    """Imports ``module`` or raises an ImportError naming ``pip install pyterrier-instruct[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{module} is required for this feature but could not be imported ({e}); "
                          f"install it with: pip install 'pyterrier-instruct[{extra}]'") from e
