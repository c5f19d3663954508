"""InstructIR layouts (InstructIR repository; mteb's InstructIR task). Full retrieval over 16,072 MS MARCO passages.

``kaist-ai/InstructIR`` (queries ``"{instruction} [SEP] {query}"``, ids ``<msmarco_qid>_<n>``) and
``mteb/InstructIR-mteb`` (parquet). Topics keep query and instruction apart
(:data:`~pyterrier_instruct.instructions.INSTRUCTIR_COMPOSER` joins them as the model reads them); ``base_qid`` is the
id before the first ``_`` (the Robustness@10 group), ``variant`` the instance number after it.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._bench import layout, Benchmark, check_known_queries, require_instructions
from ._files import (DataError, check_unique, first_existing, read_jsonl, read_parquet, read_qrels_parquet,
                     read_qrels_tsv)
from .docstore import DocStore

SEP = " [SEP] "


def _split(text: str, origin, qid: str, where: str):
    """``"{instruction} [SEP] {query}"`` → (query, instruction), checked against ``metadata.origin_query``."""
    if origin is not None:
        if not text.endswith(SEP + origin):
            raise DataError(f"{where}: query {qid!r}: text does not end with ' [SEP] ' + metadata.origin_query")
        return origin, text[: -len(SEP + origin)]
    if SEP not in text:
        raise DataError(f"{where}: query {qid!r}: text has no ' [SEP] ' between instruction and query")
    instruction, query = text.rsplit(SEP, 1)
    return query, instruction


def _topics(qids, queries, instructions) -> pd.DataFrame:
    qids = pd.Series(list(qids), dtype=object).astype(str)
    parts = qids.str.split("_", n=1)
    return pd.DataFrame({"qid": qids, "query": list(queries), "instruction": list(instructions),
                         "base_qid": parts.str[0], "variant": parts.str[1].fillna("")})


def read(path: Path) -> Benchmark:
    path = Path(path)
    if (path / "queries.jsonl").is_file():
        qfile = path / "queries.jsonl"
        rows = read_jsonl(qfile, ["_id", "text"])
        split = [_split(r["text"], (r.get("metadata") or {}).get("origin_query"), str(r["_id"]), str(qfile))
                 for r in rows]
        topics = _topics([r["_id"] for r in rows], [q for q, _ in split], [i for _, i in split])
        rfile = path / "qrels" / "test.tsv"
        qrels, where, corpus, layout = read_qrels_tsv(rfile), str(rfile), path / "corpus.jsonl", "instructir"
    else:
        qdir = first_existing(path, ["queries"])
        if qdir is None:
            raise DataError(f"{path}: neither queries.jsonl (kaist-ai/InstructIR) nor queries/ (mteb/InstructIR-mteb)")
        queries = read_parquet(qdir, ["_id", "text"], aliases={"id": "_id"})
        idir = first_existing(path, ["instruction", "instructions"])
        if idir is None:
            raise DataError(f"missing config folder {path / 'instruction'} (mteb/InstructIR-mteb layout)")
        ins = read_parquet(idir, ["query-id", "instruction"], aliases={"text": "instruction"})
        ins_map = dict(zip(ins["query-id"].astype(str), ins["instruction"]))
        qids = queries["_id"].astype(str)
        topics = _topics(qids, queries["text"], [ins_map.get(q, "") for q in qids])
        qrels_dir = first_existing(path, ["data", "default", "qrels"])
        if qrels_dir is None:
            raise DataError(f"missing qrels folder {path / 'data'} (mteb/InstructIR-mteb layout)")
        qrels, where, corpus, layout = read_qrels_parquet(qrels_dir), str(qrels_dir), path / "corpus", "instructir-mteb"
        qfile = qdir
    check_unique(topics["qid"], str(qfile), "query _id")
    require_instructions(topics, ["instruction"], str(qfile))
    check_known_queries(qrels, topics["qid"], where, str(qfile))
    qrels = qrels.merge(topics[["qid", "base_qid", "variant"]], on="qid", how="left")
    return Benchmark(topics=topics, qrels=qrels, corpus=DocStore(corpus), variants=(),
                     notes={"layout": layout, "base_queries": int(topics["base_qid"].nunique())})


@layout("instructir")
def _read_entry(entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    return read(folder)
