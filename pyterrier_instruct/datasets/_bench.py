"""The in-memory form every layout reader produces, and the consistency checks shared by the readers.

A :class:`Benchmark` holds the evaluated query instances (``qid, query, instruction, base_qid, variant``),
the qrels of each instance (``qid, docno, label, base_qid, variant``), the fixed candidate lists in file
order (``qid, docno``; ``None`` for full-retrieval benchmarks), the FollowIR changed-document lists
(``qid`` = base qid, ``docno``), the excluded documents of each query (BRIGHT; ``qid, docno``) and the corpus.
No pyterrier import here: ir_datasets uses it too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Sequence, Tuple

import pandas as pd

from ._files import DataError
from .docstore import DocStore

#: Dataset layouts: ``{registry family: reader(entry, folder, qrels_mapping) -> Benchmark}``, filled by :func:`layout`
#: where each reader is defined (``readers.read_benchmark`` dispatches on it).
LAYOUTS: Dict[str, Callable] = {}


def layout(*families: str):
    """Registers the decorated ``reader(entry, folder, qrels_mapping) -> Benchmark`` for the registry ``families``
    (``Entry.family``) it reads, in the reader's own module."""
    def register(reader):
        for family in families:
            LAYOUTS[family] = reader
        return reader
    return register


#: The document fields a benchmark serves (``text_loader``/``candidates`` fields).
FIELDS = ("title", "text")


@dataclass
class Benchmark:
    topics: pd.DataFrame
    qrels: pd.DataFrame
    corpus: DocStore
    variants: Tuple[str, ...]
    candidates: Optional[pd.DataFrame] = None
    changed: Optional[pd.DataFrame] = None
    base_topics: Optional[pd.DataFrame] = None
    #: documents removed from a query's ranking before scoring (BRIGHT's ``excluded_ids``): ``qid, docno``
    excluded: Optional[pd.DataFrame] = None
    #: the benchmark's own scoring of a run (``ds.official_evaluate``): ``run -> {measure: value}``; None = none
    official: Optional[Callable[[pd.DataFrame], Dict[str, float]]] = None
    #: judgements beyond the qrels, by name (FreshStack ``nuggets``: ``nugget_id, qid, docno, label``)
    judgements: Dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: Dict[str, object] = field(default_factory=dict)


def expand_candidates(cands: pd.DataFrame, topics: pd.DataFrame) -> pd.DataFrame:
    """Candidates keyed by base qid (``qid, docno`` in file order) → one list per topic qid with that base."""
    keyed = topics[["qid", "base_qid"]].merge(cands.rename(columns={"qid": "base_qid"}), on="base_qid", sort=False)
    return in_topic_order(keyed.drop(columns="base_qid"), topics)


def in_topic_order(frame: pd.DataFrame, topics: pd.DataFrame) -> pd.DataFrame:
    """``frame`` grouped by qid in the order of the topics, each query's rows in their own (file) order."""
    order = pd.Categorical(frame["qid"], categories=pd.unique(topics["qid"]), ordered=True)
    return frame.assign(_o=order).sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)


def candidates_from_scores(scores: dict, where: str) -> pd.DataFrame:
    """``empty_scores.json`` (``{qid: {docid: score}}``) → ``qid, docno`` after a stable sort by score
    (descending), i.e. file order when all scores are equal, as the reference rerankers take them."""
    if not isinstance(scores, dict):
        raise DataError(f"{where}: expected {{qid: {{docid: score}}}}, got {type(scores).__name__}")
    rows = []
    for qid, docs in scores.items():
        if not isinstance(docs, dict):
            raise DataError(f"{where}: the candidates of query {qid!r} must be {{docid: score}}, got "
                            f"{type(docs).__name__}")
        ranked = sorted(docs.items(), key=lambda kv: -float(kv[1]))
        rows.extend((str(qid), str(d)) for d, _ in ranked)
    return pd.DataFrame(rows, columns=["qid", "docno"], dtype=object)


def require_candidates(cands: pd.DataFrame, where: str) -> None:
    """A candidate file with no rows is an error at load time (every query would otherwise have no candidates)."""
    if len(cands) == 0:
        raise DataError(f"{where} is empty: it lists no candidate documents; the file is incomplete (an interrupted "
                        "download or copy): fetch the dataset again")


