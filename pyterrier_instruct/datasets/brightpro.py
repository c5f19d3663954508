"""BRIGHT-PRO layout (``ya-ir/BRIGHT-PRO``, which BRIGHT-PRO's code loads; the same configs are on
``yale-nlp/Bright-Pro``; github echo0715/BRIGHT-PRO ``retrieval/run.py``,
``retrieval/evaluation/alpha-ndcg-evaluation.py`` and ``weighted_aspect_recall.py``). Full retrieval over the task's
documents: no candidate lists.

Parquet configs, one split per task (the 7 StackExchange tasks of BRIGHT)::

    examples/<task>.parquet    id, query, gold_ids, excluded_ids[, gold_ids_long, reasoning, gold_answer]
    documents/<task>.parquet   id, content, aspect (the aspect of a gold document; null otherwise)
    aspects/<task>.parquet     id ("biology-0-a1"), content, weight (1-3), supporting_docs

(``yale-nlp/Bright-Pro``'s file names; BRIGHT's ``<config>/<task>-00000-of-00001.parquet`` shards are read as well:
``ya-ir/BRIGHT-PRO``'s own file names are UNVERIFIED.) Topics ``qid`` = ``id``, ``query``, ``instruction`` = ``""``
(BRIGHT's per-task templates apply: ``pti.SetInstruction``); qrels label 1 for each ``gold_ids`` document; excluded ids
as for ``bright/<task>`` (``ds.excluded_ids()``, ``ds.exclude()``). ``ds.aspects()``: ``aspect_id, qid, content, weight,
supporting_docs`` (an aspect belongs to the queries whose gold documents carry it).

Official scores (:func:`official_scores`): weighted α-nDCG@k and weighted aspect recall@k (k = 10, 25; α = 0.5), each
averaged over the queries **in the run** with gold ids (α-nDCG also skips a query whose ideal gain is 0).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Sequence

import pandas as pd

from ._bench import Benchmark, layout
from ._files import DataError, check_unique
from .bright import NONE, _ids
from .docstore import DocStore
from .limit import plain_topics, with_keys

TASKS = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living")


def _files(path: Path, config: str, task: str) -> List[Path]:
    folder = path / config
    files = [folder / f"{task}.parquet"] if (folder / f"{task}.parquet").is_file() else \
        sorted(folder.glob(f"{task}-*.parquet")) if folder.is_dir() else []
    if not files:
        raise DataError(f"missing BRIGHT-PRO file {folder / (task + '.parquet')} (or {task}-*.parquet shards; config "
                        f"{config!r}, split {task!r})")
    return files


def _table(files: List[Path], required: Sequence[str]) -> pd.DataFrame:
    import pyarrow.parquet as pq
    df = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{files[0]}: missing column(s) {missing}; found {list(df.columns)}")
    return df


def alpha_dcg(ranked: Sequence[str], gold: set, aspect_of: Dict[str, str], weight: Dict[str, float], alpha: float,
              k: int) -> float:
    """``compute_alpha_dcg_at_k``: a gold document of aspect a at rank i gains w(a)·(1-α)^(a's gold documents seen
    before) / log2(i+1); other documents (and gold documents without an aspect) gain 0."""
    seen: Dict[str, int] = {}
    dcg = 0.0
    for i, docno in enumerate(ranked[:k], start=1):
        a = aspect_of.get(docno) if docno in gold else None
        if a is None:
            continue
        dcg += weight.get(a, 1.0) * (1.0 - alpha) ** seen.get(a, 0) / math.log2(i + 1)
        seen[a] = seen.get(a, 0) + 1
    return dcg


def alpha_idcg(gold: Sequence[str], aspect_of: Dict[str, str], weight: Dict[str, float], alpha: float, k: int) -> float:
    """``compute_alpha_idcg_at_k``: greedily, at each rank the aspect (with gold documents left) of largest gain."""
    remaining: Dict[str, int] = {}
    for docno in gold:
        if aspect_of.get(docno) is not None:
            remaining[aspect_of[docno]] = remaining.get(aspect_of[docno], 0) + 1
    seen = {a: 0 for a in remaining}
    idcg = 0.0
    for i in range(1, k + 1):
        gains = {a: weight.get(a, 1.0) * (1.0 - alpha) ** seen[a] / math.log2(i + 1)
                 for a, n in remaining.items() if n > 0}
        if not gains or max(gains.values()) <= 0:
            break
        best = max(gains, key=gains.get)  # the first of equal gains, as the script's strict '>'
        idcg += gains[best]
        remaining[best] -= 1
        seen[best] += 1
    return idcg


def aspect_recall(ranked: Sequence[str], gold: Sequence[str], aspect_of: Dict[str, str], weight: Dict[str, float],
                  k: int) -> float:
    """``compute_weighted_aspect_recall_at_k``: the weight of the query's aspects (those of its gold documents) that
    some top-k document carries, over the weight of all of them (each aspect once; 0 when the query has none)."""
    wanted = {aspect_of[d] for d in gold if aspect_of.get(d) is not None}
    total = sum(weight.get(a, 1.0) for a in wanted)
    if not wanted or total <= 0:
        return 0.0
    covered = {aspect_of.get(d) for d in ranked[:k]} & wanted
    return sum(weight.get(a, 1.0) for a in covered) / total


def official_scores(gold: Dict[str, List[str]], aspect_of: Dict[str, str], weight: Dict[str, float],
                    run: pd.DataFrame, ks: Sequence[int] = (10, 25), alpha: float = 0.5) -> Dict[str, float]:
    """BRIGHT-PRO's two scripts on ``run`` (``qid, docno, score``): each query's ranking by descending score (a stable
    sort of the run's rows, as ``parse_score_entry`` sorts a score dict); queries in the run with gold ids only."""
    from .scoring import _check_run, _ranked
    ranked = {q: [d for d, _ in docs] for q, docs in _ranked(_check_run(run)).items()}
    evaluated = [q for q in gold if q in ranked and gold[q]]
    out: Dict[str, float] = {}
    for k in ks:
        values = []
        for q in evaluated:
            idcg = alpha_idcg(gold[q], aspect_of, weight, alpha, k)
            if idcg > 0:
                values.append(alpha_dcg(ranked[q], set(gold[q]), aspect_of, weight, alpha, k) / idcg)
        out[f"alpha-nDCG@{k}"] = sum(values) / len(values) if values else 0.0
    for k in ks:
        values = [aspect_recall(ranked[q], gold[q], aspect_of, weight, k) for q in evaluated]
        out[f"weighted_aspect_recall@{k}"] = sum(values) / len(values) if values else 0.0
    return out


def read(path: Path, task: str) -> Benchmark:
    path = Path(path)
    efiles = _files(path, "examples", task)
    ex = _table(efiles, ["id", "query", "gold_ids", "excluded_ids"])
    where = str(efiles[0])
    topics = plain_topics(ex["id"], ex["query"])
    check_unique(topics["qid"], where, "query id")
    gold: Dict[str, List[str]] = {}
    removed = []
    for qid, g, excluded in zip(topics["qid"], ex["gold_ids"], ex["excluded_ids"]):
        gold[qid] = list(dict.fromkeys(_ids(g, qid, "gold_ids", where)))
        removed += [(qid, e) for e in dict.fromkeys(_ids(excluded, qid, "excluded_ids", where)) if e != NONE]
    qrels = pd.DataFrame([(q, d, 1) for q, ds in gold.items() for d in ds], columns=["qid", "docno", "label"])
    qrels = qrels.astype({"qid": object, "docno": object, "label": "int64"})
    dfiles = _files(path, "documents", task)
    import pyarrow.parquet as pq
    for f in dfiles:
        if not {"id", "aspect"} <= set(pq.read_schema(f).names):
            raise DataError(f"{f}: missing column 'id' or 'aspect' (BRIGHT-PRO's documents carry the aspect of each "
                            f"gold document; found {pq.read_schema(f).names})")
    docs = pd.concat([pq.read_table(f, columns=["id", "aspect"]).to_pandas() for f in dfiles], ignore_index=True)
    aspect_of = {str(d): str(a) for d, a in zip(docs["id"], docs["aspect"]) if a is not None and a == a}
    afiles = _files(path, "aspects", task)
    asp = _table(afiles, ["id", "content", "weight"])
    weight = {str(a): float(w) for a, w in zip(asp["id"], asp["weight"])}
    owner = {aspect_of[d]: q for q, ds in gold.items() for d in ds if d in aspect_of}
    aspects = pd.DataFrame({"aspect_id": asp["id"].astype(str).astype(object),
                            "qid": asp["id"].astype(str).map(owner).astype(object),
                            "content": asp["content"].astype(object), "weight": asp["weight"].astype("int64"),
                            "supporting_docs": asp["supporting_docs"] if "supporting_docs" in asp else None})
    corpus = DocStore(dfiles[0].parent, text_field="content",
                      pattern=dfiles[0].name if len(dfiles) == 1 else f"{task}-*.parquet")
    return Benchmark(topics=topics, qrels=with_keys(qrels), corpus=corpus, variants=(),
                     excluded=pd.DataFrame(removed, columns=["qid", "docno"], dtype=object),
                     official=lambda run: official_scores(gold, aspect_of, weight, run),
                     judgements={"aspects": aspects},
                     notes={"layout": "bright-pro", "task": task, "aspects": len(aspects),
                            "excluded_pairs": len(removed)})


@layout("bright-pro")
def _read_entry(entry, folder, qrels_mapping: str = "as-named"):
    return read(folder, entry.task)
