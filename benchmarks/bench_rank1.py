"""rank1 throughput on CPU: ``pti.Rank1`` on ``HFBackend`` (length-sorted batches, one ``generate`` per batch, the
forced steps batched) against rank1.py's logic run one row at a time (``tests/test_rank1.py::reference``, an unbatched
greedy loop that decodes the text after every token, as vLLM's stop strings do), on the same weights and inputs, in the
same run.

Weights: ``tiny_models.tiny_rank1`` (a Qwen2 with a planted reasoning path, so rows stop on ``</think> true/false``,
run to the budget or take the forced path). Inputs: instruct-mini candidates (query + instruction, passages cut to
``--chars``). Usage: ``python benchmarks/bench_rank1.py [--rows 48] [--budget 32] [--batch-size 16] [--threads 2]``
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import tiny_models  # noqa: E402
from test_rank1 import reference  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=48)
    p.add_argument("--budget", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--chars", type=int, default=400)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    path = tiny_models.tiny_rank1(Path(tempfile.mkdtemp()))
    ds = pti.load_dataset("instruct-mini")
    df = ds.candidates()(ds.get_topics()).head(args.rows).reset_index(drop=True)
    df["text"] = df["text"].str.slice(0, args.chars)
    passages = [f"{t} {x}" if t else x for t, x in zip(df.get("title", [""] * len(df)), df["text"])]

    t = time.perf_counter()
    ref = reference(path, df["query"], df["instruction"], passages, args.budget)
    t_ref = time.perf_counter() - t
    model = pti.Rank1(path, max_output_tokens=args.budget, backend_options={"batch_size": args.batch_size},
                      verbose=False)
    t = time.perf_counter()
    out = model(df)
    t_ours = time.perf_counter() - t

    scores = np.array([r[0] for r in ref])
    kinds = {k: sum(r[2] == k for r in ref) for k in sorted({r[2] for r in ref})}
    print(f"rank1, {len(df)} rows, budget {args.budget} tokens, batch {args.batch_size}, {args.threads} threads; "
          f"paths: {kinds}")
    print(f"  max |score - reference| = {np.abs(out['score'].to_numpy() - scores).max():.2e}; "
          f"reasoning equal: {out['reasoning'].tolist() == [r[1] for r in ref]}")
    print(f"  reference loop (rank1.py logic, one row at a time): {len(df) / t_ref:7.2f} rows/s")
    print(f"  pti.Rank1 on HFBackend:                             {len(df) / t_ours:7.2f} rows/s  "
          f"({t_ref / t_ours:.2f}x)")


if __name__ == "__main__":
    main()
