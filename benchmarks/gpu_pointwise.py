"""Causal pointwise rerankers on one GPU: transformers vs vLLM, on randomly initialised models of the real sizes.

Models: FollowIR-7B (``MistralForCausalLM`` with Mistral-7B-Instruct-v0.2's configuration: hidden 4096, 32 layers,
32 heads / 8 KV heads, MLP 14336, 32,000-entry vocabulary) and Qwen3-Reranker-8B (``Qwen3ForCausalLM`` with
Qwen3-8B's: hidden 4096, 36 layers, 32 / 8 heads of 128, MLP 12288, 151,669 entries), random weights in bf16, saved to
a temporary folder with a tokenizer trained offline (tests/tiny_models.py; the weights are random, so the scores mean
nothing, the shapes and token counts are real). Workload: FollowIR-shaped, ``--queries`` queries × ``--docs``
candidates, queries of ~15 words + instructions of ~75 words (FollowIR Table 1: Robust04's 75.2), documents of
~400 words (FollowIR §3) with a spread of lengths; the text is sampled from the bundled corpus and sized so that the
prompts have ~1.3 tokens per word, as Mistral's tokenizer gives on English.

Rows: ``transformers`` (this package's length-sorted batches), ``transformers share_prefix`` (one KV cache of a query's
shared prefix) and, when vLLM is importable, ``vllm`` (``backend='vllm'``: query-contiguous requests, prefix caching).
Columns: docs/s, prompt tokens/s, the prefix-cache hit rate (prompt tokens served from vLLM's cache; the reused share
for ``share_prefix``), and the fraction of the GPU's dense bf16 peak reached by ``2 × parameters × computed tokens``
(prompt tokens minus the reused ones) per second. The model load is timed apart; each vLLM engine is warmed on one
other query first.

Usage (one H100: ~6 minutes for both models with the defaults; never run in CI)::

    python benchmarks/gpu_pointwise.py                     # both models, 20 queries × 250 candidates
    python benchmarks/gpu_pointwise.py --models followir-7b --queries 20 --docs 1000
    python benchmarks/gpu_pointwise.py --tiny              # CPU smoke run: tiny configurations, seconds
    python benchmarks/gpu_pointwise.py --report a.json b.json   # the table of rows written with --out
    bash benchmarks/gpu_run.sh                             # a machine without network: wheels, both models, the table
"""
from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import tiny_models  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402
from pyterrier_instruct._optional import is_available  # noqa: E402
from pyterrier_instruct._tokens import common_prefix_length  # noqa: E402

#: the real configurations (config.json of the checkpoints named in the module docstring)
CONFIGS = {
    "followir-7b": dict(tokenizer="mistral", make=pti.FollowIR7B, config=dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        vocab_size=32000, max_position_embeddings=32768, rope_theta=1e6, sliding_window=None)),
    "qwen3-reranker-8b": dict(tokenizer="reranker", make=pti.Qwen3Reranker, config=dict(
        hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
        head_dim=128, vocab_size=151669, max_position_embeddings=40960, rope_theta=1e6, tie_word_embeddings=False)),
}
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)

#: dense bf16 tensor-core peaks (FLOP/s, no sparsity) from NVIDIA's datasheets, matched on the device name
PEAKS = [("H200", 989e12), ("H100 NVL", 835e12), ("H100 PCIe", 756e12), ("H100", 989e12), ("A100", 312e12),
         ("L40S", 362e12), ("A10G", 70e12), ("L4", 121e12)]
TOKENS_PER_WORD = 1.3


def device_and_peak(peak_tflops: Optional[float]):
    import torch
    if not torch.cuda.is_available():
        return "cpu", None
    name = torch.cuda.get_device_name(0)
    if peak_tflops:
        return name, peak_tflops * 1e12
    return name, next((p for key, p in PEAKS if key in name), None)


def build_model(name: str, root: Path, tiny: bool) -> str:
    """A folder with the tokenizer trained offline and random weights of the named configuration (bf16 on GPU)."""
    import torch
    import transformers
    spec = CONFIGS[name]
    source = (tiny_models.tiny_mistral(root / "src") if spec["tokenizer"] == "mistral"
              else tiny_models.tiny_qwen(root / "src", "reranker"))
    config = transformers.AutoConfig.from_pretrained(source)
    overrides = dict(spec["config"], **(TINY if tiny else {}))
    if tiny:
        overrides.update(vocab_size=config.vocab_size, head_dim=16)
    for key, value in overrides.items():
        setattr(config, key, value)
    folder = root / name
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.save_pretrained(str(folder))
    transformers.AutoTokenizer.from_pretrained(source).save_pretrained(str(folder))
    del model
    gc.collect()
    return str(folder)


