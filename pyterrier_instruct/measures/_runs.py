"""Shared input handling for the paired measures: runs and qrels as frames, ids, checks, ranks with ties.

Runs are ``qid, docno, score`` frames or ``{qid: {docno: score}}`` dicts (qrels alike with ``label``); a dict can hold
a query with an empty run, so the normalised form is (frame, present qids). Ids are strings (``10.0`` → ``"10"``,
:func:`id_strings`); a run lists each (qid, docno) once (:func:`check_unique`); a run sharing no docno with its qrels
is named in a warning (:func:`warn_unmatched`).
"""
from __future__ import annotations

import warnings
from typing import Mapping, Sequence, Set, Tuple, Union

import numpy as np
import pandas as pd

from .._experiment_context import user_stacklevel
from ..instructions import split_qids

TIES = ("docno", "input")

RunLike = Union[pd.DataFrame, Mapping[str, Mapping[str, float]]]
QrelsLike = Union[pd.DataFrame, Mapping[str, Mapping[str, int]]]

#: How many offending ids an error or warning lists before giving the count.
SHOWN = 5

_SAFE_INT = 2.0 ** 53  # integral floats below this are exact integers


def id_strings(values) -> np.ndarray:
    """Ids as an object array of ``str``; floats with integral values lose their ``.0`` (``10.0`` → ``"10"``)."""
    s = values if isinstance(values, pd.Series) else pd.Series(values, dtype=None if len(values) else object)
    if pd.api.types.is_float_dtype(s.dtype):
        x = s.to_numpy(dtype="float64")
        out = x.astype(str).astype(object)
        integral = np.isfinite(x) & (np.abs(x) < _SAFE_INT) & (x == np.floor(x))
        out[integral] = x[integral].astype(np.int64).astype(str).astype(object)
        return out
    if pd.api.types.is_object_dtype(s.dtype) and pd.api.types.infer_dtype(s, skipna=False) not in ("string", "empty"):
        return np.array([_id_string(v) for v in s.to_numpy(dtype=object)], dtype=object)
    return s.astype(str).to_numpy(dtype=object)


def _id_string(value) -> str:
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and abs(value) < _SAFE_INT \
            and float(value).is_integer():
        return str(int(value))
    return str(value)


def _listing(items: Sequence, total: int) -> str:
    shown = ", ".join(repr(tuple(i)) if isinstance(i, (tuple, list)) else repr(i) for i in items[:SHOWN])
    return shown + (f" and {total - SHOWN} more" if total > SHOWN else "")


def check_unique(frame: pd.DataFrame, name: str = "run") -> None:
    """Raises ``ValueError`` naming the (qid, docno) pairs that ``frame`` lists more than once."""
    dup = frame.duplicated(["qid", "docno"])
    if not dup.any():
        return
    pairs = frame.loc[dup, ["qid", "docno"]].drop_duplicates()
    listed = [(str(q), str(d)) for q, d in pairs.itertuples(index=False)]
    raise ValueError(f"{name} lists {len(listed)} (qid, docno) pair(s) more than once: "
                     f"{_listing(listed, len(listed))}; a ranking holds each document once per query: keep one row per "
                     f"pair, e.g. {name}.drop_duplicates(['qid', 'docno']) (sort by score first to keep the best)")


def warn_unmatched(run: pd.DataFrame, qrels: pd.DataFrame, what: str) -> None:
    """Warns, naming the queries, when a run shares no docno with its qrels (ids compared as strings).

    Checked per variant (the ``-og``, ``-changed``, ``-reversed`` queries, and the queries without a suffix), so a
    variant's run made with other ids is caught; a query missing its judged documents while others of its variant
    have theirs is a retrieval result, not an id mismatch, and passes.
    """
    common = pd.Index(pd.unique(run["qid"])).intersection(pd.Index(pd.unique(qrels["qid"])))
    if len(common) == 0:
        return
    judged = pd.MultiIndex.from_frame(qrels[["qid", "docno"]])
    hit = pd.MultiIndex.from_frame(run[["qid", "docno"]]).isin(judged)
    matched = set(run["qid"].to_numpy()[hit])
    variant = split_qids(pd.Series(common, dtype=object))[1].fillna("").to_numpy()
    fine = {v for q, v in zip(common, variant) if q in matched}  # variants with at least one matching query
    bad = [q for q, v in zip(common, variant) if v not in fine]
    if not bad:
        return
    example = run.loc[run["qid"] == bad[0], "docno"].iloc[:2].tolist()
    judged_example = qrels.loc[qrels["qid"] == bad[0], "docno"].iloc[:2].tolist()
    warnings.warn(f"{what}: for {len(bad)} of {len(common)} queries the run shares no docno with the qrels, so they "
                  f"score as if nothing relevant was retrieved: {_listing(bad, len(bad))} (query {bad[0]!r}: run "
                  f"{example}, qrels {judged_example}); docnos are compared as strings: convert both to the same ids "
                  "(e.g. no '10.0' for '10', no prefix)", UserWarning, stacklevel=user_stacklevel())


