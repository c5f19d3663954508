"""LIMIT layout (``orionweller/LIMIT``, ``orionweller/LIMIT-small``; Weller et al. 2025, arXiv 2508.21038; github
google-deepmind/limit ``data/limit*/``; mteb ``tasks/retrieval/eng/limit_retrieval.py``). Full retrieval: no candidates.

BEIR/mteb jsonl files at the repository root (the card's ``configs:`` ``default``/``corpus``/``queries``)::

    corpus.jsonl    _id (a person's name, with spaces), title (empty), text
    queries.jsonl   _id ("query_0"), text
    qrels.jsonl     query-id, corpus-id, score (exactly 2 relevant documents per query)

Topics: ``qid`` = ``_id``, ``query`` = ``text``, ``instruction`` = ``""`` (LIMIT has none). Official score: mteb's
``recall_at_2`` (:func:`.scoring.mteb_scores`, queries absent from the run skipped).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._bench import Benchmark, check_known_queries, layout
from ._files import DataError, check_unique, read_jsonl, read_qrels_jsonl
from .docstore import DocStore

#: mteb ``LIMITRetrieval``'s ``k_values``
K_VALUES = (1, 2, 3, 5, 10, 20, 100, 1000)


def plain_topics(qids, texts) -> pd.DataFrame:
    """``qid, query, instruction, base_qid, variant`` of a benchmark without instructions or variants."""
    qids = pd.Series([str(q) for q in qids], dtype=object)
    empty = pd.Series([""] * len(qids), dtype=object)
    return pd.DataFrame({"qid": qids, "query": pd.Series(list(texts), dtype=object), "instruction": empty,
                         "base_qid": qids, "variant": empty})


def with_keys(qrels: pd.DataFrame) -> pd.DataFrame:
    return qrels.assign(base_qid=qrels["qid"], variant=pd.Series([""] * len(qrels), dtype=object))


def read(path: Path) -> Benchmark:
    path = Path(path)
    qfile, rfile, cfile = path / "queries.jsonl", path / "qrels.jsonl", path / "corpus.jsonl"
    for f in (qfile, rfile, cfile):
        if not f.is_file():
            raise DataError(f"missing LIMIT file {f} (expected corpus.jsonl, queries.jsonl, qrels.jsonl at the root of "
                            f"the orionweller/LIMIT snapshot)")
    rows = read_jsonl(qfile, ["_id", "text"])
    topics = plain_topics([r["_id"] for r in rows], [r["text"] for r in rows])
    check_unique(topics["qid"], str(qfile), "query id")
    qrels = read_qrels_jsonl(rfile)
    check_known_queries(qrels, topics["qid"], str(rfile), str(qfile))
    from .scoring import mteb_scores
    return Benchmark(topics=topics, qrels=with_keys(qrels), corpus=DocStore(cfile), variants=(),
                     official=lambda run: mteb_scores(qrels, run, K_VALUES), notes={"layout": "limit"})


@layout("limit")
def _read_entry(entry, folder, qrels_mapping: str = "as-named"):
    return read(folder)