def explode_lists(df: pd.DataFrame, id_col: str, list_col: str, where: str) -> pd.DataFrame:
    """mteb ``query-id, corpus-ids`` rows → ``qid, docno`` in list order."""
    qids, docnos = [], []
    for qid, docs in zip(df[id_col], df[list_col]):
        if docs is None or isinstance(docs, str):
            raise DataError(f"{where}: {list_col} of query {qid!r} must be a list of ids, got {docs!r}")
        docs = [str(d) for d in docs]
        qids.extend([str(qid)] * len(docs))
        docnos.extend(docs)
    return pd.DataFrame({"qid": pd.Series(qids, dtype=object), "docno": pd.Series(docnos, dtype=object)})


def require_instructions(frame: pd.DataFrame, columns: Sequence[str], where: str, id_col: str = "qid") -> None:
    for c in columns:
        empty = frame[c].fillna("").astype(str).str.strip() == ""
        if empty.any():
            raise DataError(f"{where}: query {frame[id_col][empty].iloc[0]!r} has an empty {c}"
                            f" ({int(empty.sum())} in all); this layout requires it")


def check_known_queries(qrels: pd.DataFrame, known: Sequence[str], where: str, topics_where: str) -> None:
    unknown = ~qrels["qid"].isin(set(known))
    if unknown.any():
        raise DataError(f"{where}: qrels row for query {qrels['qid'][unknown].iloc[0]!r}, which is not in "
                        f"{topics_where} ({int(unknown.sum())} such rows)")


def check_same_judged(og: pd.DataFrame, other: pd.DataFrame, og_where: str, other_where: str) -> None:
    """Every (query, document) judged in the og qrels must be judged in the other variant's qrels."""
    merged = og[["qid", "docno"]].merge(other[["qid", "docno"]], how="left", on=["qid", "docno"], indicator=True)
    absent = merged["_merge"] == "left_only"
    if absent.any():
        row = merged[absent].iloc[0]
        raise DataError(f"{other_where}: document {row.docno!r} of query {row.qid!r} is judged in {og_where} but "
                        f"absent here ({int(absent.sum())} such pairs); og and changed qrels must judge the same docs")


def check_og_has_more_relevant(og: pd.DataFrame, changed: pd.DataFrame, og_where: str,
                               changed_where: str) -> Dict[str, float]:
    """FollowIR's loader assertion: the changed instruction only removes relevant documents (FollowIR paper §3, Table
    1), so per query the og qrels hold at least as many relevant documents as the changed ones, and more in all. Returns
    the mean relevant documents per query of each side."""
    n_og = og[og["label"] > 0].groupby("qid").size()
    n_ch = changed[changed["label"] > 0].groupby("qid").size()
    qids = sorted(set(n_og.index) | set(n_ch.index))
    n_og, n_ch = n_og.reindex(qids, fill_value=0), n_ch.reindex(qids, fill_value=0)
    worse = n_ch > n_og
    if worse.any() or (len(qids) and n_og.sum() <= n_ch.sum()):
        q = worse.idxmax() if worse.any() else qids[0]
        raise DataError(
            f"{og_where} vs {changed_where}: the og qrels must have more relevant documents per query than the changed "
            f"qrels (the changed instruction only narrows), but query {q!r} has {n_og[q]} og vs {n_ch[q]} changed "
            f"({int(worse.sum())} queries like this; totals {n_og.sum()} vs {n_ch.sum()}). The two qrels configs look "
            "swapped (mteb 1.7 reads them the other way round): load with qrels_mapping='swapped' if this release "
            "names them the other way round")
    return {"og_relevant_per_query": float(n_og.mean()) if qids else 0.0,
            "changed_relevant_per_query": float(n_ch.mean()) if qids else 0.0}


def select_variant(frame: pd.DataFrame, variant: Optional[str], variants: Sequence[str], aliases: Dict[str, str],
                   name: str) -> pd.DataFrame:
    """The rows of ``variant`` (or every row for ``None`` and the all-variants names)."""
    if variant is None or variant in ("paired", "triple", "all"):
        return frame
    v = aliases.get(str(variant), str(variant))
    if v not in variants:
        offered = list(variants) + [a for a, t in aliases.items() if t in variants] + ["paired"]
        raise ValueError(f"{name} has no variant {variant!r}; offered: {offered}")
    return frame[frame["variant"] == v].reset_index(drop=True)


ALIASES: Dict[str, str] = {"ori": "og", "ins": "changed", "rev": "reversed", **{f"level{i}": str(i) for i in range(4)}}
