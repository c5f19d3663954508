"""InfoSearch (Zhou et al., 2024): rerankers over each dimension's candidates, scored by WISE (rewards ranking the
instructed document first and penalises following the reversed instruction), SICR and InfoSearch's p-MRR.

    python pipelines/infosearch.py                           # infosearch/format
    python pipelines/infosearch.py --dataset infosearch/language --wise-version 2025
    python pipelines/infosearch.py --standins
"""
import argparse

import pyterrier as pt
from ir_measures import nDCG

import pyterrier_instruct as pti


class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written above; each option with its default."""


parser = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
parser.add_argument("--dataset", default="infosearch/format",
                    help="infosearch/<dimension>: audience, format, keyword, language, length, source")
parser.add_argument("--monot5", default="castorini/monot5-base-msmarco-10k", help="MonoT5's checkpoint")
parser.add_argument("--followir", default="jhu-clsp/FollowIR-7B", help="FollowIR-7B's checkpoint")
parser.add_argument("--wise-version", default="2024", choices=["2024", "2025", "paper"],
                    help="WISE's version (pti.WISE(version=))")
parser.add_argument("--standins", action="store_true",
                    help="tiny random models and the miniature benchmarks (pyterrier_instruct.testing)")
args = parser.parse_args()
if args.standins:
    from pyterrier_instruct import testing
    testing.install(models=[args.monot5, args.followir])

ds = pti.load_dataset(args.dataset)
pool = ds.candidates()
systems = {"BM25 (pool)": pool >> pti.PoolBM25(), "MonoT5": pool >> pti.MonoT5(args.monot5),
           "FollowIR-7B": pool >> pti.FollowIR7B(args.followir)}
res = pt.Experiment(list(systems.values()), ds.get_topics(), ds.get_qrels(),
                    [pti.WISE(version=args.wise_version), pti.SICR, pti.InfoSearch_pMRR, pti.OG(nDCG@10)],
                    names=list(systems), baseline=0, plan="tree", verbose=False)  # the pool read once, not per system
print(pti.label_stand_ins(res, list(systems.values()), ds).round(3).to_string(index=False))
