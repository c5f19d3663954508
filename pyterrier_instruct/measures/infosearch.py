"""InfoSearch measures: WISE, ideal WISE, SICR, InfoSearch's p-MRR and the gold-rank diagnostics.

Semantics: InfoSearch §2.3, eq. 4–9, reproduced against EIT-NLP/InfoSearch ``utils.py`` at d0eae63 (2024) and f33f03d
(2025). One instance has three runs under one qid: ``ori`` (core query), ``ins`` (instructed), ``rev`` (reversed).
Positives are og-judged documents labelled 1 in both qrels, negatives have changed label 0 and another og label
(``create_qrel_match``); ranks are a stable sort on score (a missing document: rank n_q + 1, score 0). WISE (K = 20),
SICR (the reference's per-gold counter reset is ``version='code'``, the published numbers) and p-MRR (FollowIR's
formula on the negatives, ori vs ins) are averaged per instance, then over the instances with a positive (or a
negative); an evaluation with no positive, no negative or a partition query missing from a run is refused.
"""
from __future__ import annotations

import warnings
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd
from ir_measures import measures

from .._experiment_context import user_stacklevel
from ..instructions import VARIANTS, paired_qid
from ._provider import EMPTY_RUN, PairedMeasure, register_measure, unpaired
from ._runs import QrelsLike, RunLike, label_pairs, ranks_and_scores, run_frame, warn_unmatched
from .pmrr import pmrr_values

#: WISE versions: the 2024 code (default, contemporaneous with the paper), the 2025 code, the paper.
WISE_VERSIONS = ("2024", "2025", "paper")
#: SICR versions: the reference code (default), the true mean over golds, the paper's eq. 4.
SICR_VERSIONS = ("code", "mean", "paper")
#: The WISE rank horizon K.
K = 20

Lists = Mapping[str, Sequence[str]]


def infosearch_partition(og_qrels: QrelsLike, changed_qrels: QrelsLike) -> pd.DataFrame:
    """The InfoSearch partition (``create_qrel_match``): ``qid, docno, role`` in og-qrels order.

    ``role`` is ``'positive'``, ``'negative'`` or ``None`` (neither: e.g. 2 in both, 0 in both, 0→1);
    every og-qrels query appears, because the reference requires each in all three runs.
    """
    pairs = label_pairs(og_qrels, changed_qrels)
    og, ch = pairs["label_og"].to_numpy(), pairs["label_changed"].to_numpy()
    role = np.select([(og == 1) & (ch == 1), (ch == 0) & (og != ch)], ["positive", "negative"], default=None)
    return pd.DataFrame({"qid": pairs["qid"].to_numpy(), "docno": pairs["docno"].to_numpy(), "role": role})


def _explicit_partition(positives: Lists, negatives: Lists) -> pd.DataFrame:
    rows = []
    for lists, role in ((positives, "positive"), (negatives, "negative")):
        for qid, docs in lists.items():
            if isinstance(docs, str):
                raise TypeError(f"{role}s[{qid!r}] must be a list of docnos, got the string {docs!r}")
            rows.extend((str(qid), str(d), role) for d in docs)
            if not docs:
                rows.append((str(qid), None, None))
    frame = pd.DataFrame(rows, columns=["qid", "docno", "role"], dtype=object)
    dup = frame[frame["docno"].notna()].duplicated(["qid", "docno"])
    if dup.any():
        bad = frame[frame["docno"].notna()][dup].iloc[0]
        raise ValueError(f"docno {bad.docno!r} is listed twice (as positive and/or negative) for qid {bad.qid!r}")
    return frame


def _partition(og_qrels, changed_qrels, positives, negatives) -> pd.DataFrame:
    if positives is not None or negatives is not None:
        if positives is None or negatives is None:
            raise ValueError("pass both `positives` and `negatives` ({qid: [docno, ...]}), or og_qrels/changed_qrels")
        if og_qrels is not None or changed_qrels is not None:
            raise ValueError("pass either `positives`/`negatives` or `og_qrels`/`changed_qrels`, not both")
        return _explicit_partition(positives, negatives)
    if og_qrels is None or changed_qrels is None:
        raise ValueError("the InfoSearch measures need the og and changed qrels (or explicit positives/negatives)")
    return infosearch_partition(og_qrels, changed_qrels)


