"""Listwise reranking with RankZephyr (Pradeep et al., 2023) on vLLM: BM25's top 100 reranked by sliding windows of
20 passages (stride 10), the instruction in the prompt's query, over FollowIR; p-MRR and the og queries' MAP against
BM25. Needs ``pip install 'pyterrier-instruct[vllm]'`` and a GPU.

    python pipelines/listwise_vllm.py
    python pipelines/listwise_vllm.py --model castorini/rank_zephyr_7b_v1_full --gpu-memory-utilization 0.5
    python pipelines/listwise_vllm.py --standins    # tiny model and miniature data (vLLM itself still needed)
"""
import argparse

import pyterrier as pt
from ir_measures import AP

import pyterrier_instruct as pti


class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written above; each option with its default."""


parser = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
parser.add_argument("--dataset", default="followir/robust04",
                    help="a FollowIR id (followir/robust04, /news21, /core17)")
parser.add_argument("--model", default="castorini/rank_zephyr_7b_v1_full", help="RankZephyr's checkpoint")
parser.add_argument("--gpu-memory-utilization", type=float, default=0.8, help="the share of GPU memory vLLM may take")
parser.add_argument("--k", type=int, default=100, help="BM25 depth reranked")
parser.add_argument("--standins", action="store_true",
                    help="tiny random models and the miniature benchmarks (pyterrier_instruct.testing)")
args = parser.parse_args()
if args.standins:
    from pyterrier_instruct import testing
    testing.install(models=[args.model])

ds = pti.load_dataset(args.dataset)
bm25 = pti.BM25(ds.get_corpus_iter())
zephyr = pti.RankZephyr(backend=pti.VLLMBackend(args.model, gpu_memory_utilization=args.gpu_memory_utilization))
res = pt.Experiment([bm25, bm25 % args.k >> ds.text_loader() >> zephyr], ds.get_topics(), ds.get_qrels(),
                    [pti.pMRR, pti.OG(AP@1000)], names=["BM25", "BM25 » RankZephyr (vLLM)"], baseline=0,
                    plan="tree", verbose=False)  # BM25 computed once, not once per system
print(pti.label_stand_ins(res, [bm25, zephyr], ds).round(3).to_string(index=False))
