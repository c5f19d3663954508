"""Setwise and Rank-R1 against their peers on the same tiny weights, in one run (CPU): parity (rows, mismatches, max |Δ|
of the −rank scores, comparisons) and throughput (queries/s, ours over the peer).

- Setwise: llm-rankers 0.0.2's ``SetwiseLlmRanker`` (installed by ``make install`` in ``.venv/llm_rankers_0.0.2``), one
  query and one comparison at a time, vs ``pti.Setwise`` (every query's current comparison in one batch), on a tiny
  Flan-T5 (generation and likelihood) and a tiny Llama chat model (generation), heapsort, num_child 3, k 10; the label
  tokens boosted as in ``tests/test_setwise.py``.
- Rank-R1: the reference's ``compare`` re-run on transformers (``tests/test_rank_r1.py::reference_class``: one greedy
  ``generate`` per comparison) vs ``pti.RankR1`` on ``HFBackend`` (the comparisons of all queries batched), a tiny Qwen2
  chat model, num_child 4, k 3, a short reasoning budget.

Usage: ``python benchmarks/bench_setwise.py [--queries 6] [--depth 20] [--length 48] [--threads 2]``
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import tiny_models  # noqa: E402
from standins import QWEN_CHAT_TEMPLATE  # noqa: E402
from stubs import with_chat_template  # noqa: E402
from test_setwise import LLAMA_CHAT, LLM_RANKERS, boost_labels  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402


def peer_module():
    import transformers
    sys.path.insert(0, str(LLM_RANKERS))
    if not hasattr(transformers.T5Tokenizer, "batch_encode_plus"):  # removed in transformers 5; the v4 behaviour
        transformers.T5Tokenizer.batch_encode_plus = lambda self, texts, **kw: self(texts, **kw)
    import llmrankers.setwise as setwise
    return setwise


def candidates(queries: int, depth: int):
    ds = pti.load_dataset("instruct-mini")
    cands = ds.candidates()(ds.get_topics("og").iloc[:queries])
    df = cands.groupby("qid", sort=False).head(depth).reset_index(drop=True)
    df["instruction"] = ""  # the peers have no instruction
    return df


def parity(got, ref):
    keys = sorted(ref)
    delta = np.array([abs(got[k] - ref[k]) for k in keys])
    return len(keys), int((delta > 0).sum()), float(delta.max())


def run_setwise(setwise, folder, df, length, **kw):
    from llmrankers.rankers import SearchResult
    peer = setwise.SetwiseLlmRanker(folder, None, "cpu", **kw)
    t = time.perf_counter()
    ref, compares = {}, 0
    for qid, g in df.groupby("qid", sort=False):
        texts = [f"{a} {b}" if a else b for a, b in zip(g["title"], g["text"])] if "title" in g else list(g["text"])
        ranking = [SearchResult(docid=d, score=s, text=peer.truncate(x, length))
                   for d, s, x in zip(g["docno"], g["score"], texts)]
        ref.update({(qid, r.docid): r.score for r in peer.rerank(peer.truncate(g["query"].iloc[0], length), ranking)})
        compares += peer.total_compare
    t_ref = time.perf_counter() - t
    ours = pti.Setwise(folder, backend_options={"batch_size": 16}, query_length=length, passage_length=length,
                       verbose=False, **kw)
    ours._load()
    t = time.perf_counter()
    out = ours(df)
    t_ours = time.perf_counter() - t
    got = {(q, d): s for q, d, s in zip(out["qid"], out["docno"], out["score"])}
    return parity(got, ref), compares, sum(ours.comparisons.values()), t_ref, t_ours


def run_rank_r1(setwise, folder, df, budget):
    from test_rank_r1 import greedy, reference_class
    from llmrankers.rankers import SearchResult
    tok, generate = greedy(folder, budget)
    peer = reference_class(setwise)(tok, generate, num_child=4, k=3)
    t = time.perf_counter()
    ref, compares = {}, 0
    for qid, g in df.groupby("qid", sort=False):
        random.seed(929)
        ranking = [SearchResult(docid=d, score=s, text=peer.truncate(x, 512))
                   for d, s, x in zip(g["docno"], g["score"], g["text"])]
        ref.update({(qid, r.docid): r.score for r in peer.rerank(peer.truncate(g["query"].iloc[0], 32), ranking)})
        compares += peer.total_compare
    t_ref = time.perf_counter() - t
    ours = pti.RankR1(folder, num_child=4, k=3, max_output_tokens=budget, backend_options={"batch_size": 16},
                      verbose=False)
    ours.backend._load()
    t = time.perf_counter()
    out = ours(df)
    t_ours = time.perf_counter() - t
    got = {(q, d): s for q, d, s in zip(out["qid"], out["docno"], out["score"])}
    return parity(got, ref), compares, sum(ours.comparisons.values()), t_ref, t_ours


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=6)
    p.add_argument("--depth", type=int, default=20)
    p.add_argument("--length", type=int, default=48, help="query and passage tokens (Setwise)")
    p.add_argument("--budget", type=int, default=8, help="Rank-R1's reasoning tokens")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    setwise = peer_module()
    root = Path(tempfile.mkdtemp())
    t5 = str(root / "t5")
    shutil.copytree(tiny_models.tiny_t5(root / "base"), t5)
    boost_labels(t5, lower=False)
    llama = with_chat_template(tiny_models.tiny_llama(root / "base"), root / "llama", LLAMA_CHAT)
    boost_labels(llama)
    qwen = with_chat_template(tiny_models.tiny_qwen(root / "base", "qwen2"), root / "qwen", QWEN_CHAT_TEMPLATE)
    df = candidates(args.queries, args.depth)
    print(f"{args.queries} queries x {args.depth} candidates, {args.threads} threads")
    print("| family | peer | rows | mismatches | max abs delta | comparisons (peer / ours) | peer q/s | ours q/s | "
          "ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    n = df["qid"].nunique()
    short = df.groupby("qid", sort=False).head(10).drop(columns="title", errors="ignore")
    cases = [("Setwise Flan-T5 generation", lambda: run_setwise(setwise, t5, df, args.length, num_child=3, k=10)),
             ("Setwise Flan-T5 likelihood",
              lambda: run_setwise(setwise, t5, df, args.length, num_child=3, k=10, scoring="likelihood")),
             ("Setwise Llama generation", lambda: run_setwise(setwise, llama, df, args.length, num_child=3, k=10)),
             ("Rank-R1 (Qwen2 chat)", lambda: run_rank_r1(setwise, qwen, short, args.budget))]
    for name, case in cases:
        (rows, bad, delta), c_ref, c_ours, t_ref, t_ours = case()
        peer = "llm-rankers 0.0.2" if name.startswith("Setwise") else "reference logic on transformers"
        print(f"| {name} | {peer} | {rows} | {bad} | {delta:g} | {c_ref} / {c_ours} | {n / t_ref:.2f} | "
              f"{n / t_ours:.2f} | {t_ref / t_ours:.2f}x |")


if __name__ == "__main__":
    main()
