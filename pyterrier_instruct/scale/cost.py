"""A cost model for the benchmarks this package reproduces: model forward passes → tokens → FLOPs → GPU-hours.

A forward pass costs about ``2 × parameters × tokens`` FLOPs; GPU-hours are ``FLOPs / (utilisation × peak)`` (an H100's
dense bf16 989 TFLOP/s; ``utilisation`` 0.5). Workload sizes come from the papers' dataset tables and the package's
dataset registry (assumptions in each row's ``note``); 1.3 tokens per word, a 25-token template.
:func:`prefix_reuse` counts the prompt head a causal reranker's candidates share (vLLM reuses whole 16-token blocks,
:data:`BLOCK_TOKENS`). The sources, assumptions and measured numbers: docs/scaling.md and docs/performance.md.
"""
from __future__ import annotations

import math
from typing import Dict, List, NamedTuple, Optional

import pandas as pd

H100_BF16_PEAK = 989e12     # FLOP/s, dense (no sparsity)
TOKENS_PER_WORD = 1.3
TEMPLATE_TOKENS = 25
PREFIX_TEMPLATE_TOKENS = 20   # the template's part before the query (e.g. "[INST] You are an expert ... Query: ")
BLOCK_TOKENS = 16             # vLLM's KV-cache block: prefix-cache hits are whole blocks

#: parameters of the checkpoints the reproduction rows run
PARAMS: Dict[str, float] = {
    "MonoT5-base": 0.223e9, "MonoT5-3B": 2.85e9, "FollowIR-7B": 7.24e9, "Mistral-7B-instruct": 7.24e9,
    "RankZephyr-7B": 7.24e9, "Promptriever-7B": 6.74e9, "RepLLaMA-7B": 6.74e9, "E5-mistral-7B": 7.11e9,
}
#: the models' token limits where they truncate (monoT5 512; the dense models encode at most 512 passage tokens)
MAX_TOKENS: Dict[str, int] = {"MonoT5-base": 512, "MonoT5-3B": 512, "Promptriever-7B": 512, "RepLLaMA-7B": 512,
                              "E5-mistral-7B": 512}


class Stage(NamedTuple):
    """One model over one benchmark's workload: ``items`` forward-pass inputs of ``tokens`` tokens each."""
    benchmark: str
    dataset: str
    model: str
    stage: str          # "rerank" (pointwise pairs), "listwise" (windows), "encode corpus", "encode queries"
    items: int
    tokens: int
    note: str = ""
    shared: int = 0     # tokens of each item's head shared with the other items of its query (causal pointwise rerank)
    group: int = 1      # items per query sharing that head


def tokens(words: float, template: bool = True) -> int:
    return int(round(words * TOKENS_PER_WORD + (TEMPLATE_TOKENS if template else 0)))


def _pairs(model: str, words: float) -> int:
    return min(tokens(words), MAX_TOKENS.get(model, 10 ** 9))


#: causal pointwise rerankers, whose prompts for one query share a prefix (monoT5 is an encoder-decoder: none)
CAUSAL = ("FollowIR-7B", "Mistral-7B-instruct")


def _head(model: str, query_words: float) -> int:
    """The prompt head a query's candidates share: template up to the query + the query and instruction."""
    return PREFIX_TEMPLATE_TOKENS + tokens(query_words, False) if model in CAUSAL else 0


#: listwise windows per query: 100 candidates, window 20, stride 10 (rank_llm); each window fills a 4,096-token context
WINDOWS_PER_QUERY, WINDOW_TOKENS = 9, 4000

# the papers' counts: (query rows, docs, instruction words)
_FOLLOWIR = {"robust04": (104, 47_492, 75.2), "news21": (64, 30_921, 46.9), "core17": (40, 19_899, 53.5)}
_IFIR_DOCS = {"fiqa": 57_638, "scifact_open": 500_000, "nfcorpus": 3_633, "aila": 2_914, "fire": 1_745, "pm": 241_006,
              "cds": 633_955}
# BEIR (Thakur et al., 2021, Table 1): corpus size, average passage words
_BEIR = {"arguana": (8_674, 166.8), "climate_fever": (5_416_593, 84.8), "dbpedia": (4_635_922, 49.7),
         "fever": (5_416_568, 84.8), "fiqa": (57_638, 132.3), "hotpotqa": (5_233_329, 46.3), "nfcorpus": (3_633, 232.3),
         "nq": (2_681_468, 78.9), "quora": (522_931, 11.4), "scidocs": (25_657, 176.2), "scifact": (5_183, 213.6),
         "touche2020": (382_545, 292.4), "trec_covid": (171_332, 160.8)}


