"""Corpus encoding on a Ray cluster, sharded and resumable.

The corpus is read lazily in shards of ``shard_size`` documents and ``wave_shards`` shards at a time; the shards of a
wave not done yet go to the actor pool (one shard per task) and each finished shard is written to the shard folder as it
arrives: ``<key>.npy`` (float32 vectors), then ``<key>.done`` (its count and dimension), the marker a re-run trusts.
``key`` hashes the model's passage side (``doc_key``), its weights' revision, the shard's docnos and its exact passage
strings, so a shard is reused only for the same documents encoded the same way by the same weights, wherever it falls in
a re-run. Each shard file and its marker are flushed to disk and renamed into place, so a kill leaves a shard whole
or absent. The index is assembled from the shards in corpus order by the same
:class:`~pyterrier_instruct.dense.index.IndexWriter` as a local build: under the index's lock, into a new version
folder, committed by replacing ``meta.json`` (a kill during the merge leaves the previous index and the shards).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from itertools import islice
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np


class ShardStore:
    """Finished shards of one model's corpus encoding in ``folder`` (see the module docstring)."""

    def __init__(self, folder: str, doc_key: str):
        self.folder, self.doc_key = str(folder), doc_key
        os.makedirs(self.folder, exist_ok=True)

    def key(self, docnos: List[str], strings: np.ndarray) -> str:
        digest = hashlib.sha256(self.doc_key.encode("utf-8"))
        for docno, text in zip(docnos, strings):
            digest.update(f"{len(docno)}:{docno}{len(text)}:".encode("utf-8"))
            digest.update(text.encode("utf-8"))
        return digest.hexdigest()[:32]

    def _path(self, key: str, ext: str) -> str:
        return os.path.join(self.folder, f"{key}.{ext}")

    def done(self, key: str) -> bool:
        return os.path.isfile(self._path(key, "done"))

    def load(self, key: str) -> np.ndarray:
        with open(self._path(key, "done")) as f:
            meta = json.load(f)
        vectors = np.load(self._path(key, "npy"), mmap_mode="r")
        if vectors.shape != (meta["count"], meta["dim"]):
            raise ValueError(f"shard {self._path(key, 'npy')} holds {vectors.shape}, its marker says {meta}; delete both files")
        return vectors

    def save(self, key: str, vectors: np.ndarray) -> None:
        """The vectors, then the done-marker, each flushed to disk under a temporary name of this process and renamed
        (a crash leaves no marker, or a marker after its whole shard)."""
        from .._atomic import fsync_dir, write_json
        tmp = self._path(key, f"npy.{os.getpid()}.partial")
        with open(tmp, "wb") as f:
            np.save(f, np.ascontiguousarray(vectors, dtype=np.float32))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path(key, "npy"))
        fsync_dir(self.folder)
        write_json(self._path(key, "done"), {"count": int(vectors.shape[0]), "dim": int(vectors.shape[1])})


def encode_corpus(wrapper, corpus_iter: Iterable[dict], shard_dir: Optional[str] = None, *, shard_size: int = 4096,
                  wave_shards: int = 256, stats: Optional[Dict[str, int]] = None) -> Iterator[Tuple[List[str], np.ndarray]]:
    """``(docnos, vectors)`` per shard of ``corpus_iter`` in corpus order, encoded by ``wrapper`` (an ``OnRay`` around a
    dense model); with ``shard_dir`` finished shards are kept there and reused. ``stats`` counts ``shards``, ``reused``
    and ``encoded``."""
    from ..dense.index import _frames
    model = wrapper.transformer
    if int(shard_size) < 1 or int(wave_shards) < 1:
        raise ValueError(f"shard_size and wave_shards must be at least 1, got {shard_size!r}, {wave_shards!r}")
    store = ShardStore(shard_dir, f"{model.doc_key()}\n{model.revision()}") if shard_dir is not None else None
    stats = {} if stats is None else stats
    for name in ("shards", "reused", "encoded"):
        stats.setdefault(name, 0)
    frames = _frames(corpus_iter, int(shard_size), model.text_field)
    while True:
        wave = list(islice(frames, int(wave_shards)))
        if not wave:
            return
        shards = []
        for frame in wave:
            strings = model.passage_strings(frame)
            docnos = frame["docno"].astype(str).tolist()
            shards.append((docnos, strings, store.key(docnos, strings) if store is not None else None))
        pending = [n for n, (_, _, key) in enumerate(shards) if store is None or not store.done(key)]
        results: Dict[int, np.ndarray] = {}
        if pending:
            for n, vectors in wrapper.run_blocks(model, "passages", ((n, shards[n][1]) for n in pending), len(pending)):
                if store is not None:
                    store.save(shards[n][2], vectors)  # kept as soon as it arrives
                else:
                    results[n] = vectors
        stats["shards"] += len(shards)
        stats["encoded"] += len(pending)
        stats["reused"] += len(shards) - len(pending)
        for n, (docnos, _, key) in enumerate(shards):
            yield docnos, (results.pop(n) if store is None else store.load(key))


def build_index(wrapper, corpus_iter: Iterable[dict], path: Optional[str] = None, *, overwrite: bool = False,
                shard_size: int = 4096, wave_shards: int = 256, keep_shards: bool = False, lock_timeout: Optional[float] = None):
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
