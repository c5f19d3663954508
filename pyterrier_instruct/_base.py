"""Deprecated alias of :mod:`pyterrier_instruct.base` (moved in 0.2; removed in the next release)."""
import warnings

from .base import HINTS, InstructReranker, check_text, empty_result, first_stage_columns  # noqa: F401 - the old names

warnings.warn("pyterrier_instruct._base is deprecated: import from pyterrier_instruct.base (or pti.InstructReranker)",
              DeprecationWarning, stacklevel=2)
