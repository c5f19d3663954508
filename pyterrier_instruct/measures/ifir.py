"""IFIR nDCG@k with the IFIR code's normalisation (IFIR repository ``src/utils/metrics.py``).

The IFIR repository (``src/utils/metrics.py``, which produced the paper's tables) takes the top-k list
L of the run, sets r_i = 1 when L_i is gold for the (query, level), and normalises DCG by the ideal
ordering of **L's own** r-vector: IDCG = sum_{i <= m} 1/log2(i + 1) with m = sum r_i (0 when m = 0).
Unretrieved gold documents therefore do not lower the score, so it is always >= standard nDCG@k.
``norm='standard'`` delegates to ir_measures' ``nDCG@k`` (trec_eval); MRR@k is ir_measures' ``RR@k``.

Each (query, level) is one qid, so the mean over qids is IFIR's micro-average over (query, level).
Gold = label > 0. Every qrels query gets a value (0 without a run); run queries without qrels are ignored.
"""
from __future__ import annotations

from typing import Dict, Tuple, Union

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import measures

from ._provider import PairedMeasure, register_measure
from ._runs import TIES, QrelsLike, RunLike, per_query_values, qrels_frame, run_frame, warn_unmatched

NORMS = ("ifir_code", "standard")


def top_k(run: pd.DataFrame, k: int, ties: str = "docno") -> pd.DataFrame:
    """The top-``k`` rows per query with their 1-based ``position``, by score descending then the tie-break."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    qcode = pd.factorize(run["qid"])[0]
    score = run["score"].to_numpy(dtype="float64")
    if ties == "docno":  # docno descending, by code point
        tie = -pd.factorize(run["docno"], sort=True)[0]
    else:  # row order
        tie = np.arange(len(run))
    order = np.lexsort((tie, -score, qcode))
    ranked = run.iloc[order]
    position = ranked.groupby(qcode[order], sort=False).cumcount().to_numpy() + 1
    return ranked.assign(position=position)[position <= k]


def ifir_ndcg_per_query(run: RunLike, qrels: QrelsLike, k: int = 20, norm: str = "ifir_code",
                        ties: str = "docno", warn: bool = True) -> pd.Series:
    """nDCG@k per qrels query (IFIR code normalisation by default); ``warn``: name the queries whose run shares
    no docno with their qrels."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    run_df, _ = run_frame(run, "run")
    q = qrels_frame(qrels, "qrels")
    judged = pd.Index(pd.unique(q["qid"]))
    if warn:
        warn_unmatched(run_df, q, f"IFIR nDCG@{k}")
    if norm == "standard":
        return per_query_values(ir_measures.nDCG @ int(k), q, run_df).reindex(judged).fillna(0.0)
    top = top_k(run_df[run_df["qid"].isin(judged)], int(k), ties)
    gold = q[q["label"] > 0][["qid", "docno"]].drop_duplicates().assign(gold=1.0)
    top = top.merge(gold, on=["qid", "docno"], how="left")
    r = top["gold"].fillna(0.0).to_numpy()
    discount = 1.0 / np.log2(top["position"].to_numpy(dtype="float64") + 1.0)
    parts = pd.DataFrame({"qid": top["qid"].to_numpy(), "dcg": r * discount, "m": r})
    sums = parts.groupby("qid", sort=False).sum()
    ideal = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, int(k) + 2)))])
    idcg = ideal[sums["m"].to_numpy(dtype=np.int64)]
    values = np.divide(sums["dcg"].to_numpy(), idcg, out=np.zeros(len(sums)), where=idcg > 0)
    return pd.Series(values, index=sums.index, dtype="float64").reindex(judged).fillna(0.0)


def ifir_ndcg(run: RunLike, qrels: QrelsLike, k: int = 20, *, norm: str = "ifir_code", ties: str = "docno",
              per_query: bool = False) -> Union[float, Tuple[float, Dict[str, float]]]:
    """IFIR nDCG@k (raw, in [0, 1]): the mean over (query, level) qids of :func:`ifir_ndcg_per_query`."""
    values = ifir_ndcg_per_query(run, qrels, k, norm, ties)
    if len(values) == 0:
        raise ValueError("IFIR nDCG is undefined: the qrels are empty")
    value = float(values.mean())
    return (value, {str(q): float(v) for q, v in values.items()}) if per_query else value


class _IFIR_nDCG(PairedMeasure):
    """IFIR nDCG@k: IDCG from the retrieved top-k's own gold count (the IFIR code, default) or standard
    (``norm='standard'``, ir_measures nDCG@k); each (query, level) qid is one unit.
    """
    __name__ = "IFIR_nDCG"
    AT_PARAM = "cutoff"
    SUPPORTED_PARAMS = {
        "cutoff": measures.ParamInfo(dtype=int, required=True, desc="rank cut-off"),
        "norm": measures.ParamInfo(dtype=str, choices=["ifir_code", "standard"], default="ifir_code",
                                   desc="IDCG from the retrieved list (IFIR code) or from the qrels (trec_eval)"),
        "ties": measures.ParamInfo(dtype=str, choices=["docno", "input"], default="docno",
                                   desc="tie-break of the top-k list: docno descending or run row order"),
    }

    def unit(self, qid):
        return None  # each (query, level) qid is one unit

    def paired_impl(self, qrels, run, cache):
        values = ifir_ndcg_per_query(run, qrels, self.params["cutoff"], self.params.get("norm", "ifir_code"),
                                     self.params.get("ties", "docno"), warn=False)  # the provider checked the ids
        return ((str(q), float(v)) for q, v in values.items())


IFIR_nDCG = register_measure(_IFIR_nDCG())
