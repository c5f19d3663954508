"""FollowIR (Weller et al., 2024): BM25's top 100 reranked by instruction-following rerankers, scored by p-MRR (does
the ranking follow the changed instruction?) and the og queries' MAP, each system tested against BM25.

    python pipelines/followir.py                        # followir/robust04, the four rerankers below
    python pipelines/followir.py --dataset followir/news21 --rank1 jhu-clsp/rank1-14b
    python pipelines/followir.py --standins             # tiny random models + miniature data: seconds, on CPU
"""
import argparse

import pyterrier as pt
from ir_measures import AP, nDCG

import pyterrier_instruct as pti


class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written above; each option with its default."""


parser = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
parser.add_argument("--dataset", default="followir/robust04", help="a FollowIR id (/robust04, /news21, /core17)")
parser.add_argument("--monot5", default="castorini/monot5-base-msmarco-10k", help="MonoT5's checkpoint")
parser.add_argument("--followir", default="jhu-clsp/FollowIR-7B", help="FollowIR-7B's checkpoint")
parser.add_argument("--qwen3", default="Qwen/Qwen3-Reranker-0.6B", help="Qwen3-Reranker's checkpoint")
parser.add_argument("--rank1", default="jhu-clsp/rank1-7b", help="rank1's checkpoint")
parser.add_argument("--max-output-tokens", type=int, default=8192, help="rank1's reasoning budget")
parser.add_argument("--k", type=int, default=100, help="BM25 depth reranked")
parser.add_argument("--standins", action="store_true", help="tiny random models at these ids and the miniature "
                    "benchmarks (pyterrier_instruct.testing): checks that the pipeline runs, its numbers mean nothing")
args = parser.parse_args()
if args.standins:
    from pyterrier_instruct import testing
    testing.install(models=[args.monot5, args.followir, args.qwen3, args.rank1])

ds = pti.load_dataset(args.dataset)
bm25 = pti.BM25(ds.get_corpus_iter())
first_stage = bm25 % args.k >> ds.text_loader()           # the query alone; the rerankers read the instruction column
rerankers = {
    "MonoT5": pti.MonoT5(args.monot5),
    "FollowIR-7B": pti.FollowIR7B(args.followir),
    "Qwen3-Reranker": pti.Qwen3Reranker(args.qwen3),
    "rank1": pti.Rank1(args.rank1, max_output_tokens=args.max_output_tokens),
}
res = pt.Experiment(
    [bm25] + [first_stage >> model for model in rerankers.values()],
    ds.get_topics(), ds.get_qrels(),
    [pti.pMRR, pti.OG(AP@1000), pti.OG(nDCG@5)],
    names=["BM25"] + [f"BM25 » {name}" for name in rerankers],
    baseline=0,                                           # paired t-test against BM25, per base query
    plan="tree", verbose=False)                           # BM25 and the text loaded once, not per system
print(pti.label_stand_ins(res, [bm25, *rerankers.values()], ds).round(3).to_string(index=False))
