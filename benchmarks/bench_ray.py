"""``pti.on_ray`` on a local Ray cluster: throughput with 1 vs 2 workers at identical output, and Ray's costs against
the in-process run measured in the same process.

Model: a small monoT5 (random weights, d_model 256, 4+4 layers, d_ff 1024, 32,128-entry embedding) on the bundled
instruct-mini candidates, repeated to ``--queries`` distinct queries (28 candidates each). Every actor and the
in-process reference use ``--threads`` torch threads per worker (the actors reserve as many CPUs).

Reported (all in one run, one cluster; every on_ray output checked against the in-process run, |Δscore| < 1e-6):
- in process, the model loaded: the whole frame, and the same frame block by block (one block per query, the blocks
  on_ray uses below);
- on_ray with 1 and with 2 workers over those blocks, end to end (actor start, model load, scoring): the 2-vs-1
  throughput ratio at identical output;
- the fixed cost of a call (on_ray, 1 worker, one 28-row block, less that block's in-process time) and Ray's cost per
  block: (on_ray 1 worker − fixed cost − in process block by block) / blocks;
- Ray's cost per block without a model (a hash scorer; 1 worker, 200 blocks vs 1 block).

Usage: ``python benchmarks/bench_ray.py [--queries 20] [--cpus 2] [--threads 1] [--batch-size 14]``
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402
from pyterrier_instruct.scale import local_cluster  # noqa: E402


def small_t5(root: Path) -> str:
    import torch
    import transformers
    import tiny_models
    path = tiny_models.tiny_t5(root, vocab_size=4000)
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=32128, d_model=256, d_kv=32, d_ff=1024, num_layers=4,
                                   num_decoder_layers=4, num_heads=8, decoder_start_token_id=0, pad_token_id=0,
                                   eos_token_id=1, n_positions=512)
    transformers.T5ForConditionalGeneration(config).save_pretrained(path)
    return path


def workload(queries: int) -> pd.DataFrame:
    ds = pti.load_dataset("instruct-mini")
    cands = ds.candidates()(ds.get_topics())
    groups = [g for _, g in cands.groupby("qid", sort=False)]
    out = [groups[i % len(groups)].assign(qid=lambda d, i=i: d["qid"] + f"#{i}") for i in range(queries)]
    return pd.concat(out, ignore_index=True)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


class HashScorer(pti.InstructReranker):
    """No model: a score per row from a hash (Ray's own cost per block)."""

    def __init__(self, text_field="text", instruction="", verbose=False):
        self.text_field, self.instruction, self.verbose = text_field, instruction, verbose

    def _score(self, df):
        return np.array([zlib.crc32(f"{q}|{d}".encode()) / 2 ** 32 for q, d in zip(df["qid"], df["docno"])])


def checked(out: pd.DataFrame, ref: pd.DataFrame) -> float:
    diff = float(np.abs(out["score"].to_numpy() - ref["score"].to_numpy()).max())
    assert diff < 1e-6 and out["docno"].tolist() == ref["docno"].tolist(), diff
    return diff


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=20)
    p.add_argument("--cpus", type=int, default=2, help="CPUs the local cluster offers")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker (and in process)")
    p.add_argument("--batch-size", type=int, default=14)
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    frame = workload(args.queries)
    rows, per_query = len(frame), int(frame.groupby("qid").size().iloc[0])
    blocks = [g for _, g in frame.groupby("qid", sort=False)]
    with tempfile.TemporaryDirectory() as tmp:
        path = small_t5(Path(tmp))
        model = lambda: pti.MonoT5(path, batch_size=args.batch_size)  # noqa: E731
        local = model()
        local(blocks[0])  # load and warm up
        ref, t_whole = timed(lambda: local(frame))
        _, t_blocks = timed(lambda: [local(b) for b in blocks])
        local_cluster(num_cpus=args.cpus, num_gpus=0)
        kw = {"cpus_per_worker": args.threads, "block_rows": per_query}
        fixed_run = pti.on_ray(model(), workers=1, **kw)
        out, t_fixed = timed(lambda: fixed_run(blocks[0]))
        checked(out, ref.iloc[:per_query])
        one, t_one = timed(lambda: pti.on_ray(model(), workers=1, **kw)(frame))
        d1 = checked(one, ref)
        two_run = pti.on_ray(model(), workers=2, **kw)
        two, t_two = timed(lambda: two_run(frame))
        d2 = checked(two, ref)
        hashed = pd.concat([frame] * 5, ignore_index=True)
        hashed["qid"] = hashed["qid"] + "/" + (hashed.index // rows).astype(str)
        href = HashScorer()(hashed)
        n_small = hashed["qid"].nunique()
        h_one, t_h1 = timed(lambda: pti.on_ray(HashScorer(), workers=1, block_rows=len(hashed))(hashed))
        h_many, t_hn = timed(lambda: pti.on_ray(HashScorer(), workers=1, block_rows=per_query)(hashed))
        checked(h_one, href), checked(h_many, href)
    fixed = t_fixed - t_blocks / len(blocks)
    per_block_ms = 1000 * (t_one - fixed - t_blocks) / len(blocks)
    print(f"monoT5 (d_model 256, 4+4 layers), {rows} rows = {args.queries} queries × {per_query}, batch "
          f"{args.batch_size}, {args.threads} thread(s) per worker, local cluster of {args.cpus} CPUs\n")
    print("| run | blocks | seconds | rows/s | max abs score difference |")
    print("|---|---|---|---|---|")
    print(f"| in process, whole frame | - | {t_whole:.1f} | {rows / t_whole:.1f} | 0 |")
    print(f"| in process, block by block | {len(blocks)} | {t_blocks:.1f} | {rows / t_blocks:.1f} | 0 |")
    print(f"| on_ray, 1 worker, one 28-row block | 1 | {t_fixed:.1f} | - | - |")
    print(f"| on_ray, 1 worker | {len(blocks)} | {t_one:.1f} | {rows / t_one:.1f} | {d1:.1e} |")
    print(f"| on_ray, 2 workers | {len(blocks)} | {t_two:.1f} | {rows / t_two:.1f} | {d2:.1e} |")
    print()
    print(f"2 workers vs 1 worker (same blocks, same output): {t_one / t_two:.2f}× the throughput end to end, "
          f"{(t_one - fixed) / max(t_two - fixed, 1e-9):.2f}× without the fixed cost")
    print(f"fixed cost of a call (actor start + model load): {fixed:.1f} s")
    print(f"Ray's cost per block with the model (on_ray 1 worker − fixed − in process block by block): "
          f"{per_block_ms:.0f} ms")
    print(f"Ray's cost per block without a model ({n_small} blocks vs 1, {len(hashed)} rows): "
          f"{1000 * (t_hn - t_h1) / (n_small - 1):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
