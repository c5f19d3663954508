"""The official scoring rules of the 2025–26 benchmarks (``ds.official_evaluate(run)``), as their own code computes
them.

- :func:`mteb_scores`: mteb 2.x ``_evaluators/retrieval_metrics.py`` ``calculate_retrieval_scores`` /
  ``parse_metrics_from_scores`` (LIMIT, R2MED; R2MED's own ``src/eval_BM25.py`` does the same): pytrec_eval per
  query, the mean over the queries **that are in the run and have qrels** (``/ len(scores)``: a query absent from the
  run is skipped, where ``pt.Experiment``/ir_measures count it as 0), rounded to 5 decimals.
- :func:`freshstack_scores`: freshstack 0.0.6 ``retrieval/metrics.py`` (α-nDCG@k by ndeval's rule with α = 0.5,
  Coverage@k, Recall@k), every mean over the queries with nuggets (a query absent from the run counts as 0).

Run frames are ``qid, docno, score``; qrels frames ``qid, docno, label``. No pyterrier import.
"""
from __future__ import annotations

import math
from typing import Dict, Sequence

import pandas as pd

from ._files import DataError


def _check_run(run: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("qid", "docno", "score") if c not in run.columns]
    if missing:
        raise DataError(f"official_evaluate: the run lacks column(s) {missing}; it needs qid, docno, score "
                        f"(found {list(run.columns)})")
    return run.assign(qid=run["qid"].astype(str), docno=run["docno"].astype(str))


def mteb_scores(qrels: pd.DataFrame, run: pd.DataFrame, k_values: Sequence[int] = (1, 3, 5, 10, 20, 100, 1000)
                ) -> Dict[str, float]:
    """``ndcg_at_k``, ``recall_at_k``, ``precision_at_k``, ``map_at_k`` as mteb names them: per-query pytrec_eval values
    (through ir_measures' pytrec_eval provider) averaged over the queries both in ``run`` and in ``qrels``, rounded to 5
    decimals (mteb ``parse_metrics_from_scores``)."""
    import ir_measures
    run = _check_run(run)
    names = {"ndcg_at": ir_measures.nDCG, "recall_at": ir_measures.R, "precision_at": ir_measures.P,
             "map_at": ir_measures.AP}
    measures = {f"{n}_{k}": m @ k for n, m in names.items() for k in k_values}
    q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    r = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    scored = set(r["query_id"]) & set(q["query_id"])
    sums = {name: 0.0 for name in measures}
    by_measure = {m: name for name, m in measures.items()}
    for row in ir_measures.iter_calc(list(measures.values()), q, r):
        if row.query_id in scored:
            sums[by_measure[row.measure]] += row.value
    n = len(scored)
    return {name: round(total / n, 5) if n else 0.0 for name, total in sums.items()}


def _ranked(run: pd.DataFrame) -> Dict[str, list]:
    """Each query's ``(docno, score)`` by descending score (Python's stable ``sorted`` of a dict's items, as freshstack
    sorts them: equal scores keep run order)."""
    out: Dict[str, dict] = {}
    for qid, docno, score in zip(run["qid"], run["docno"], run["score"].astype(float)):
        out.setdefault(qid, {})[docno] = score  # a repeated docno keeps its last score (freshstack's dict does)
    return {qid: sorted(docs.items(), key=lambda kv: kv[1], reverse=True) for qid, docs in out.items()}


