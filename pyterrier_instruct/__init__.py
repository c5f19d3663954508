"""pyterrier-instruct: instruction-following retrieval for PyTerrier.

``import pyterrier_instruct as pti`` registers the measures (``pMRR``, ``WISE``, ``SICR``, ``Robustness``, …) with ir_measures,
the datasets with ir_datasets (``instruct/followir/robust04``, …), and
exposes the public names below; transformers and loaders are imported on first use, and no model
library (torch, transformers) is imported until a model is actually run.
"""
from __future__ import annotations

import functools
import importlib
from typing import Dict

# The eager public names (listed in _EAGER below; ``__all__`` adds the lazy ones): noqa F401, they are re-exported.
from . import _pt_compat, measures  # noqa: F401
from ._progress import LIBRARY_BARS_ENV, library_progress  # noqa: F401
from ._version import __version__  # noqa: F401
from .datasets.irds import register as _register_datasets
from .datasets.opening import load as load_dataset  # noqa: F401
from .instructions import (DEFAULT_COMPOSER, VARIANTS, QuerySlot, compose, paired_qid, paired_qrels, paired_topics,  # noqa: F401
                           split_qid)
from .measures import (OG, SICR, WISE, Changed, GoldRank, IdealWISE, IFIR_nDCG, InfoSearch_pMRR, PairedAccuracy,  # noqa: F401
                       Reversed, Robustness, changed_docs, pMRR, pmrr)

_pt_compat.install()  # pt.Experiment with paired and standard measures together (when pyterrier is imported)
_register_datasets()  # ir_datasets ids instruct/<name>; files are located and read on first access

#: The modules whose ``__all__`` is the lazy public API (``pti.<name>``), in order of precedence. A public name is
#: declared once, in its module's ``__all__``; the index below is read from those declarations (their source, so
#: nothing is imported until a name is used).
PUBLIC_MODULES = ("rewrite", "base", "errors", "pointwise", "listwise", "setwise", "dense", "retrieval", "caching", "backends", "evaluation",
                  "prompts", "paper", "scale", "calls")
#: Subpackages served as modules (``pti.datasets``, ``pti.evaluation``).
SUBPACKAGES = ("datasets", "evaluation")
_EAGER = ["__version__", "measures", "pMRR", "OG", "Changed", "Reversed", "WISE", "IdealWISE", "SICR", "InfoSearch_pMRR",
          "GoldRank", "Robustness", "IFIR_nDCG", "PairedAccuracy", "pmrr", "changed_docs", "compose", "paired_topics", "paired_qrels",
          "paired_qid", "split_qid", "DEFAULT_COMPOSER", "VARIANTS", "QuerySlot", "load_dataset",
          "library_progress", "LIBRARY_BARS_ENV"]


def _declared(path: str):
    """The names of the ``__all__`` assigned at the top of a module's source (none without one)."""
    import ast
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:
            return list(ast.literal_eval(node.value))
    return []


@functools.lru_cache(maxsize=None)
def _index() -> Dict[str, str]:
    """``{public name: module}`` from the ``__all__`` of :data:`PUBLIC_MODULES` and, for a subpackage, of each of its
    public modules after its ``__init__`` (so a new family's module is found without editing its package), read from
    their source: nothing is imported until a name is used."""
    import os
    here = os.path.dirname(__file__)
    index: Dict[str, str] = {}
    for module in PUBLIC_MODULES:
        folder = os.path.join(here, module)
        if not os.path.isdir(folder):
            sources = [(module, folder + ".py")]
        else:
            sources = [(module, os.path.join(folder, "__init__.py"))] + [
                (f"{module}.{f[:-3]}", os.path.join(folder, f)) for f in sorted(os.listdir(folder))
                if f.endswith(".py") and not f.startswith("_")]
        for name, path in sources:
            for public in _declared(path):
                index.setdefault(public, name)
    return index


def __getattr__(name: str):
    if name == "__all__":
        return sorted(set(_EAGER) | set(SUBPACKAGES) | set(_index()))
    if name in SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    elif name in _index():
        value = getattr(importlib.import_module(f".{_index()[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'pyterrier_instruct' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return __getattr__("__all__")
