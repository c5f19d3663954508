"""What every pointwise reranker shares: composing query+instruction, the document text, tokenisation with
truncation, length-sorted cross-query batching, out-of-memory halving and the 2-way true/false scoring.

A model family (seq2seq, causal LM, cross-encoder) only says how to load itself and how to turn a padded
batch into one score per row (``_forward``); everything else lives here.
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..base import InstructReranker
from .._hub import loading
from ..instructions import QuerySlot, query_slot as _query_slot
from ..prompts import render
from .._torch import batch_limits, by_length, check_batch_size, hf_setup

log = logging.getLogger(__name__)

TRUNCATIONS = ("safe", "reference")
SCORES = ("prob", "logprob", "logit_diff")
def document_texts(df: pd.DataFrame, text_field: str, title_field: Optional[str]) -> List[str]:
    """``(title + " " + text).strip()`` when the title column is present (mteb's document text), else the text."""
    text = df[text_field].fillna("").astype(str)
    if title_field and title_field in df.columns:
        text = (df[title_field].fillna("").astype(str) + " " + text).str.strip()
    return text.tolist()


def two_way(logits, mode: str):
    """Scores from ``[false, true]`` logits (float32): P(true), log P(true) or the logit difference."""
    import torch
    logits = logits.float()
    if mode == "logit_diff":
        return logits[:, 1] - logits[:, 0]
    logp = torch.log_softmax(logits, dim=-1)[:, 1]
    return logp.exp() if mode == "prob" else logp


class PointwiseReranker(InstructReranker, family=False):
    """Base of every pointwise model. Subclasses set ``padding_side`` and implement ``_load_model()`` (returns
    model, tokenizer) and ``_forward(batch) -> tensor`` (one score per row); template models keep the default
    ``_encode``; pair models (cross-encoders) override it.

    Args:
        model_name_or_path: a hub id or a local folder (loaded lazily, on the first non-empty call).
        batch_size: rows per forward pass; ``None``: the device's measured best (docs/performance.md); batches span
            queries, scores do not depend on them; on GPU out-of-memory the batch is halved and retried.
        max_length: token limit (``None``: the reference's limit, resolved at load and logged).
        truncation: ``'safe'`` (default: cut the document, then the query) or ``'reference'`` (the whole prompt's end).
        device: ``None``/``'auto'`` (cuda, mps, cpu) or a torch device string.
        dtype: ``'auto'`` (bf16 on GPU, fp32 on CPU), ``'bf16'``, ``'fp16'``, ``'fp32'``.
        text_field, title_field: the document columns; the title is prepended when its column is present.
        instruction: the instruction used where the input has none (no column, NaN/None or blank).
        query_slot: how the instruction joins ``{query}`` (:class:`~pyterrier_instruct.instructions.QuerySlot`).
        verbose: a progress bar over the documents scored (on by default; ``False`` silences it).
    """
    padding_side = "right"
    default_max_length = 512
    _lazy = ("_model", "_tokenizer")
    template: str = "{text}"
    #: where the instruction goes in ``template``'s ``{query}`` slot
    query_slot: QuerySlot = QuerySlot()

    def __init__(self, model_name_or_path: str, *, batch_size: Optional[int] = None, max_length: Optional[int] = None,
                 truncation: str = "safe", device: Optional[str] = None, dtype="auto", text_field: str = "text",
                 title_field: Optional[str] = "title", instruction: str = "", query_slot: Optional[QuerySlot] = None,
                 verbose: bool = True):
        if truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
        batch_size = check_batch_size(batch_size)
        if max_length is not None and int(max_length) < 8:
            raise ValueError(f"max_length must be at least 8 tokens, got {max_length!r}")
        self.model_name_or_path = str(model_name_or_path)
        self.batch_size, self.max_length, self.truncation = batch_size, max_length, truncation
        self.device, self.dtype, self.text_field, self.title_field = device, dtype, text_field, title_field
        self.instruction, self.verbose = instruction, verbose
        self.query_slot = type(self).query_slot if query_slot is None else _query_slot(query_slot, type(self).__name__)
        self.truncated = 0
        self._model = None
        self._tokenizer = None

    # -- loading ---------------------------------------------------------------------------------
    def _load(self):
        if self._model is None:
            _, self._device, self._torch_dtype = hf_setup(self.device, self.dtype)
            with loading(self.model_name_or_path):  # weights not there: ModelNotFoundError with the fixes
                model, tokenizer = self._load_model()
            tokenizer.padding_side = self.padding_side
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            self._model, self._tokenizer = model.to(self._device).eval(), tokenizer
            self._max_length = self.max_length or self._reference_max_length(tokenizer)
            log.info("%s: using max_length of %d (%s truncation)", self.model_name_or_path, self._max_length,
                     self.truncation)
        return self._model, self._tokenizer

    def _reference_max_length(self, tokenizer) -> int:
        limit = getattr(tokenizer, "model_max_length", None)
        return int(limit) if limit and limit < 1_000_000 else self.default_max_length

    def _load_model(self):  # pragma: no cover - abstract
        raise NotImplementedError  # abstract: returns (model, tokenizer)

    def _forward(self, batch: Dict):  # pragma: no cover - abstract
        raise NotImplementedError  # abstract: one score per row of the padded batch

    # -- inputs ----------------------------------------------------------------------------------
    def _encode(self, queries: Sequence[str], texts: Sequence[str],
                instructions: Optional[Sequence[str]] = None) -> List[Dict[str, List[int]]]:
        """Token ids of the rendered template per row, truncated per ``truncation``. ``queries`` fill the ``{query}``
        slot (already joined with the instruction by ``query_slot``); ``instructions`` fill a template's own
        ``{instruction}`` slot, where it names one."""
        tok, limit = self._tokenizer, self._max_length
        instructions = [None] * len(queries) if instructions is None else instructions
        prompts = [render(self.template, q, t, i) for q, t, i in zip(queries, texts, instructions)]
        if self.truncation == "reference":
            ids = tok(prompts, truncation=True, max_length=limit)["input_ids"]
            self.truncated += sum(len(i) >= limit for i in ids)
            return [{"input_ids": i} for i in ids]
        ids = tok(prompts, verbose=False)["input_ids"]  # over-long rows are fitted below, no warning
        for n, row in enumerate(ids):
            if len(row) > limit:
                ids[n] = self._fit(queries[n], texts[n], len(row), instructions[n])
                self.truncated += 1
        return [{"input_ids": i} for i in ids]

    def _fit(self, query: str, text: str, length: int, instruction: Optional[str] = None) -> List[int]:
        """The longest document prefix (in words) whose prompt fits; then, if needed, the longest query prefix; then the
        longest prefix of the instruction of a template's own ``{instruction}`` slot.
        The search starts from an estimate (``length`` = the untruncated prompt's tokens), so a few tokenisations
        suffice."""
        tok, limit = self._tokenizer, self._max_length

        def ids(q, n_doc, words):
            return tok(render(self.template, q, " ".join(words[:n_doc]), instruction), verbose=False)["input_ids"]

        def ids_with(q, cut_instruction):
            return tok(render(self.template, q, "", cut_instruction), verbose=False)["input_ids"]

        words = text.split()
        per_word = length / max(1, len(words) + len(query.split()))
        guess = max(0, len(words) - int(np.ceil((length - limit) / max(per_word, 1e-6))))
        best = self._longest(lambda n: len(ids(query, n, words)) <= limit, len(words), guess)
        if best is not None:
            return ids(query, best, words)
        qwords = query.split()
        bestq = self._longest(lambda n: len(ids(" ".join(qwords[:n]), 0, words)) <= limit, len(qwords), 0)
        if bestq is not None:
            return ids(" ".join(qwords[:bestq]), 0, words)
        iwords = (instruction or "").split()  # a template's own {instruction} slot is cut last
        besti = (self._longest(lambda n: len(ids_with("", " ".join(iwords[:n]))) <= limit, len(iwords), 0)
                 if iwords else None)
        if besti is None:
            raise ValueError(f"{self!r}: the template alone is longer than max_length={limit} tokens")
        return ids_with("", " ".join(iwords[:besti]))

    @staticmethod
    def _longest(fits, n: int, guess: int) -> Optional[int]:
        """The largest m in [0, n] with ``fits(m)`` (monotone), galloping from ``guess``; None if not even 0 fits."""
        guess = min(max(guess, 0), n)
        if fits(guess):
            lo, step = guess, 1
            while lo < n and fits(min(n, lo + step)):
                lo, step = min(n, lo + step), step * 2
            hi = min(n, lo + step) - 1
        else:
            hi, step = guess - 1, 1
            while hi >= 0 and not fits(max(0, hi - step + 1)):
                hi, step = max(0, hi - step + 1) - 1, step * 2
            if hi < 0:
                return None
            lo = max(0, hi - step + 1)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    # -- scoring ---------------------------------------------------------------------------------
    def _score(self, view: pd.DataFrame) -> np.ndarray:
        feats, queries = self._features(view)
        bar = self._tqdm(None, total=len(feats), unit="doc")
        try:
            return self._score_features(feats, queries, bar)
        finally:
            bar.close()

    def _features(self, view: pd.DataFrame):
        """The token ids of every row of the prompt view (loads the tokenizer) and each row's query key, the instruction
        and the ``{query}`` slot's text (rows with one key share a prompt prefix: ``share_prefix`` and the vLLM path's
        query-contiguous order group by it)."""
        queries, instructions = self.query_slot.frame(view).tolist(), view["instruction"].tolist()
        texts = document_texts(view, self.text_field, self.title_field)
        self._load()
        return self._encode(queries, texts, instructions), [f"{i}\n{q}" for q, i in zip(queries, instructions)]

    def _score_features(self, feats: List[Dict[str, List[int]]], queries: List[str], bar) -> np.ndarray:
        """All rows in batches by token length (longest first), across queries."""
        scores = np.empty(len(feats), dtype="float64")
        self._in_batches(feats, np.arange(len(feats)), scores, self._run, bar)
        return scores

    def _in_batches(self, feats, rows: np.ndarray, scores: np.ndarray, run, bar, *, context: int = 0) -> None:
        """Scores ``rows`` of ``feats`` into ``scores`` with ``run(list of features)``, longest first; ``context``:
        tokens every row also attends to (a shared prefix's cache), counted in the CPU token budget."""
        rows = np.asarray(rows)
        lengths = np.fromiter((len(feats[i]["input_ids"]) + context for i in rows), dtype=np.int64, count=len(rows))

        def run_rows(idx):
            scores[rows[idx]] = run([feats[i] for i in rows[idx]])
        limit, tokens = batch_limits(self.batch_size, self._device)
        by_length(lengths, limit, run_rows, max_tokens=tokens, bar=bar, name=self.model_name_or_path)

    def _run(self, feats: List[Dict[str, List[int]]]) -> np.ndarray:
        import torch
        batch = self._tokenizer.pad(feats, padding=True, return_tensors="pt")
        batch = {k: v.to(self._device) for k, v in batch.items()}
        with torch.inference_mode():
            return self._forward(batch).float().cpu().numpy()


class TrueFalseReranker(PointwiseReranker, family=False):
    """A pointwise model scored from the logits of two answer tokens (monoT5, FollowIR-7B): ``score`` is ``'prob'``
    (P(true) after a 2-way softmax, the references' value), ``'logprob'`` (pyterrier_t5's) or ``'logit_diff'``;
    all three rank identically."""

    def __init__(self, model_name_or_path: str, *, template: str, true_token: str = "true", false_token: str = "false",
                 score: str = "prob", **kwargs):
        super().__init__(model_name_or_path, **kwargs)
        if "{text}" not in template:
            raise ValueError(f"template needs a {{text}} placeholder: {template!r}")
        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {score!r}")
        self.template, self.true_token, self.false_token, self.score = template, true_token, false_token, score

