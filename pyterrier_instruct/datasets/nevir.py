"""NevIR layouts (Weller et al., 2024; orionw/NevIR ``src/negations/evaluate.py``; mteb ``NevIR``).

``orionweller/NevIR`` (one jsonl per split) and its mteb copy ``orionweller/NevIR-mteb`` give one benchmark: topics
``<pair>_q1``/``<pair>_q2``, docnos ``<pair>_doc1``/``<pair>_doc2`` (identical texts not merged), qrels q1 → doc1 and
q2 → doc2, the pair's two documents as candidates; scored with :data:`pyterrier_instruct.PairedAccuracy`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._bench import Benchmark, check_known_queries, explode_lists, in_topic_order, require_candidates
from ._files import DataError, check_unique, read_jsonl, read_qrels_jsonl
from .docstore import DocStore, MemoryDocStore

VARIANTS = ("q1", "q2")


def _topics(qids, texts) -> pd.DataFrame:
    qids = pd.Series(list(qids), dtype=object)
    parts = qids.str.rsplit("_", n=1)
    return pd.DataFrame({"qid": qids, "query": pd.Series(list(texts), dtype=object),
                         "instruction": pd.Series([""] * len(qids), dtype=object),
                         "base_qid": parts.str[0].astype(object), "variant": parts.str[1].astype(object)})


def _with_keys(frame: pd.DataFrame, topics: pd.DataFrame) -> pd.DataFrame:
    return frame.merge(topics[["qid", "base_qid", "variant"]], on="qid", how="left")


def read(path: Path, split: str = "test") -> Benchmark:
    path = Path(path)
    file = path / f"{split}.jsonl"
    rows = read_jsonl(file, ["id", "q1", "q2", "doc1", "doc2"])
    pairs = pd.Series([str(r["id"]) for r in rows], dtype=object)
    check_unique(pairs, str(file), "pair id")
    qids = [f"{p}_{v}" for p in pairs for v in VARIANTS]
    topics = _topics(qids, [r[v] for r in rows for v in VARIANTS])
    docs = {f"{p}_doc{i}": ("", r[f"doc{i}"]) for p, r in zip(pairs, rows) for i in (1, 2)}
    own = [f"{p}_doc{i}" for p in pairs for i in (1, 2)]
    qrels = pd.DataFrame({"qid": pd.Series(qids, dtype=object), "docno": pd.Series(own, dtype=object),
                          "label": pd.Series([1] * len(qids), dtype="int64")})
    cands = pd.DataFrame({"qid": pd.Series([q for q in qids for _ in (1, 2)], dtype=object),
                          "docno": pd.Series([f"{p}_doc{i}" for p in pairs for _ in VARIANTS for i in (1, 2)],
                                             dtype=object)})
    return Benchmark(topics=topics, qrels=_with_keys(qrels, topics), corpus=MemoryDocStore(docs, file),
                     variants=VARIANTS, candidates=cands,
                     notes={"layout": "nevir", "split": split, "pairs": len(pairs)})


def read_mteb(path: Path, split: str = "test") -> Benchmark:
    path = Path(path)
    qfile, rfile, tfile = path / "queries.jsonl", path / "qrels" / f"{split}.jsonl", path / f"top_ranked/{split}.jsonl"
    qrels = read_qrels_jsonl(rfile)
    rows = read_jsonl(qfile, ["_id", "text"])
    texts = {str(r["_id"]): r["text"] for r in rows}
    check_known_queries(qrels, list(texts), str(rfile), str(qfile))
    judged = pd.unique(qrels["qid"])
    bad = [q for q in judged if q.rsplit("_", 1)[-1] not in VARIANTS]
    if bad:
        raise DataError(f"{rfile}: query id {bad[0]!r} is not <pair>_q1 or <pair>_q2")
    ordered = sorted(judged, key=lambda q: (q.rsplit("_", 1)[0], q))  # a pair's two queries side by side
    topics = _topics(ordered, [texts[q] for q in ordered])
    ranked = read_jsonl(tfile, ["query-id", "corpus-ids"])
    cands = explode_lists(pd.DataFrame(ranked), "query-id", "corpus-ids", str(tfile))
    require_candidates(cands, str(tfile))
    check_known_queries(cands, topics["qid"], str(tfile), str(rfile))
    check_unique(topics["qid"], str(rfile), "query id")
    return Benchmark(topics=topics, qrels=_with_keys(in_topic_order(qrels, topics), topics),
                     corpus=DocStore(path / "corpus.jsonl"), variants=VARIANTS,
                     candidates=in_topic_order(cands, topics),
                     notes={"layout": "nevir-mteb", "split": split, "pairs": int(topics["base_qid"].nunique())})
