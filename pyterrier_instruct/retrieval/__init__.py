"""First stages and pool rerankers that need no neural model."""
from .anserini import PyseriniBM25, anserini_index
from .optional import TerrierBM25
from .pisa import BM25, bm25_index
from .pool_bm25 import PoolBM25

__all__ = ["BM25", "bm25_index", "PoolBM25", "TerrierBM25", "PyseriniBM25", "anserini_index"]