def workloads() -> List[Stage]:
    """Every benchmark × model family stage of the reproduction (see the module docstring for the sources)."""
    rows: List[Stage] = []
    for name, (qrows, docs, instr) in _FOLLOWIR.items():
        prompt = 15 + instr + 400
        for model in ("MonoT5-base", "MonoT5-3B", "FollowIR-7B", "Mistral-7B-instruct"):
            rows.append(Stage("FollowIR", name, model, "rerank", qrows * 1000, _pairs(model, prompt),
                              f"{qrows} query rows × 1,000 candidates", _head(model, 15 + instr), 1000))
        rows.append(Stage("FollowIR", name, "RankZephyr-7B", "listwise", qrows * WINDOWS_PER_QUERY, WINDOW_TOKENS,
                          f"{qrows} query rows × {WINDOWS_PER_QUERY} windows of the top 100"))
        for model in ("Promptriever-7B", "E5-mistral-7B"):
            rows.append(Stage("FollowIR", name, model, "encode corpus", docs, min(tokens(400, False), 512),
                              "the candidate pool's passages"))
    instances = 1_598 * 3  # InfoSearch Table 1: instructed instances, reranked in the ori/ins/rev modes
    for model in ("FollowIR-7B", "Mistral-7B-instruct"):
        rows.append(Stage("InfoSearch", "6 dimensions", model, "rerank", instances * 100, _pairs(model, 15 + 18 + 300),
                          "top 100 per instance and mode; ~300-word documents assumed (the paper gives no length)",
                          _head(model, 15 + 18), 100))
    rows.append(Stage("InfoSearch", "6 dimensions", "RankZephyr-7B", "listwise", instances * WINDOWS_PER_QUERY,
                      WINDOW_TOKENS, "top 100 per instance and mode"))
    rows.append(Stage("InfoSearch", "6 dimensions", "E5-mistral-7B", "encode corpus", 6_392, tokens(300, False),
                      "6,392 documents"))
    for model in ("Promptriever-7B", "E5-mistral-7B"):
        rows.append(Stage("IFIR", "7 subsets", model, "encode corpus", sum(_IFIR_DOCS.values()), tokens(200, False),
                          "1.44 M passages; ~200 words assumed"))
        rows.append(Stage("IFIR", "7 subsets", model, "encode queries", 2 * 2_424, tokens(60, False),
                          "2,424 instruction queries + level 0"))
    for model in ("Promptriever-7B", "RepLLaMA-7B", "E5-mistral-7B"):
        rows.append(Stage("InstructIR", "instructir", model, "encode corpus", 16_072, tokens(80, False),
                          "16,072 revised passages"))
    for model in ("FollowIR-7B", "Mistral-7B-instruct"):
        rows.append(Stage("InstructIR", "instructir", model, "rerank", 9_906 * 100, _pairs(model, 15 + 40 + 80),
                          "9,906 instances × BM25 top 100", _head(model, 15 + 40), 100))
    for model in ("Promptriever-7B", "RepLLaMA-7B"):
        for name, (docs, words) in _BEIR.items():
            rows.append(Stage("BEIR", name, model, "encode corpus", docs, min(tokens(words, False), 512),
                              f"{docs:,} passages"))
    return rows


def estimate(stages: Optional[List[Stage]] = None, utilisation: float = 0.5,
             peak: float = H100_BF16_PEAK) -> pd.DataFrame:
    """One row per stage: items, tokens per item, total tokens, FLOPs (``2 × params × tokens``) and GPU-hours on one
    GPU of ``peak`` FLOP/s at ``utilisation``."""
    if not 0 < utilisation <= 1:
        raise ValueError(f"utilisation must be in (0, 1], got {utilisation!r}")
    out = pd.DataFrame([s._asdict() for s in (workloads() if stages is None else stages)])
    out["total_tokens"] = out["items"] * out["tokens"]
    out["flops"] = 2 * out["model"].map(PARAMS) * out["total_tokens"]
    out["gpu_hours"] = out["flops"] / (utilisation * peak) / 3600
    return out


def wall_hours(gpu_hours: float, gpus_per_machine: int, machines: int = 1, startup_hours: float = 0.05) -> float:
    """Wall-clock hours of ``gpu_hours`` of data-parallel work on ``gpus_per_machine × machines`` GPUs (one Ray actor
    per GPU, blocks of whole queries or shards spread evenly): the share of each GPU plus one model load per actor
    (``startup_hours``, ~3 minutes for a 7B checkpoint from local disk)."""
    workers = int(gpus_per_machine) * int(machines)
    if workers < 1:
        raise ValueError(f"need at least one GPU, got {gpus_per_machine} × {machines}")
    return gpu_hours / workers + startup_hours


def issue_example(utilisation: float = 0.5) -> Dict[str, float]:
    """FollowIR-7B over one 7,000-query × 1,000-candidate run of ~600-token prompts: 7 M forward passes."""
    stage = Stage("example", "7,000 queries", "FollowIR-7B", "rerank", 7_000 * 1_000, 600)
    row = estimate([stage], utilisation).iloc[0]
    return {"flops": float(row["flops"]), "gpu_hours": float(row["gpu_hours"]),
            "log10_flops": math.log10(float(row["flops"]))}


def prefix_reuse(utilisation: float = 0.5, peak: float = H100_BF16_PEAK, block: int = BLOCK_TOKENS) -> pd.DataFrame:
    """The causal pointwise rerank rows with and without prefix reuse: tokens computed per candidate, GPU-hours both
    ways and the saving. With reuse a candidate computes ``tokens - shared`` plus, on vLLM, the part of the head that
    does not fill a whole cache block (``block / 2`` on average; ``block=0`` for ``share_prefix``); the first candidate
    of a query computes the whole prompt."""
    table = estimate(utilisation=utilisation, peak=peak)
    rows = table[table["shared"] > 0].copy()
    reused = (rows["shared"] - block / 2).clip(lower=0) * (rows["group"] - 1) / rows["group"]
    rows["tokens_with_reuse"] = (rows["tokens"] - reused).round(1)
    rows["gpu_hours_with_reuse"] = rows["gpu_hours"] * rows["tokens_with_reuse"] / rows["tokens"]
    rows["saving"] = 1 - rows["gpu_hours_with_reuse"] / rows["gpu_hours"]
    return rows[["benchmark", "dataset", "model", "items", "tokens", "shared", "tokens_with_reuse", "gpu_hours",
                 "gpu_hours_with_reuse", "saving"]].reset_index(drop=True)
