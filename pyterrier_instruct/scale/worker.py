"""The Ray actor behind :func:`~pyterrier_instruct.scale.on_ray` and what it needs to know of the transformer it runs.

One :class:`BlockWorker` per actor holds one copy of the transformer (pickled without its model, which it loads on
the first block) and turns each block (a pickled frame) into a result: scores (``rerank``), vectors (``queries``,
``passages``) or a frame (``frame``). Before anything loads, it checks that the model folders the driver named exist
on its own machine, and any failure names the worker (actor, host, node) and the block.
"""
from __future__ import annotations

import dataclasses
import os
import pickle
from collections import Counter
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

#: constructor arguments naming a model or tokenizer (a hub id or a local folder)
MODEL_FIELDS = ("model_name_or_path", "model", "base_model", "tokenizer")
MODES = ("rerank", "queries", "passages", "frame")


def parts(obj, seen=None) -> Iterator[Tuple[str, object]]:
    """``(attribute path, value)`` for ``obj``'s constructor arguments, recursively through configured objects (a
    reranker's backend, a stage's model), dicts and lists."""
    from .._config import Configured
    seen = set() if seen is None else seen
    if id(obj) in seen or not isinstance(obj, Configured):
        return
    seen.add(id(obj))
    for name, value in obj.config().items():
        yield name, value
        values = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            for sub, x in parts(v, seen):
                yield f"{name}.{sub}", x


def model_paths(transformer) -> List[Tuple[str, str]]:
    """``(argument, path)`` for each model argument that names a local folder (it exists here, or it is absolute):
    every worker must see the same path."""
    out = []
    for name, value in parts(transformer):
        if name.rsplit(".", 1)[-1] in MODEL_FIELDS and isinstance(value, str) and value:
            if os.path.isabs(value) or os.path.exists(value):
                out.append((name, value))
    return out


def components(transformer, cls) -> List[object]:
    """The configured objects of class ``cls`` inside ``transformer`` (itself included)."""
    found = [transformer] if isinstance(transformer, cls) else []
    return found + [v for _, v in parts(transformer) if isinstance(v, cls)]


def http_backends(transformer) -> List[object]:
    """The OpenAI-compatible HTTP backends inside ``transformer``."""
    from ..backends.openai import OpenAIBackend
    return components(transformer, OpenAIBackend)


def vllm_backends(transformer) -> List[object]:
    from ..backends.vllm import VLLMBackend
    return components(transformer, VLLMBackend)


def vllm_gpus(backend) -> int:
    """GPUs one vLLM engine spans: tensor × pipeline parallel size."""
    return int(backend.tensor_parallel_size) * int(backend.llm_kwargs.get("pipeline_parallel_size", 1))


# -- counters: what the workers counted is added to the driver's transformer -------------------------------------------
def _owners(transformer) -> list:
    """Where a transformer keeps its ``stats``: itself, its dense ``model``, or its ``backend`` (a pointwise reranker on
    vLLM: requests, prompt and cached tokens)."""
    return [transformer, getattr(transformer, "model", None), getattr(transformer, "backend", None)]


