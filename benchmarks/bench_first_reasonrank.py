"""FIRST and ReasonRank against RankZephyr's generated permutation, same run, same weights, same windows.

All arms run on the HF backend with the small random Mistral of ``bench_listwise.py`` (hidden 256, 4 layers, a Zephyr
chat template, a locally trained tokenizer) over the same frame, window 20 / stride 10, windows of all queries batched:

- ``RankZephyr(style='rank_llm_0.26')``: generates ``[1] > … > [20]`` per window (min = max = the ranking's tokens);
- ``FIRST``: one forward pass per window (the prompt + ``[``), the identifiers' log-probabilities read from the logits;
- ``ReasonRank(max_output_tokens=B)``: generates up to B reasoning tokens + the ranking's (at least the ranking's).

Reported per arm: windows, tokens generated per window (the budget: a random model rarely stops early), seconds and
windows per second; and the time ratio of each arm to RankZephyr's. The numbers are relative (CPU, threads as given).

Usage: ``python benchmarks/bench_first_reasonrank.py [--queries 4] [--docs 60] [--context 1024] [--budget 64]
[--threads 2]``
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_listwise import frame, parser, small_chat_mistral  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402


def main():
    ap = parser(4, 60)
    ap.add_argument("--budget", type=int, default=64, help="ReasonRank's reasoning budget (tokens)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    df = frame(args.queries, args.docs)
    with tempfile.TemporaryDirectory() as tmp:
        path = small_chat_mistral(Path(tmp))
        backend = dict(batch_size=args.queries)
        arms = {
            "RankZephyr (generation)": pti.RankZephyr(path, style="rank_llm_0.26", backend_options=backend,
                                                      context_size=args.context, verbose=False),
            "FIRST (one forward pass)": pti.FIRST(path, backend_options=backend, context_size=args.context,
                                                  verbose=False),
            f"ReasonRank (budget {args.budget})": pti.ReasonRank(path, backend_options=backend,
                                                                 context_size=args.context,
                                                                 max_output_tokens=args.budget, verbose=False),
        }
        for r in arms.values():  # load weights and tokenizer outside the timing
            r(df[df.qid == "q0"].head(2))
            r.stats.clear()
        rows = []
        for name, r in arms.items():
            t = time.perf_counter()
            r(df)
            secs = time.perf_counter() - t
            per_window = 0 if isinstance(r, pti.FIRST) else r.output_budget(20) + r._reasoning_budget()
            rows.append((name, r.stats["windows"], per_window, secs))
        base = rows[0][3]
        print(f"{args.queries} queries x {args.docs} candidates, window 20/10, context {args.context}, CPU "
              f"{args.threads} threads")
        print(f"  {'arm':30s} {'windows':>7s} {'gen tokens/window':>18s} {'seconds':>8s} {'windows/s':>9s} "
              f"{'time / RankZephyr':>18s}")
        for name, windows, per_window, secs in rows:
            print(f"  {name:30s} {windows:7d} {per_window:18d} {secs:8.2f} {windows / secs:9.2f} {secs / base:18.3f}")


if __name__ == "__main__":
    main()
