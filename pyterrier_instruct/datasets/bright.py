"""BRIGHT layout (``xlangai/BRIGHT``; github xlang-ai/BRIGHT @ d99e8391 ``run.py``, ``retrievers.py``): full retrieval.

Parquet configs ``examples``, ``documents`` and ``long_documents`` (8 tasks), one split per task. Topics carry an empty
``instruction`` (set a per-task one with ``pti.SetInstruction``); qrels are the released ``gold_ids`` (``gold_ids_long``
in the long setting). ``excluded_ids`` are kept apart (``ds.excluded_ids()``): BRIGHT removes them from the query's
ranking before the cut-off, which ``ds.exclude()`` does as a system's last stage (:mod:`.exclusion`).
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
