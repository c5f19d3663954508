"""p-MRR (FollowIR): the pairwise change in reciprocal rank of the documents whose label changed.

Semantics (FollowIR eq. 1, reproduced against mteb 2.26.24 and 1.7.64):

- changed docs C_q: the og-judged documents whose changed label differs (any difference), or an
  explicit list (mteb v2 ``qrel_diff``; duplicates count twice, unjudged docs allowed);
- ranks over the whole run (no cut-off); a missing document has rank n_q + 1;
- per document ``n/o - 1`` if the document stayed or moved up (n <= o), else ``1 - o/n``;
- mean per query, then mean over queries; queries without changed docs are excluded, queries
  missing from a run are skipped with a warning; no usable query at all is a ValueError.
"""
from __future__ import annotations

import warnings
from typing import Dict, Optional, Tuple, Union

import numpy as np
import pandas as pd
from ir_measures import measures

from .._experiment_context import active, user_stacklevel
from ..instructions import paired_qid
from ._provider import EMPTY_RUN, MissingVariantWarning, PairedMeasure, register_measure, unpaired
from ._runs import QrelsLike, RunLike, label_pairs, qrels_frame, ranks_of, run_frame, warn_unmatched

ChangedDocs = Union[pd.DataFrame, Dict[str, list]]


def changed_docs(og_qrels: QrelsLike, changed_qrels: QrelsLike) -> pd.DataFrame:
    """The changed-document set (mteb 1.7 ``create_qrel_diff``) as a ``qid, docno`` frame.

    A document counts when its label in the changed qrels differs from its og label. Documents only
    in the changed qrels are ignored; an og-judged document missing from the changed qrels is an
    error, as in the reference.
    """
    pairs = label_pairs(og_qrels, changed_qrels)
    diff = pairs[pairs["label_og"] != pairs["label_changed"]]
    return diff[["qid", "docno"]].reset_index(drop=True)


def _changed_docs_frame(docs: ChangedDocs) -> Tuple[pd.DataFrame, list]:
    """(``qid, docno`` frame, the queries listed, including those listed with no document)."""
    if isinstance(docs, pd.DataFrame):
        missing = [c for c in ("qid", "docno") if c not in docs.columns]
        if missing:
            raise KeyError(f"changed_docs lacks column(s) {missing}; found {list(docs.columns)}")
        frame = pd.DataFrame({"qid": docs["qid"].astype(str).to_numpy(), "docno": docs["docno"].astype(str).to_numpy()})
        return frame, list(pd.unique(frame["qid"]))
    if isinstance(docs, dict):
        rows = [(str(q), str(d)) for q, ds in docs.items() for d in ds]
        return pd.DataFrame(rows, columns=["qid", "docno"], dtype=object), [str(q) for q in docs]
    raise TypeError(f"changed_docs must be a DataFrame or a {{qid: [docno, ...]}} dict, got {type(docs).__name__}")


def pmrr_per_doc(og_run: RunLike, changed_run: RunLike, changed: ChangedDocs, ties: str = "docno",
                 warn: bool = True) -> pd.DataFrame:
    """Per changed document: ``qid, docno, og_rank, new_rank, pmrr`` (queries missing from a run dropped)."""
    og, og_present = run_frame(og_run, "og_run")
    ch, ch_present = run_frame(changed_run, "changed_run")
    docs, listed = _changed_docs_frame(changed)
    if warn:
        for qid in listed:
            if qid not in og_present or qid not in ch_present:
                warnings.warn(f"p-MRR: query {qid!r} not found in the runs (og and changed); it is skipped",
                              stacklevel=user_stacklevel())
    usable = docs["qid"].isin(og_present) & docs["qid"].isin(ch_present)
    docs = docs[usable].reset_index(drop=True)
    o = ranks_of(docs, og, ties, "og_run")
    n = ranks_of(docs, ch, ties, "changed_run")
    return docs.assign(og_rank=o.astype("int64"), new_rank=n.astype("int64"), pmrr=pmrr_values(o, n))


def pmrr_values(og_rank: np.ndarray, new_rank: np.ndarray) -> np.ndarray:
    """The per-document p-MRR: ``n/o - 1`` if the document stayed or moved up, else ``1 - o/n``."""
    o = np.asarray(og_rank, dtype="float64")
    n = np.asarray(new_rank, dtype="float64")
    return np.where(n > o, 1.0 - o / n, n / o - 1.0)  # ranks are >= 1


