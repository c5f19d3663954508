"""Listwise reranking: the sliding-window permutation reranker (RankZephyr, RankVicuna, RankGPT) over any backend."""
from .reranker import ListwiseReranker
from .window import parse_permutation, windows

__all__ = ["ListwiseReranker", "parse_permutation", "windows"]
