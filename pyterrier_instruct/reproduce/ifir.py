"""IFIR Table 3: full retrieval over each subset's corpus with the instruction in the query; nDCG@20 (IFIR's
normalisation) per subset, per instruction level and averaged over the subsets, with the published numbers. With
--judge, also INSTFOL@20 (IFIR's LLM judge on the level-0 vs level runs; judgements cached under --out and reused).

"BM25" is PISA BM25 (k1 1.2, b 0.75) over the subset's corpus on query + instruction; the paper used Elasticsearch
8.11.1 with the same parameters, so expect small differences. Promptriever and E5-mistral use IFIR's own query strings.
Indexes and runs are kept under --out (index/, runs/) and reused by a re-run.

examples:
  # a local copy of one subset, BM25 only (no GPU):
  pyterrier-instruct ifir --dataset ifir/fiqa --path /data/IFIR --systems bm25
  # every subset, with the INSTFOL judge on an OpenAI-compatible server (reads $OPENAI_API_KEY):
  # (/data holds the snapshot of songtingyu/IFIR as /data/IFIR)
  pyterrier-instruct ifir --data-root /data --judge gpt-4o-mini --judge-backend openai
"""
from __future__ import annotations

import os
import sys

import pyterrier_instruct as pti
from pyterrier_instruct.prompts import IFIR_E5_TASK
from pyterrier_instruct.reproduce.arguments import Row, model_options, open_datasets, parse, parser
from pyterrier_instruct.reproduce.output import finish
from pyterrier_instruct.reproduce.systems import ROWS_2025, check_models, full_retrieval, selected

#: the CLI command (``pyterrier-instruct ifir``) and its line in the overview; the CLI finds it here
COMMAND = ('ifir', 'IFIR Table 3: nDCG@20 per subset and level (INSTFOL@20 with --judge)')

ROWS = {
    "bm25": Row("BM25", paper="BM25", help="PISA BM25 (k1 1.2, b 0.75) on query + instruction"),
    "promptriever": Row("Promptriever-7B", "Promptriever-7B", "samaya-ai/promptriever-llama2-7b-v1"),
    "e5-mistral": Row("E5-mistral-7B", "E5-mistral-7B", "intfloat/e5-mistral-7b-instruct"),
    "qwen3-embedding": ROWS_2025["qwen3-embedding"],
}
DATASETS = [f"ifir/{s}" for s in ("fiqa", "scifact_open", "nfcorpus", "aila", "fire", "pm", "cds")]


def main(argv=None) -> int:
    p = parser("ifir", __doc__, ROWS, DATASETS)
    p.add_argument("--judge", default=None, metavar="MODEL",
                   help="INSTFOL judge model (the paper: gpt-4o-mini); none: no INSTFOL")
    p.add_argument("--judge-backend", choices=["openai", "hf", "vllm"], default="openai", help="where the judge runs")
    p.add_argument("--judge-base-url", default="https://api.openai.com/v1",
                   help="the OpenAI-compatible server of --judge-backend openai")
    p.add_argument("--judge-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="the environment variable holding that server's key; 'none' for a server without a key (a "
                        "local vllm serve)")
    p.add_argument("--levels", action="store_true", help="also report every instruction level (Tables 8-11)")
    args = parse(p, argv, ROWS, DATASETS)
    check_models(args, ROWS)
    kw, m = model_options(args), args.models

    # dense models: one instance each, its document cache shared by a subset's queries; one index per subset
    dense = selected({
        "promptriever": lambda: pti.Promptriever(m["promptriever"], style="ifir", **kw),
        "e5-mistral": lambda: pti.E5Mistral(m["e5-mistral"], style="model_card", task=IFIR_E5_TASK, **kw),
        "qwen3-embedding": lambda: pti.Qwen3Embedding(m["qwen3-embedding"], **kw),
    }, args)
    datasets = open_datasets(args)
    # per subset: BM25 and each dense model's retriever over its corpus (one model instance, one index per subset)
    systems = pti.PerDataset({label: full_retrieval(args, ROWS, label, ds, dense, k1=1.2, b=0.75)
                              for label, ds in datasets.items()})
    judge = None
    if args.judge:
        os.makedirs(args.out, exist_ok=True)
        key_env = None if args.judge_key_env.lower() == "none" else args.judge_key_env
        options = {"openai": {"base_url": args.judge_base_url, "api_key_env": key_env}, "hf": {"device": args.device},
                   "vllm": {}}[args.judge_backend]
        judge = pti.IFIRJudge(args.judge_backend, model=args.judge, store=os.path.join(args.out, "judgements.jsonl"),
                              backend_options=options, verbose=kw["verbose"])
    table = pti.ifir_report(systems, datasets, levels=args.levels, judge=judge)
    title = "IFIR Table 3: nDCG@20 (fractions)" + (" and INSTFOL@20 (x100)" if judge else "") + " per subset"
    finish(table, args, ROWS, "table3", title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
