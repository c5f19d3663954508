"""Pointwise reranker throughput on CPU, against the anchors measured in the same run.

- monoT5: ``pti.MonoT5`` vs ``pyterrier_t5.MonoT5ReRanker`` on the same random T5 with t5-small dimensions
  (d_model 512, 6+6 layers, 8 heads, d_ff 2048, 32,128-entry embedding) and a locally trained tokenizer;
  both at the same batch size, plus pyterrier_t5 at its default batch size 4. Scores are compared with
  pyterrier_t5 at batch size 1 (its batch-independent setting).
- causal: ``pti.FollowIR7B`` (and with ``share_prefix=True``) vs a reference-style loop (FollowIR's LlamaReranker: fixed
  batches in input order, padded to the longest) on a small random Mistral (hidden 256, 4 layers).

Inputs: the bundled instruct-mini candidates (query + instruction, real-length documents).
Usage: ``python benchmarks/bench_pointwise.py [--rows 256] [--batch-size 16] [--threads 2] [--mixed-lengths]``
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import transformers

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import tiny_models  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402
from pyterrier_instruct.prompts import PROMPTS  # noqa: E402


def timed(fn, repeat=2):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best


def t5_small(root: Path) -> str:
    path = tiny_models.tiny_t5(root, vocab_size=4000)
    torch.manual_seed(0)
    tok = transformers.AutoTokenizer.from_pretrained(path)
    config = transformers.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6,
                                   num_decoder_layers=6, num_heads=8, decoder_start_token_id=0, pad_token_id=0,
                                   eos_token_id=1, n_positions=512)
    transformers.T5ForConditionalGeneration(config).save_pretrained(path)
    assert len(tok) < 32128
    return path


def small_mistral(root: Path) -> str:
    path = tiny_models.tiny_mistral(root, vocab_size=4000)
    tok = transformers.AutoTokenizer.from_pretrained(path)
    torch.manual_seed(0)
    config = transformers.MistralConfig(vocab_size=len(tok), hidden_size=256, intermediate_size=688,
                                        num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                                        max_position_embeddings=4096,
                                        bos_token_id=1, eos_token_id=2, sliding_window=None)
    transformers.MistralForCausalLM(config).save_pretrained(path)
    return path


def reference_causal_loop(path, frame, batch_size):
    tok = transformers.AutoTokenizer.from_pretrained(path, padding_side="left")
    tok.pad_token = tok.eos_token
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    ids = [tok.get_vocab()["false"], tok.get_vocab()["true"]]
    queries = [f"{q} {i}".strip() for q, i in zip(frame["query"], frame["instruction"])]
    prompts = [PROMPTS["followir_7b"].template.format(query=q, text=t) for q, t in zip(queries, frame["text"])]

    def run():
        out = []
        for s in range(0, len(prompts), batch_size):
            enc = tok(prompts[s:s + batch_size], padding=True, truncation=True, max_length=2048, return_tensors="pt")
            with torch.no_grad():
                logits = model(**enc).logits[:, -1, ids]
            out += torch.log_softmax(logits.float(), -1)[:, 1].exp().tolist()
        return np.array(out)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mixed-lengths", action="store_true",
                    help="documents cut/repeated to 10–150 words (FollowIR passages range up to 400), all within 512 "
                         "tokens")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds = pti.load_dataset("instruct-mini")
    frame = ds.candidates("text")(ds.get_topics()).head(args.rows).reset_index(drop=True)
    if args.mixed_lengths:
        rng = np.random.default_rng(0)
        frame["text"] = [" ".join((t.split() * 4)[:n])
                         for t, n in zip(frame["text"], rng.integers(10, 151, len(frame)))]
    words = frame["text"].str.split().str.len()
    print(f"{len(frame)} rows, document length {words.min()}–{words.max()} words (mean {words.mean():.0f}), "
          f"batch size {args.batch_size}, {args.threads} threads")
    with tempfile.TemporaryDirectory() as tmp:
        from pyterrier_t5 import MonoT5ReRanker
        path = t5_small(Path(tmp))
        inp = frame.assign(query=[f"{q} {i}".strip() for q, i in zip(frame["query"], frame["instruction"])],
                           instruction="")
        theirs_1 = MonoT5ReRanker(tok_model=path, model=path, batch_size=1, verbose=False)(inp)["score"].to_numpy()
        ours = pti.MonoT5(path, batch_size=args.batch_size, score="logprob")
        got, t_ours = timed(lambda: ours(frame)["score"].to_numpy())
        anchor = MonoT5ReRanker(tok_model=path, model=path, batch_size=args.batch_size, verbose=False)
        _, t_theirs = timed(lambda: anchor(inp))
        anchor4 = MonoT5ReRanker(tok_model=path, model=path, batch_size=4, verbose=False)
        _, t_theirs4 = timed(lambda: anchor4(inp))
        ours4 = pti.MonoT5(path, batch_size=4, score="logprob")
        _, t_ours4 = timed(lambda: ours4(frame))
        print(f"monoT5 (t5-small dims)   ours {len(frame) / t_ours:7.1f} docs/s | pyterrier_t5 bs={args.batch_size} "
              f"{len(frame) / t_theirs:7.1f} docs/s ({t_theirs / t_ours:.2f}x) | pyterrier_t5 bs=4 "
              f"{len(frame) / t_theirs4:7.1f} docs/s ({t_theirs4 / t_ours:.2f}x) | max |Δscore| vs pyterrier_t5 bs=1: "
              f"{np.abs(got - theirs_1).max():.2e} ({ours.truncated} rows truncated)")
        print(f"monoT5 at batch size 4    ours {len(frame) / t_ours4:7.1f} docs/s | pyterrier_t5 "
              f"{len(frame) / t_theirs4:7.1f} docs/s ({t_theirs4 / t_ours4:.2f}x)")

        mpath = small_mistral(Path(tmp))
        ref = reference_causal_loop(mpath, frame, args.batch_size)
        want, t_ref = timed(ref)
        causal = pti.FollowIR7B(mpath, batch_size=args.batch_size)
        got, t_causal = timed(lambda: causal(frame)["score"].to_numpy())
        print(f"FollowIR-7B prompt (small Mistral) ours {len(frame) / t_causal:7.1f} docs/s | reference loop "
              f"{len(frame) / t_ref:7.1f} docs/s ({t_ref / t_causal:.2f}x) | max |Δscore| "
              f"{np.abs(got - want).max():.2e}")
        shared = pti.FollowIR7B(mpath, batch_size=args.batch_size, share_prefix=True)
        got, t_shared = timed(lambda: shared(frame)["score"].to_numpy())
        print(f"  with share_prefix=True         {len(frame) / t_shared:7.1f} docs/s ({t_ref / t_shared:.2f}x the "
              f"reference loop) | max |Δscore| {np.abs(got - want).max():.2e}")


if __name__ == "__main__":
    main()
