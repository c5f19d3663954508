"""Listwise reranking: the sliding-window permutation reranker over any backend (:class:`ListwiseReranker`) and the
paper families :class:`RankZephyr`, :class:`RankVicuna`, :class:`RankGPT`."""
from .reranker import ListwiseReranker, RankGPT, RankVicuna, RankZephyr
from .window import parse_permutation, windows

__all__ = ["ListwiseReranker", "RankZephyr", "RankVicuna", "RankGPT", "parse_permutation", "windows"]
