"""Promptriever Table 3: BEIR nDCG@10 with no prompt, with the prompt selected on 10 dev queries, and with the best of
the 10 prompts on the test queries (an oracle), for BM25 and the promptable dense retrievers, with the paper's numbers.

A prompt is added to every query like an instruction; the dense retrievers encode the corpus once per dataset (the index
under --out/index/) and only the queries per prompt. Datasets without a validation or train split (arguana,
climate_fever, nq, scidocs, touche2020, trec_covid) get no "selected" cell, as in the paper. Runs are saved under
--out/runs/ and reused.

examples:
  # one dataset from a local copy of the BEIR zip (corpus.jsonl, queries.jsonl, qrels/), BM25 only:
  pyterrier-instruct beir-prompts --dataset beir/scifact --path /data/beir/scifact --systems bm25
  # the seven datasets with a selection split, Promptriever on a GPU (/data/beir holds <name>/ folders):
  pyterrier-instruct beir-prompts --data-root /data/beir --systems promptriever --device cuda \\
      --dataset beir/dbpedia --dataset beir/fever --dataset beir/fiqa --dataset beir/hotpotqa \\
      --dataset beir/nfcorpus --dataset beir/quora --dataset beir/scifact
"""
from __future__ import annotations

import os
import sys

import pyterrier_instruct as pti
from pyterrier_instruct.datasets import DATASETS as KNOWN
from pyterrier_instruct.reproduce.arguments import Row, model_options, open_dataset, open_datasets, parse, parser
from pyterrier_instruct.reproduce.output import finish
from pyterrier_instruct.reproduce.systems import ROW_REPLLAMA, check_models, full_retrieval, selected

#: the CLI command (``pyterrier-instruct beir-prompts``) and its line in the overview; the CLI finds it here
COMMAND = ('beir-prompts', 'Promptriever Table 3: BEIR nDCG@10 with no prompt, the selected prompt, the best prompt')

ROWS = {
    "bm25": Row("BM25", paper="BM25", help="PISA BM25 on query + prompt (the paper: bm25s)"),
    "repllama": ROW_REPLLAMA,
    "promptriever": Row("Promptriever", "Promptriever", "samaya-ai/promptriever-llama2-7b-v1"),
}
DATASETS = [f"beir/{d}" for d in ("arguana", "climate_fever", "dbpedia", "fever", "fiqa", "hotpotqa", "nfcorpus", "nq",
                                  "quora", "scidocs", "scifact", "touche2020", "trec_covid")]


def main(argv=None) -> int:
    p = parser("beir-prompts", __doc__, ROWS, DATASETS)
    p.add_argument("--sample", type=int, default=10, help="dev queries for the prompt selection (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the dev sample")
    args = parse(p, argv, ROWS, DATASETS)
    check_models(args, ROWS)
    kw, m = model_options(args), args.models
    datasets = open_datasets(args)
    dev = {label: open_dataset(args, f"{name}/dev", path)
           for (label, name, path) in zip(datasets, args.dataset, args.paths) if f"{name}/dev" in KNOWN}

    dense = selected({
        "repllama": lambda: pti.RepLLaMA(m["repllama"], **kw),
        "promptriever": lambda: pti.Promptriever(m["promptriever"], **kw),
    }, args)
    systems = pti.PerDataset({label: full_retrieval(args, ROWS, label, ds, dense) for label, ds in datasets.items()})
    table = pti.prompt_study_report(systems, datasets, dev, sample=args.sample, seed=args.seed, verbose=not args.quiet)
    os.makedirs(args.out, exist_ok=True)
    table.attrs["prompts"].to_csv(os.path.join(args.out, "prompts.csv"), index=False)
    finish(table, args, ROWS, "table3", "Promptriever Table 3 (x100): BEIR nDCG@10 with no prompt / the selected "
                                        "prompt / the best prompt (prompts.csv: every prompt)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
