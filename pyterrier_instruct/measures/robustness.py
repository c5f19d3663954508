"""Robustness@k (InstructIR, InfoSearch; mteb ``robustness_at_10``; checked against mteb 2.26.24).

The mean over groups (an instance's qid up to the first ``_``) of the smallest nDCG@k in the group, nDCG@k from
ir_measures (trec_eval rules). Queries whose qrels hold no judgment are dropped first; a judged query with no run, or a
run query without qrels, is an error (mteb raises KeyError).
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

import ir_measures
import pandas as pd
from ir_measures import measures

from ..instructions import VARIANTS, split_qid
from ._provider import EMPTY_RUN, PairedMeasure, register_measure, unpaired
from ._runs import QrelsLike, RunLike, per_query_values, qrels_frame, run_frame, warn_unmatched


def group_of(qid: str) -> str:
    """The InstructIR/mteb group key: the qid up to its first ``_``."""
    return str(qid).split("_", 1)[0]


def robustness_eval(run: RunLike, qrels: QrelsLike, k: int = 10, group: Callable[[str], str] = group_of,
                    warn: bool = True) -> Dict:
    """Robustness@k with its parts.

    Args:
        run: ``qid, docno, score`` frame or ``{qid: {docno: score}}``.
        qrels: ``qid, docno, label`` frame or ``{qid: {docno: label}}`` (each instance its own qid).
        k: the nDCG cut-off.
        group: maps a qid to its group key (default: the text before the first ``_``).
        warn: warn about queries whose run shares no docno with their qrels.

    Returns:
        ``{"robustness": float, "ndcg": mean nDCG@k over the instances, "per_query": {qid: nDCG@k},
        "groups": {key: [qids]}, "per_group_min": {key: value}}`` (raw, not ×100).
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    run_df, present = run_frame(run, "run")
    q = qrels_frame(qrels, "qrels")
    judged = list(pd.unique(q["qid"]))  # a query listed with no judgment has no row: filtered, as in mteb
    missing = [x for x in judged if x not in present]
    if missing:
        raise ValueError(f"Robustness@{k}: {len(missing)} judged queries have no run (e.g. {missing[:5]}); "
                         "every instance of a group needs its run (never split a group across evaluation batches)")
    judged_set = set(judged)
    extra = sorted(x for x in present if x not in judged_set)
    if extra:
        raise ValueError(f"Robustness@{k}: {len(extra)} run queries have no qrels (e.g. {extra[:5]}); "
                         "evaluate with the qrels of every instance, or drop those queries from the run")
    if warn:
        warn_unmatched(run_df, q, f"Robustness@{k}")
    ndcg = per_query_values(ir_measures.nDCG @ int(k), q, run_df).reindex(judged).fillna(0.0)  # an empty run scores 0
    keys = pd.Series([group(x) for x in judged], index=judged)
    per_group = ndcg.groupby(keys.to_numpy(), sort=False).min()
    return {
        "robustness": float(per_group.mean()),
        "ndcg": float(ndcg.mean()),
        "per_query": {str(x): float(v) for x, v in ndcg.items()},
        "groups": {str(g): list(members) for g, members in keys.groupby(keys.to_numpy(), sort=False).groups.items()},
        "per_group_min": {str(g): float(v) for g, v in per_group.items()},
    }


def robustness(run: RunLike, qrels: QrelsLike, k: int = 10, *, per_group: bool = False,
               group: Optional[Callable[[str], str]] = None):
    """Robustness@k (raw): mean over groups of the minimum nDCG@k; ``per_group`` also returns ``{group: min}``."""
    result = robustness_eval(run, qrels, k, group or group_of)
    return (result["robustness"], result["per_group_min"]) if per_group else result["robustness"]


class _Robustness(PairedMeasure):
    """Robustness@k (InstructIR): mean over groups (qid up to the first ``_``) of the minimum nDCG@k of
    the group's instances; one value per group, keyed by the group. ``variant`` restricts it to one
    mode of a paired frame (``Robustness(variant='changed')@10``); by default every qid is an instance.
    """
    __name__ = "Robustness"
    AT_PARAM = "cutoff"
    PRETTY_NAME = "Robustness@k"
    SHORT_DESC = "Worst-case nDCG@k over the instruction variants of a query, averaged over queries."
    SUPPORTED_PARAMS = {
        "cutoff": measures.ParamInfo(dtype=int, required=True, desc="nDCG cut-off"),
        "variant": measures.ParamInfo(dtype=str, choices=list(VARIANTS), default=None,
                                      desc="evaluate only this variant's qids (paired frames)"),
    }

    def unit(self, qid):
        return group_of(split_qid(qid)[0])

    def paired_impl(self, qrels, run, cache):
        variant = self.params.get("variant")
        if variant is not None:
            variants, runs = self.variants(qrels, run, cache)
            if variant not in variants:
                raise unpaired(str(self), (variant,), variants)
            qrels, run = variants[variant], runs.get(variant, EMPTY_RUN)
        result = robustness_eval(run, qrels, self.params["cutoff"], warn=False)  # the provider checked the ids
        return result["per_group_min"].items()


Robustness = register_measure(_Robustness())