class RankTable:
    """Ranks and scores of the partition's documents in the three runs, validated like the reference.

    ``positive``: ``qid, docno, ori_rank, ins_rank, rev_rank, ori_score, ins_score, rev_score,
    sum_count``; ``negative``: ``qid, docno, ori_rank, ins_rank, rev_rank`` (rev columns only with a
    reversed run). Both keep partition order.
    """

    def __init__(self, ori_run: RunLike, ins_run: RunLike, rev_run: Optional[RunLike], partition: pd.DataFrame,
                 ties: str = "input", check_ids: bool = True):
        runs = {"ori": run_frame(ori_run, "ori_run"), "ins": run_frame(ins_run, "ins_run")}
        if rev_run is not None:
            runs["rev"] = run_frame(rev_run, "rev_run")
        qids = list(pd.unique(partition["qid"]))
        for name, (_, present) in runs.items():
            missing = [q for q in qids if q not in present]
            if missing:
                suffix = {"ori": "-og", "ins": "-changed", "rev": "-reversed"}[name]
                raise ValueError(f"InfoSearch: {len(missing)} queries of the qrels have no {name} run "
                                 f"(e.g. {missing[:5]}); every query needs its ori, ins and rev runs "
                                 f"(in paired frames: rows with qid '<qid>{suffix}')")
        if check_ids:  # the partition lists the judged documents
            judged = partition[partition["docno"].notna()]
            for name, (frame, _) in runs.items():
                warn_unmatched(frame, judged, f"InfoSearch ({name} run)")
        docs = partition[partition["role"].notna()]
        pos = docs[docs["role"] == "positive"][["qid", "docno"]].reset_index(drop=True)
        neg = docs[docs["role"] == "negative"][["qid", "docno"]].reset_index(drop=True)
        if len(neg) == 0:
            raise ValueError("InfoSearch evaluation is undefined: there is no negative document (changed label 0, "
                             "og label different) in any query")
        if len(pos) == 0:
            raise ValueError("InfoSearch evaluation is undefined: there is no positive (gold) document (label 1 "
                             "in both the og and changed qrels) in any query")
        if not pos["qid"].isin(set(neg["qid"])).any():
            raise ValueError("InfoSearch evaluation is undefined: no query has both a positive (gold) and a "
                             "negative document")
        counts = docs.groupby("qid", sort=False).size()
        pos["sum_count"] = counts.reindex(pos["qid"]).to_numpy(dtype="int64")
        both = pd.concat([pos[["qid", "docno"]], neg], ignore_index=True)  # one ranking pass per run
        for name, (frame, _) in runs.items():
            rank, score = ranks_and_scores(both, frame, ties, f"{name}_run")
            pos[f"{name}_rank"], pos[f"{name}_score"] = rank[:len(pos)].astype("int64"), score[:len(pos)]
            neg[f"{name}_rank"] = rank[len(pos):].astype("int64")
        self.positive, self.negative, self.ties = pos, neg, ties

    def require_rev(self, what: str) -> None:
        if "rev_rank" not in self.positive.columns:
            raise ValueError(f"{what} needs the reversed run")


def _check(value, choices, name):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def wise_values(o, i, r, n, version: str = "2024") -> np.ndarray:
    """WISE per gold document from its ori/ins/rev ranks and the instance's N (vectorised)."""
    _check(version, WISE_VERSIONS, "version")
    o, i, r, n = (np.asarray(x, dtype="float64") for x in (o, i, r, n))
    drop = np.sqrt(o - i, where=o >= i, out=np.zeros_like(o)) if version == "2025" else o - i
    first = (o <= n) if version == "paper" else (o < n)
    with np.errstate(divide="ignore", invalid="ignore"):
        reward = np.select([first & (i == 1), o <= K], [1.0, (1.0 - drop / K) / np.sqrt(i)], default=0.01)
        penalty = np.where(o <= i, (o - i) / i, (r - o) / o)
    if version != "2024":  # the 2024 code tests i < o < r here, inside the reward region: unreachable
        penalty = np.where((r < o) & (o < i), -1.0, penalty)
    return np.where((i <= o) & (o < r), reward, penalty)


def ideal_wise_values(o, n, version: str = "2024") -> np.ndarray:
    """Ideal WISE per gold document: the reward with ``i = 1`` and ``r = o + 1``."""
    o = np.asarray(o, dtype="float64")
    return wise_values(o, np.ones_like(o), o + 1, n, version)


def sicr_success(o, i, r, s_o, s_i, s_r, version: str = "code") -> np.ndarray:
    """SICR's success indicator per gold document (0.0 / 1.0)."""
    _check(version, SICR_VERSIONS, "version")
    o, i, r = (np.asarray(x) for x in (o, i, r))
    if version == "paper":
        ok = (i < o) & (s_i > s_o) & (o < r) & (s_o > s_r)
    else:
        ok = np.where(o > 1, (o > i) & (r > o) & (s_i > s_o) & (s_o > s_r),
                      (i == 1) & (r > 1) & (s_i >= s_o) & (s_o > s_r))
    return ok.astype("float64")


