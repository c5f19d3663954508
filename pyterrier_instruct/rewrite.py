"""Query-frame transformers of the instruction data model: fold the instruction into the query, set one.

The joining rule itself lives in :mod:`pyterrier_instruct.instructions` (:func:`compose`).
"""
from __future__ import annotations

import pandas as pd
import pyterrier as pt

from ._config import Configured
from .instructions import DEFAULT_COMPOSER, FOLDED, QuerySlot, check_composer, query_instructions


class FoldInstruction(Configured, pt.Transformer):
    """Folds the instruction into ``query`` for stages that only read the query (e.g. BM25).

    The previous query is kept as ``query_0`` (``pt.rewrite.reset()`` restores it) and the folded one as
    ``folded_query``, so instruction-aware stages downstream never join the instruction twice
    (``FoldInstruction() >> bm25 >> reranker`` scores as with ``pt.rewrite.reset()`` before the reranker).

    Args:
        composer: a format string over ``{query}`` and ``{instruction}`` (stripped) or a rule name in
            :data:`pyterrier_instruct.instructions.COMPOSERS`; the default leaves a query with an empty instruction as
            is.
    """
    schematic = {"label": "FoldInstr"}

    def __init__(self, composer: str = DEFAULT_COMPOSER):
        self.composer = check_composer(composer, "FoldInstruction")

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query"])
        out = inp.copy()
        if len(out) == 0:
            out["query_0"] = pd.Series(dtype=object)
            out[FOLDED] = pd.Series(dtype=object)
            return out
        if "query_0" in out.columns:  # the PyTerrier convention: shift older rewrites
            idx = 1
            while f"query_{idx}" in out.columns:
                idx += 1
            for i in range(idx, 0, -1):
                out[f"query_{i}"] = out[f"query_{i - 1}"]
        view = query_instructions(inp)  # a row an earlier FoldInstruction folded is folded again from its query_0
        out["query_0"] = view["query"].to_numpy()
        out["query"] = out[FOLDED] = QuerySlot(self.composer).frame(view)
        return out


class SetInstruction(Configured, pt.Transformer):
    """Sets a constant ``instruction`` on every row (e.g. a Promptriever prompt, or ``""`` to ablate).

    Args:
        instruction: the instruction text.
        overwrite: replace an existing ``instruction`` column (default); if False, only fill
            missing or empty instructions.
    """
    schematic = {"label": "SetInstr"}

    def __init__(self, instruction: str, overwrite: bool = True):
        if not isinstance(instruction, str):
            raise TypeError(f"SetInstruction: instruction must be a str, got {type(instruction).__name__}")
        self.instruction = instruction
        self.overwrite = overwrite

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid"])
        out = inp.copy()
        if self.overwrite or "instruction" not in out.columns:
            out["instruction"] = pd.Series(self.instruction, index=out.index, dtype=object)
        else:
            current = out["instruction"].fillna("").astype(str)
            out["instruction"] = current.where(current != "", self.instruction)
        return out


__all__ = ["FoldInstruction", "SetInstruction"]
