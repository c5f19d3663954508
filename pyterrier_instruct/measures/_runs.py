"""Shared input handling for the rank-based paired measures: runs and qrels as frames, ranks with ties.

Runs are PyTerrier frames (``qid, docno, score``) or mteb-style ``{qid: {docno: score}}`` dicts;
qrels are ``qid, docno, label`` frames or ``{qid: {docno: label}}`` dicts. A dict can say that a query
is present with an empty run, which a frame cannot; so the normalised form is (frame, present qids).
"""
from __future__ import annotations

from typing import Mapping, Set, Tuple, Union

import numpy as np
import pandas as pd

TIES = ("docno", "input")

RunLike = Union[pd.DataFrame, Mapping[str, Mapping[str, float]]]
QrelsLike = Union[pd.DataFrame, Mapping[str, Mapping[str, int]]]


def run_frame(run: RunLike, name: str = "run") -> Tuple[pd.DataFrame, Set[str]]:
    """(``qid, docno, score`` frame in input order, set of qids present) for a run or run dict."""
    if isinstance(run, pd.DataFrame):
        missing = [c for c in ("qid", "docno", "score") if c not in run.columns]
        if missing:
            raise KeyError(f"{name} lacks column(s) {missing}; found {list(run.columns)}")
        df = pd.DataFrame({
            "qid": run["qid"].astype(str).to_numpy(),
            "docno": run["docno"].astype(str).to_numpy(),
            "score": pd.to_numeric(run["score"], errors="raise").astype("float64").to_numpy(),
        })
        present = set(df["qid"].unique())
    elif isinstance(run, Mapping):
        qids, docnos, scores = [], [], []
        for qid, docs in run.items():
            for docno, score in docs.items():
                qids.append(str(qid))
                docnos.append(str(docno))
                scores.append(float(score))
        df = pd.DataFrame({"qid": qids, "docno": docnos, "score": np.asarray(scores, dtype="float64")})
        present = {str(q) for q in run}
    else:
        raise TypeError(f"{name} must be a DataFrame or a {{qid: {{docno: score}}}} dict, got {type(run).__name__}")
    if df["score"].isna().any():
        bad = df[df["score"].isna()].iloc[0]
        raise ValueError(f"{name} has a NaN score (qid {bad.qid!r}, docno {bad.docno!r})")
    return df, present  # duplicate (qid, docno) rows are detected on integer keys by ranks_of


def qrels_frame(qrels: QrelsLike, name: str = "qrels") -> pd.DataFrame:
    """A ``qid, docno, label`` frame (labels int64) from a qrels frame or dict."""
    if isinstance(qrels, pd.DataFrame):
        missing = [c for c in ("qid", "docno", "label") if c not in qrels.columns]
        if missing:
            raise KeyError(f"{name} lacks column(s) {missing}; found {list(qrels.columns)}")
        return pd.DataFrame({
            "qid": qrels["qid"].astype(str).to_numpy(),
            "docno": qrels["docno"].astype(str).to_numpy(),
            "label": pd.to_numeric(qrels["label"]).astype("int64").to_numpy(),
        })
    if isinstance(qrels, Mapping):
        rows = [(str(q), str(d), int(lab)) for q, docs in qrels.items() for d, lab in docs.items()]
        return pd.DataFrame(rows, columns=["qid", "docno", "label"]).astype({"label": "int64"})
    raise TypeError(f"{name} must be a DataFrame or a {{qid: {{docno: label}}}} dict, got {type(qrels).__name__}")


def label_pairs(og_qrels: QrelsLike, changed_qrels: QrelsLike) -> pd.DataFrame:
    """``qid, docno, label_og, label_changed`` for every og-judged document, in og-qrels order.

    Documents judged only in the changed qrels are ignored; an og-judged document missing from the
    changed qrels is an error (the reference raises KeyError), as is a document judged twice.
    """
    og = qrels_frame(og_qrels, "og_qrels")
    ch = qrels_frame(changed_qrels, "changed_qrels")
    for frame, name in ((og, "og_qrels"), (ch, "changed_qrels")):
        dup = frame.duplicated(["qid", "docno"])
        if dup.any():
            bad = frame[dup].iloc[0]
            raise ValueError(f"{name} judge docno {bad.docno!r} twice for qid {bad.qid!r}")
    merged = og.merge(ch, on=["qid", "docno"], how="left", suffixes=("_og", "_changed"))
    missing = merged["label_changed"].isna()
    if missing.any():
        bad = merged[missing].iloc[0]
        raise ValueError(f"document {bad.docno!r} of query {bad.qid!r} is judged in the og qrels but missing "
                         f"from the changed qrels; both qrels must judge the same documents")
    return merged.astype({"label_changed": "int64"})


