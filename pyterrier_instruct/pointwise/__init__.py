"""Pointwise instruction-following rerankers: monoT5 (seq2seq), causal-LM true/false (FollowIR-7B, Mistral, Llama,
GritLM, any model + template), cross-encoders (MonoBERT, TART, any sequence classifier), Qwen3-Reranker, mxbai-rerank-v2
and the reasoning reranker rank1 (on a generation backend). The public base classes every pointwise family subclasses,
with the shared machinery, are in ``base`` (see docs/extending.md)."""
from .base import PointwiseReranker, TrueFalseReranker
from .causal import CausalLMReranker, FollowIR7B
from .cross_encoder import TART, CrossEncoderReranker, MonoBERT
from .mxbai import MxbaiRerankV2
from .qwen3 import Qwen3Reranker
from .rank1 import Rank1
from .seq2seq import MonoT5

__all__ = ["PointwiseReranker", "TrueFalseReranker", "MonoT5", "CausalLMReranker", "FollowIR7B", "CrossEncoderReranker",
           "MonoBERT", "TART", "Qwen3Reranker", "MxbaiRerankV2", "Rank1"]