def normalised(frame: pd.DataFrame, kind: str, name: str) -> pd.DataFrame:
    """A copy of a ``qid, docno, score`` (``kind='run'``) or ``qid, docno, label`` (``'qrels'``) frame, other columns
    kept: ids as strings (:func:`id_strings`), scores float64 (no NaN), labels int64; a run's pairs unique."""
    value = "score" if kind == "run" else "label"
    missing = [c for c in ("qid", "docno", value) if c not in frame.columns]
    if missing:
        raise KeyError(f"{name} lacks column(s) {missing}; found {list(frame.columns)}")
    out = frame.copy()
    out["qid"], out["docno"] = id_strings(frame["qid"]), id_strings(frame["docno"])
    if kind == "qrels":
        out["label"] = pd.to_numeric(frame["label"]).astype("int64").to_numpy()
        return out
    out["score"] = pd.to_numeric(frame["score"], errors="raise").astype("float64").to_numpy()
    if out["score"].isna().any():
        bad = out[out["score"].isna()].iloc[0]
        raise ValueError(f"{name} has a NaN score (qid {bad.qid!r}, docno {bad.docno!r})")
    check_unique(out, name)
    return out


def run_frame(run: RunLike, name: str = "run") -> Tuple[pd.DataFrame, Set[str]]:
    """(``qid, docno, score`` frame in input order, set of qids present) for a run or run dict, checked as
    :func:`normalised`."""
    if isinstance(run, pd.DataFrame):
        df = normalised(run, "run", name)[["qid", "docno", "score"]].reset_index(drop=True)
        return df, set(df["qid"].unique())
    if isinstance(run, Mapping):
        qids, docnos, scores = [], [], []
        for qid, docs in run.items():
            for docno, score in docs.items():
                qids.append(qid)
                docnos.append(docno)
                scores.append(float(score))
        df = normalised(pd.DataFrame({"qid": pd.Series(qids, dtype=object), "docno": pd.Series(docnos, dtype=object),
                                      "score": np.asarray(scores, dtype="float64")}), "run", name)
        return df, {_id_string(q) for q in run}
    raise TypeError(f"{name} must be a DataFrame or a {{qid: {{docno: score}}}} dict, got {type(run).__name__}")


def qrels_frame(qrels: QrelsLike, name: str = "qrels") -> pd.DataFrame:
    """A ``qid, docno, label`` frame (ids as :func:`id_strings`, labels int64) from a qrels frame or dict."""
    if isinstance(qrels, pd.DataFrame):
        return normalised(qrels, "qrels", name)[["qid", "docno", "label"]].reset_index(drop=True)
    if isinstance(qrels, Mapping):
        rows = [(_id_string(q), _id_string(d), int(lab)) for q, docs in qrels.items() for d, lab in docs.items()]
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
    changed_qids = set(ch["qid"])
    absent = [q for q in pd.unique(og["qid"]) if q not in changed_qids]
    if absent:
        raise ValueError(f"{len(absent)} queries have og qrels but no changed qrels at all: "
                         f"{_listing(absent, len(absent))}; the og and changed variants of a query must be evaluated "
                         "together. With pt.Experiment(batch_size=...) (or a GridSearch batch_size) a batch held the "
                         "-og topic of such a query without its -changed topic: drop batch_size. Otherwise add the "
                         "changed judgements ('<qid>-changed' rows, see pyterrier_instruct.paired_qrels)")
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
    dcode, duniq = pd.factorize(np.concatenate([run["docno"].to_numpy(dtype=object),
                                                docs["docno"].to_numpy(dtype=object)]))
    key = qcode.astype(np.int64) * max(len(duniq), 1) + dcode
    run_keys = pd.Index(key[:n])
    if not run_keys.is_unique:
        check_unique(run, name)
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
