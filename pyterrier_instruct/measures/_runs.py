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
    dup = df.duplicated(["qid", "docno"])
    if dup.any():
        bad = df[dup].iloc[0]
        raise ValueError(f"{name} lists docno {bad.docno!r} more than once for qid {bad.qid!r}")
    return df, present


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


def ranked(run: pd.DataFrame, ties: str) -> pd.DataFrame:
    """Adds 1-based ``rank`` and per-query length ``n`` to a normalised run frame.

    ``ties='docno'``: score descending, then docno descending by code point (trec_eval, mteb ≥ 2.19.5).
    ``ties='input'``: stable sort on score only, tied documents in run order (mteb 1.7, InfoSearch).
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    df = run.copy()
    df["_pos"] = np.arange(len(df))
    if ties == "docno":
        df = df.sort_values(["qid", "score", "docno"], ascending=[True, False, False], kind="stable")
    else:
        df = df.sort_values(["qid", "score", "_pos"], ascending=[True, False, True], kind="stable")
    grouped = df.groupby("qid", sort=False)
    df["rank"] = grouped.cumcount().to_numpy() + 1
    df["n"] = grouped["docno"].transform("size").to_numpy()
    return df.drop(columns="_pos")


def ranks_of(docs: pd.DataFrame, run: pd.DataFrame, present: Set[str], ties: str) -> np.ndarray:
    """The 1-based rank of each (qid, docno) row of ``docs`` in ``run``; a missing doc gets n_q + 1.

    Every qid of ``docs`` must be in ``present`` (callers drop the others first).
    """
    r = ranked(run, ties)
    merged = docs[["qid", "docno"]].merge(r[["qid", "docno", "rank"]], on=["qid", "docno"], how="left")
    lengths = r.groupby("qid", sort=False)["n"].first()
    n = merged["qid"].map(lengths).fillna(0).to_numpy()
    return np.where(merged["rank"].isna(), n + 1, merged["rank"].to_numpy()).astype("float64")
