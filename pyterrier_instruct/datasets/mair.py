"""MAIR layout (``MAIR-Bench/MAIR-Queries`` + ``MAIR-Bench/MAIR-Docs``; github sunnweiwei/MAIR ``mair.py``): full
retrieval, from one folder holding both (``<Task>/queries.jsonl``, ``<Task>/docs.jsonl``).

Topics carry each row's own ``instruction``; qrels are graded (``labels``: ``str(id) → int(score)``). Tasks split into
``<split>_queries.jsonl`` (IFEval, MISeD) have a corpus per split and are refused with the list of splits.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._bench import Benchmark
from ._files import DataError, check_unique, qrels_frame, read_jsonl
from .docstore import DocStore


def read(path: Path, task: str) -> Benchmark:
    path = Path(path)
    qfile, dfile = path / "queries.jsonl", path / "docs.jsonl"
    if not qfile.is_file():
        splits = sorted(p.name[:-len("_queries.jsonl")] for p in path.glob("*_queries.jsonl"))
        if splits:
            raise DataError(f"{path}: MAIR task {task} has several query splits ({', '.join(splits)}), each with its "
                            "own corpus; only single-split tasks (queries.jsonl + docs.jsonl) are supported")
        raise DataError(f"missing file {qfile} (MAIR-Bench/MAIR-Queries, task {task}): download the task's folder of "
                        "MAIR-Bench/MAIR-Queries and of MAIR-Bench/MAIR-Docs into the same folder")
    if not dfile.is_file():
        raise DataError(f"missing file {dfile}: {path} holds MAIR-Bench/MAIR-Queries' {task}/ but not "
                        f"MAIR-Bench/MAIR-Docs' {task}/docs.jsonl; download that repository's {task}/ folder into the "
                        "same folder")
    rows = read_jsonl(qfile, ["qid", "instruction", "query", "labels"])
    qids = pd.Series([str(r["qid"]) for r in rows], dtype=object)
    check_unique(qids, str(qfile), "qid")
    topics = pd.DataFrame({"qid": qids, "query": pd.Series([r["query"] for r in rows], dtype=object),
                           "instruction": pd.Series([r["instruction"] or "" for r in rows], dtype=object)})
    topics = topics.assign(base_qid=topics["qid"], variant=pd.Series([""] * len(topics), dtype=object))
    judged = []
    for n, (qid, r) in enumerate(zip(qids, rows), 1):
        labels = r["labels"]
        if not isinstance(labels, list) or any(not isinstance(x, dict) or "id" not in x or "score" not in x
                                               for x in labels):
            raise DataError(f"{qfile}:{n}: labels of query {qid!r} must be a list of {{id, score}}, got {labels!r}")
        judged += [(qid, x["id"], x["score"]) for x in labels]
    qrels = qrels_frame([j[0] for j in judged], [j[1] for j in judged], [j[2] for j in judged], str(qfile))
    qrels = qrels.assign(base_qid=qrels["qid"], variant=pd.Series([""] * len(qrels), dtype=object))
    return Benchmark(topics=topics, qrels=qrels, corpus=DocStore(dfile, id_field="id", text_field="doc"), variants=(),
                     notes={"layout": "mair", "task": task})
