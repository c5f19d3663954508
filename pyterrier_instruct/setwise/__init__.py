"""Setwise reranking: :class:`Setwise` (Zhuang et al., SIGIR 2024; Flan-T5 and chat models, heapsort/bubblesort over
comparisons of ``num_child + 1`` passages) and :class:`RankR1` (setwise with reasoning, up to 20 documents per
comparison); the sorts they share are in ``sort``."""
from .rank_r1 import RankR1
from .setwise import Setwise

__all__ = ["Setwise", "RankR1"]
