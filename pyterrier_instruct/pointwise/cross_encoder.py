"""Cross-encoder (sequence classification) rerankers, scored as FollowIR's and sentence-transformers' ``CrossEncoder``:
the pair (composed query, document) with ``only_second`` truncation; score = softmax(logits)[1] (MonoBERT, TART) or the
single logit."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .._hub import from_pretrained
from ..instructions import TART_COMPOSER, TART_EMPTY_INSTRUCTION, QuerySlot
from .base import PointwiseReranker

CE_SCORES = ("prob", "logit")


class CrossEncoderReranker(PointwiseReranker):
    """A ``AutoModelForSequenceClassification`` reranker over (query + instruction, document) pairs.

    Args:
        model_name_or_path: hub id or local folder.
        query_slot: how the instruction joins the query (:class:`~pyterrier_instruct.instructions.QuerySlot`; default
            ``QuerySlot("{query} {instruction}")``, TART's ``QuerySlot("{query} [SEP] {instruction}")``).
        score: ``'prob'`` = softmax(logits)[1] for 2 labels, sigmoid for 1 (sentence-transformers' CrossEncoder);
            ``'logit'`` = the raw logit (label 1 minus label 0 for 2 labels).
        Other arguments: see :class:`~pyterrier_instruct.pointwise.base.PointwiseReranker`; truncation is always
        ``only_second`` (the document), as in the references.

    Families: :class:`MonoBERT`, :class:`TART`.
    """
    schematic = {"label": "CrossEncoder"}
    padding_side = "right"

    def __init__(self, model_name_or_path: str, *, score: str = "prob", **kwargs):
        super().__init__(model_name_or_path, **kwargs)
        if score not in CE_SCORES:
            raise ValueError(f"score must be one of {CE_SCORES}, got {score!r}")
        self.score = score

    def _load_model(self):
        import transformers
        tok = from_pretrained(transformers.AutoTokenizer, self.model_name_or_path)
        model = from_pretrained(transformers.AutoModelForSequenceClassification, self.model_name_or_path,
                                dtype=self._torch_dtype)
        return model, tok

    def _encode(self, queries: Sequence[str], texts: Sequence[str],
                instructions: Optional[Sequence[str]] = None) -> List[Dict[str, List[int]]]:
        tok, limit = self._tokenizer, self._max_length
        try:
            enc = tok(list(queries), list(texts), truncation="only_second", max_length=limit)
        except Exception as err:
            raise ValueError(f"{self!r}: a query+instruction alone exceeds max_length={limit} tokens ({err})") from None
        keys = [k for k in ("input_ids", "token_type_ids", "attention_mask") if k in enc]
        rows = [{k: enc[k][i] for k in keys} for i in range(len(queries))]
        self.truncated += sum(len(r["input_ids"]) >= limit for r in rows)
        return rows

    def _forward(self, batch):
        import torch
        logits = self._model(**batch).logits.float()
        if logits.shape[-1] == 1:
            return torch.sigmoid(logits[:, 0]) if self.score == "prob" else logits[:, 0]
        return torch.softmax(logits, -1)[:, 1] if self.score == "prob" else logits[:, 1] - logits[:, 0]


class MonoBERT(CrossEncoderReranker):
    """monoBERT (Nogueira & Cho, 2019): BERT-large over (query + instruction, document), softmax(logits)[1].

    Presets (checkpoint):

    - ``MonoBERT()``: ``castorini/monobert-large-msmarco``
    """
    schematic = {"label": "MonoBERT"}

    def __init__(self, model_name_or_path: str = "castorini/monobert-large-msmarco", **kwargs):
        super().__init__(model_name_or_path, **kwargs)


class TART(CrossEncoderReranker):
    """TART-full (Asai et al., 2023): the query joined to the instruction with ``" [SEP] "``, a missing or blank
    instruction replaced by ``instruction=`` (default: TART's task instruction as FollowIR ran it,
    :data:`~pyterrier_instruct.instructions.TART_EMPTY_INSTRUCTION`), max length 1024 (as FollowIR ran it).

    Presets (checkpoint):

    - ``TART()``: ``facebook/tart-full-flan-t5-xl``
    """
    schematic = {"label": "TART"}
    query_slot = QuerySlot(TART_COMPOSER)

    def __init__(self, model_name_or_path: str = "facebook/tart-full-flan-t5-xl", *, max_length: Optional[int] = 1024,
                 instruction: str = TART_EMPTY_INSTRUCTION, **kwargs):
        super().__init__(model_name_or_path, max_length=max_length, instruction=instruction, **kwargs)