def parameters(path: str) -> int:
    import torch
    import transformers
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.from_pretrained(path))
    return sum(p.numel() for p in model.parameters())


def workload(path: str, queries: int, docs: int, doc_words: int, seed: int = 0) -> pd.DataFrame:
    """``queries`` × ``docs`` rows of real-length text, sized to ~1.3 tokens per word under this tokenizer."""
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(path)
    rng = np.random.default_rng(seed)
    words = " ".join(tiny_models._texts()[:-len(tiny_models.EXTRA)]).split()
    sample = " ".join(words[:2000])
    per_word = len(tok(sample, add_special_tokens=False)["input_ids"]) / 2000  # this tokenizer's tokens per word

    def text(n_words):
        n = max(1, int(round(n_words * TOKENS_PER_WORD / per_word)))
        start = int(rng.integers(0, len(words) - n))
        return " ".join(words[start:start + n])
    rows = []
    for q in range(queries):
        query, instruction = text(15), text(75)
        lengths = np.clip(rng.lognormal(np.log(doc_words), 0.5, size=docs), 20, 4 * doc_words)
        rows += [{"qid": f"q{q}", "query": query, "instruction": instruction, "docno": f"q{q}-d{d}", "text": text(n)}
                 for d, n in enumerate(lengths)]
    return pd.DataFrame(rows)


def reuse(reranker, frame: pd.DataFrame) -> Dict[str, int]:
    """Prompt tokens and the tokens a per-query prefix reuse saves (all but the first prompt of a query)."""
    from pyterrier_instruct.instructions import query_instructions
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(reranker.model_name_or_path)  # the tokenizer only: no weights
    reranker._tokenizer, reranker._max_length = tok, reranker.max_length or reranker._reference_max_length(tok)
    reranker._load = lambda: (reranker._model, tok)  # _features loads nothing more
    try:
        feats, queries = reranker._features(query_instructions(frame, reranker.instruction))
    finally:
        del reranker._load  # the class's loader again
    total, saved = sum(len(f["input_ids"]) for f in feats), 0
    for _, rows in pd.Series(range(len(feats))).groupby(pd.Series(queries), sort=False):
        ids = [feats[i]["input_ids"] for i in rows]
        saved += (len(ids) - 1) * min(common_prefix_length(ids), min(map(len, ids)) - 1)
    return {"prompt_tokens": total, "reusable_tokens": saved}


def measure(label: str, reranker, frame: pd.DataFrame, warm: pd.DataFrame, tokens: Dict[str, int], n_params: int,
            peak: Optional[float]) -> Dict[str, object]:
    t = time.perf_counter()
    reranker(warm)  # loads the model (or starts the engine) on a query outside the workload
    load = time.perf_counter() - t
    stats = getattr(reranker.backend, "stats", None) if reranker.backend != "hf" else None
    if stats is not None:
        stats.clear()
    t = time.perf_counter()
    reranker(frame)
    seconds = time.perf_counter() - t
    if stats is not None:
        hit = stats["cached_tokens"] / max(1, stats["prompt_tokens"])
    else:
        hit = tokens["reusable_tokens"] / tokens["prompt_tokens"] if getattr(reranker, "share_prefix", False) else 0.0
    computed = tokens["prompt_tokens"] * (1 - hit)
    flops = 2 * n_params * computed / seconds
    return {"run": label, "docs": len(frame), "seconds": round(seconds, 2), "load_s": round(load, 1),
            "docs_per_s": round(len(frame) / seconds, 1),
            "prompt_tokens_per_s": round(tokens["prompt_tokens"] / seconds), "prefix_hit_rate": round(hit, 3),
            "tflops": round(flops / 1e12, 2),
            "fraction_of_peak": None if peak is None else round(flops / peak, 3)}


