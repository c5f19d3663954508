"""BRIGHT's ``excluded_ids`` rule, in one place: each query's excluded documents are removed from that query's ranking
before the cut-off and scoring (BRIGHT ``retrievers.py`` ``get_scores``/``retrieval_bm25``, github xlang-ai/BRIGHT @
d99e8391: ``cur_scores.pop(did)``); other queries are unaffected. That is not the same as judging them non-relevant,
which is what ir_datasets' ``bright/*`` qrels (label −100) give under trec_eval: a judged-0 document keeps its rank.

A BRIGHT dataset keeps the exclusions apart from its qrels (``ds.excluded_ids()``; ``ds.get_qrels()`` holds the released
gold ids only), and ``ds.exclude()`` removes them as the last stage of a system, as BRIGHT's ``run.py`` does before it
scores: ``pt.Experiment([system >> ds.exclude()], ds.get_topics(), ds.get_qrels(), [nDCG@10])`` then gives BRIGHT's
number whether the qrels are a frame or a file, and so do ``pt.Evaluate`` and ``ir_measures`` on that system's run. No
pyterrier import here.
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