def pmrr(og_run: RunLike, changed_run: RunLike, changed: Optional[ChangedDocs] = None, *,
         og_qrels: Optional[QrelsLike] = None, changed_qrels: Optional[QrelsLike] = None,
         ties: str = "docno", per_query: bool = False, warn: bool = True
         ) -> Union[float, Tuple[float, Dict[str, float]]]:
    """p-MRR of a changed-instruction run against the og-instruction run, raw in (-1, 1).

    Args:
        og_run: the run with the original instruction (frame ``qid, docno, score`` or dict).
        changed_run: the run with the changed instruction over the same candidates, same qids.
        changed: the changed documents (``qid, docno`` frame or ``{qid: [docno]}``, e.g. mteb's
            ``qrel_diff``); or give ``og_qrels`` and ``changed_qrels`` to derive them.
        ties: ``'docno'`` (default, current mteb and trec_eval) or ``'input'`` (run row order, mteb 1.7).
        per_query: also return ``{qid: value}`` for the queries that contributed.
        warn: warn about queries missing from a run, and (with qrels) about queries whose run shares no docno
            with their qrels.

    Returns:
        The dataset value, or ``(value, per_query_values)``.
    """
    if changed is None:
        if og_qrels is None or changed_qrels is None:
            raise ValueError("pmrr needs the changed documents: pass `changed` or both `og_qrels` and `changed_qrels`")
        changed = changed_docs(og_qrels, changed_qrels)
        if warn:
            og_run, _ = run_frame(og_run, "og_run")
            changed_run, _ = run_frame(changed_run, "changed_run")
            warn_unmatched(og_run, qrels_frame(og_qrels, "og_qrels"), "p-MRR (og run)")
            warn_unmatched(changed_run, qrels_frame(changed_qrels, "changed_qrels"), "p-MRR (changed run)")
    elif og_qrels is not None or changed_qrels is not None:
        raise ValueError("pmrr: pass either `changed` or `og_qrels`/`changed_qrels`, not both")
    docs = pmrr_per_doc(og_run, changed_run, changed, ties=ties, warn=warn)
    if len(docs) == 0:
        raise ValueError("p-MRR is undefined: no query has a changed document that is present in both runs")
    by_query = docs.groupby("qid", sort=False)["pmrr"].mean()
    value = float(by_query.mean())
    if per_query:
        return value, {str(q): float(v) for q, v in by_query.items()}
    return value


class _pMRR(PairedMeasure):
    """p-MRR (FollowIR): mean over base queries of the pairwise reciprocal-rank change of the
    documents whose label changed between the og and the changed qrels. Raw value in (-1, 1).

    .. cite.dblp:: journals/corr/abs-2403-15246
    """
    __name__ = "pMRR"
    COMPARES_VARIANTS = True
    PRETTY_NAME = "pairwise Mean Reciprocal Rank"
    SHORT_DESC = "Change in reciprocal rank of the documents whose relevance changed with the instruction."
    SUPPORTED_PARAMS = {
        "ties": measures.ParamInfo(dtype=str, choices=["docno", "input"], default="docno",
                                   desc="tie-break: docno descending (current mteb) or run row order (mteb 1.7)"),
    }

    def paired_impl(self, qrels: pd.DataFrame, run: pd.DataFrame, cache: dict):
        q, r = self.variants(qrels, run, cache)
        if "og" not in q or "changed" not in q:
            raise unpaired("pMRR", ("og", "changed"), q)
        diff = changed_docs(q["og"], q["changed"])
        og_run, ch_run = r.get("og", EMPTY_RUN), r.get("changed", EMPTY_RUN)
        with_docs = set(diff["qid"])
        missing = sorted(with_docs - (set(og_run["qid"]) & set(ch_run["qid"])))
        if missing:
            context = active()
            system, batch_size = (context.system, context.batch_size) if context else (None, None)
            message = (f"pMRR{f' of {system!r}' if system else ''}: {len(missing)} base queries are skipped because "
                       f"the run has no rows for their -og or -changed topic (the system returned nothing for it) "
                       f"({missing[:5]}{'...' if len(missing) > 5 else ''})")
            if batch_size is not None:
                message += (f"; pt.Experiment(batch_size={batch_size}) must also keep the variants of a query in "
                            "one batch")
            if context is None or context.first_time(message):
                warnings.warn(message, MissingVariantWarning, stacklevel=user_stacklevel())
        without = sorted(set(q["og"]["qid"]) - with_docs)
        if without:
            warnings.warn(f"pMRR: {len(without)} queries have no changed documents and are excluded "
                          f"({without[:5]}{'...' if len(without) > 5 else ''})", stacklevel=user_stacklevel())
        docs = pmrr_per_doc(og_run, ch_run, diff, ties=self.params.get("ties", "docno"), warn=False)
        if len(docs) == 0:
            raise ValueError("pMRR is undefined: no query has a changed document with both its -og and -changed run")
        for base, value in docs.groupby("qid", sort=False)["pmrr"].mean().items():
            yield paired_qid(base, "og"), float(value)


pMRR = register_measure(_pMRR())
