"""Corpus encoding on a Ray cluster, sharded and resumable.

Shards of ``shard_size`` documents go to the actor pool ``wave_shards`` at a time; each finished shard is stored in one
transaction in a :class:`~pyterrier_instruct.dense.cache.VectorCache` (keyed like the document cache), so a kill leaves
a shard whole or absent and a re-run reuses every stored shard. The index is assembled in corpus order by the local
build's :class:`~pyterrier_instruct.dense.index.IndexWriter`.
"""
from __future__ import annotations

import os
import shutil
from itertools import islice
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np


def encode_corpus(wrapper, corpus_iter: Iterable[dict], shard_dir: Optional[str] = None, *, shard_size: int = 4096,
                  wave_shards: int = 256,
                  stats: Optional[Dict[str, int]] = None) -> Iterator[Tuple[List[str], np.ndarray]]:
    """``(docnos, vectors)`` per shard of ``corpus_iter`` in corpus order, encoded by ``wrapper`` (an ``OnRay`` around a
    dense model); with ``shard_dir`` finished shards are kept there and reused. ``stats`` counts ``shards``, ``reused``
    and ``encoded``."""
    from ..dense.cache import VectorCache
    from ..dense.index import _frames
    model = wrapper.transformer
    if int(shard_size) < 1 or int(wave_shards) < 1:
        raise ValueError(f"shard_size and wave_shards must be at least 1, got {shard_size!r}, {wave_shards!r}")
    store = VectorCache(shard_dir) if shard_dir is not None else None
    space = store.space(model.doc_key(), model.revision()) if store is not None else None
    stats = {} if stats is None else stats
    for name in ("shards", "reused", "encoded"):
        stats.setdefault(name, 0)
    frames = _frames(corpus_iter, int(shard_size), model.text_field)
    try:
        while True:
            wave = list(islice(frames, int(wave_shards)))
            if not wave:
                return
            shards = [(frame["docno"].astype(str).tolist(), model.passage_strings(frame)) for frame in wave]
            pending = [n for n, (_, strings) in enumerate(shards) if store is None or not store.stored(space, strings)]
            results: Dict[int, np.ndarray] = {}
            payloads = ((n, shards[n][1]) for n in pending)
            if pending:
                for n, vectors in wrapper.run_blocks(model, "passages", payloads, len(pending)):
                    if store is not None:
                        store.add(space, shards[n][1], vectors)  # kept as soon as it arrives
                    else:
                        results[n] = vectors
            stats["shards"] += len(shards)
            stats["encoded"] += len(pending)
            stats["reused"] += len(shards) - len(pending)
            for n, (docnos, strings) in enumerate(shards):
                yield docnos, (results.pop(n) if store is None else store.lookup(space, strings)[1])
    finally:
        if store is not None:
            store.close()


def build_index(wrapper, corpus_iter: Iterable[dict], path: Optional[str] = None, *, overwrite: bool = False,
                shard_size: int = 4096, wave_shards: int = 256, keep_shards: bool = False,
                lock_timeout: Optional[float] = None):
    """An :class:`~pyterrier_instruct.dense.index.EmbeddingIndex` of ``corpus_iter`` (at ``path``, else in memory) from
    :func:`encode_corpus`; shards under ``<path>/shards/``, removed once the index is committed unless ``keep_shards``.
    On disk it is written whole or not at all (:class:`~pyterrier_instruct.dense.index.IndexWriter`, ``lock_timeout``).
    ``wrapper.last_index`` holds the shard counts."""
    from .._corpus import CorpusDigest
    from ..dense.index import EmbeddingIndex, IndexWriter, corpus_fields
    model = wrapper.transformer
    corpus_iter = CorpusDigest(corpus_iter, corpus_fields(model))
    stats: Dict[str, int] = {}
    wrapper.last_index = stats
    chunks = encode_corpus(wrapper, corpus_iter, None if path is None else os.path.join(path, "shards"),
                           shard_size=shard_size, wave_shards=wave_shards, stats=stats)
    meta = {"doc_key": model.doc_key(), "model": repr(model), "revision": model.revision()}
    if path is None:
        docnos, vectors = [], []
        for d, v in chunks:
            docnos.extend(d)
            vectors.append(np.asarray(v))
        matrix = np.concatenate(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
        return EmbeddingIndex.from_vectors(docnos, matrix, meta["doc_key"], meta["model"])
    with IndexWriter(path, overwrite=overwrite, lock_timeout=lock_timeout) as writer:
        for d, v in chunks:
            writer.add(d, v)
        index = writer.commit({**meta, "corpus": corpus_iter.value})
    if not keep_shards:
        shutil.rmtree(os.path.join(path, "shards"), ignore_errors=True)
    return index
