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
"""
from __future__ import annotations

import json
import sys

import pyterrier_instruct as pti
from pyterrier_instruct.reproduce.arguments import Row, backend_options, model_options, parse, parser
from pyterrier_instruct.reproduce.systems import (ROW_RANK1, ROWS_2025, ROWS_SETWISE, check_models, listwise_backend,
                                                  on_cluster, rerankers_2025, row_name, selected, setwise_rerankers)

COMMAND = ('suite', 'One leaderboard: every system on every instruction-following benchmark with data (main measures)')

ROWS = {
    "bm25": Row("BM25", help="the first stage alone: pool BM25 on the pooled benchmarks, PISA BM25 on the others"),
    "monot5": Row("MonoT5-base", None, "castorini/monot5-base-msmarco-10k"),
    "followir-7b": Row("FollowIR-7B", None, "jhu-clsp/FollowIR-7B"),
    "mistral": Row("Mistral-7B-instruct", None, "mistralai/Mistral-7B-Instruct-v0.2", "FollowIR's prompt"),
    "e5-mistral": Row("E5-mistral", None, "intfloat/e5-mistral-7b-instruct", "as a reranking scorer"),
    "rank-zephyr": Row("RankZephyr", None, "castorini/rank_zephyr_7b_v1_full", "listwise", default=False),
    "rank1": ROW_RANK1,
    "reasonrank": Row("ReasonRank-7B", None, "liuwenhan/reasonrank-7B", "reasoning listwise, top 100", default=False),
    **ROWS_2025,
    **ROWS_SETWISE,
}

#: the rows with a reasoning budget (``--reasoning-budget`` sweeps it)
REASONING = ("rank1", "reasonrank", "rank-r1")


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
    p.add_argument("--prices", default=None, metavar="JSON",
                   help='USD per million tokens for the cost table, e.g. \'{"prompt": 2.5, "completion": 10}\'')
    p.add_argument("--standins", action="store_true", help="tiny random weights at the rows' ids and the miniature "
                   "benchmarks (pyterrier_instruct.testing): the leaderboard says so in every row and file")
    args = parse(p, argv, ROWS, [])
    if args.standins:
        from pyterrier_instruct import testing
        testing.install(models=[args.models[k] for k in args.keys if k in args.models])
    check_models(args, ROWS)
    kw, m = model_options(args), args.models
    hf = backend_options(kw) if args.listwise_backend == "hf" else None
    budgets = [int(b) for b in args.reasoning_budget.split(",")] if args.reasoning_budget else [None]

    def builders(budget):
        spent = {} if budget is None else {"max_output_tokens": budget}
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
            **rerankers_2025(m, kw),
            **setwise_rerankers(m, args.listwise_backend, kw, budget),
        }
    models = {}
    for key, system in selected(builders(budgets[0]), args).items():  # the reasoning rows: one per budget
        for budget in budgets if key in REASONING else [None]:
            name = row_name(ROWS, key, args) + ("" if budget is None else f" [budget {budget}]")
            models[name] = system if budget in (None, budgets[0]) else builders(budget)[key]()
    models = on_cluster(models, args)
    benchmarks = args.benchmarks.split(",") if args.benchmarks else [args.suite]
    benchmarks += list(args.dataset)
    paths = {d: path for d, path in zip(args.dataset, args.paths) if path}
    if args.data_root:
        import os

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
