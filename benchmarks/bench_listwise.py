"""Listwise reranking: cross-query window batching against rank_llm's per-query window chains, same run, same model.

Both arms use ``pti.RankZephyr`` on the HF backend with a small random Mistral (hidden 256, 4 layers,
a Zephyr chat template, a locally trained tokenizer): the anchor feeds the frame one query at a time (what rank_llm's
``rerank_batch`` does: each query's 9 windows in sequence), ours sends the whole frame (each window position of all
queries as one batch). Both produce the same rankings: greedy decoding on the same prompts.

Usage: ``python benchmarks/bench_listwise.py [--queries 8] [--docs 100] [--context 1024] [--threads 2]``
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
import transformers

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import tiny_models  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402
from bench_pointwise import small_mistral  # noqa: E402  (same small Mistral as the pointwise benchmark)

ZEPHYR = ("{% for m in messages %}{{ '<|' + m['role'] + '|>\n' + m['content'] + eos_token + '\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")


def small_chat_mistral(root: Path) -> str:
    path = small_mistral(root)
    tok = transformers.AutoTokenizer.from_pretrained(path)
    tok.chat_template = ZEPHYR
    tok.save_pretrained(path)
    return path


def frame(n_queries: int, n_docs: int) -> pd.DataFrame:
    docs = [json.loads(line) for line in open(tiny_models.CORPUS)]
    rows = []
    for q in range(n_queries):
        for j in range(n_docs):
            d = docs[(q * 37 + j) % len(docs)]
            rows.append({"qid": f"q{q}", "query": f"query {q} about salmon",
                         "instruction": "Only documents about rivers are relevant.", "docno": f"{d['_id']}-{q}-{j}",
                         "text": d["text"], "score": float(n_docs - j)})
    return pd.DataFrame(rows)


def parser(queries: int, docs: int) -> argparse.ArgumentParser:
    """The listwise benchmarks' shared arguments (frame size, context, threads)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=queries)
    ap.add_argument("--docs", type=int, default=docs)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    return ap


def main():
    args = parser(8, 100).parse_args()
    torch.set_num_threads(args.threads)
    df = frame(args.queries, args.docs)
    with tempfile.TemporaryDirectory() as tmp:
        path = small_chat_mistral(Path(tmp))
        results = {}
        for name, per_query in (("per-query chains (rank_llm)", True), ("cross-query batches (ours)", False)):
            r = pti.RankZephyr(backend=pti.HFBackend(path, batch_size=args.queries), context_size=args.context)
            t = time.perf_counter()
            out = pd.concat([r(g) for _, g in df.groupby("qid", sort=False)]) if per_query else r(df)
            results[name] = (time.perf_counter() - t, r.stats["backend_calls"], r.stats["windows"],
                             out.sort_values(["qid", "rank"]).docno.tolist())
        (a_t, a_calls, windows, a_order), (b_t, b_calls, _, b_order) = results.values()
        print(f"{args.queries} queries x {args.docs} candidates, window 20/10, context {args.context}, {windows} "
              f"windows, CPU {args.threads} threads")
        for name, (secs, calls, _, _) in results.items():
            print(f"  {name:30s} {calls:4d} backend calls  {secs:7.1f} s  {windows / secs:6.2f} windows/s")
        print(f"  speed-up {a_t / b_t:.2f}x, backend calls {a_calls} -> {b_calls}, same rankings: {a_order == b_order}")


if __name__ == "__main__":
    main()
