"""INSTFOL@K (IFIR paper §4.1; the IFIR repository's ``fmss_avg``): the pure arithmetic on judge scores.

The judge is :mod:`pyterrier_instruct.evaluation.judge`, the evaluator over runs
:func:`pyterrier_instruct.evaluation.instfol.instfol`. Per (query, level), on the top-K of both runs aligned by rank: a
failed judgement (``None``/NaN) drops the position from both lists (the IFIR code's ``problem_ids``); INSTFOL =
(S_inst − S_q) / (3 − S_q) with the constant 3 for every level; a query with an empty list is skipped and counted.
A dataset is the unweighted mean of its level means, the average the unweighted mean over datasets; ×100 (``scale``)
in the summaries. The range is not [−1, 1] (S_q = 2.5, S_inst = 0 give −5).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import pandas as pd

#: The normaliser of α = 1/(MAX_SCORE − S_q), fixed at 3 for every level as in the IFIR code.
MAX_SCORE = 3.0

PER_QUERY_COLUMNS = ["dataset", "qid", "base_qid", "level", "prompt", "n_q", "n_inst", "dropped", "s_q", "s_inst",
                     "instfol", "skipped"]


def instfol_value(s_q: float, s_inst: float, max_score: float = MAX_SCORE) -> float:
    """INSTFOL of one (query, level) from the two mean judge scores (the IFIR code's ``fmss_avg``)."""
    s_q, s_inst = float(s_q), float(s_inst)
    if math.isnan(s_q) or math.isnan(s_inst):
        raise ValueError(f"INSTFOL needs finite mean scores, got S_q={s_q}, S_inst={s_inst} (skip empty queries)")
    if s_inst - s_q == 0:
        return 0.0
    if max_score == s_q:
        return s_inst - s_q
    return (s_inst - s_q) / (max_score - s_q)


def _failed(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def instfol_query(q_scores: Sequence[Optional[float]], inst_scores: Sequence[Optional[float]],
                  max_score: float = MAX_SCORE) -> Dict[str, object]:
    """INSTFOL of one (query, level) from the judge scores of its two top-K lists, in rank order.

    Returns ``{"instfol", "s_q", "s_inst", "n_q", "n_inst", "dropped", "skipped"}``: ``dropped`` counts the rank
    positions removed; ``instfol``/``s_q``/``s_inst`` are NaN and ``skipped`` True when a list is empty after dropping.
    """
    q_scores, inst_scores = list(q_scores), list(inst_scores)
    bad = {i for i, x in enumerate(q_scores) if _failed(x)} | {i for i, x in enumerate(inst_scores) if _failed(x)}
    q = [float(x) for i, x in enumerate(q_scores) if i not in bad]
    ins = [float(x) for i, x in enumerate(inst_scores) if i not in bad]
    out = {"n_q": len(q), "n_inst": len(ins), "dropped": len(bad)}
    if not q or not ins:
        return {**out, "s_q": math.nan, "s_inst": math.nan, "instfol": math.nan, "skipped": True}
    s_q, s_inst = sum(q) / len(q), sum(ins) / len(ins)
    return {**out, "s_q": s_q, "s_inst": s_inst, "instfol": instfol_value(s_q, s_inst, max_score), "skipped": False}


@dataclass
class InstfolResult:
    """INSTFOL@K at every aggregation level.

    - ``per_query``: one row per (dataset, query, level) with ``n_q``/``n_inst`` (judged documents kept), ``dropped``
      (rank positions removed from both lists), ``s_q``, ``s_inst``, ``instfol`` (raw; NaN when ``skipped``);
    - ``per_level``: ``dataset, level, instfol`` (×scale), ``queries`` (with a value), ``skipped``;
    - ``per_dataset``: the mean of the level means, ×scale, by dataset;
    - ``average``: the unweighted mean over datasets, ×scale (IFIR's "Average" when the 7 subsets are present);
    - ``skipped``: (query, level) pairs without a value; ``judge``: the judge's counters for this evaluation
      (``requested``, ``hits``, ``judged``, ``backend_calls``, ``failed``, …); ``settings``: the judge's settings.
    """
    per_query: pd.DataFrame
    per_level: pd.DataFrame
    per_dataset: pd.Series
    average: float
    skipped: int
    k: int = 20
    scale: float = 100.0
    judge: Dict[str, int] = field(default_factory=dict)
    settings: Dict[str, object] = field(default_factory=dict)

    def __repr__(self) -> str:
        datasets = ", ".join(f"{d}={v:.2f}" for d, v in self.per_dataset.items())
        return (f"InstfolResult(INSTFOL@{self.k}×{self.scale:g}: {datasets}; average={self.average:.2f}; "
                f"skipped={self.skipped})")

    def level_means(self) -> Dict[Tuple[str, str], float]:
        """``{(dataset, level): mean}`` (×scale)."""
        return {(d, str(lv)): float(v) for d, lv, v in zip(self.per_level["dataset"], self.per_level["level"],
                                                           self.per_level["instfol"])}


def instfol_summary(per_query: pd.DataFrame, *, k: int = 20, scale: float = 100.0,
                    judge: Optional[Dict[str, int]] = None,
                    settings: Optional[Dict[str, object]] = None) -> InstfolResult:
    """Every aggregation level from a per-(query, level) frame (columns ``dataset``, ``level``, ``instfol``,
    ``skipped``; other :data:`PER_QUERY_COLUMNS` optional): level means, dataset = mean of level means, average over
    datasets; ×``scale``. Skipped pairs count in ``skipped`` and in no mean."""
    missing = [c for c in ("dataset", "level", "instfol") if c not in per_query.columns]
    if missing:
        raise ValueError(f"instfol_summary: the per-query frame lacks column(s) {missing}; has "
                         f"{list(per_query.columns)}")
    frame = per_query.copy()
    if "skipped" not in frame.columns:
        frame["skipped"] = frame["instfol"].isna()
    frame["level"] = frame["level"].astype(str)
    kept = frame[~frame["skipped"].astype(bool)]
    grouped = kept.groupby(["dataset", "level"], sort=True)["instfol"]
    levels = pd.DataFrame({"instfol": grouped.mean() * scale, "queries": grouped.size()})
    skipped = frame[frame["skipped"].astype(bool)].groupby(["dataset", "level"]).size()
    levels = levels.join(skipped.rename("skipped"), how="outer").fillna({"queries": 0, "skipped": 0}).reset_index()
    levels[["queries", "skipped"]] = levels[["queries", "skipped"]].astype("int64")
    order = list(dict.fromkeys(frame["dataset"]))
    per_dataset = levels.dropna(subset=["instfol"]).groupby("dataset", sort=False)["instfol"].mean()
    per_dataset = per_dataset.reindex([d for d in order if d in per_dataset.index])
    average = float(per_dataset.mean()) if len(per_dataset) else math.nan
    return InstfolResult(frame.reset_index(drop=True), levels, per_dataset, average,
                         int(frame["skipped"].astype(bool).sum()), k=int(k), scale=float(scale),
                         judge=dict(judge or {}), settings=dict(settings or {}))


def combine_instfol(results: Iterable[InstfolResult]) -> InstfolResult:
    """One result over several datasets' results (e.g. the 7 IFIR subsets): their per-query frames together, the
    summaries recomputed, the judge counters summed (the settings of the first result kept)."""
    results = list(results)
    if not results:
        raise ValueError("combine_instfol needs at least one InstfolResult")
    if len({(r.k, r.scale) for r in results}) > 1:
        raise ValueError(f"combine_instfol: results differ in k/scale: {sorted({(r.k, r.scale) for r in results})}")
    judge: Dict[str, int] = {}
    for r in results:
        for key, value in r.judge.items():
            judge[key] = judge.get(key, 0) + value
    frames: List[pd.DataFrame] = [r.per_query for r in results]
    return instfol_summary(pd.concat(frames, ignore_index=True), k=results[0].k, scale=results[0].scale, judge=judge,
                           settings=results[0].settings)
