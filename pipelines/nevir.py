"""NevIR (Weller et al., 2024): pairs of queries that differ by a negation, each with two candidate documents; a
pair counts when the reranker orders both queries' documents right (paired accuracy).

    python pipelines/nevir.py                       # the test split
    python pipelines/nevir.py --dataset nevir/validation --rank1 jhu-clsp/rank1-0.5b
    python pipelines/nevir.py --standins --max-output-tokens 16
"""
import argparse

import pyterrier as pt

import pyterrier_instruct as pti


class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written above; each option with its default."""


parser = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
parser.add_argument("--dataset", default="nevir", help="nevir (test), nevir/validation, nevir/train, nevir/mteb")
parser.add_argument("--monot5", default="castorini/monot5-base-msmarco-10k", help="MonoT5's checkpoint")
parser.add_argument("--qwen3", default="Qwen/Qwen3-Reranker-0.6B", help="Qwen3-Reranker's checkpoint")
parser.add_argument("--rank1", default="jhu-clsp/rank1-7b", help="rank1's checkpoint")
parser.add_argument("--max-output-tokens", type=int, default=8192, help="rank1's reasoning budget")
parser.add_argument("--standins", action="store_true",
                    help="tiny random models and the miniature benchmarks (pyterrier_instruct.testing)")
args = parser.parse_args()
if args.standins:
    from pyterrier_instruct import testing
    testing.install(models=[args.monot5, args.qwen3, args.rank1])

ds = pti.load_dataset(args.dataset)
rerankers = {"MonoT5": pti.MonoT5(args.monot5), "Qwen3-Reranker": pti.Qwen3Reranker(args.qwen3),
             "rank1": pti.Rank1(args.rank1, max_output_tokens=args.max_output_tokens)}
res = pt.Experiment([ds.candidates() >> model for model in rerankers.values()], ds.get_topics(), ds.get_qrels(),
                    [pti.PairedAccuracy], names=list(rerankers), plan="tree", verbose=False)  # candidates read once
print(pti.label_stand_ins(res, list(rerankers.values()), ds).round(3).to_string(index=False))