def run_model(name: str, args, root: Path, device: str, peak: Optional[float],
              done: List[Dict[str, object]]) -> List[Dict[str, object]]:
    """The rows of one model; each row is also added to ``done`` and written to ``--out`` as soon as it is measured
    (a run stopped by a time limit keeps them). The model's folder (~16 GB at the real sizes) is removed after."""
    try:
        return _run_model(name, args, root, device, peak, done)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run_model(name: str, args, root: Path, device: str, peak: Optional[float],
               done: List[Dict[str, object]]) -> List[Dict[str, object]]:
    import torch
    path = build_model(name, root, args.tiny)
    n_params = parameters(path)
    frame = workload(path, args.queries, args.docs, args.doc_words)
    warm = workload(path, 1, min(8, args.docs), args.doc_words, seed=1).assign(qid="warm")
    make = CONFIGS[name]["make"]
    hf_kwargs = dict(batch_size=args.batch_size, max_length=args.max_length,
                     dtype="bf16" if device != "cpu" else "fp32", verbose=False)
    tokens = reuse(make(path, **hf_kwargs), frame)
    rows = []
    for backend in args.backends:
        if backend == "vllm" and not is_available("vllm"):
            print(f"{name}: vLLM is not importable here; its row is skipped", file=sys.stderr)
            continue
        if backend == "vllm":
            options = {"dtype": "bfloat16", "gpu_memory_utilization": args.gpu_memory_utilization,
                       "max_model_len": args.max_length + 1, "seed": 0}  # room for the one output token
            runs = {"vllm": dict(backend="vllm", backend_options=options, max_length=args.max_length, verbose=False)}
        else:
            runs = {"transformers": dict(hf_kwargs, share_prefix=False),
                    "transformers share_prefix": dict(hf_kwargs, share_prefix=True)}
        for label, kwargs in runs.items():
            reranker = make(path, **kwargs)  # one model in memory at a time
            row = measure(label, reranker, frame, warm, tokens, n_params, peak)
            rows.append({"model": name, "params_b": round(n_params / 1e9, 2), "device": device,
                         "prompt_tokens": tokens["prompt_tokens"], **row})
            print(json.dumps(rows[-1]), flush=True)
            done.append(rows[-1])
            if args.out:
                Path(args.out).write_text(json.dumps(done, indent=1))
            del reranker
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    return rows


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(CONFIGS), help=f"comma-separated, of {sorted(CONFIGS)}")
    parser.add_argument("--backends", default="hf,vllm", help="comma-separated: hf, vllm")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--docs", type=int, default=250, help="candidates per query")
    parser.add_argument("--doc-words", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=32, help="the transformers path's batch size")
    parser.add_argument("--max-length", type=int, default=2048)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the GPU's dense bf16 peak, when its name is not in PEAKS")
    parser.add_argument("--tiny", action="store_true",
                        help="tiny configurations, 2 queries × 6 candidates: a CPU smoke run")
    parser.add_argument("--out", default=None, help="write the rows as JSON here (after each row)")
    parser.add_argument("--report", nargs="*", default=None, metavar="JSON",
                        help="print the table of rows written with --out; no run")
    args = parser.parse_args(argv)
    if args.report is not None:
        rows = [row for f in args.report for row in json.loads(Path(f).read_text())]
        return report(pd.DataFrame(rows))
    args.backends = [b for b in args.backends.split(",") if b]
    if args.tiny:
        args.queries, args.docs, args.doc_words = min(args.queries, 2), min(args.docs, 6), min(args.doc_words, 40)
        args.max_length = min(args.max_length, 512)
    device, peak = device_and_peak(args.peak_tflops)
    rows: List[Dict[str, object]] = []
    names = [m for m in args.models.split(",") if m]
    for name in names:
        if name not in CONFIGS:
            parser.error(f"unknown model {name!r}; one of {sorted(CONFIGS)}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            run_model(name, args, Path(tmp) / name, device, peak, rows)
    table = pd.DataFrame(rows)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return report(table, device, peak)


def report(table: pd.DataFrame, device: Optional[str] = None, peak: Optional[float] = None) -> pd.DataFrame:
    """Prints the device line and the markdown table of ``table``'s rows; returns ``table``."""
    cols = ["model", "run", "docs", "prompt_tokens", "seconds", "docs_per_s", "prompt_tokens_per_s", "prefix_hit_rate",
            "tflops", "fraction_of_peak"]
    if device is None:  # rows read back: the devices they name; their fraction_of_peak says whether the peak was known
        print("\ndevice: " + (", ".join(table["device"].unique()) if len(table) else "none"))
    else:
        print(f"\ndevice: {device}" + (f", dense bf16 peak {peak / 1e12:.0f} TFLOP/s" if peak else ", peak unknown"))
    print(markdown(table[[c for c in cols if c in table]]) if len(table) else "no rows")
    return table


def markdown(table: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join("–" if v is None or v != v else str(v) for v in row) + " |"
              for row in table.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
