"""BRIGHT (Su et al., 2024) reranked by rank1 (Weller et al., 2025), as rank1's ``run_mteb.py`` does: BM25's top 100 per
task reranked by the reasoning model, nDCG@10, each query's ``excluded_ids`` removed from every ranking.

    python pipelines/bright.py                                   # biology, earth_science, economics
    python pipelines/bright.py --tasks leetcode,pony --rank1 jhu-clsp/rank1-14b
    python pipelines/bright.py --standins --max-output-tokens 16
"""
import argparse

import pyterrier as pt
from ir_measures import nDCG

import pyterrier_instruct as pti


class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written above; each option with its default."""


parser = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
parser.add_argument("--tasks", default="biology,earth_science,economics",
                    help="BRIGHT tasks (bright/<task>; <task>-long too)")
parser.add_argument("--rank1", default="jhu-clsp/rank1-7b", help="rank1's checkpoint")
parser.add_argument("--max-output-tokens", type=int, default=8192, help="rank1's reasoning budget")
parser.add_argument("--k", type=int, default=100, help="BM25 depth reranked")
parser.add_argument("--standins", action="store_true",
                    help="tiny random models and the miniature benchmarks (pyterrier_instruct.testing)")
args = parser.parse_args()
if args.standins:
    from pyterrier_instruct import testing
    testing.install(models=[args.rank1])

rank1 = pti.Rank1(args.rank1, max_output_tokens=args.max_output_tokens)
for task in args.tasks.split(","):
    ds = pti.load_dataset(f"bright/{task}")
    bm25 = pti.BM25(ds.get_corpus_iter())
    systems = [bm25 % args.k, bm25 % args.k >> ds.text_loader() >> rank1]
    systems = [system >> ds.exclude() for system in systems]      # BRIGHT's excluded_ids, removed from each ranking
    res = pt.Experiment(systems, ds.get_topics(), ds.get_qrels(), [nDCG@10], names=["BM25", "BM25 » rank1"],
                        plan="tree", verbose=False)  # BM25 computed once, not once per system
    print(f"bright/{task}\n{pti.label_stand_ins(res, systems, ds).round(3).to_string(index=False)}")
