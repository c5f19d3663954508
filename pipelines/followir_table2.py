"""FollowIR Table 2-style comparison: standard measure on the og instruction and p-MRR, per dataset.

Systems: ``pti.evaluation.followir_baselines`` (full-collection BM25 on the query and on
query+instruction, FollowIR's PoolBM25 on the fixed pool, all-MiniLM-L6-v2 when installed).

Each dataset gets one ``pti.followir_experiment`` (BM25 on the query as the significance baseline);
``followir_table`` joins them and adds Avg Score / Avg p-MRR when there is more than one.

    HF_HUB_OFFLINE=1 python pipelines/followir_table2.py
    HF_HUB_OFFLINE=1 python pipelines/followir_table2.py \\
        --dataset followir/robust04 --path /data/robust04-instructions \\
        --dataset followir/news21   --path /data/news21-instructions \\
        --dataset followir/core17   --path /data/core17-instructions --out results/table2.csv
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import pandas as pd

import pyterrier_instruct as pti
from pyterrier_instruct.evaluation import followir_baselines, followir_table, to_markdown


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="FollowIR Table 2-style comparison over one or more datasets.")
    p.add_argument("--dataset", action="append", default=None,
                   help="dataset name (instruct-mini, followir/robust04, followir/news21, followir/core17) or a "
                        "local folder in the FollowIR layout; repeat for several (default: instruct-mini)")
    p.add_argument("--path", action="append", default=None,
                   help="local snapshot folder of the matching --dataset; give one per --dataset, in the same "
                        "order, '-' for a dataset that needs none (bundled, or a hub download when online)")
    p.add_argument("--out", default="results/followir_table2.csv", help="CSV file for the table")
    p.add_argument("--no-minilm", action="store_true", help="skip the all-MiniLM-L6-v2 reranker")
    args = p.parse_args(argv)

    names = args.dataset or ["instruct-mini"]
    paths = [None if p in ("", "-") else p for p in (args.path or [None] * len(names))]
    if len(paths) != len(names):
        p.error(f"give one --path per --dataset ({len(names)} datasets, {len(paths)} paths)")

    results, experiments = {}, []
    for name, path in zip(names, paths):
        t0 = time.time()
        ds = pti.load_dataset(name, path=path)
        label = ds.name.split("/")[-1]
        if label in results:
            label = f"{label}#{len(results) + 1}"
        systems = followir_baselines(ds, neural=not args.no_minilm)
        means = pti.followir_experiment(list(systems.values()), ds, names=list(systems), baseline=0)
        results[label] = (ds, means)
        experiments.append(means.assign(dataset=label))
        n = ds.get_topics("og").shape[0]
        print(f"{label}: {n} queries, {ds.measure} + p-MRR, {time.time() - t0:.1f} s", file=sys.stderr)

    table = followir_table(results)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    table.to_csv(args.out, index=False)
    raw = os.path.splitext(args.out)[0] + ".experiment.csv"
    pd.concat(experiments, ignore_index=True).to_csv(raw, index=False)

    print("Standard measure on the og instruction and p-MRR (og -> changed), x100:\n")
    print(to_markdown(table))
    print(f"\nwritten {args.out} (table) and {raw} (raw pt.Experiment means with significance vs BM25 on the query)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
