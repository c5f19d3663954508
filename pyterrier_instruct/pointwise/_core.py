"""Deprecated alias of :mod:`pyterrier_instruct.pointwise.base` (moved in 0.2; removed in the next release)."""
import warnings

from .base import SCORES, TRUNCATIONS, PointwiseReranker, TrueFalseReranker, document_texts, two_way  # noqa: F401

warnings.warn("pyterrier_instruct.pointwise._core is deprecated: import from pyterrier_instruct.pointwise.base "
              "(or pti.PointwiseReranker / pti.TrueFalseReranker)", DeprecationWarning, stacklevel=2)