def counted(transformer) -> Dict[str, object]:
    """The counters of ``transformer`` (``stats`` as a Counter, a dataclass or a dict of numbers; ``truncated``)."""
    out = {}
    for owner in _owners(transformer):
        stats = getattr(owner, "stats", None)
        if isinstance(stats, Counter):
            out["stats"] = dict(stats)
        elif dataclasses.is_dataclass(stats):
            out["stats"] = dataclasses.asdict(stats)
        elif isinstance(stats, dict):
            out["stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float))}
        if "stats" in out:
            break
    if isinstance(getattr(transformer, "truncated", None), int):
        out["truncated"] = transformer.truncated
    return out


def difference(after: Dict[str, object], before: Dict[str, object]) -> Dict[str, object]:
    out = {}
    for key, value in after.items():
        if isinstance(value, dict):
            old = before.get(key, {})
            out[key] = {k: v - old.get(k, 0) for k, v in value.items() if v != old.get(k, 0)}
        else:
            out[key] = value - before.get(key, 0)
    return out


def add_counts(transformer, delta: Dict[str, object]) -> None:
    """Adds a worker's counts (:func:`difference`) to the driver's ``transformer``."""
    if delta.get("truncated"):
        transformer.truncated += delta["truncated"]
    if not delta.get("stats"):
        return
    stats = next((getattr(o, "stats") for o in _owners(transformer) if getattr(o, "stats", None) is not None), None)
    for key, value in delta["stats"].items():
        if isinstance(stats, dict):
            stats[key] = stats.get(key, 0) + value
        elif hasattr(stats, key):
            setattr(stats, key, getattr(stats, key) + value)


# -- the actor ---------------------------------------------------------------------------------------------------------
class BlockWorker:
    """A Ray actor: :meth:`run` turns one block into its result.

    Args:
        transformer: the wrapped transformer (arrives pickled without its model).
        mode: one of :data:`MODES`.
        paths: ``(argument, path)`` pairs that must exist on this worker (:func:`model_paths`).
        http_actors: the number of actors sharing each OpenAI-compatible backend's ``concurrency``: this actor keeps
            ``concurrency // http_actors`` requests in flight (the pool has at most ``concurrency`` actors), so the
            cluster as a whole never exceeds the backend's limit.
        vllm_executor: set ``distributed_executor_backend='ray'`` on vLLM engines that span several GPUs.
    """

    def __init__(self, transformer, mode: str, paths: Sequence[Tuple[str, str]] = (), http_actors: Optional[int] = None,
                 vllm_executor: bool = False):
        from .cluster import worker_identity
        self.where = worker_identity()
        missing = [(name, path) for name, path in paths if not os.path.exists(path)]
        if missing:
            listed = "; ".join(f"{path} ({name} of {type(transformer).__name__})" for name, path in missing)
            raise FileNotFoundError(f"{self.where} cannot see {listed}: every worker needs the model files at the same "
                                    "path (copy them to each node, or use a shared filesystem)")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.transformer, self.mode = transformer, mode
        if http_actors is not None:
            for backend in http_backends(transformer):
                backend.concurrency = max(1, int(backend.concurrency) // int(http_actors))
        if vllm_executor:
            for backend in vllm_backends(transformer):
                if vllm_gpus(backend) > 1:
                    backend.llm_kwargs.setdefault("distributed_executor_backend", "ray")

    def run(self, block: int, payload: bytes) -> Tuple[int, bytes, bytes, str]:
        """One block (a pickled frame or string array): ``(block, pickled result, pickled counts, this worker)``."""
        frame = pickle.loads(payload)  # a frame (rerank, frame) or an array of strings (queries, passages)
        before = counted(self.transformer)
        try:
            result = self._run(frame)
        except Exception as err:
            raise RuntimeError(f"{self.where}, block {block} ({len(frame)} rows) of {self.transformer!r}: "
                               f"{type(err).__name__}: {err}") from err
        return (block, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL),
                pickle.dumps(difference(counted(self.transformer), before)), self.where)

    def _run(self, frame):
        t = self.transformer
        if self.mode == "rerank":
            if t.extra_outputs:  # (scores, {column: values}): rank1's reasoning travels back with the scores
                scores, extra = t._score(frame)
                return np.asarray(scores, dtype="float64"), {c: list(extra[c]) for c in t.extra_outputs}
            return np.asarray(t._score(frame), dtype="float64")
        if self.mode == "queries":  # a dense model and its final query strings
            return np.asarray(t.encode_queries(frame), dtype=np.float32)
        if self.mode == "passages":
            return np.asarray(t.encode_passages(frame, fill_cache=False), dtype=np.float32)
        return t.transform(frame)