def alpha_ndcg(ranking: Sequence[str], judged: Dict[str, Dict[str, int]], k: int, alpha: float = 0.5) -> float:
    """α-nDCG@k of one ranking as ndeval computes it (TREC Web track ``ndeval.c``, called by pyndeval): ``judged`` is
    ``{subtopic: {docno: label}}``; a document counts for a subtopic when its label is > 0; the gain at rank i
    is Σ_s (1-α)^(times s was seen before), discounted by log2(1+i); the ideal ranking is built greedily over every
    document relevant to some subtopic (at each rank the largest gain, ties to the earlier document in id order)."""
    rel: Dict[str, set] = {}
    for subtopic, docs in judged.items():
        for docno, label in docs.items():
            if label > 0:
                rel.setdefault(docno, set()).add(subtopic)
    if not rel:
        return 0.0

    def gain(doc_subtopics, seen):
        return sum((1 - alpha) ** seen.get(s, 0) for s in doc_subtopics)

    dcg, seen = 0.0, {}
    for i, docno in enumerate(list(ranking)[:k]):
        subs = rel.get(docno, ())
        dcg += gain(subs, seen) / math.log2(i + 2)
        for s in subs:
            seen[s] = seen.get(s, 0) + 1
    idcg, seen, pool = 0.0, {}, sorted(rel)
    for i in range(min(k, len(pool))):
        best = max(pool, key=lambda d: gain(rel[d], seen))  # max keeps the first of equal gains
        idcg += gain(rel[best], seen) / math.log2(i + 2)
        for s in rel[best]:
            seen[s] = seen.get(s, 0) + 1
        pool.remove(best)
    return dcg / idcg if idcg > 0 else 0.0


def freshstack_scores(nuggets: pd.DataFrame, run: pd.DataFrame, k_values: Sequence[int] = (10, 20, 50)
                      ) -> Dict[str, float]:
    """FreshStack's three measures at ``k_values`` (its README's ``[10, 20, 50]``) from the nugget judgements
    ``nugget_id, qid, docno, label`` (freshstack ``retrieval/metrics.py``): ``alpha-nDCG@k`` (k ≤ 20, each query's
    run cut to the largest such k, rounded to 4), ``Coverage@k`` (fraction of a query's nuggets with a document of
    positive label in the top k; per query rounded to 5, the mean to 4) and ``Recall@k`` (pytrec_eval ``recall_k`` on
    the summed query qrels, rounded to 4), each averaged over every query with nuggets (absent from the run: 0)."""
    import ir_measures
    run = _check_run(run)
    queries = list(dict.fromkeys(nuggets["qid"]))
    by_query: Dict[str, Dict[str, Dict[str, int]]] = {q: {} for q in queries}
    for nid, qid, docno, label in zip(nuggets["nugget_id"], nuggets["qid"], nuggets["docno"], nuggets["label"]):
        by_query[qid].setdefault(nid, {})[docno] = int(label)
    ranked = {q: docs for q, docs in _ranked(run).items() if q in by_query}
    n = len(queries)
    out: Dict[str, float] = {}
    alpha_k = [k for k in k_values if k <= 20]  # pyndeval's limit
    kmax = max(alpha_k)
    for k in alpha_k:
        # freshstack passes its top kmax; ndeval ranks them again: score descending, equal scores by docno
        total = sum(alpha_ndcg([d for d, _ in sorted(ranked[q][:kmax], key=lambda ds: (-ds[1], ds[0]))], by_query[q], k)
                    for q in ranked)
        out[f"alpha-nDCG@{k}"] = round(total / n, 4) if ranked else 0.0
    for k in k_values:
        per = []
        for q in queries:
            top = [d for d, _ in ranked.get(q, [])[:k]]
            hit = sum(any(judged.get(d, 0) > 0 for d in top) for judged in by_query[q].values())
            per.append(round(hit / len(by_query[q]), 5))
        out[f"Coverage@{k}"] = round(sum(per) / n, 4)
    summed = nuggets.groupby(["qid", "docno"], sort=False)["label"].sum().reset_index()
    q = summed.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    r = run[run["qid"].isin(by_query)].rename(columns={"qid": "query_id", "docno": "doc_id"})
    measures = {ir_measures.R @ k: f"Recall@{k}" for k in k_values}
    sums = {name: 0.0 for name in measures.values()}
    for row in ir_measures.iter_calc(list(measures), q, r[["query_id", "doc_id", "score"]]):
        if row.query_id in ranked:
            sums[measures[row.measure]] += row.value
    out.update({name: round(total / n, 4) for name, total in sums.items()})
    return out
