"""``pti.on_ray(transformer, workers=N)``: a transformer's heavy stage run by an actor pool on a Ray cluster.

The wrapped transformer's own ``transform`` runs in the driver, its expensive part handed to a pool of ``workers`` Ray
actors (:class:`~.worker.BlockWorker`, restarted with their unfinished blocks retried): one model copy per actor,
loaded on its first block. Rerankers get blocks of whole queries (output equal to the single-process run's),
bi-encoders the distinct query/passage strings, others blocks of rows. Faults, HTTP concurrency and multi-GPU vLLM
actors: docs/scaling.md.
"""
from __future__ import annotations

import copy
import pickle
import time
from collections import Counter
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from .._config import Configured
from .._progress import tqdm as progress_bar
from . import blocks as B
from .worker import BlockWorker, add_counts, http_backends, model_paths, vllm_backends, vllm_gpus

#: blocks handed to each actor at a time (one running, one waiting, so an actor never waits for the driver)
IN_FLIGHT = 2


class OnRay(Configured, pt.Transformer):
    """See :func:`on_ray` (its arguments) and the module docstring (what runs where)."""

    def __init__(self, transformer: pt.Transformer, *, workers: Optional[int] = None,
                 gpus_per_worker: Optional[float] = None, cpus_per_worker: float = 1, address: Optional[str] = None,
                 block_rows: Optional[int] = None, max_retries: int = 3, runtime_env: Optional[dict] = None,
                 verbose: bool = True):
        if isinstance(transformer, OnRay):
            raise TypeError("on_ray: the transformer already runs on Ray")
        if not isinstance(transformer, pt.Transformer):
            raise TypeError(f"on_ray needs a pt.Transformer, got {type(transformer).__name__}")
        if workers is not None and int(workers) < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}")
        if gpus_per_worker is not None and float(gpus_per_worker) < 0:
            raise ValueError(f"gpus_per_worker must be >= 0, got {gpus_per_worker!r}")
        if float(cpus_per_worker) <= 0:
            raise ValueError(f"cpus_per_worker must be positive, got {cpus_per_worker!r}")
        if int(max_retries) < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        self.transformer, self.workers, self.gpus_per_worker = transformer, workers, gpus_per_worker
        self.cpus_per_worker, self.address, self.block_rows = cpus_per_worker, address, block_rows
        self.max_retries, self.runtime_env, self.verbose = int(max_retries), runtime_env, verbose
        #: the last Ray run: its mode, blocks, workers, seconds and blocks finished per worker
        self.last_run: Dict[str, object] = {}
        #: the last corpus encoding: shards, reused (done before), encoded
        self.last_index: Dict[str, int] = {}
        #: rows per chunk when a ``>>`` indexing pipeline feeds this transformer (pt's ``Compose.index``)
        self.batch_size = 65536

    schematic = {"label": "on_ray"}

    @property
    def _same_output_as(self):
        return self.transformer

    def subtransformers(self):
        return {"transformer": self.transformer}

    # -- the transformer -----------------------------------------------------------------------------------------------
    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if not _runs_by_parts(self.transformer):
            return self._frames(inp)
        proxy = self._proxy(self.transformer)
        return proxy.transform(inp)

    def index(self, corpus_iter, path: Optional[str] = None, *, overwrite: bool = False, shard_size: int = 4096,
              wave_shards: int = 256, keep_shards: bool = False, lock_timeout: Optional[float] = None):
        """A dense model's :class:`~pyterrier_instruct.dense.index.EmbeddingIndex` of ``corpus_iter``, encoded on the
        cluster in shards of ``shard_size`` documents. Each finished shard is stored whole as it arrives, in the vector
        cache at ``<path>/shards/``, so a re-run after a failure encodes only the shards not stored. ``wave_shards``:
        shards per Ray run (the corpus is read lazily, one wave at a time). The index is committed whole or not at all,
        under a lock a second builder waits on (``lock_timeout``). See :func:`.dense.build_index`."""
        from .dense import build_index
        return build_index(self, corpus_iter, path, overwrite=overwrite, shard_size=shard_size, wave_shards=wave_shards,
                           keep_shards=keep_shards, lock_timeout=lock_timeout)

    def encode_corpus(self, corpus_iter, shard_dir: Optional[str] = None, *, shard_size: int = 4096,
                      wave_shards: int = 256) -> Iterator[dict]:
        """``{docno, doc_vec}`` per document of ``corpus_iter``, in corpus order, encoded on the cluster (resumable
        through ``shard_dir``); e.g. for ``pyterrier_dr.FlexIndex(path).indexer().index(...)``."""
        from .dense import encode_corpus
        self.last_index = {}
        for docnos, vectors in encode_corpus(self, corpus_iter, shard_dir, shard_size=shard_size,
                                             wave_shards=wave_shards, stats=self.last_index):
            for docno, vec in zip(docnos, vectors):
                yield {"docno": docno, "doc_vec": vec}

    def retriever(self, index=None, num_results: int = 1000, corpus=None) -> "OnRay":
        """``on_ray(model.retriever(index, num_results, corpus))`` with this wrapper's settings: the index is built on
        the cluster (:meth:`index`) when missing, queries are encoded on the cluster, the exact search runs here."""
        model = self.transformer
        if not hasattr(model, "retriever"):
            raise TypeError(f"{model!r} has no retriever(); on_ray(...).retriever needs a dense model")
        kwargs = {"corpus": corpus} if num_results == 1000 else {"num_results": num_results, "corpus": corpus}
        stage = model.retriever(index, **kwargs) if index is not None else model.retriever(**kwargs)
        return on_ray(stage, **self._options())

    def _options(self) -> dict:
        call = self.__dict__.get("_call")
        if isinstance(call, tuple):
            return dict(call[2])
        return {k: v for k, v in self.config().items() if k != "transformer"}

    # -- the proxy: the wrapped transformer with its heavy methods sent to the cluster ---------------------------------
    def _proxy(self, obj):
        """A shallow copy of ``obj`` whose scoring / encoding / indexing methods run on the cluster (its counters and
        every other attribute shared with ``obj``)."""
        from ..base import InstructReranker
        proxy = copy.copy(obj)
        if isinstance(obj, InstructReranker):  # a task per block of queries (a bi-encoder: queries and passages too)
            proxy._score = lambda work: self._scores(obj, work)
        if _is_dense(obj):  # Q→Q, D→D and indexing: the distinct strings
            proxy.encode_queries = lambda strings: self._strings(obj, strings, "queries")
            proxy.encode_passages = lambda strings, fill_cache=True: self._strings(obj, strings, "passages")
            proxy.index = lambda corpus_iter, path=None, **kw: self._with(obj).index(corpus_iter, path, **kw)
        if _is_dense(getattr(obj, "model", None)) and not isinstance(obj, InstructReranker):
            proxy.model = self._proxy(obj.model)  # a stage (query/doc encoder, retriever): its model on the cluster
        return proxy

    def _with(self, transformer) -> "OnRay":
        """This wrapper's settings around another transformer (a stage's model)."""
        other = copy.copy(self)
        other.transformer = transformer
        return other

    # -- the three kinds of work ---------------------------------------------------------------------------------------
    def _scores(self, reranker, work: pd.DataFrame) -> np.ndarray:
        """``reranker._score(work)``, a block of whole queries per task (with its ``extra_outputs`` columns, if any)."""
        from ..pointwise.base import PointwiseReranker
        rows = B.target_rows(len(work), self._planned_workers(reranker), self.block_rows)
        if isinstance(reranker, PointwiseReranker):
            lengths = B.text_lengths(work, ["query", "instruction", reranker.title_field or "", reranker.text_field])
            parts = B.query_blocks(work["qid"], rows, lengths)
        else:
            parts = B.query_blocks(work["qid"], rows)
        scores = np.full(len(work), np.nan)
        extra = {c: np.empty(len(work), dtype=object) for c in reranker.extra_outputs}
        done = np.zeros(len(work), dtype=bool)
        payloads = ((i, work.iloc[idx]) for i, idx in enumerate(parts))
        for block, result in self.run_blocks(reranker, "rerank", payloads, len(parts)):
            idx = parts[block]
            if extra:  # (scores, {column: values})
                result, values = result
                for c in extra:
                    extra[c][idx] = values[c]
            if result.shape != (len(idx),):
                raise RuntimeError(f"{reranker!r} gave {result.shape} scores for block {block} of {len(idx)} rows")
            scores[idx] = result
            done[idx] = True
        _check_complete(done, "rows")
        return (scores, extra) if extra else scores

    def _strings(self, model, strings: Sequence[str], mode: str) -> np.ndarray:
        """Vectors of query (``mode='queries'``) or passage strings: each distinct string once, length-sorted blocks."""
        from ..dense.biencoder import _distinct
        inv, uniq = _distinct(strings)
        if not len(uniq):  # nothing to encode, nothing loaded
            return np.zeros((0, 0), dtype=np.float32)
        order = np.argsort(-np.fromiter((len(s) for s in uniq), dtype=np.int64, count=len(uniq)), kind="stable")
        rows = B.target_rows(len(uniq), self._planned_workers(model), self.block_rows)
        parts = [order[p] for p in B.row_blocks(len(uniq), rows)]
        vectors: Optional[np.ndarray] = None
        done = np.zeros(len(uniq), dtype=bool)
        for block, result in self.run_blocks(model, mode, ((i, uniq[idx]) for i, idx in enumerate(parts)), len(parts)):
            if vectors is None:
                vectors = np.empty((len(uniq), result.shape[1]), dtype=np.float32)
            vectors[parts[block]] = result
            done[parts[block]] = True
        _check_complete(done, "strings")
        return vectors[inv]

    def _frames(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Any other transformer: ``transform`` per block of whole queries (or of rows), outputs in input order."""
        t = self.transformer
        if len(inp) == 0:
            return t.transform(inp)
        rows = B.target_rows(len(inp), self._planned_workers(t), self.block_rows)
        parts = B.query_blocks(inp["qid"], rows) if "qid" in inp.columns else B.row_blocks(len(inp), rows)
        out: Dict[int, pd.DataFrame] = {}
        for block, result in self.run_blocks(t, "frame", ((i, inp.iloc[idx]) for i, idx in enumerate(parts)),
                                             len(parts)):
            out[block] = result
        _check_complete(np.array([i in out for i in range(len(parts))]), "blocks")
        return pd.concat([out[i] for i in range(len(parts))], ignore_index=True)

    # -- Ray -----------------------------------------------------------------------------------------------------------
    def _planned_workers(self, transformer) -> int:
        """Workers for sizing blocks (the cluster is asked only when ``workers`` was not given)."""
        if self.workers is not None:
            return int(self.workers)
        return self._resources(transformer)[0]

    def _resources(self, transformer) -> Tuple[int, float, int, str]:
        """``(workers, GPUs per actor, GPUs per vLLM engine, its placement strategy)`` on the connected cluster."""
        from .cluster import cluster_cpus, cluster_gpus, connect
        connect(self.address)
        available = cluster_gpus()
        gpus = float(self.gpus_per_worker) if self.gpus_per_worker is not None else (1.0 if available >= 1 else 0.0)
        engines = vllm_backends(transformer)
        span = max(vllm_gpus(b) for b in engines) if engines and gpus > 0 else 1
        # tensor parallelism stays on one node; pipeline stages may spread over nodes
        strategy = "PACK" if any(b.llm_kwargs.get("pipeline_parallel_size", 1) > 1 for b in engines) else "STRICT_PACK"
        if http_backends(transformer):
            gpus = 0.0
        if self.workers is not None:
            workers = int(self.workers)
        elif gpus > 0:
            workers = max(1, int(available // (gpus * span)))
        else:
            workers = max(1, int(cluster_cpus() // float(self.cpus_per_worker)))
        limits = [int(b.concurrency) for b in http_backends(transformer)]
        if limits:
            workers = min(workers, min(limits))
        return workers, gpus, span, strategy

    def run_blocks(self, transformer, mode: str, payloads: Iterable[Tuple[int, object]], n_blocks: int
                   ) -> Iterator[Tuple[int, object]]:
        """``(block id, result)`` as the actors finish them; ``payloads`` are ``(block id, frame or string array)``."""
        from .cluster import connect
        ray = connect(self.address)
        workers, gpus, span, strategy = self._resources(transformer)
        workers = max(1, min(workers, n_blocks))
        http = http_backends(transformer)
        args = (transformer, mode, model_paths(transformer), workers if http else None, span > 1)
        groups: List[object] = []
        started, per_worker = time.time(), Counter()
        bar = progress_bar(total=n_blocks, desc=f"on_ray {type(transformer).__name__}", unit="block",
                           disable=not self.verbose or not n_blocks)
        # the transformer travels inline with each actor's creation (small: pickled without its model); arguments
        # in the object store would be lost to a restarted actor once the driver dropped them
        actors = [ray.remote(BlockWorker).options(**self._actor_options(span, strategy, gpus, groups)).remote(*args)
                  for _ in range(workers)]
        todo = ((int(i), pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL)) for i, p in payloads)
        running: Dict[object, object] = {}  # task -> its actor

        def submit(actor) -> None:
            item = next(todo, None)
            if item is not None:
                running[actor.run.remote(*item)] = actor

        try:
            with bar:
                for actor in actors * IN_FLIGHT:  # a next block waits in each actor while it runs one
                    submit(actor)
                while running:
                    (task,), _ = ray.wait(list(running), num_returns=1)
                    actor = running.pop(task)
                    block, result, counts, where = ray.get(task)
                    submit(actor)
                    add_counts(transformer, pickle.loads(counts))
                    per_worker[where] += 1
                    bar.update(1)
                    yield block, pickle.loads(result)
        finally:
            for actor in actors:
                ray.kill(actor)
            for group in groups:
                ray.util.remove_placement_group(group)
        self.last_run = {"mode": mode, "blocks": n_blocks, "workers": workers,
                         "seconds": round(time.time() - started, 3), "blocks_per_worker": dict(per_worker)}

    def _actor_options(self, span: int, strategy: str, gpus: float, groups: list) -> Dict[str, object]:
        """Each actor's resources, restarts and task retries (Ray's ``max_restarts``/``max_task_retries``); for a vLLM
        engine over ``span`` > 1 GPUs, a placement group of ``span`` GPU bundles (``strategy``: one node for tensor
        parallelism), which the engine's own Ray workers are scheduled into."""
        options: Dict[str, object] = {"num_cpus": float(self.cpus_per_worker), "num_gpus": 0.0 if span > 1 else gpus,
                                      "max_restarts": self.max_retries, "max_task_retries": self.max_retries}
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        if span > 1:
            from ray.util.placement_group import placement_group
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
            group = placement_group([{"GPU": max(gpus, 1.0), "CPU": 1.0}] * span, strategy=strategy)
            groups.append(group)
            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                group, placement_group_capture_child_tasks=True)
        return options


