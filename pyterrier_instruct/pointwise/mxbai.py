"""mxbai-rerank-v2 (mixedbread-ai, 2025; Qwen2.5-based): the prompt, truncation and score of AnswerDotAI ``rerankers``
0.10.0 (``rerankers/models/mxbai_v2.py``, adapted there from mixedbread-ai/mxbai-rerank), with the row's instruction in
its ``instruction:`` field (``rerankers`` takes one instruction per call)."""
from __future__ import annotations

from typing import List, Optional, Sequence

from .._config import preset
from ..instructions import QuerySlot
from ..prompts import MXBAI_V2, fill
from .causal import CausalLMReranker

__all__ = ["MxbaiRerankV2"]


class MxbaiRerankV2(CausalLMReranker):
    """mxbai-rerank-v2 over (instruction, query, document).

    Token ids as AnswerDotAI ``rerankers`` 0.10.0 builds them (:data:`~pyterrier_instruct.prompts.MXBAI_V2`;
    ``"instruction: {instruction}\\n"`` only when non-empty, the query part cut to ``max_length * 3 // 4`` tokens);
    score ``logit("1") - logit("0")`` (``score='logit_diff'``, the reference's). Details: docs/rerankers.md.

    Args:
        model_name_or_path: a hub id or local folder (``AutoModelForCausalLM``).
        max_length: the reference's ``max_length`` (default 8192).
        share_prefix: run the prefix a query's documents share once per query (see :class:`CausalLMReranker`).
        score, batch_size, device, dtype, text_field, title_field, instruction, verbose: see :class:`CausalLMReranker`.

    Presets (checkpoint):

    - ``MxbaiRerankV2()``: ``mixedbread-ai/mxbai-rerank-base-v2``
    - ``MxbaiRerankV2.large()``: ``mixedbread-ai/mxbai-rerank-large-v2``
    """
    schematic = {"label": "mxbai-v2"}
    default_max_length = 8192
    query_slot = QuerySlot("mxbai_v2")

    def __init__(self, model_name_or_path: str = "mixedbread-ai/mxbai-rerank-base-v2", *, score: str = "logit_diff",
                 **kwargs):
        kwargs = {"template": MXBAI_V2["document"], "true_token": MXBAI_V2["true_token"],
                  "false_token": MXBAI_V2["false_token"], **kwargs}
        super().__init__(model_name_or_path, score=score, **kwargs)

    @preset
    def large(cls, **kwargs) -> "MxbaiRerankV2":
        """``mixedbread-ai/mxbai-rerank-large-v2``."""
        return cls("mixedbread-ai/mxbai-rerank-large-v2", **kwargs)

    def _reference_max_length(self, tokenizer) -> int:
        return self.default_max_length

    def _encode(self, queries: Sequence[str], texts: Sequence[str],
                instructions: Optional[Sequence[str]] = None) -> List[dict]:
        tok = self._tokenizer

        def ids(text, **kwargs):
            return tok(text, add_special_tokens=False, verbose=False, **kwargs)["input_ids"]
        prefix, suffix, task, sep = (ids(MXBAI_V2[k]) for k in ("prefix", "suffix", "task", "sep"))
        static = len(prefix) + len(task) + len(suffix) + len(sep)
        positions = int(self._model_config().max_position_embeddings)
        limit = min(self._max_length, positions - static)
        query_ids = ids(list(queries), max_length=limit * 3 // 4, truncation=True)
        doc_ids = ids([fill(self.template, text=t) for t in texts])  # cut below: right truncation of a single text
        out = []
        for q, d in zip(query_ids, doc_ids):
            doc_max = min(positions - len(q) - static, limit // 4)
            self.truncated += len(d) > doc_max or len(q) >= limit * 3 // 4
            body = q + (sep + d[:doc_max])[:max(0, limit - len(q))]  # prepare_for_model(..., truncation='only_second')
            out.append({"input_ids": prefix + body + sep + task + suffix})
        return out
