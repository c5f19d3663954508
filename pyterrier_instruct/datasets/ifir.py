"""IFIR layouts (IFIR repository README and ``src/eval.py``; mteb ``if-ir/*``): full retrieval, no candidate lists.

Raw ``songtingyu/IFIR``: ``{s}/{s}-corpus.jsonl`` (empty texts not indexed) and ``{s}/test_data.json``. Topics are
``<_id>_<level>``: level ``0`` is the query alone (scored against each level's qrels, as ``src/eval.py`` does), levels
``1``–``3`` carry the instructions; a single-level subset's ``level: 0`` instruction is read as level ``1``. mteb
``if-ir/{s}``: the level is the ``v1``/``v2``/``v3`` in the query id (ids without one are level 1).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import pandas as pd

from ._bench import layout, Benchmark, check_known_queries, require_instructions
from ._files import DataError, check_unique, read_json, read_jsonl, read_qrels_jsonl
from .docstore import DocStore

LEVELS = ("0", "1", "2", "3")
_MTEB_LEVEL = re.compile(r"[-_]?v([123])(?=$|[-_])")


def _mteb_level(qid: str):
    """``(base id, level)`` of an mteb IFIR query id: the last ``v1``/``v2``/``v3`` token (with its separator) is the
    level; an id without one is level 1."""
    found = list(_MTEB_LEVEL.finditer(qid))
    if not found:
        return qid, "1"
    m = found[-1]
    return qid[:m.start()] + qid[m.end():], m.group(1)


def read(path: Path, subset: Optional[str] = None) -> Benchmark:
    path = Path(path)
    if (path / "instructions.jsonl").is_file() and (path / "queries.jsonl").is_file():
        return read_mteb(path)
    return read_raw(path, subset or path.name)


def read_raw(path: Path, subset: str) -> Benchmark:
    tfile = path / "test_data.json"
    data = read_json(tfile)
    if not isinstance(data, list):
        raise DataError(f"{tfile}: expected a list of queries, got {type(data).__name__}")
    topics, qrels = [], []
    for n, x in enumerate(data):
        missing = [k for k in ("_id", "text", "corpus", "instructions") if k not in x]
        if missing:
            raise DataError(f"{tfile}: entry {n} lacks field(s) {missing}; found {sorted(x)}")
        base = str(x["_id"])
        corpus_ids = [str(c["_id"]) for c in x["corpus"]]
        topics.append((f"{base}_0", x["text"], "", base, "0"))
        seen = set()
        for inst in x["instructions"]:
            level = str(inst.get("level"))
            level = "1" if level == "0" else level
            if level not in LEVELS[1:]:
                raise DataError(f"{tfile}: query {base!r} has an instruction of level {inst.get('level')!r}, not 0–3")
            if level in seen:
                raise DataError(f"{tfile}: query {base!r} has two instructions of level {level}")
            seen.add(level)
            qid = f"{base}_{level}"
            topics.append((qid, x["text"], inst.get("instruction") or "", base, level))
            for i in inst.get("rel", []):
                if not isinstance(i, int) or not 0 <= i < len(corpus_ids):
                    raise DataError(f"{tfile}: query {base!r} level {level}: rel index {i!r} is outside its corpus "
                                    f"list of {len(corpus_ids)} documents")
                qrels.append((qid, corpus_ids[i], 1, base, level))
    topics = pd.DataFrame(topics, columns=["qid", "query", "instruction", "base_qid", "variant"], dtype=object)
    check_unique(topics["qid"], str(tfile), "query _id")
    require_instructions(topics[topics["variant"] != "0"], ["instruction"], str(tfile))
    qrels = pd.DataFrame(qrels, columns=["qid", "docno", "label", "base_qid", "variant"])
    qrels["label"] = qrels["label"].astype("int64")
    dup = qrels.duplicated(["qid", "docno"])
    if dup.any():
        raise DataError(f"{tfile}: query {qrels['qid'][dup].iloc[0]!r} lists document {qrels['docno'][dup].iloc[0]!r} "
                        "twice")
    corpus = path / f"{subset}-corpus.jsonl"
    return Benchmark(topics=topics, qrels=qrels, corpus=DocStore(corpus, skip_empty=True),
                     variants=tuple(v for v in LEVELS if (topics["variant"] == v).any()),
                     notes={"layout": "ifir-raw", "subset": subset})


def read_mteb(path: Path) -> Benchmark:
    qfile, ifile = path / "queries.jsonl", path / "instructions.jsonl"
    rows = read_jsonl(qfile, ["_id", "text"])
    qids = pd.Series([str(r["_id"]) for r in rows], dtype=object)
    check_unique(qids, str(qfile), "query _id")
    ins_rows = read_jsonl(ifile, ["query-id", "instruction"])
    ins = dict((str(r["query-id"]), r["instruction"] or "") for r in ins_rows)
    unknown = [q for q in ins if q not in set(qids)]
    if unknown:
        raise DataError(f"{ifile}: instruction for query {unknown[0]!r}, which is not in {qfile}")
    bases, levels = zip(*(_mteb_level(q) for q in qids)) if len(qids) else ((), ())
    topics = pd.DataFrame({"qid": qids, "query": [r["text"] for r in rows],
                           "instruction": [ins.get(q, "") for q in qids], "base_qid": list(bases),
                           "variant": list(levels)})
    require_instructions(topics, ["instruction"], str(ifile))
    rfile = path / "qrels" / "test.jsonl"
    q = read_qrels_jsonl(rfile)
    check_known_queries(q, topics["qid"], str(rfile), str(qfile))
    q = q.merge(topics[["qid", "base_qid", "variant"]], on="qid", how="left")
    return Benchmark(topics=topics, qrels=q, corpus=DocStore(path / "corpus.jsonl", skip_empty=True),
                     variants=tuple(v for v in LEVELS if (topics["variant"] == v).any()), notes={"layout": "ifir-mteb"})


@layout("ifir")
def _read_entry(entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    return read(folder, entry.subdir)
