"""One leaderboard over every instruction-following benchmark with data: each system's main score per benchmark (its
own report's number), the mean rank and the mean normalised score, with the per-benchmark tables, run costs and saved
runs under --out (a re-run computes nothing new).

Pooled benchmarks (FollowIR, mFollowIR, InfoSearch, NevIR) rerank each query's candidates; the others rerank one BM25
run per dataset (query + instruction, top --depth). "bm25" is that first stage alone (FollowIR's pool BM25 on the
pooled ones). A benchmark without data, or a system failing on one, is a note in the row; the rest goes on.

examples:
  # tiny random weights and the miniature benchmarks (pyterrier_instruct.testing): checks the pipeline runs
  pyterrier-instruct suite --systems bm25,monot5 --standins
  # the reasoning suite (BRIGHT) from local snapshots, rank1 at three reasoning budgets
  pyterrier-instruct suite --suite reasoning --systems bm25,rank1 --reasoning-budget 1024,4096,8192 \\
      --data-root /data --device cuda
  # RankGPT on an OpenAI reasoning model at three efforts, its calls and tokens kept in <out>/calls
  pyterrier-instruct suite --systems bm25,rankgpt --rankgpt gpt-5.1 --reasoning-effort none,low,high
"""
from __future__ import annotations

import json
import os
import sys

import pyterrier_instruct as pti
from pyterrier_instruct.backends.openai import REASONING_EFFORTS
from pyterrier_instruct.reproduce.arguments import Row, backend_options, model_options, parse, parser
from pyterrier_instruct.reproduce.systems import (ROW_RANK1, ROWS_2025, ROWS_SETWISE, check_models, listwise_backend,
                                                  on_cluster, rerankers_2025, row_name, setwise_rerankers)

COMMAND = ('suite', 'One leaderboard: every system on every instruction-following benchmark with data (main measures)')

ROWS = {
    "bm25": Row("BM25", "BM25",
                help="the first stage alone: pool BM25 on the pooled benchmarks, PISA BM25 on the others"),
    "monot5": Row("MonoT5-base", "MonoT5-base", "castorini/monot5-base-msmarco-10k"),
    "followir-7b": Row("FollowIR-7B", "FollowIR-7B", "jhu-clsp/FollowIR-7B"),
    "mistral": Row("Mistral-7B-instruct", "Mistral-7B-instruct", "mistralai/Mistral-7B-Instruct-v0.2",
                   "FollowIR's prompt"),
    "e5-mistral": Row("E5-mistral", "E5-mistral", "intfloat/e5-mistral-7b-instruct", "as a reranking scorer"),
    "rank-zephyr": Row("RankZephyr", None, "castorini/rank_zephyr_7b_v1_full", "listwise", default=False),
    "rank1": ROW_RANK1,
    "reasonrank": Row("ReasonRank-7B", None, "liuwenhan/reasonrank-7B", "reasoning listwise, top 100", default=False),
    "rankgpt": Row("RankGPT", None, "gpt-5-mini", "listwise on an OpenAI-compatible server (--openai-base-url; a "
                   "reasoning model takes --reasoning-effort); its calls are kept in <out>/calls", default=False,
                   hub=False),
    **ROWS_2025,
    **ROWS_SETWISE,
}

#: the rows with a reasoning budget (``--reasoning-budget`` sweeps it): local checkpoints, none with a thinking switch
#: (rank1's raw prompt opens ``<think>`` itself; ReasonRank and Rank-R1 are Qwen2.5 chat templates, which have no
#: ``enable_thinking``): a budget of a few tokens is their "thinking off"
REASONING = ("rank1", "reasonrank", "rank-r1")
#: the rows on an API reasoning model (``--reasoning-effort`` sweeps its ``reasoning_effort``)
EFFORT = ("rankgpt",)


