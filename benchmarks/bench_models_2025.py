"""Qwen3-Reranker, Qwen3-Embedding and mxbai-rerank-v2 on CPU against the peer that wraps each, measured in the same run
on the same random weights and inputs (so only ratios are meaningful), with the per-row agreement.

- ``pti.Qwen3Reranker`` vs mteb 2.x's ``Qwen3RerankerWrapper`` (the README's transformers code: fixed batches in input
  order, padded to the longest), given the same instruction; also what that wrapper gives with mteb's own default
  instruction and with the instruction doubled into the query (as mteb's evaluator feeds it, measured in issue 26).
- ``pti.Qwen3Embedding`` (R → R) vs ``sentence_transformers.SentenceTransformer`` loaded from the checkpoint's own files
  (queries with their instruction prompt, documents plain; each distinct string encoded once on both sides).
- ``pti.MxbaiRerankV2`` vs AnswerDotAI ``rerankers``' ``MxBaiV2Ranker.rank`` (one call per query, with its instruction).

Weights: ``tests/tiny_models.tiny_qwen`` at hidden 256, 4 layers (Qwen3 for the first two, Qwen2 for mxbai).
Inputs: the bundled instruct-mini candidates (query + instruction, real-length documents).
Usage: ``python benchmarks/bench_models_2025.py [--rows 192] [--batch-size 16] [--threads 2]
[--families reranker,embedding,mxbai]``
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import tiny_models  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402
from pyterrier_instruct.prompts import QWEN3_DEFAULT_INSTRUCTION  # noqa: E402


def interleaved(ours, peer, repeat=2):
    """(ours' output, its best time, the peer's output, its best time), the two run alternately so that a change in the
    machine's load falls on both."""
    best, out = {"ours": float("inf"), "peer": float("inf")}, {}
    for _ in range(repeat):
        for name, fn in (("ours", ours), ("peer", peer)):
            t = time.perf_counter()
            out[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return out["ours"], best["ours"], out["peer"], best["peer"]


def agreement(ours, theirs, frame) -> str:
    same = all((np.argsort(-ours[i], kind="stable") == np.argsort(-theirs[i], kind="stable")).all()
               for i in frame.groupby("qid").indices.values())
    return f"{len(ours)} rows, max |Δ| {np.abs(ours - theirs).max():.1e}, rankings {'identical' if same else 'DIFFER'}"


def qwen3_reranker(path, frame, bs):
    from mteb.models.model_implementations.qwen3_reranker import Qwen3RerankerWrapper
    wrapper = Qwen3RerankerWrapper(path, device="cpu")
    rows = list(zip(frame["instruction"], frame["query"], frame["text"]))

    def peer(rule):
        pairs = [wrapper.format_instruction(*rule(i, q), d) for i, q, d in rows]
        with torch.inference_mode():
            return np.array([s for k in range(0, len(pairs), bs)
                             for s in wrapper.compute_logits(wrapper.process_inputs(pairs[k:k + bs]))])
    ours = pti.Qwen3Reranker(path, batch_size=bs, verbose=False)
    ours(frame.head(1))  # loaded before timing, as the peer is
    got, t_ours, want, t_peer = interleaved(lambda: ours(frame)["score"].to_numpy(),
                                            lambda: peer(lambda i, q: (i or QWEN3_DEFAULT_INSTRUCTION, q)))
    shared = pti.Qwen3Reranker(path, batch_size=bs, share_prefix=True, verbose=False)
    got_shared, t_shared, _, t_peer2 = interleaved(lambda: shared(frame)["score"].to_numpy(),
                                                   lambda: peer(lambda i, q: (i or QWEN3_DEFAULT_INSTRUCTION, q)))
    print(f"Qwen3Reranker      ours {len(frame) / t_ours:7.1f} docs/s | mteb wrapper {len(frame) / t_peer:7.1f} docs/s "
          f"({t_peer / t_ours:.2f}x) | {agreement(got, want, frame)}")
    print(f"  share_prefix=True     {len(frame) / t_shared:7.1f} docs/s ({t_peer2 / t_shared:.2f}x) | "
          f"{agreement(got_shared, want, frame)}")
    mteb_default = peer(lambda i, q: (i or None, q))
    doubled = peer(lambda i, q: (i or None, f"{q} {i}"))
    print(f"  mteb wrapper, its default instruction: {agreement(got, mteb_default, frame)}")
    print(f"  mteb wrapper, instruction also appended to the query: {agreement(got, doubled, frame)}")


def qwen3_embedding(path, frame, bs):
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(path, device="cpu")
    instructions = [i or QWEN3_DEFAULT_INSTRUCTION for i in frame["instruction"]]

    def peer():
        keys = list(dict.fromkeys(zip(instructions, frame["query"])))
        qv = {k: v for k, v in zip(keys, [st.encode([q], prompt=f"Instruct: {i}\nQuery:", batch_size=bs)[0]
                                          for i, q in keys])}
        docs = list(dict.fromkeys(frame["text"]))
        dv = dict(zip(docs, st.encode(docs, batch_size=bs)))
        return np.array([qv[(i, q)] @ dv[t] for i, q, t in zip(instructions, frame["query"], frame["text"])])

    ours = pti.Qwen3Embedding(path, batch_size=bs, verbose=False)
    ours.embedder()  # loaded before timing, as the peer is

    def run():
        ours.clear_cache()  # every document encoded in every run
        return ours(frame)["score"].to_numpy()
    got, t_ours, want, t_peer = interleaved(run, peer)
    print(f"Qwen3Embedding     ours {len(frame) / t_ours:7.1f} docs/s | sentence-transformers "
          f"{len(frame) / t_peer:7.1f} docs/s ({t_peer / t_ours:.2f}x) | {agreement(got, want, frame)}")


def mxbai(path, frame, bs):
    from rerankers.models.mxbai_v2 import MxBaiV2Ranker
    sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
    from test_mxbai import prepare_for_model_v4
    ranker = MxBaiV2Ranker(path, device="cpu", dtype="float32", verbose=0, batch_size=bs)
    if not hasattr(type(ranker.tokenizer), "prepare_for_model"):  # removed in transformers 5; rerankers 0.10.0 calls it
        ranker.tokenizer.prepare_for_model = prepare_for_model_v4

    def peer():
        scores = np.empty(len(frame))
        for _, g in frame.groupby("qid", sort=False):
            res = ranker.rank(g["query"].iloc[0], list(g["text"]), doc_ids=list(g.index),
                              instruction=g["instruction"].iloc[0] or None)
            for r in res.results:
                scores[r.document.doc_id] = r.score
        return scores
    ours = pti.MxbaiRerankV2(path, batch_size=bs, verbose=False)
    ours(frame.head(1))  # loaded before timing, as the peer is
    got, t_ours, want, t_peer = interleaved(lambda: ours(frame)["score"].to_numpy(), peer)
    print(f"MxbaiRerankV2      ours {len(frame) / t_ours:7.1f} docs/s | rerankers {len(frame) / t_peer:7.1f} docs/s "
          f"({t_peer / t_ours:.2f}x) | {agreement(got, want, frame)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=192)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--families", default="reranker,embedding,mxbai", help="which of reranker, embedding, mxbai to run")
    args = ap.parse_args()
    families = args.families.split(",")
    torch.set_num_threads(args.threads)
    ds = pti.load_dataset("instruct-mini")
    frame = ds.candidates("text")(ds.get_topics()).head(args.rows).reset_index(drop=True)
    words = frame["text"].str.split().str.len()
    print(f"{len(frame)} rows, {frame['qid'].nunique()} queries, document length {words.min()}–{words.max()} words, "
          f"batch size {args.batch_size}, {args.threads} threads")
    with tempfile.TemporaryDirectory() as tmp:
        size = dict(hidden_size=256, layers=4)
        for name, run, kind in (("reranker", qwen3_reranker, "reranker"), ("embedding", qwen3_embedding, "embedding"),
                                ("mxbai", mxbai, "qwen2")):
            if name in families:
                run(tiny_models.tiny_qwen(Path(tmp), kind, **size), frame, args.batch_size)


if __name__ == "__main__":
    main()
