"""Benchmark: the vectorised p-MRR of ``pyterrier_instruct.measures.pmrr`` against a naive version.

Builds synthetic paired runs (default 100 queries x 1,000 candidates, scores rounded to 2 decimals
so that ties occur, ~20 changed documents per query, a few of them absent from the changed run),
checks that the project's pandas implementation and a straightforward per-document pure-Python
implementation agree to 1e-12 for both tie modes, then reports the best of N wall-clock timings
of each and the ratio naive / vectorised. Input conversion is excluded from both timings: the
project function gets DataFrames, the naive one gets ``{qid: {docno: score}}`` dicts.

Run it with ``make bench`` or ``.venv/bin/python benchmarks/bench_pmrr.py [--queries N]
[--candidates N] [--repeat N]``.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import pandas as pd

from pyterrier_instruct.measures import pmrr


def make_data(n_queries: int, n_candidates: int, seed: int = 0):
    """(og run frame, changed run frame, changed-docs frame); row order shuffled per query."""
    rng = np.random.default_rng(seed)
    og_rows, ch_rows, changed_rows = [], [], []
    for q in range(n_queries):
        qid = f"q{q}"
        docnos = np.array([f"d{q}_{i}" for i in range(n_candidates)], dtype=object)
        og_scores = np.round(rng.normal(size=n_candidates), 2)
        ch_scores = np.round(og_scores + rng.normal(scale=0.5, size=n_candidates), 2)
        changed = rng.choice(n_candidates, size=min(20, n_candidates), replace=False)
        dropped = set(changed[:2].tolist())  # absent from the changed run: rank n_q + 1
        for i in rng.permutation(n_candidates):
            og_rows.append((qid, docnos[i], og_scores[i]))
        for i in rng.permutation(n_candidates):
            if i not in dropped:
                ch_rows.append((qid, docnos[i], ch_scores[i]))
        changed_rows.extend((qid, docnos[i]) for i in changed)
    cols = ["qid", "docno", "score"]
    return (pd.DataFrame(og_rows, columns=cols), pd.DataFrame(ch_rows, columns=cols),
            pd.DataFrame(changed_rows, columns=["qid", "docno"]))


def to_run_dict(run: pd.DataFrame) -> dict:
    out: dict = {}
    for qid, docno, score in zip(run["qid"], run["docno"], run["score"]):
        out.setdefault(qid, {})[docno] = float(score)
    return out


def to_changed_dict(changed: pd.DataFrame) -> dict:
    out: dict = {}
    for qid, docno in zip(changed["qid"], changed["docno"]):
        out.setdefault(qid, []).append(docno)
    return out


def naive_order(run: dict, ties: str) -> list:
    """One query's docnos by rank: score descending, ties by docno descending or by run order."""
    if ties == "docno":
        items = sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    else:  # stable sort on score only: ties keep the run's (dict insertion) order
        items = sorted(run.items(), key=lambda kv: -kv[1])
    return [docno for docno, _ in items]


def naive_pmrr(og_run: dict, changed_run: dict, changed: dict, ties: str = "docno"):
    per_query = {}
    for qid, docs in changed.items():
        if not docs or qid not in og_run or qid not in changed_run:
            continue
        og_order, ch_order = naive_order(og_run[qid], ties), naive_order(changed_run[qid], ties)
        values = []
        for docno in docs:  # missing doc: rank = len(run) + 1
            o = og_order.index(docno) + 1 if docno in og_run[qid] else len(og_order) + 1
            n = ch_order.index(docno) + 1 if docno in changed_run[qid] else len(ch_order) + 1
            values.append(n / o - 1 if n <= o else 1 - o / n)
        per_query[qid] = sum(values) / len(values)
    return sum(per_query.values()) / len(per_query), per_query


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    print(f"cpus={os.cpu_count()} python={platform.python_version()} pandas={pd.__version__}")
    og, ch, changed = make_data(args.queries, args.candidates)
    og_d, ch_d, changed_d = to_run_dict(og), to_run_dict(ch), to_changed_dict(changed)
    print(f"data: {args.queries} queries x {args.candidates} candidates, {len(changed)} changed docs, "
          f"{len(og) - len(ch)} absent from the changed run; best of {args.repeat}")

    print(f"{'implementation':<14} {'ties':<6} {'best s':>9} {'naive/vec':>10}")
    for ties in ("docno", "input"):
        v_val, v_pq = pmrr(og, ch, changed, ties=ties, per_query=True)
        n_val, n_pq = naive_pmrr(og_d, ch_d, changed_d, ties)
        assert abs(v_val - n_val) <= 1e-12, (ties, v_val, n_val)
        assert v_pq.keys() == n_pq.keys() and all(abs(v_pq[q] - n_pq[q]) <= 1e-12 for q in v_pq), ties
        t_vec = best_time(lambda: pmrr(og, ch, changed, ties=ties), args.repeat)
        t_naive = best_time(lambda: naive_pmrr(og_d, ch_d, changed_d, ties), args.repeat)
        print(f"{'vectorised':<14} {ties:<6} {t_vec:>9.4f}")
        print(f"{'naive':<14} {ties:<6} {t_naive:>9.4f} {t_naive / t_vec:>9.1f}x   (p-MRR {v_val:+.6f})")


if __name__ == "__main__":
    main()
