"""BRIGHT layout (``xlangai/BRIGHT``; BRIGHT repository ``run.py`` and ``retrievers.py`` at
github xlang-ai/BRIGHT @ d99e8391). Full retrieval over the task's documents: no candidate lists.

Parquet configs, one split per task::

    examples/<task>-00000-of-00001.parquet        query, reasoning, id, excluded_ids, gold_ids_long, gold_ids,
                                                  gold_answer
    documents/<task>-00000-of-00001.parquet       id, content
    long_documents/<task>-00000-of-00001.parquet  id, content   (8 tasks)

Topics: ``qid`` = ``id``, ``query``, an empty ``instruction`` (BRIGHT has none; models get a per-task template, set it
with ``pti.SetInstruction``), ``base_qid`` = ``qid``, ``variant`` = ``''``. Qrels: label 1 for each ``gold_ids``
(``gold_ids_long`` in the long setting) document, the released gold ids only. The ``excluded_ids`` (``"N/A"`` = none)
are kept apart (``Benchmark.excluded``, ``ds.excluded_ids()``): BRIGHT's evaluation removes a query's excluded documents
from that query's ranking before the cut-off (``retrievers.py`` ``get_scores``: ``cur_scores.pop(did)``), which
``ds.exclude()`` does as the last stage of a system (:mod:`.exclusion`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._bench import Benchmark
from ._files import DataError, check_unique
from .docstore import DocStore

NONE = "N/A"  # BRIGHT's excluded_ids placeholder


def _config(path: Path, config: str, task: str) -> Path:
    """The folder of ``config``, checked to hold ``task``'s shards (``<config>/<task>-*.parquet``)."""
    folder = path / config
    files = sorted(folder.glob(f"{task}-*.parquet")) if folder.is_dir() else []
    if not files:
        raise DataError(f"missing BRIGHT file {folder / (task + '-00000-of-00001.parquet')} (config {config!r}, "
                        f"split {task!r})")
    return folder


def _ids(value, qid: str, column: str, where: str):
    if value is None or isinstance(value, str):
        raise DataError(f"{where}: {column} of query {qid!r} must be a list of ids, got {value!r}")
    return [str(v) for v in value]


def read(path: Path, task: str, long: bool = False) -> Benchmark:
    path = Path(path)
    efolder = _config(path, "examples", task)
    files = sorted(efolder.glob(f"{task}-*.parquet"))
    gold_col = "gold_ids_long" if long else "gold_ids"
    where = str(files[0])
    import pyarrow.parquet as pq
    ex = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    missing = [c for c in ("id", "query", "excluded_ids", gold_col) if c not in ex.columns]
    if missing:
        raise DataError(f"{where}: missing column(s) {missing}; found {list(ex.columns)}")
    qids = ex["id"].astype(str)
    check_unique(qids, where, "query id")
    rows, removed = [], []
    for qid, gold, excluded in zip(qids, ex[gold_col], ex["excluded_ids"]):
        gold = _ids(gold, qid, gold_col, where)
        excluded = [e for e in _ids(excluded, qid, "excluded_ids", where) if e != NONE]
        clash = sorted(set(gold) & set(excluded))
        if clash:  # BRIGHT run.py asserts this
            raise DataError(f"{where}: query {qid!r} lists {clash[0]!r} both in {gold_col} and in excluded_ids")
        rows += [(qid, d, 1) for d in dict.fromkeys(gold)]
        removed += [(qid, d) for d in dict.fromkeys(excluded)]
    qrels = pd.DataFrame(rows, columns=["qid", "docno", "label"])
    qrels = qrels.astype({"qid": object, "docno": object, "label": "int64"})
    qrels = qrels.assign(base_qid=qrels["qid"], variant=pd.Series([""] * len(qrels), dtype=object))
    topics = pd.DataFrame({"qid": qids.astype(object), "query": ex["query"].astype(object)})
    topics = topics.assign(instruction=pd.Series([""] * len(topics), dtype=object), base_qid=topics["qid"],
                           variant=pd.Series([""] * len(topics), dtype=object))
    dfolder = _config(path, "long_documents" if long else "documents", task)
    corpus = DocStore(dfolder, text_field="content", pattern=f"{task}-*.parquet")
    notes = {"layout": "bright", "task": task, "setting": "long" if long else "standard", "qrels_from": gold_col,
             "excluded_pairs": len(removed)}
    excluded = pd.DataFrame(removed, columns=["qid", "docno"], dtype=object)
    return Benchmark(topics=topics, qrels=qrels, corpus=corpus, variants=(), excluded=excluded, notes=notes)


__all__ = ["read", "NONE"]
