"""ReasonRank, reasoning listwise reranking (Liu et al. 2025, "ReasonRank: Empowering Passage Ranking with Strong
Reasoning Ability"; ``liuwenhan/reasonrank-7B``, ``-32B``), as rank_llm 0.26 runs it: the ``reasonrank_template.yaml``
prompt, a reasoning budget (``is_thinking``: at most budget + the ranking's tokens, at least the ranking's), the
permutation read after the last ``</think>`` with rank_llm's repair, over rank_llm's sliding windows."""
from __future__ import annotations

from typing import Optional

from .._config import preset
from .reranker import BackendLike, ListwiseReranker, _family_backend

__all__ = ["ReasonRank"]

CHECKPOINTS = {"7b": "liuwenhan/reasonrank-7B", "32b": "liuwenhan/reasonrank-32B"}


class ReasonRank(ListwiseReranker):
    """ReasonRank: each window's answer reasons in ``<think>…</think>``, then ranks; the ranking is read after the last
    ``</think>`` (all of the answer when the budget ran out while reasoning, as rank_llm does).

    Constructors (checkpoint, notes):

    - ``ReasonRank()``: ``liuwenhan/reasonrank-7B``; Qwen2.5-7B-Instruct, SFT + RL
    - ``ReasonRank.reasonrank_32b()``: ``liuwenhan/reasonrank-32B``; Qwen2.5-32B-Instruct, the LoRA merged (the paper's
      main row; rank_llm's demo)

    The defaults are rank_llm's demo (``rerank_reasonrank_bm25_beir.py``): context 32768, budget 3072, window 20.

    Args:
        model_name_or_path, backend, backend_options: as :class:`RankZephyr`.
        max_output_tokens: the reasoning budget in tokens (rank_llm ``reasoning_token_budget``).
        style: ``'reasonrank'``, rank_llm 0.26's template (see :class:`ListwiseReranker`).
        **kwargs: see :class:`ListwiseReranker`.

    Output: as :class:`ListwiseReranker`, plus ``reasoning`` (the last window's; docs/rerankers.md).
    """
    schematic = {"label": "ReasonRank"}
    default_model = CHECKPOINTS["7b"]
    extra_outputs = ("reasoning",)

    def __init__(self, model_name_or_path: str = CHECKPOINTS["7b"], *, backend: BackendLike = "hf",
                 backend_options: Optional[dict] = None, style: str = "reasonrank", max_output_tokens: int = 3072,
                 context_size: Optional[int] = 32768, **kwargs):
        if isinstance(max_output_tokens, bool) or not isinstance(max_output_tokens, int) or max_output_tokens < 0:
            raise ValueError(f"max_output_tokens must be a non-negative integer, got {max_output_tokens!r}")
        built = _family_backend(type(self), backend, model_name_or_path, self.default_model, backend_options)
        super().__init__(built, style=style, context_size=context_size, **kwargs)
        self.model_name_or_path, self.backend_options = model_name_or_path, backend_options
        self.max_output_tokens = max_output_tokens

    def _reasoning_budget(self) -> int:
        return self.max_output_tokens

    @preset
    def reasonrank_32b(cls, **kwargs) -> "ReasonRank":
        """``liuwenhan/reasonrank-32B`` (Qwen2.5-32B-Instruct; the paper's main model)."""
        return cls(CHECKPOINTS["32b"], **kwargs)
