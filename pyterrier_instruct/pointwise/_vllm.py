"""The vLLM path of the causal pointwise rerankers: the same token ids as the transformers path, scored by vLLM's
engine with exact answer-token values (:meth:`~pyterrier_instruct.backends.VLLMBackend.answer_logits`: the
``allowed_token_ids`` whitelist + ``logprobs_mode='processed_logprobs'``, never a top-k approximation), then the same
2-way formula (:func:`~pyterrier_instruct.pointwise.base.two_way`).

Requests are submitted query-contiguous: every candidate of a query one after another, queries in order of first
appearance, many queries per ``generate`` call. A prompt starts with the template's head and the query (+ instruction),
so all but the first candidate of a query find that prefix in vLLM's prefix cache (``enable_prefix_caching``, on by
default) and only their document part is computed; vLLM batches the requests of a call across queries itself.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

#: prompts per ``generate`` call (whole queries; the progress bar moves once per call)
SUBMIT_ROWS = 4096


def engine_backend(reranker, backend, options: Optional[dict]):
    """``'hf'`` as it is; ``'vllm'`` → a :class:`VLLMBackend` for the reranker's model with
    ``logprobs_mode='processed_logprobs'`` and ``options``; a ready VLLMBackend is checked (same model, an exact
    ``logprobs_mode``)."""
    from ..backends.vllm import EXACT_MODES, VLLMBackend
    name = type(reranker).__name__
    if isinstance(backend, str):
        if backend not in ("hf", "vllm"):
            raise ValueError(f"{name}: backend must be 'hf', 'vllm' or a VLLMBackend, got {backend!r}")
        if backend == "hf":
            if options:
                raise ValueError(f"{name}: backend_options configure backend='vllm'; the transformers path takes "
                                 "batch_size=, device=, dtype= directly")
            return "hf"
        options = dict(options or {})
        options.setdefault("logprobs_mode", "processed_logprobs")
        if options["logprobs_mode"] not in EXACT_MODES:
            raise ValueError(f"{name}: backend_options logprobs_mode must be one of {EXACT_MODES}, got "
                             f"{options['logprobs_mode']!r}")
        backend = VLLMBackend(reranker.model_name_or_path, **options)
    elif not isinstance(backend, VLLMBackend):
        raise TypeError(f"{name}: backend must be 'hf', 'vllm' or a VLLMBackend, got {type(backend).__name__}")
    elif options:
        raise ValueError(f"{name}: backend is a ready VLLMBackend; pass its options to it, not as backend_options")
    elif backend.model != reranker.model_name_or_path:
        raise ValueError(f"{name}: the VLLMBackend serves {backend.model!r} but model_name_or_path is "
                         f"{reranker.model_name_or_path!r}; pass the same model to both")
    elif not backend.exact_answer_values():
        raise ValueError(f"{name}: the VLLMBackend needs logprobs_mode='processed_logprobs' for exact scores on this "
                         f"vLLM (older than 0.22.1, no logprob_token_ids), got {backend.logprobs_mode!r}: "
                         f"VLLMBackend({backend.model!r}, logprobs_mode='processed_logprobs', ...)")
    length, engine = getattr(reranker, "max_length", None), backend.max_model_len
    if length is not None and engine is not None and int(length) >= int(engine):
        raise ValueError(f"{name}: max_length={length} prompts do not fit max_model_len={engine}: vLLM refuses a "
                         "prompt of max_model_len tokens or more (one output token must fit); pass max_model_len >= "
                         f"{int(length) + 1} or max_length <= {int(engine) - 1}")
    if getattr(reranker, "share_prefix", False):
        raise ValueError(f"{name}: share_prefix is the transformers path's prefix reuse; on vLLM the engine's prefix "
                         "cache does it (enable_prefix_caching, on by default)")
    return backend


def query_contiguous(queries: Sequence[str]) -> List[np.ndarray]:
    """Row indices grouped by query, queries in order of first appearance, rows of a query in input order."""
    first: Dict[str, int] = {}
    groups: List[List[int]] = []
    for n, q in enumerate(queries):
        if q not in first:
            first[q] = len(groups)
            groups.append([])
        groups[first[q]].append(n)
    return [np.asarray(g, dtype=np.int64) for g in groups]


def engine_scores(backend, feats: List[Dict[str, List[int]]], queries: Sequence[str], answer_ids: Sequence[int],
                  mode: str, bar, values=None) -> np.ndarray:
    """One score per row (input order) from ``backend.answer_logits`` (or ``values(prompts)``, ``[false, true]``
    columns) on query-contiguous submissions of whole queries."""
    import torch

    from .base import two_way
    scores = np.empty(len(feats), dtype="float64")
    chunk: List[np.ndarray] = []

    def flush():
        rows = np.concatenate(chunk)
        prompts = [feats[i]["input_ids"] for i in rows]
        got = backend.answer_logits(prompts, answer_ids) if values is None else values(prompts)
        scores[rows] = two_way(torch.from_numpy(got), mode).double().numpy()
        bar.update(len(rows))
        chunk.clear()

    for rows in query_contiguous(queries):
        chunk.append(rows)
        if sum(map(len, chunk)) >= SUBMIT_ROWS:
            flush()
    if chunk:
        flush()
    return scores
