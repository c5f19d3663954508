"""The one transform body every reranker shares (pointwise, listwise, dense scoring, pool BM25).

validate (two modes: ``instruct`` with an ``instruction`` column, ``query`` without, using the constructor
default; the layout of pyterrier_dr's ``BiEncoder.transform``) → empty shortcut (correctly shaped, nothing
loaded) → ``_score`` → set ``score`` → ``pt.model.add_ranks``. Every input column is kept and the input row
order is preserved (so a ``ties='input'`` measure sees the candidate order).

The first-stage score: an incoming ``score`` is kept as ``score_0``, unless the input already carries a
``score_0`` (set by an earlier reranker), so ``score_0`` is always the first stage's score.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt

from ._config import Configured
from ._validation import text_hint
from .instructions import instructions_of


def first_stage_columns(inp: pd.DataFrame) -> pd.DataFrame:
    """``inp`` without ``score``/``rank``, with the first-stage score as ``score_0`` (the one rule, see above)."""
    out = inp.drop(columns=["score", "rank"], errors="ignore")
    if "score" in inp.columns and "score_0" not in inp.columns:
        out = out.assign(score_0=inp["score"].to_numpy())
    return out.copy()


def empty_result(out: pd.DataFrame) -> pd.DataFrame:
    """A correctly shaped empty result: the input columns plus ``score`` and ``rank``."""
    return out.assign(score=pd.Series(dtype="float64"), rank=pd.Series(dtype="int64"))


class InstructReranker(Configured, pt.Transformer):
    """Base class: subclasses implement ``_score(df) -> np.ndarray`` (one float per row).

    ``df`` passed to ``_score`` is the input frame (its first-stage ``score``/``rank`` still there) with an
    ``instruction`` column (filled with the default instruction where the input had none). Subclasses store
    ``text_field``, ``instruction`` (the default instruction) and ``verbose``.
    """
    text_field: str = "text"
    instruction: str = ""
    verbose: bool = True

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with text_hint(self.text_field), pt.validate.any(inp) as v:
            v.result_frame(extra_columns=["query", "instruction", self.text_field], mode="instruct")
            v.result_frame(extra_columns=["query", self.text_field], mode="query")
        out = first_stage_columns(inp)
        if len(out) == 0:
            return empty_result(out)
        work = inp.assign(instruction=instructions_of(inp, self.instruction).to_numpy())
        scores = np.asarray(self._score(work), dtype="float64")
        if scores.shape != (len(out),):
            raise RuntimeError(f"{self!r} produced {scores.shape} scores for {len(out)} rows")
        out["score"] = scores
        return pt.model.add_ranks(out)

    def _score(self, df: pd.DataFrame) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError  # abstract

    def _tqdm(self, iterable, total=None, desc=None, unit="batch"):
        return pt.tqdm(iterable, total=total, desc=desc or type(self).__name__, unit=unit, disable=not self.verbose)
