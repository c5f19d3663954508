"""The one transform body every reranker shares (STYLE §2.1–2.3).

validate (two modes: ``instruct`` with an ``instruction`` column, ``query`` without, using the
constructor default) → empty shortcut (correctly shaped, nothing loaded) → ``_score`` → set ``score``
→ ``pt.model.add_ranks``. Every input column is kept and the input row order is preserved (so a
``ties='input'`` measure sees the candidate order).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt

from ._eq import KeyedEquality
from .instructions import instructions_of


class InstructReranker(KeyedEquality, pt.Transformer):
    """Base class: subclasses implement ``_score(df) -> np.ndarray`` (one float per row).

    ``df`` passed to ``_score`` always has an ``instruction`` column (filled with the default
    instruction where the input had none). Subclasses set ``self.text_field`` and
    ``self.instruction`` (the default instruction) in ``__init__``.
    """
    text_field: str = "text"
    instruction: str = ""
    verbose: bool = False

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with pt.validate.any(inp) as v:
            v.result_frame(extra_columns=["query", "instruction", self.text_field], mode="instruct")
            v.result_frame(extra_columns=["query", self.text_field], mode="query")
        out = inp.drop(columns=["score", "rank"], errors="ignore").copy()
        if len(out) == 0:
            out["score"] = pd.Series(dtype="float64")
            out["rank"] = pd.Series(dtype="int64")
            return out
        work = out.assign(instruction=instructions_of(out, self.instruction).to_numpy())
        scores = np.asarray(self._score(work), dtype="float64")
        if scores.shape != (len(out),):
            raise RuntimeError(f"{self!r} produced {scores.shape} scores for {len(out)} rows")
        out["score"] = scores
        return pt.model.add_ranks(out)

    def _score(self, df: pd.DataFrame) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError  # abstract

    def _tqdm(self, iterable, total=None, desc=None, unit="batch"):
        return pt.tqdm(iterable, total=total, desc=desc or type(self).__name__, unit=unit, disable=not self.verbose)

    def subtransformers(self):
        return {}