def per_query_values(measure, qrels: pd.DataFrame, run: pd.DataFrame) -> pd.Series:
    """``{qid: value}`` of one standard ir_measures measure on ``qid, docno, label`` / ``qid, docno, score``
    frames (qrels queries absent from the run are not returned)."""
    import ir_measures
    values = {m.query_id: m.value for m in ir_measures.iter_calc(
        [measure], qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}),
        run.rename(columns={"qid": "query_id", "docno": "doc_id"}))}
    return pd.Series(values, dtype="float64")


def ranks_of(docs: pd.DataFrame, run: pd.DataFrame, ties: str, name: str = "run") -> np.ndarray:
    """The 1-based rank of each (qid, docno) row of ``docs`` in ``run``; a missing doc gets n_q + 1."""
    return ranks_and_scores(docs, run, ties, name)[0]


def ranks_and_scores(docs: pd.DataFrame, run: pd.DataFrame, ties: str, name: str = "run"
                     ) -> Tuple[np.ndarray, np.ndarray]:
    """(1-based rank, score) of each (qid, docno) row of ``docs`` in ``run``.

    A missing document gets rank n_q + 1 and score 0.0 (the reference rule: mteb's p-MRR and InfoSearch ``utils.py``).

    Only the asked documents are ranked, without sorting the run by docno: rank = 1 + (rows of the
    query with a higher score) + (tied rows before it: docno greater, or earlier row for
    ``ties='input'``). ``ties='docno'`` is score descending then docno descending by code point
    (trec_eval, mteb >= 2.19.5); ``ties='input'`` is a stable sort on score (mteb 1.7, InfoSearch).
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    n = len(run)
    qcode, quniq = pd.factorize(np.concatenate([run["qid"].to_numpy(dtype=object), docs["qid"].to_numpy(dtype=object)]))
    dcode, duniq = pd.factorize(np.concatenate([run["docno"].to_numpy(dtype=object), docs["docno"].to_numpy(dtype=object)]))
    key = qcode.astype(np.int64) * max(len(duniq), 1) + dcode
    run_keys = pd.Index(key[:n])
    if not run_keys.is_unique:
        bad = run[run_keys.duplicated()].iloc[0]
        raise ValueError(f"{name} lists docno {bad.docno!r} more than once for qid {bad.qid!r}")
    n_per_q = np.bincount(qcode[:n], minlength=len(quniq))
    row = run_keys.get_indexer(key[n:])
    ranks = n_per_q[qcode[n:]] + 1.0  # a missing document: n_q + 1
    found = row >= 0
    scores = np.zeros(len(row), dtype="float64")
    if not found.any():
        return ranks, scores
    scores[found] = run["score"].to_numpy(dtype="float64")[row[found]]
    score_code = np.unique(run["score"].to_numpy(dtype="float64"), return_inverse=True)[1].astype(np.int64)
    group = qcode[:n].astype(np.int64) * (int(score_code.max()) + 1) + score_code  # (query, score) ascending
    order = np.lexsort((np.arange(n), group))
    sorted_group = group[order]
    r = row[found]
    g = group[r]
    q_end = np.cumsum(n_per_q)[qcode[r]]  # one past the query's last row in sorted order
    higher = q_end - np.searchsorted(sorted_group, g, side="right")
    if ties == "input":
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        tied_before = position[r] - np.searchsorted(sorted_group, g, side="left")
    else:
        tied_before = _tied_docno_greater(run["docno"].to_numpy(dtype=object), group, r)
    ranks[found] = higher + tied_before + 1
    return ranks, scores


def _tied_docno_greater(docno: np.ndarray, group: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each row in ``rows``: how many rows share its (query, score) and have a greater docno."""
    tied = np.flatnonzero(np.isin(group, group[rows]))  # only the groups holding an asked document
    sub = pd.DataFrame({"g": group[tied], "docno": docno[tied]}, index=tied)
    before = sub.groupby("g", sort=False)["docno"].rank(method="first", ascending=False) - 1
    return before.reindex(rows).to_numpy(dtype=np.int64)
