"""Listwise reranking: the sliding-window permutation reranker over any backend (:class:`ListwiseReranker`) and the
paper families :class:`RankZephyr`, :class:`RankVicuna`, :class:`RankGPT`, :class:`FIRST` (single-token) and
:class:`ReasonRank` (reasoning)."""
from .first import FIRST
from .reasonrank import ReasonRank
from .reranker import ListwiseReranker, RankGPT, RankVicuna, RankZephyr
from .window import parse_permutation, windows

__all__ = ["ListwiseReranker", "RankZephyr", "RankVicuna", "RankGPT", "FIRST", "ReasonRank", "parse_permutation",
           "windows"]
