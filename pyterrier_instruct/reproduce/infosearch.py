"""InfoSearch Tables 2 and 3: the rerankers on each dimension's candidates in the three modes (og, changed = the
instruction asks for one condition, reversed = it excludes it); nDCG@10, MRR@1, Robustness@10, p-MRR, WISE, SICR and the
mean gold ranks averaged over the dimensions (Table 2), and WISE/SICR per dimension (Table 3), with the paper's numbers.

Every row reranks the candidates of each instance (empty_scores.json), as the paper did; "BM25" is the pool-local BM25
(``pti.PoolBM25``). WISE and SICR follow the reference code (InfoSearch utils.py). Runs are saved under --out/runs/ and
reused. GPT-4o (RankGPT prompt on an OpenAI-compatible server; reads $OPENAI_API_KEY) runs only when named in --systems.

examples:
  # the bundled 8-instance InfoSearch-format benchmark, BM25 only (no GPU, no network):
  pyterrier-instruct infosearch --dataset infosearch-mini --systems bm25
  # two dimensions from local snapshots, BM25 and FollowIR-7B on a GPU:
  pyterrier-instruct infosearch --systems bm25,followir-7b --device cuda \\
      --dataset infosearch/audience --path /data/Audience-v1 --dataset infosearch/format --path /data/Format-v1
"""
from __future__ import annotations

import sys

import pyterrier_instruct as pti
from pyterrier_instruct.reproduce.arguments import Row, model_options, open_datasets, parse, parser
from pyterrier_instruct.reproduce.output import finish
from pyterrier_instruct.reproduce.systems import (ROW_RANK1, ROWS_2025, check_models, listwise_backend, on_cluster,
                                                  rank1, rerankers_2025, saved, selected)

#: the CLI command (``pyterrier-instruct infosearch``) and its line in the overview; the CLI finds it here
COMMAND = ('infosearch', 'InfoSearch Tables 2-3: nDCG@10, p-MRR, WISE, SICR over the six dimensions')

ROWS = {
    "bm25": Row("BM25 (pool)", paper="BM25"),
    "followir-7b": Row("FollowIR-7B", "FollowIR", "jhu-clsp/FollowIR-7B"),
    "mistral": Row("Mistral-7B-instruct-v0.2", "Mistral-ins-v0.2", "mistralai/Mistral-7B-Instruct-v0.2",
                   "InfoSearch's prompt (indented lines)"),
    "llama": Row("Llama-3.1-8B-Instruct", "Llama-3.1", "meta-llama/Meta-Llama-3.1-8B-Instruct"),
    "e5-mistral": Row("E5-Mistral", "E5-Mistral-ins", "intfloat/e5-mistral-7b-instruct"),
    "rank1": ROW_RANK1,
    "rank-zephyr": Row("RankZephyr", "RankZephyr-v1", "castorini/rank_zephyr_7b_v1_full"),
    "rank-vicuna": Row("RankVicuna", "RankVicuna-v1", "castorini/rank_vicuna_7b_v1"),
    **ROWS_2025,
    "zephyr": Row("Zephyr-beta (listwise)", "Zephyr-beta", "HuggingFaceH4/zephyr-7b-beta", "RankZephyr's prompt"),
    "gpt-4o": Row("GPT-4o (RankGPT)", "GPT-4o", "gpt-4o", "an OpenAI-compatible model name; see --openai-base-url",
                  default=False, hub=False),
}
DATASETS = [f"infosearch/{d}" for d in ("audience", "keyword", "format", "language", "length", "source")]


def main(argv=None) -> int:
    p = parser("infosearch", __doc__, ROWS, DATASETS)
    p.add_argument("--listwise-backend", choices=["hf", "vllm"], default="hf",
                   help="generation backend of the listwise rows and rank1")
    p.add_argument("--openai-base-url", default="https://api.openai.com/v1", help="server of the GPT-4o row")
    p.add_argument("--openai-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="the environment variable holding that server's key; 'none' for a server without a key (a "
                        "local vllm serve)")
    p.add_argument("--table", choices=["2", "3", "both"], default="both", help="which paper table(s) to print")
    args = parse(p, argv, ROWS, DATASETS)
    check_models(args, ROWS)
    kw, m = model_options(args), args.models

    def listwise(family, key):
        return family(backend=listwise_backend(m[key], args.listwise_backend, kw), verbose=kw["verbose"])

    rerankers = selected({
        "bm25": lambda: pti.PoolBM25(verbose=kw["verbose"]),
        "followir-7b": lambda: pti.FollowIR7B(m["followir-7b"], **kw),
        "mistral": lambda: pti.CausalLMReranker.mistral_instruct(m["mistral"], style="infosearch", **kw),
        "llama": lambda: pti.CausalLMReranker.llama(m["llama"], **kw),
        "e5-mistral": lambda: pti.E5Mistral(m["e5-mistral"], **kw).scorer(),
        **rerankers_2025(m, kw),
        "rank1": lambda: rank1(m["rank1"], args.listwise_backend, kw),
        "rank-zephyr": lambda: listwise(pti.RankZephyr, "rank-zephyr"),
        "rank-vicuna": lambda: listwise(pti.RankVicuna, "rank-vicuna"),
        "zephyr": lambda: listwise(pti.RankZephyr, "zephyr"),
        "gpt-4o": lambda: pti.RankGPT(m["gpt-4o"], base_url=args.openai_base_url, verbose=kw["verbose"],
                                      api_key_env=None if args.openai_key_env.lower() == "none"
                                      else args.openai_key_env),
    }, args)
    rerankers = on_cluster(rerankers, args)  # --ray: each model on the cluster (the pool BM25 stays here)

    datasets = open_datasets(args)
    systems = pti.PerDataset({label: saved({k: ds.candidates() >> r for k, r in rerankers.items()}, args, ROWS, label)
                              for label, ds in datasets.items()})
    for table in (["2", "3"] if args.table == "both" else [args.table]):
        report = pti.infosearch_report(systems, datasets, table=int(table))  # the second table reuses the saved runs
        title = ("InfoSearch Table 2 (x100; mean gold ranks as ranks): averages over the dimensions" if table == "2"
                 else "InfoSearch Table 3 (x100): WISE and SICR per dimension")
        finish(report, args, ROWS, f"table{table}", title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
