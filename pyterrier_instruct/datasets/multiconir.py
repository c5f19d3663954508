"""MultiConIR layout (github EIT-NLP/MultiConIR @ 26b6504 ``datasets/``; Lu et al. 2025, arXiv 2503.08046; its
``evaluation/models/*.py`` read the columns, ``evaluation/metrics/task{1,2,3}_*.py`` score them). No hub dataset: a
clone of the repository (its ``datasets/`` folder) is read. Each CSV row is one instance with its own candidates::

    Task1/<Domain>_Task1.csv               Query1 … Query10 (the first i conditions), Positive, HN1 … HN10
    Task2_&_3/<Domain>_Task2_&_3.csv       Query10, Natural_Query10 (descriptive style), Positive, HN1 … HN10
    Task4/<Domain>_512.csv, _1024.csv      Query10, Positive, HN1 … HN10
    <Domain>: Books, Movies, People, "Medical Case", "Legal Document"

UNVERIFIED: the CSV contents (only the code that reads them could be read); other columns are ignored, a file without
these columns is refused naming it. Row ``r`` (0-based) gives documents ``<r>-pos``, ``<r>-hn<k>`` (in memory) and
topics: Tasks 2&3 ``<r>-inst`` (``Query10``) and ``<r>-desc`` (``Natural_Query10``), ``variant`` inst/desc, candidates
the row's 11 texts, graded qrels Positive 10, HN\\ *k* 10 − k (the ranking the monotonicity test expects); Task 1
``<r>-q<i>`` (``Query{i}``), candidates ``<r>-pos``, ``<r>-hn<i>``, qrels 1/0; Task 4 as Tasks 2&3, ``Query10`` only.
``instruction`` is ``""`` (the conditions are in the query).

Official scores (strict ``>``: a tie loses), from a run scoring every candidate: Task 1 ``Query{i}_WinRate`` and
``Query{i}_AvgDiff``; Tasks 2&3 and 4 ``Positive_vs_HN1``, ``HN{k}_vs_HN{k+1}`` (on ``Query10``), Tasks 2&3 also
``Change Rate`` (the share of the 10 adjacent comparisons × rows whose outcome differs between the two query styles).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pandas as pd

from ._bench import Benchmark, layout
from ._files import DataError
from .docstore import MemoryDocStore

DOMAINS = {"books": "Books", "movies": "Movies", "people": "People", "medical": "Medical Case",
           "legal": "Legal Document"}
HN = [f"HN{k}" for k in range(1, 11)]


def file_of(task: str, domain: str) -> str:
    name = DOMAINS[domain]
    return {"task1": f"Task1/{name}_Task1.csv", "task23": f"Task2_&_3/{name}_Task2_&_3.csv",
            "len512": f"Task4/{name}_512.csv", "len1024": f"Task4/{name}_1024.csv"}[task]


def _csv(path: Path, required: List[str]) -> pd.DataFrame:
    if not path.is_file():
        raise DataError(f"missing MultiConIR file {path} (github EIT-NLP/MultiConIR datasets/; pass path= the clone's "
                        "datasets/ folder)")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(df.columns)} (UNVERIFIED layout)")
    return df


def _frames(rows: List[Tuple[str, str, str, str]], qrels: List[Tuple[str, str, int]], cands: List[Tuple[str, str]]):
    topics = pd.DataFrame(rows, columns=["qid", "query", "base_qid", "variant"], dtype=object)
    topics.insert(2, "instruction", pd.Series([""] * len(topics), dtype=object))
    q = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    q = q.astype({"qid": object, "docno": object, "label": "int64"})
    q = q.merge(topics[["qid", "base_qid", "variant"]], on="qid", how="left")
    return topics, q, pd.DataFrame(cands, columns=["qid", "docno"], dtype=object)


def _score_of(run: pd.DataFrame):
    from .scoring import _check_run
    run = _check_run(run)
    scores = {(q, d): float(s) for q, d, s in zip(run["qid"], run["docno"], run["score"])}

    def score(qid: str, docno: str) -> float:
        if (qid, docno) not in scores:
            raise DataError(f"official_evaluate: the run has no score for document {docno!r} of query {qid!r}; "
                            "MultiConIR scores every candidate of every row (rerank ds.get_results())")
        return scores[(qid, docno)]
    return score


def _outcomes(score, qid: str, r: str) -> List[bool]:
    docs = [f"{r}-pos"] + [f"{r}-hn{k}" for k in range(1, 11)]
    s = [score(qid, d) for d in docs]
    return [s[k] > s[k + 1] for k in range(10)]


def official_scores(kind: str, n: int, run: pd.DataFrame) -> Dict[str, float]:
    score = _score_of(run)
    out: Dict[str, float] = {}
    if kind == "task1":  # task1_complexity_robustness.py
        for i in range(1, 11):
            diffs = [score(f"{r}-q{i}", f"{r}-pos") - score(f"{r}-q{i}", f"{r}-hn{i}") for r in range(n)]
            out[f"Query{i}_WinRate"] = sum(d > 0 for d in diffs) / n
            out[f"Query{i}_AvgDiff"] = sum(diffs) / n
        return out
    inst = [_outcomes(score, f"{r}-inst", str(r)) for r in range(n)]  # task2_relevance_monotonicity.py
    names = ["Positive_vs_HN1"] + [f"HN{k}_vs_HN{k + 1}" for k in range(1, 10)]
    out.update({name: sum(o[k] for o in inst) / n for k, name in enumerate(names)})
    if kind == "task23":  # task3_format_invariant.py
        desc = [_outcomes(score, f"{r}-desc", str(r)) for r in range(n)]
        out["Change Rate"] = sum(a != b for oi, od in zip(inst, desc) for a, b in zip(oi, od)) / (10 * n)
    return out


def read(path: Path, domain: str, kind: str) -> Benchmark:
    path = Path(path)
    file = path / file_of(kind, domain)
    queries = [f"Query{i}" for i in range(1, 11)] if kind == "task1" else ["Query10"]
    if kind == "task23":
        queries.append("Natural_Query10")
    df = _csv(file, queries + ["Positive"] + HN)
    docs, rows, qrels, cands = {}, [], [], []
    for r, row in enumerate(df.to_dict("records")):
        docs[f"{r}-pos"] = ("", row["Positive"])
        docs.update({f"{r}-hn{k}": ("", row[f"HN{k}"]) for k in range(1, 11)})
        if kind == "task1":
            for i in range(1, 11):
                qid = f"{r}-q{i}"
                rows.append((qid, row[f"Query{i}"], str(r), f"q{i}"))
                qrels += [(qid, f"{r}-pos", 1), (qid, f"{r}-hn{i}", 0)]
                cands += [(qid, f"{r}-pos"), (qid, f"{r}-hn{i}")]
            continue
        for column, variant in (("Query10", "inst"), ("Natural_Query10", "desc")):
            if column not in queries:
                continue
            qid = f"{r}-{variant}"
            rows.append((qid, row[column], str(r), variant))
            qrels += [(qid, f"{r}-pos", 10)] + [(qid, f"{r}-hn{k}", 10 - k) for k in range(1, 11)]
            cands += [(qid, f"{r}-pos")] + [(qid, f"{r}-hn{k}") for k in range(1, 11)]
    topics, qrels_frame, candidates = _frames(rows, qrels, cands)
    variants = tuple(pd.unique(topics["variant"]))
    n = len(df)
    return Benchmark(topics=topics, qrels=qrels_frame, corpus=MemoryDocStore(docs, file), variants=variants,
                     candidates=candidates, official=lambda run: official_scores(kind, n, run),
                     notes={"layout": "multiconir", "domain": DOMAINS[domain], "file": file_of(kind, domain),
                            "rows": n})


@layout("multiconir")
def _read_entry(entry, folder, qrels_mapping: str = "as-named"):
    return read(folder, entry.task, entry.split)