def _check_complete(done: np.ndarray, what: str) -> None:
    if not done.all():
        raise RuntimeError(f"on_ray: {int((~done).sum())} {what} came back without a result")


def _is_dense(obj) -> bool:
    return hasattr(obj, "encode_queries") and hasattr(obj, "encode_passages")


def _runs_by_parts(transformer) -> bool:
    """Whether the wrapper sends parts of ``transformer`` (its scoring / encoding), not its whole ``transform``."""
    from ..base import InstructReranker
    return (isinstance(transformer, InstructReranker) or _is_dense(transformer)
            or _is_dense(getattr(transformer, "model", None)))


def on_ray(transformer: pt.Transformer, workers: Optional[int] = None, gpus_per_worker: Optional[float] = None,
           address: Optional[str] = None, **options) -> OnRay:
    """``transformer``'s heavy stage on a Ray cluster: a ``pt.Transformer`` with the same output.

    Args:
        transformer: a reranker, a dense model or one of its stages, or any transformer working per query (or row).
        workers: actors, each with one copy of the model (default: one per GPU of the cluster, else one per CPU).
        gpus_per_worker: GPUs each actor reserves (default: 1 when the cluster has a GPU, else 0).
        address: the cluster (``"auto"``, ``"ray://head:10001"``); ``None``: the initialised Ray, ``$RAY_ADDRESS``, or
            a new local cluster.
        cpus_per_worker: CPUs each actor reserves (1).
        block_rows: rows per block (default: about four blocks per worker); a query is never split.
        max_retries: restarts of a failed actor and retries of its unfinished blocks (3).
        runtime_env: Ray's runtime environment for the actors (``env_vars``, ``pip``, …).
        verbose: a progress bar over the blocks as they finish. Defaults and limits in detail: docs/scaling.md.

    ``repr`` reads as this call; saved runs (``SavedRun``) key on the wrapped transformer, whose output this equals.
    """
    wrapped = OnRay(transformer, workers=workers, gpus_per_worker=gpus_per_worker, address=address, **options)
    given = {k: v for k, v in dict(workers=workers, gpus_per_worker=gpus_per_worker, address=address).items()
             if v is not None}
    wrapped.__dict__["_call"] = ("on_ray", (transformer,), {**given, **options})
    return wrapped
