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

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--dataset", default="infosearch/format",
                    help="infosearch/<dimension>: audience, format, keyword, language, length, source")
parser.add_argument("--monot5", default="castorini/monot5-base-msmarco-10k")
parser.add_argument("--followir", default="jhu-clsp/FollowIR-7B")
parser.add_argument("--wise-version", default="2024", choices=["2024", "2025", "paper"])
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
                    names=list(systems), baseline=0)
print(res.round(3).to_string(index=False))
