"""IFIR (Song et al., 2025): BM25 and BM25 » MonoT5 over an IFIR subset, scored by IFIR's nDCG@20 per instruction level
and by INSTFOL@20, whose relevance-to-instruction judgements come from an LLM judge on any OpenAI-compatible server
(a local ``vllm serve`` or an API; the judgements are cached on disk and reused).

    vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000 &
    python pipelines/ifir.py --dataset ifir/fiqa --judge Qwen/Qwen2.5-7B-Instruct --base-url http://localhost:8000/v1
    python pipelines/ifir.py --judge gpt-4o-mini --base-url https://api.openai.com/v1 --api-key-env OPENAI_API_KEY
    python pipelines/ifir.py --standins       # tiny models, miniature data, a stand-in judge server on 127.0.0.1
"""
import argparse

import pyterrier as pt

import pyterrier_instruct as pti


class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written above; each option with its default."""


parser = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
parser.add_argument("--dataset", default="ifir/fiqa",
                    help="ifir/<subset>: fiqa, scifact_open, nfcorpus, aila, fire, pm, cds")
parser.add_argument("--monot5", default="castorini/monot5-base-msmarco-10k", help="MonoT5's checkpoint")
parser.add_argument("--judge", default="gpt-4o-mini", help="the judge model's name on the server")
parser.add_argument("--base-url", default=None,
                    help="the OpenAI-compatible server (…/v1); --standins: a stand-in on 127.0.0.1")
parser.add_argument("--api-key-env", default=None,
                    help="the environment variable holding the key (none for a local server)")
parser.add_argument("--store", default="instfol-judgements",
                    help="the judgements kept between runs (a pti.CallStore folder; an old .jsonl is read in once)")
parser.add_argument("--k", type=int, default=100, help="BM25 depth reranked")
parser.add_argument("--standins", action="store_true",
                    help="tiny random models and the miniature benchmarks (pyterrier_instruct.testing)")
args = parser.parse_args()
if args.standins:
    from pyterrier_instruct import testing
    testing.install(models=[args.monot5])
    if args.base_url is None:
        args.base_url = testing.chat_server().url         # answers every judge prompt with a score of 2
if args.base_url is None:
    parser.error("--base-url: the OpenAI-compatible server that serves --judge")

ds = pti.load_dataset(args.dataset)
subset = args.dataset.split("/", 1)[1]
topics, qrels = ds.get_topics(), ds.get_qrels()
bm25 = pti.BM25(ds.get_corpus_iter())
systems = {"BM25": pti.FoldInstruction() >> bm25,        # the instruction (levels 1-3) folded into the query
           "BM25 » MonoT5": bm25 % args.k >> ds.text_loader() >> pti.MonoT5(args.monot5)}
res = pt.Experiment(list(systems.values()), topics, qrels, [pti.IFIR_nDCG@20], names=list(systems))
res = pti.label_stand_ins(res, list(systems.values()), ds)  # "[stand-in]" on rows with stand-in weights or data
print(res.round(3).to_string(index=False))

judge = pti.IFIRJudge("openai", model=args.judge, store=args.store,
                      backend_options={"base_url": args.base_url, "api_key_env": args.api_key_env})
for name, system in zip(res["name"], systems.values()):
    run = system(topics)                                  # level 0 (query only) and levels 1-3 (query + instruction)
    result = pti.instfol(run, run, topics, ds, judge, dataset=subset)
    levels = ", ".join(f"level {r.level}: {r.instfol:.1f}" for r in result.per_level.itertuples())
    print(f"{name}: INSTFOL@20 {result.average:.1f} ({levels}; {result.judge.get('backend_calls', 0)} judge calls)")
