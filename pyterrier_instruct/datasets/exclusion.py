"""BRIGHT's ``excluded_ids`` rule, in one place: each query's excluded documents are removed from that query's ranking
before the cut-off (BRIGHT ``retrievers.py`` ``get_scores``, xlang-ai/BRIGHT @ d99e8391: ``cur_scores.pop(did)``),
which is not judging them non-relevant (ir_datasets' label −100: a judged-0 document keeps its rank). ``ds.exclude()``
is the last stage of a system: ``pt.Experiment([system >> ds.exclude()], ...)`` gives BRIGHT's number. No pyterrier
import here.
"""
from __future__ import annotations

import pandas as pd


def remove(run: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """``run`` without the rows whose (qid, docno) is an excluded pair; every other row and column is kept, and an
    affected query's ranks are recomputed (by score, as ``pt.model.add_ranks``) when the run has a ``rank`` column."""
    if len(run) == 0 or len(pairs) == 0:
        return run
    keys = pd.MultiIndex.from_arrays([run["qid"].astype(str), run["docno"].astype(str)])
    drop = keys.isin(pd.MultiIndex.from_frame(pairs[["qid", "docno"]].astype(str)))
    if not drop.any():
        return run
    out = run[~drop].copy()
    if "rank" in out.columns and "score" in out.columns:
        import pyterrier as pt
        out = pt.model.add_ranks(out.drop(columns="rank"))
    return out.reset_index(drop=True)


__all__ = ["remove"]