def main(argv=None) -> int:
    from pyterrier_instruct.evaluation.leaderboard import BENCHMARKS, SUITES
    p = parser("suite", __doc__, ROWS, [])
    p.add_argument("--suite", choices=list(SUITES), default="instruct", help="the named suite (default: instruct; "
                   + "; ".join(f"{k}: {', '.join(v)}" for k, v in SUITES.items()) + ")")
    p.add_argument("--benchmarks", default=None, metavar="NAME,NAME",
                   help=f"these benchmarks instead of --suite, from: {', '.join(BENCHMARKS)}; "
                        "--dataset ID adds one dataset")
    p.add_argument("--depth", type=int, default=100, help="BM25 candidates each system reranks (default 100)")
    p.add_argument("--listwise-backend", choices=["hf", "vllm"], default="hf", help="backend of the generating rows")
    p.add_argument("--reasoning-budget", default=None, metavar="N,N",
                   help=f"reasoning budgets in tokens to sweep: each reasoning row ({', '.join(REASONING)}) runs "
                        "once per budget, labelled [budget N]; generations without a verdict are counted in the "
                        "row's notes (default: each model's own budget)")
    p.add_argument("--reasoning-effort", default=None, metavar="EFFORT,EFFORT",
                   help=f"reasoning efforts to sweep ({', '.join(REASONING_EFFORTS)}): each API row "
                        f"({', '.join(EFFORT)}) runs once per effort, labelled [effort E], on a reasoning model "
                        "(default: the model's own)")
    p.add_argument("--openai-base-url", default="https://api.openai.com/v1", help="server of the rankgpt row")
    p.add_argument("--openai-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="the environment variable holding that server's key; 'none' for a server without a key (a "
                        "local vllm serve)")
    p.add_argument("--prices", default=None, metavar="JSON",
                   help='USD per million tokens for the cost table, e.g. \'{"prompt": 2.5, "completion": 10}\'')
    p.add_argument("--standins", action="store_true", help="tiny random weights at the rows' ids and the miniature "
                   "benchmarks (pyterrier_instruct.testing): the leaderboard says so in every row and file")
    args = parse(p, argv, ROWS, [])
    if args.standins:
        from pyterrier_instruct import testing
        testing.install(models=[args.models[k] for k in args.keys if k in args.models and ROWS[k].hub])
    check_models(args, ROWS)
    kw, m = model_options(args), args.models
    hf = backend_options(kw) if args.listwise_backend == "hf" else None
    budgets = [int(b) for b in args.reasoning_budget.split(",")] if args.reasoning_budget else [None]
    efforts = args.reasoning_effort.split(",") if args.reasoning_effort else [None]
    key_env = None if args.openai_key_env.lower() == "none" else args.openai_key_env

    def builders(budget, effort=None):
        spent = {} if budget is None else {"max_output_tokens": budget}
        api = {"store": os.path.join(args.out, "calls"), **({} if effort is None else {"reasoning_effort": effort})}
        return {
            "monot5": lambda: pti.MonoT5(m["monot5"], **kw),
            "followir-7b": lambda: pti.FollowIR7B(m["followir-7b"], **kw),
            "mistral": lambda: pti.CausalLMReranker.mistral_instruct(m["mistral"], style="followir", **kw),
            "e5-mistral": lambda: pti.E5Mistral(m["e5-mistral"], **kw).scorer(),
            "rank-zephyr": lambda: pti.RankZephyr(backend=listwise_backend(m["rank-zephyr"], args.listwise_backend, kw),
                                                  depth=100, verbose=kw["verbose"]),
            "rank1": lambda: pti.Rank1(m["rank1"], backend=args.listwise_backend, backend_options=hf,
                                       verbose=kw["verbose"], **spent),
            "reasonrank": lambda: pti.ReasonRank(m["reasonrank"], backend=args.listwise_backend, backend_options=hf,
                                                 depth=100, verbose=kw["verbose"], **spent),
            "rankgpt": lambda: pti.RankGPT(m["rankgpt"], base_url=args.openai_base_url, api_key_env=key_env,
                                           backend_options=api, verbose=kw["verbose"]),
            **rerankers_2025(m, kw),
            **setwise_rerankers(m, args.listwise_backend, kw, budget),
        }
    models = {}
    for key in [k for k in args.keys if k in builders(None)]:  # a row per budget or effort swept
        for budget in budgets if key in REASONING else [None]:
            for effort in efforts if key in EFFORT else [None]:
                label = "".join(f" [{k} {v}]" for k, v in (("budget", budget), ("effort", effort)) if v is not None)
                try:
                    models[row_name(ROWS, key, args) + label] = builders(budget, effort)[key]()
                except ValueError as err:  # e.g. an effort for a model that does not reason
                    p.error(f"--systems {key}{label}: {err}")
    models = on_cluster(models, args)
    benchmarks = args.benchmarks.split(",") if args.benchmarks else [args.suite]
    benchmarks += list(args.dataset)
    paths = {d: path for d, path in zip(args.dataset, args.paths) if path}
    if args.data_root:
        from pyterrier_instruct.datasets.source import ENV_ROOT
        os.environ[ENV_ROOT] = args.data_root
    board = pti.suite(models, benchmarks, out=args.out,
                      depth=args.depth, baseline=ROWS["bm25"].name if "bm25" in args.keys else None,
                      standins=args.standins, prices=json.loads(args.prices) if args.prices else None, paths=paths,
                      published={r.name: r.paper for k, r in ROWS.items() if r.paper and k in args.keys
                                 and r.name in [*models, ROWS["bm25"].name]},
                      verbose=not args.quiet)
    with open(f"{args.out}/leaderboard.md", encoding="utf-8") as f:
        print(f.read())
    print(f"written to {args.out}/: leaderboard.csv/.md/.json, <benchmark>.csv/.md, cost.csv, runs/")
    return 0 if len(board) else 1


if __name__ == "__main__":
    sys.exit(main())