def _per_query(qid: pd.Series, values: np.ndarray) -> pd.Series:
    return pd.Series(values, index=qid.to_numpy()).groupby(level=0, sort=False).mean()


def sicr_per_query(pos: pd.DataFrame, version: str = "code", warn: bool = True) -> pd.Series:
    """SICR per instance; ``version='code'`` keeps the reference's last-gold quirk."""
    ok = sicr_success(pos["ori_rank"], pos["ins_rank"], pos["rev_rank"], pos["ori_score"].to_numpy(),
                      pos["ins_score"].to_numpy(), pos["rev_score"].to_numpy(), version)
    if version != "code":
        return _per_query(pos["qid"], ok)
    frame = pd.DataFrame({"qid": pos["qid"].to_numpy(), "ok": ok})
    grouped = frame.groupby("qid", sort=False)["ok"]
    sizes = grouped.size()
    if warn and (sizes > 1).any():
        many = sizes[sizes > 1].index.tolist()
        warnings.warn(f"SICR(version='code'): {len(many)} instances have more than one gold document (e.g. "
                      f"{many[:3]}); as in the reference code only the last one counts, divided by the number of "
                      "golds; SICR(version='mean') averages them", stacklevel=user_stacklevel())
    return grouped.last() / sizes


def _per_doc(table: RankTable, version: str) -> Tuple[pd.DataFrame, pd.DataFrame]:
    table.require_rev("WISE")
    pos, neg = table.positive.copy(), table.negative.copy()
    pos["WISE"] = wise_values(pos["ori_rank"], pos["ins_rank"], pos["rev_rank"], pos["sum_count"], version)
    pos["ideal_WISE"] = ideal_wise_values(pos["ori_rank"], pos["sum_count"], version)
    neg["p-MRR"] = pmrr_values(neg["ori_rank"], neg["ins_rank"])
    return pos, neg


def infosearch_eval(ori_run: RunLike, ins_run: RunLike, rev_run: RunLike, *,
                    og_qrels: Optional[QrelsLike] = None, changed_qrels: Optional[QrelsLike] = None,
                    positives: Optional[Lists] = None, negatives: Optional[Lists] = None,
                    version: str = "2024", sicr: str = "code", ties: str = "input", warn: bool = True) -> Dict:
    """Everything the InfoSearch reference (``evaluate_change``) reports, plus per-query and per-document tables.

    Args:
        ori_run, ins_run, rev_run: the three runs (``qid, docno, score`` frames or ``{qid: {docno: score}}``),
            all under the instance's qid.
        og_qrels, changed_qrels: derive the partition (``create_qrel_match``); or give ``positives`` and
            ``negatives`` as ``{qid: [docno, ...]}`` lists (order matters for ``sicr='code'``).
        version: WISE version ``'2024'`` (default), ``'2025'`` or ``'paper'``.
        sicr: SICR version ``'code'`` (default), ``'mean'`` or ``'paper'``.
        ties: ``'input'`` (default; run row order, as the reference) or ``'docno'``.

    Returns:
        ``{"overall": {p-MRR, WISE, ideal_WISE, SICR, ori/ins/rev_pos_rank, ori/ins/rev_neg_rank,
        pos_neg_rank}, "per_query": {measure: {qid: value}}, "positive": frame, "negative": frame}``,
        raw values (not ×100).
    """
    _check(version, WISE_VERSIONS, "version")
    table = RankTable(ori_run, ins_run, rev_run, _partition(og_qrels, changed_qrels, positives, negatives), ties)
    return _report(*_per_doc(table, version), sicr, warn)


