"""Promptable dense retrieval (Promptriever, Weller et al., 2024; Qwen3-Embedding, Zhang et al., 2025) with a prompt
sweep: the corpus encoded once, each prompt applied to every query as its instruction, one nDCG@10 per prompt, then
the prompt a dev split selects (Promptriever §4.3) scored on test.

    python pipelines/dense_prompts.py                                  # Promptriever on beir/scifact
    python pipelines/dense_prompts.py --family Qwen3Embedding --model Qwen/Qwen3-Embedding-4B
    python pipelines/dense_prompts.py --standins
"""
import argparse

import pyterrier as pt
from ir_measures import nDCG

import pyterrier_instruct as pti


class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written above; each option with its default."""


parser = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
parser.add_argument("--dataset", default="beir/scifact", help="a BEIR id; its dev split (<id>/dev) selects the prompt")
parser.add_argument("--family", default="Promptriever", choices=["Promptriever", "RepLLaMA", "Qwen3Embedding"],
                    help="the dense family (a class of pyterrier_instruct)")
parser.add_argument("--model", default=None, help="the checkpoint; none: the family's own")
parser.add_argument("--prompts", type=int, default=10, help="how many of Promptriever's 10 BEIR prompts to sweep")
parser.add_argument("--index", default=None, help="a folder keeping the corpus embeddings between runs")
parser.add_argument("--standins", action="store_true",
                    help="tiny random models and the miniature benchmarks (pyterrier_instruct.testing)")
args = parser.parse_args()
family = getattr(pti, args.family)
if args.standins:
    from pyterrier_instruct import testing
    testing.install(models=[args.model or family().model_name_or_path])

test, dev = pti.load_dataset(args.dataset), pti.load_dataset(f"{args.dataset}/dev")
model = family(args.model) if args.model else family()
retriever = model.retriever(model.index(test.get_corpus_iter(), args.index), num_results=1000)
prompts = [""] + list(pti.BEIR_PROMPTS[:args.prompts])                  # "" : no prompt
names = [f"prompt {n}" if n else "no prompt" for n in range(len(prompts))]
res = pt.Experiment([pti.SetInstruction(prompt) >> retriever for prompt in prompts], test.get_topics(),
                    test.get_qrels(), [nDCG@10], names=names)
print(pti.label_stand_ins(res, [retriever] * len(prompts), test).round(3).to_string(index=False))
selection = pti.select_prompt(retriever, dev.get_topics(), dev.get_qrels(), pti.BEIR_PROMPTS[:args.prompts],
                              measure="nDCG@10", test_topics=test.get_topics(), test_qrels=test.get_qrels())
print(selection.summary())
