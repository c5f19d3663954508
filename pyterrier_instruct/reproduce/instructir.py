"""InstructIR (FollowIR Table 4, Promptriever Table 1): nDCG@10 over the query x instruction instances and
Robustness@10 (the worst instance of each base query), with the published numbers.

Full retrieval over the 16,072 passages: BM25 (PISA) on query + instruction and the dense retrievers (mteb's query
strings, as in the papers) over an index of the corpus; the pointwise rerankers rescore the BM25 top --depth. Indexes
and runs are kept under --out (index/, runs/) and reused by a re-run.

examples:
  # a local snapshot of kaist-ai/InstructIR, BM25 only (no GPU):
  pyterrier-instruct instructir --path /data/InstructIR --systems bm25
  # Promptriever and RepLLaMA on a GPU:
  pyterrier-instruct instructir --path /data/InstructIR --systems promptriever,repllama --device cuda --batch-size 64
"""
from __future__ import annotations

import os
import sys

import pyterrier_instruct as pti
from pyterrier_instruct.reproduce.arguments import Row, model_options, open_datasets, parse, parser
from pyterrier_instruct.reproduce.output import finish
from pyterrier_instruct.reproduce.systems import ROW_REPLLAMA, check_models, full_retrieval, on_cluster, saved, selected

#: the CLI command (``pyterrier-instruct instructir``) and its line in the overview; the CLI finds it here
COMMAND = ('instructir', 'InstructIR: nDCG@10 and Robustness@10 (FollowIR Table 4, Promptriever Table 1)')

ROWS = {
    "bm25": Row("BM25", paper="BM25", help="PISA BM25 on query + instruction"),
    "promptriever": Row("Promptriever", "Promptriever", "samaya-ai/promptriever-llama2-7b-v1"),
    "repllama": ROW_REPLLAMA,
    "e5-mistral": Row("E5-Mistral", "E5-Mistral", "intfloat/e5-mistral-7b-instruct"),
    "followir-7b": Row("FollowIR-7B", "FollowIR-7B", "jhu-clsp/FollowIR-7B", "reranks the BM25 top --depth"),
    "mistral": Row("Mistral-7B-instruct", "Mistral-7B-instruct", "mistralai/Mistral-7B-Instruct-v0.2",
                   "reranks the BM25 top --depth"),
}
DATASETS = ["instructir"]


def main(argv=None) -> int:
    p = parser("instructir", __doc__, ROWS, DATASETS)
    p.add_argument("--depth", type=int, default=100,
                   help="BM25 candidates per instance for the rerankers (default 100)")
    args = parse(p, argv, ROWS, DATASETS)
    if len(args.dataset) != 1:
        p.error("InstructIR is one dataset: give at most one --dataset")
    check_models(args, ROWS)
    kw, m = model_options(args), args.models
    label, ds = next(iter(open_datasets(args).items()))

    # full retrieval: BM25 on query + instruction, the dense models with mteb's query strings
    systems = full_retrieval(args, ROWS, label, ds, selected({
        "promptriever": lambda: pti.Promptriever(m["promptriever"], style="mteb", **kw),
        "repllama": lambda: pti.RepLLaMA(m["repllama"], style="mteb", **kw),
        "e5-mistral": lambda: pti.E5Mistral(m["e5-mistral"], **kw),
    }, args))
    # the pointwise rerankers rescore the BM25 top --depth (the same index as the BM25 row)
    rerankers = on_cluster(selected({
        "followir-7b": lambda: pti.FollowIR7B(m["followir-7b"], **kw),
        "mistral": lambda: pti.CausalLMReranker.mistral_instruct(m["mistral"], style="followir", **kw),
    }, args), args)
    if rerankers:
        bm25 = pti.FoldInstruction() >> pti.BM25(ds.get_corpus_iter(verbose=kw["verbose"]),
                                                 path=os.path.join(args.out, "index", label, "bm25"),
                                                 verbose=kw["verbose"])
        systems.update(saved({k: bm25 % args.depth >> ds.text_loader() >> r for k, r in rerankers.items()}, args, ROWS,
                             label))
    table = pti.instructir_report(systems, ds)
    finish(table, args, ROWS, "instructir",
           "InstructIR (x100): nDCG@10 over instances, Robustness@10 over base queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