def _report(pos: pd.DataFrame, neg: pd.DataFrame, sicr: str = "code", warn: bool = True) -> Dict:
    """:func:`infosearch_eval`'s result from its per-document tables (those of some queries: those queries' result)."""
    per_query = {
        "WISE": _per_query(pos["qid"], pos["WISE"].to_numpy()),
        "ideal_WISE": _per_query(pos["qid"], pos["ideal_WISE"].to_numpy()),
        "p-MRR": _per_query(neg["qid"], neg["p-MRR"].to_numpy()),
        "SICR": sicr_per_query(pos, sicr, warn),
    }
    overall = {m: float(per_query[m].mean()) for m in ("p-MRR", "WISE", "ideal_WISE", "SICR")}
    for kind, frame in (("pos", pos), ("neg", neg)):
        for run in ("ori", "ins", "rev"):
            overall[f"{run}_{kind}_rank"] = float(_per_query(frame["qid"], frame[f"{run}_rank"].to_numpy()).mean())
    both = pos["qid"].isin(set(neg["qid"]))
    mean_pos = _per_query(pos["qid"][both], pos["ins_rank"][both].to_numpy())
    mean_neg = _per_query(neg["qid"], neg["ins_rank"].to_numpy()).reindex(mean_pos.index)
    overall["pos_neg_rank"] = float((mean_pos - mean_neg).mean())
    return {"overall": overall,
            "per_query": {m: {str(q): float(v) for q, v in s.items()} for m, s in per_query.items()},
            "positive": pos, "negative": neg}


def _value(result: Dict, measure: str, per_query: bool):
    value = result["overall"][measure]
    return (value, result["per_query"][measure]) if per_query else value


def wise(ori_run: RunLike, ins_run: RunLike, rev_run: RunLike, *, per_query: bool = False,
         **kwargs) -> Union[float, Tuple[float, Dict[str, float]]]:
    """WISE (raw, in [-1, 1]); keyword arguments (partition, ``version``, ``ties``) as :func:`infosearch_eval`;
    ``per_query`` also returns ``{qid: value}``."""
    return _value(infosearch_eval(ori_run, ins_run, rev_run, warn=False, **kwargs), "WISE", per_query)


def sicr(ori_run: RunLike, ins_run: RunLike, rev_run: RunLike, *, version: str = "code", per_query: bool = False,
         **kwargs) -> Union[float, Tuple[float, Dict[str, float]]]:
    """SICR (raw, in [0, 1]); ``version`` ``'code'`` (default, the reference), ``'mean'`` or ``'paper'`` (as the
    ``SICR(version=...)`` measure); other keyword arguments (partition, ``ties``) as :func:`infosearch_eval`."""
    if "sicr" in kwargs:
        raise TypeError("sicr(): give the SICR formula as version=, not sicr=")
    return _value(infosearch_eval(ori_run, ins_run, rev_run, sicr=version, **kwargs), "SICR", per_query)


def infosearch_pmrr(ori_run: RunLike, ins_run: RunLike, rev_run: Optional[RunLike] = None, *,
                    og_qrels: Optional[QrelsLike] = None, changed_qrels: Optional[QrelsLike] = None,
                    positives: Optional[Lists] = None, negatives: Optional[Lists] = None, ties: str = "input",
                    per_query: bool = False) -> Union[float, Tuple[float, Dict[str, float]]]:
    """InfoSearch's p-MRR: the negatives' rank change from the ori run to the ins run (raw, in (-1, 1)).

    The reversed run does not enter the value; pass it to also apply the reference's checks on it.
    """
    table = RankTable(ori_run, ins_run, rev_run, _partition(og_qrels, changed_qrels, positives, negatives), ties)
    neg = table.negative
    by_query = _per_query(neg["qid"], pmrr_values(neg["ori_rank"], neg["ins_rank"]))
    value = float(by_query.mean())
    return (value, {str(q): float(v) for q, v in by_query.items()}) if per_query else value


_TIES_INPUT = measures.ParamInfo(dtype=str, choices=["input", "docno"], default="input",
                                 desc="tie-break: run row order (the InfoSearch reference) or docno descending")


def _versioned(versions, default: str, desc: str) -> dict:
    """``SUPPORTED_PARAMS`` of a measure with reference versions: ``version`` and ``ties``."""
    return {"version": measures.ParamInfo(dtype=str, choices=list(versions), default=default, desc=desc),
            "ties": _TIES_INPUT}


class _InfoSearchMeasure(PairedMeasure):
    """Base of the InfoSearch measures: one rank table (partition ranks in the three runs) per evaluation."""
    NEEDS_REVERSED = True
    COMPARES_VARIANTS = True

    def table(self, qrels: pd.DataFrame, run: pd.DataFrame, cache: dict) -> RankTable:
        q, r = self.variants(qrels, run, cache)
        if "og" not in q or "changed" not in q:
            raise unpaired(str(self), ("og", "changed"), q)
        with_rev = self.NEEDS_REVERSED or "reversed" in r  # p-MRR shares the three-run table when there is one
        key = ("infosearch", self.params.get("ties", "input"), with_rev)
        if key not in cache:
            rev = r.get("reversed", EMPTY_RUN) if with_rev else None
            cache[key] = RankTable(r.get("og", EMPTY_RUN), r.get("changed", EMPTY_RUN), rev,
                                   infosearch_partition(q["og"], q["changed"]), key[1], check_ids=False)
        return cache[key]

    @staticmethod
    def emit(values: pd.Series):
        for base, value in values.items():
            yield paired_qid(base, "og"), float(value)

    @classmethod
    def emit_mean(cls, qids: pd.Series, values):
        """One value per instance: the mean of ``values`` over its documents, keyed by ``<qid>-og``."""
        return cls.emit(pd.Series(values, index=qids.to_numpy()).groupby(level=0, sort=False).mean())


