"""FollowIR Table 2: every supported reranker on the FollowIR candidates, the standard measure on the og instruction
(MAP@1000; nDCG@5 for News21) and p-MRR (og -> changed), printed with the published numbers and the difference.

All rows rerank each query's fixed FollowIR candidates (``ds.candidates()``), as the paper did. "BM25" is FollowIR's
pool-local BM25 (``pti.PoolBM25``), not a full-collection index. Each system's run is saved under --out/runs/ as soon
as it completes, and a re-run reuses it, so an interrupted reproduction resumes where it stopped.

examples:
  # the bundled 10-query benchmark, BM25 only (no GPU, no network):
  pyterrier-instruct followir --dataset instruct-mini --systems bm25
  # the paper's three datasets from local snapshots, two rows, on a GPU:
  pyterrier-instruct followir --systems bm25,monot5-base --device cuda \\
      --dataset followir/robust04 --path /data/robust04-instructions \\
      --dataset followir/news21 --path /data/news21-instructions \\
      --dataset followir/core17 --path /data/core17-instructions
  # RankZephyr through vLLM, a local copy of the weights:
  pyterrier-instruct followir --systems rank-zephyr --rank-zephyr /models/rank_zephyr_7b_v1_full --listwise-backend vllm
"""
from __future__ import annotations

import sys

import pyterrier_instruct as pti
from pyterrier_instruct.reproduce.arguments import (Row, backend_options, model_options, open_datasets, parse, parser,
                                                    reasoning_budget as budget)
from pyterrier_instruct.reproduce.output import finish
from pyterrier_instruct.reproduce.systems import (ROW_RANK1, ROW_REPLLAMA, ROWS_2025, ROWS_SETWISE, check_models,
                                                  listwise_backend, on_cluster, rank1, rerankers_2025, saved, selected,
                                                  setwise_rerankers)

#: the CLI command (``pyterrier-instruct followir``) and its line in the overview; the CLI finds it here
COMMAND = ('followir', 'FollowIR Table 2: MAP@1000/nDCG@5 and p-MRR of the rerankers on Robust04, News21, Core17')

ROWS = {
    "bm25": Row("BM25 (pool)", paper="BM25", help="FollowIR's BM25 over each query's candidates"),
    "monot5-base": Row("MonoT5-base", "MonoT5-base", "castorini/monot5-base-msmarco-10k"),
    "monot5-3b": Row("MonoT5-3B", "MonoT5-3B", "castorini/monot5-3b-msmarco-10k"),
    "followir-7b": Row("FollowIR-7B", "FollowIR-7B", "jhu-clsp/FollowIR-7B"),
    "mistral": Row("Mistral-7B-instruct", "Mistral-7B-instruct", "mistralai/Mistral-7B-Instruct-v0.2"),
    "promptriever": Row("Promptriever", "Promptriever", "samaya-ai/promptriever-llama2-7b-v1",
                        "a LoRA adapter; its base (meta-llama/Llama-2-7b-hf) is read from the adapter config"),
    "repllama": ROW_REPLLAMA,
    "e5-mistral": Row("E5-mistral", "E5-mistral", "intfloat/e5-mistral-7b-instruct"),
    "rank1": ROW_RANK1,
    "rank-zephyr": Row("RankZephyr", None, "castorini/rank_zephyr_7b_v1_full", "listwise, top 100 of the candidates"),
    "first": Row("FIRST", None, "castorini/first_mistral", "single-token listwise, top 100 of the candidates, one "
                 "forward pass per window (run on request: --systems ...,first)", default=False),
    "reasonrank": Row("ReasonRank-7B", None, "liuwenhan/reasonrank-7B", "reasoning listwise, top 100 of the "
                      "candidates, up to 3072 reasoning tokens per window (run on request: --systems ...,reasonrank)",
                      default=False),
    **ROWS_2025,
    **ROWS_SETWISE,
}
DATASETS = ["followir/robust04", "followir/news21", "followir/core17"]


def main(argv=None) -> int:
    p = parser("followir", __doc__, ROWS, DATASETS)
    p.add_argument("--listwise-backend", choices=["hf", "vllm"], default="hf",
                   help="the generation backend of RankZephyr, FIRST, ReasonRank, rank1, Setwise and Rank-R1")
    p.add_argument("--reasoning-budget", type=int, default=None,
                   help="the reasoning tokens of ReasonRank (per window) and Rank-R1 (per comparison) (default: each "
                   "model's own: ReasonRank 3072 as rank_llm's demo, Rank-R1 2048 as its library)")
    p.add_argument("--ties", choices=["docno", "input"], default="docno",
                   help="p-MRR tie-break (default: docno, as mteb)")
    args = parse(p, argv, ROWS, DATASETS)
    check_models(args, ROWS)
    kw, m = model_options(args), args.models
    hf_options = backend_options(kw) if args.listwise_backend == "hf" else None

    # One instance per model, shared by the datasets (weights load once, on first use).
    rerankers = selected({
        "bm25": lambda: pti.PoolBM25(verbose=kw["verbose"]),
        "monot5-base": lambda: pti.MonoT5(m["monot5-base"], **kw),
        "monot5-3b": lambda: pti.MonoT5(m["monot5-3b"], **kw),
        "followir-7b": lambda: pti.FollowIR7B(m["followir-7b"], **kw),
        "mistral": lambda: pti.CausalLMReranker.mistral_instruct(m["mistral"], style="followir", **kw),
        "promptriever": lambda: pti.Promptriever(m["promptriever"], style="mteb", **kw).scorer(),
        "repllama": lambda: pti.RepLLaMA(m["repllama"], style="mteb", **kw).scorer(),
        "e5-mistral": lambda: pti.E5Mistral(m["e5-mistral"], **kw).scorer(),
        **rerankers_2025(m, kw),
        "rank1": lambda: rank1(m["rank1"], args.listwise_backend, kw),
        **setwise_rerankers(m, args.listwise_backend, kw, args.reasoning_budget),
        "rank-zephyr": lambda: pti.RankZephyr(
            backend=listwise_backend(m["rank-zephyr"], args.listwise_backend, kw),
            depth=100, verbose=kw["verbose"]),
        "first": lambda: pti.FIRST(m["first"], backend=args.listwise_backend, backend_options=hf_options, depth=100,
                                   verbose=kw["verbose"]),
        "reasonrank": lambda: pti.ReasonRank(m["reasonrank"], backend=args.listwise_backend, backend_options=hf_options,
                                             depth=100, verbose=kw["verbose"], **budget(args)),
    }, args)
    rerankers = on_cluster(rerankers, args)  # --ray: each model on the cluster (the pool BM25 stays here)

    datasets = open_datasets(args)
    systems = pti.PerDataset({label: saved({k: ds.candidates() >> r for k, r in rerankers.items()}, args, ROWS, label)
                              for label, ds in datasets.items()})
    table = pti.followir_report(systems, datasets, ties=args.ties)
    finish(table, args, ROWS, "table2", "FollowIR Table 2 (x100): standard measure on og, p-MRR og -> changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
