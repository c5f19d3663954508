"""BRIGHT's ``excluded_ids`` rule, in one place: each query's excluded documents are removed from that query's ranking
before the cut-off and scoring (BRIGHT ``retrievers.py`` ``get_scores``/``retrieval_bm25``, github xlang-ai/BRIGHT @ d99e8391:
``cur_scores.pop(did)``); other queries are unaffected. That is not the same as judging them non-relevant, which is what
ir_datasets' ``bright/*`` qrels (label −100) give under trec_eval: a judged-0 document keeps its rank.

A dataset's qrels carry the exclusions as rows labelled :data:`EXCLUDED`. ``pt.Experiment`` (through
:mod:`pyterrier_instruct._pt_compat`) applies :func:`split_excluded` and :func:`remove` to every system's results whenever
its qrels hold such rows, so ``pt.Experiment([system], ds.get_topics(), ds.get_qrels(), ["nDCG@10"])`` gives BRIGHT's
number with no extra step; ``ds.exclude()`` is the same removal as a transformer (idempotent). No pyterrier import here.
"""
from __future__ import annotations

from typing import Tuple

import pandas as pd

#: The qrels label of an excluded (query, document) pair (ir_datasets' ``bright`` convention).
EXCLUDED = -100


def has_excluded(qrels) -> bool:
    return isinstance(qrels, pd.DataFrame) and "label" in qrels.columns and bool((qrels["label"] == EXCLUDED).any())


def split_excluded(qrels: pd.DataFrame) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """``(judgements, excluded pairs)``: the qrels without the :data:`EXCLUDED` rows, and those rows as ``qid, docno``."""
    mask = qrels["label"] == EXCLUDED
    pairs = qrels.loc[mask, ["qid", "docno"]].astype(str).reset_index(drop=True)
    return qrels[~mask].reset_index(drop=True), pairs


def remove(run: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """``run`` without the rows whose (qid, docno) is an excluded pair; every other row and column is kept, and the ranks
    of an affected query are recomputed (by score, as ``pt.model.add_ranks``) when the run has a ``rank`` column."""
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


__all__ = ["EXCLUDED", "has_excluded", "split_excluded", "remove"]