class _WISE(_InfoSearchMeasure):
    """WISE (InfoSearch): rank-aware reward/penalty of the gold document across the og (core query),
    changed (instructed) and reversed runs; raw in [-1, 1]. Default: the 2024 reference code.

    .. cite.dblp:: journals/corr/abs-2410-23841
    """
    __name__ = "WISE"
    PRETTY_NAME = "Weighted Instruction Sensitivity Evaluation"
    SHORT_DESC = "Reward when the gold rises with the instruction and falls with the reversed one; penalty otherwise."
    SUPPORTED_PARAMS = _versioned(WISE_VERSIONS, "2024",
                                  "2024 code (default), 2025 code (sqrt reward, -1 penalty) or the paper")

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        return self.emit_mean(pos["qid"], wise_values(pos["ori_rank"], pos["ins_rank"], pos["rev_rank"],
                                                      pos["sum_count"], self.params.get("version", "2024")))


WISE = register_measure(_WISE())


class _IdealWISE(_InfoSearchMeasure):
    """The ideal WISE bound given the og run (gold at rank 1 when instructed, pushed down when reversed)."""
    __name__ = "IdealWISE"
    SUPPORTED_PARAMS = _WISE.SUPPORTED_PARAMS

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        values = ideal_wise_values(pos["ori_rank"], pos["sum_count"], self.params.get("version", "2024"))
        return self.emit_mean(pos["qid"], values)


IdealWISE = register_measure(_IdealWISE())


class _SICR(_InfoSearchMeasure):
    """SICR (InfoSearch): share of instances whose gold rises (rank and raw score) with the instruction
    and falls with the reversed one; raw in [0, 1]. Default: the reference code (last-gold quirk).

    .. cite.dblp:: journals/corr/abs-2410-23841
    """
    __name__ = "SICR"
    PRETTY_NAME = "Strict Instruction Compliance Ratio"
    SHORT_DESC = "Instances whose gold document moves up with the instruction and down with the reversed one."
    SUPPORTED_PARAMS = _versioned(SICR_VERSIONS, "code",
                                  "reference code (default), true mean over golds, or the paper's eq. 4")

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        return self.emit(sicr_per_query(pos, self.params.get("version", "code")))


SICR = register_measure(_SICR())


class _InfoSearch_pMRR(_InfoSearchMeasure):
    """InfoSearch's p-MRR: FollowIR's per-document rank change of the negatives, og run → changed run."""
    __name__ = "InfoSearch_pMRR"
    NEEDS_REVERSED = False
    SUPPORTED_PARAMS = {"ties": _TIES_INPUT}

    def paired_impl(self, qrels, run, cache):
        neg = self.table(qrels, run, cache).negative
        return self.emit_mean(neg["qid"], pmrr_values(neg["ori_rank"], neg["ins_rank"]))


InfoSearch_pMRR = register_measure(_InfoSearch_pMRR())


class _GoldRank(_InfoSearchMeasure):
    """Mean 1-based rank of the gold documents in one variant's run (InfoSearch's R_ori/R_ins/R_rev)."""
    __name__ = "GoldRank"
    SUPPORTED_PARAMS = {
        "run": measures.ParamInfo(dtype=str, choices=list(VARIANTS), default="og", desc="which variant's run"),
        "ties": _TIES_INPUT,
    }

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        col = {"og": "ori_rank", "changed": "ins_rank", "reversed": "rev_rank"}[self.params.get("run", "og")]
        return self.emit_mean(pos["qid"], pos[col].to_numpy(dtype="float64"))


GoldRank = register_measure(_GoldRank())


__all__: List[str] = ["infosearch_partition", "infosearch_eval", "wise", "sicr", "infosearch_pmrr",
                      "wise_values", "ideal_wise_values", "sicr_success", "RankTable", "WISE_VERSIONS", "SICR_VERSIONS"]
