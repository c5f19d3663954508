"""Pointwise instruction-following rerankers: monoT5 (seq2seq), causal-LM true/false (FollowIR-7B, Mistral,
Llama, GritLM, any model + template), cross-encoders (MonoBERT, TART, any sequence classifier). The public base classes every
pointwise family subclasses, with the shared machinery, are in ``base`` (see docs/extending.md)."""
from .base import PointwiseReranker, TrueFalseReranker
from .causal import CausalLMReranker, FollowIR7B
from .cross_encoder import TART, CrossEncoderReranker, MonoBERT
from .seq2seq import MonoT5

__all__ = ["PointwiseReranker", "TrueFalseReranker", "MonoT5", "CausalLMReranker", "FollowIR7B", "CrossEncoderReranker", "MonoBERT", "TART"]
