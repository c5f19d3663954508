"""Retrieval mode: a corpus encoded once into float32 vectors, searched by exact inner product.

On disk an ``EmbeddingIndex`` is a ``pt.Artifact`` (``dense_index.instruct``) folder whose ``meta.json`` (count, dim,
the model's ``doc_key()``, the weights' revision, the corpus digest) names the version folder holding
``vectors.f32`` (a numpy memmap) and ``docnos.json`` (any docno round-trips; older indexes have ``docnos.txt``).
Written whole or not at all (:class:`IndexWriter`): under the lock ``<path>/.lock`` a new version is written as
``.partial``, flushed, renamed and committed by replacing ``meta.json`` atomically; files are never rewritten in place,
so a reader keeps its version after an overwrite (:meth:`EmbeddingIndex.changed`).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from typing import Iterable, List, Optional, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt
from .._atomic import fsync_dir, lock, write_json
from .._config import constructor_signature
from .._progress import tqdm as progress_bar

log = logging.getLogger(__name__)
#: version folders are named ``v-<time>-<random>``
VERSION_PREFIX = "v-"
#: attempts to open the version ``meta.json`` names when a newer build removes it between the two reads
OPEN_ATTEMPTS = 5


class EmbeddingIndex(pt.Artifact):
    """Document vectors and docnos (on disk at ``path``, or in memory when ``path`` is None)."""
    ARTIFACT_TYPE, ARTIFACT_FORMAT, ARTIFACT_PACKAGE_HINT = "dense_index", "instruct", "pyterrier-instruct"

    def __init__(self, path: Optional[str] = None):
        super().__init__(pt.Artifact.NO_PATH if path is None else path)
        self.path = None if path is None else str(path)  # every reader takes a str, None in memory
        self._vectors: Optional[np.ndarray] = None
        self._docnos: Optional[np.ndarray] = None
        self._meta: Optional[dict] = None

    @classmethod
    def from_vectors(cls, docnos, vectors: np.ndarray, doc_key: str = "", model: str = "") -> "EmbeddingIndex":
        """An in-memory index over given vectors (one row per docno)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(docnos):
            raise ValueError(f"need one vector row per docno, got {vectors.shape} for {len(docnos)} docnos")
        index = cls()
        index._meta = {"count": len(docnos), "dim": int(vectors.shape[1]), "doc_key": doc_key, "model": model}
        index._docnos, index._vectors = np.array([str(d) for d in docnos], dtype=object), vectors
        return index

    def __repr__(self) -> str:
        return f"EmbeddingIndex({self.path!r})" if self.path else f"EmbeddingIndex(<memory, {len(self)} docs>)"

    def _fingerprint_(self) -> str:
        """In memory its rows; on disk its path and revision (:func:`.._fingerprint.index_revision`)."""
        from .._fingerprint import fingerprint, index_revision
        if self.path is None and self.built():
            return f"EmbeddingIndex({fingerprint([self.docnos.tolist(), np.asarray(self.vectors)])})"
        return f"EmbeddingIndex({self.path!r}, revision={index_revision(self.path)!r})"

    def __len__(self) -> int:
        return int(self.meta["count"]) if self.built() else 0

    def built(self) -> bool:
        return self._meta is not None or (self.path is not None
                                          and os.path.isfile(os.path.join(self.path, "meta.json")))

    @property
    def version(self) -> Optional[str]:
        """The version folder this object reads (None: in memory, or an index written before versions)."""
        return self.meta.get("version")

    @property
    def meta(self) -> dict:
        if self._meta is None:
            if not self.built():
                raise FileNotFoundError(f"{self!r} has not been built; use model.index(corpus_iter, path)")
            self._open()
        return self._meta

    @property
    def vectors(self) -> np.ndarray:
        if self._vectors is None:
            self.meta
        return self._vectors

    @property
    def docnos(self) -> np.ndarray:
        if self._docnos is None:
            self.meta
        return self._docnos

    def _open(self) -> None:
        """Reads ``meta.json`` and opens the docnos and vectors of the version it names, together: from then on this
        object reads that version, whatever is committed later (its files are never rewritten, and removing them
        leaves an open memory map readable). A version removed between the two reads (a newer build committed) is
        followed to the newer one."""
        for attempt in range(OPEN_ATTEMPTS):
            with open(os.path.join(self.path, "meta.json"), encoding="utf-8") as f:
                meta = json.load(f)
            folder = os.path.join(self.path, meta["version"]) if meta.get("version") else self.path
            try:
                docnos, vectors = self._rows(meta, folder)
                break
            except FileNotFoundError:
                if not meta.get("version") or attempt == OPEN_ATTEMPTS - 1:
                    raise
        self._meta, self._docnos, self._vectors = meta, docnos, vectors

    def _rows(self, meta: dict, folder: str) -> Tuple[np.ndarray, np.ndarray]:
        count, dim = int(meta["count"]), int(meta["dim"])
        if os.path.exists(os.path.join(folder, "docnos.json")):
            with open(os.path.join(folder, "docnos.json"), encoding="utf-8") as f:
                docnos = np.array(json.load(f), dtype=object)
        else:  # written before docnos.json: one a line, read untranslated (a "\r" stays in its docno)
            with open(os.path.join(folder, "docnos.txt"), encoding="utf-8", newline="") as f:
                docnos = np.array(f.read().split("\n")[:count] if count else [], dtype=object)
        vectors_path = os.path.join(folder, "vectors.f32")
        size = os.path.getsize(vectors_path)
        if len(docnos) != count or size != count * dim * 4:
            raise ValueError(f"{self!r}: {folder} holds {len(docnos)} docnos and {size} bytes of vectors, meta.json "
                             f"says {count} rows of {dim} float32: the index is damaged; rebuild it "
                             "(indexer(overwrite=True))")
        if not count:
            return docnos, np.zeros((0, dim), dtype=np.float32)
        return docnos, np.memmap(vectors_path, dtype=np.float32, mode="r", shape=(count, dim))

    def changed(self) -> bool:
        """Whether another version was committed at ``path`` since this object opened its index (it keeps reading the
        one it opened; ``EmbeddingIndex(path)`` reads the new one)."""
        if self.path is None or self._meta is None:
            return False
        try:
            with open(os.path.join(self.path, "meta.json"), encoding="utf-8") as f:
                now = json.load(f)
        except FileNotFoundError:
            return True
        return now.get("version") != self._meta.get("version") or (not now.get("version") and now != self._meta)

    def check(self, model) -> None:
        """Refuses a model whose passage side differs from the one that built the index."""
        if self.meta.get("doc_key") != model.doc_key():
            raise ValueError(f"{self!r} was built with passages encoded as {self.meta.get('doc_key')}, not as "
                             f"{model.doc_key()}; rebuild it with this model")
        built, now = self.meta.get("revision"), model.revision()
        if self.path is not None and now is not None and built is None:
            raise ValueError(f"{self!r} records no revision of the weights it was built with (an index built before "
                             f"they were recorded), so it cannot be checked against the model's {now}; rebuild it "
                             "(indexer(overwrite=True)) or use another path")
        if built is not None and now is not None and built != now:
            raise ValueError(f"{self!r} was built with revision {built} of the weights, the model now has {now}; "
                             "rebuild it (indexer(overwrite=True)) or use another path")

    def check_corpus(self, model, corpus_iter: Iterable[dict]) -> None:
        """Refuses an index built from another corpus than ``corpus_iter`` (see :mod:`pyterrier_instruct._corpus`)."""
        from .._corpus import check
        check(repr(self), self.meta.get("corpus"), corpus_iter, corpus_fields(model),
              "rebuild it (indexer(overwrite=True)) or use another path")

    def search(self, queries: np.ndarray, k: int, block: int = 65536,
               verbose: bool = True) -> Tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, row indices) per query row, exact inner product over blocks of ``block`` documents; each
        row sorted by decreasing score, ties by index order; a progress bar over the blocks unless ``verbose=False``."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        vectors, k = self.vectors, min(int(k), len(self))
        best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
        best_i = np.zeros((len(queries), 0), dtype=np.int64)
        starts = range(0, len(self), block)
        for start in progress_bar(starts, desc="EmbeddingIndex search", unit="block", disable=not verbose):
            s = queries @ np.asarray(vectors[start:start + block]).T
            cand_s = np.concatenate([best_s, s], axis=1)
            cand_i = np.concatenate([best_i, np.broadcast_to(np.arange(start, start + s.shape[1]), s.shape)], axis=1)
            best_s, best_i = _top(cand_s, cand_i, k)
        order = np.lexsort((best_i, -best_s), axis=1)
        return np.take_along_axis(best_s, order, 1), np.take_along_axis(best_i, order, 1)


def _top(scores: np.ndarray, rows: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """The ``k`` best (score, row) pairs per query row, unordered; equal scores at the cut keep the lowest rows."""
    if scores.shape[1] <= k:
        return scores, rows
    keep = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    top_s, top_i = np.take_along_axis(scores, keep, 1), np.take_along_axis(rows, keep, 1)
    for r in np.flatnonzero((scores >= top_s.min(1, keepdims=True)).sum(1) > k):  # a tie at the cut (duplicate docs)
        order = np.lexsort((rows[r], -scores[r]))[:k]
        top_s[r], top_i[r] = scores[r, order], rows[r, order]
    return top_s, top_i


class IndexWriter:
    """Writes one version of the :class:`EmbeddingIndex` at ``path`` whole or not at all (see the module docstring)::

        with IndexWriter(path, overwrite=False) as w:   # the lock, then the overwrite check
            w.add(docnos, vectors)                       # rows streamed into <path>/<version>.partial/
            index = w.commit(meta)                       # renamed into place, meta.json replaced: the new index

    Leaving the block without :meth:`commit` (an error, an interrupt) removes the partial version and keeps the
    previous index; the lock is released either way (the system releases a killed process's)."""

    def __init__(self, path: str, *, overwrite: bool = False, lock_timeout: Optional[float] = None):
        self.path, self.overwrite, self.lock_timeout = str(path), bool(overwrite), lock_timeout
        self.docnos: List[str] = []
        self.dim: Optional[int] = None
        self._lock = self._sink = None
        self._committed = False

    def __enter__(self) -> "IndexWriter":
        os.makedirs(self.path, exist_ok=True)
        lock_file = os.path.join(self.path, ".lock")
        t = time.monotonic()
        self._lock = lock(lock_file, self.lock_timeout, f"the index at {self.path}")
        if time.monotonic() - t > 1:
            log.info("%s: waited %.0f s for another builder of this index", self.path, time.monotonic() - t)
        try:
            if EmbeddingIndex(self.path).built() and not self.overwrite:
                raise FileExistsError(f"{self.path} already holds an index; pass overwrite=True to replace it")
            self._sweep(keep=self._current())
            self.version = f"{VERSION_PREFIX}{time.time_ns():x}-{uuid.uuid4().hex[:8]}"
            self._tmp = os.path.join(self.path, self.version + ".partial")
            os.mkdir(self._tmp)
            self._sink = open(os.path.join(self._tmp, "vectors.f32"), "wb")
        except BaseException:
            self._lock.release()
            raise
        return self

    def add(self, docnos, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(docnos):
            raise ValueError(f"need one vector row per docno, got {vectors.shape} for {len(docnos)} docnos")
        if self.dim is not None and vectors.shape[1] != self.dim:
            raise ValueError(f"vectors of dimension {vectors.shape[1]} after {self.dim}")
        self.dim = int(vectors.shape[1])
        self._sink.write(vectors.tobytes())
        self.docnos.extend(str(d) for d in docnos)

    def commit(self, meta: dict) -> EmbeddingIndex:
        """Flushes the rows to disk, renames the version into place and replaces ``meta.json`` (``count``, ``dim`` and
        ``version`` filled in): the new index from here on; then removes the versions no reader can open any more."""
        self._sink.flush()
        os.fsync(self._sink.fileno())
        self._sink.close()
        with open(os.path.join(self._tmp, "docnos.json"), "w", encoding="utf-8") as f:
            json.dump(self.docnos, f)
            f.flush()
            os.fsync(f.fileno())
        fsync_dir(self._tmp)
        os.rename(self._tmp, os.path.join(self.path, self.version))
        fsync_dir(self.path)
        if not os.path.exists(os.path.join(self.path, "pt_meta.json")):  # what pt.Artifact.load reads
            a = EmbeddingIndex
            write_json(os.path.join(self.path, "pt_meta.json"),
                       {"type": a.ARTIFACT_TYPE, "format": a.ARTIFACT_FORMAT, "package_hint": a.ARTIFACT_PACKAGE_HINT})
        meta = {**meta, "count": len(self.docnos), "dim": self.dim or 0, "version": self.version}
        write_json(os.path.join(self.path, "meta.json"), meta)
        fsync_dir(self.path)
        self._committed = True
        self._sweep(keep=self.version)
        return EmbeddingIndex(self.path)

    def __exit__(self, *exc) -> None:
        try:
            if not self._committed:
                if self._sink is not None:
                    self._sink.close()
                shutil.rmtree(self._tmp, ignore_errors=True)
        finally:
            self._lock.release()

    def _current(self) -> Optional[str]:
        try:
            with open(os.path.join(self.path, "meta.json"), encoding="utf-8") as f:
                return json.load(f).get("version") or ""
        except (OSError, ValueError):
            return None

    def _sweep(self, keep: Optional[str]) -> None:
        """Under the lock: partial versions of killed builds and versions other than ``keep`` are removed (a reader
        holding one open keeps its memory map); so are the files of an index written before versions, once a
        versioned one is committed (``keep`` a version name)."""
        for name in os.listdir(self.path):
            full = os.path.join(self.path, name)
            if name.startswith(VERSION_PREFIX) and name != keep and os.path.isdir(full):
                shutil.rmtree(full, ignore_errors=True)
        if keep:
            for name in ("vectors.f32", "docnos.txt"):
                if os.path.isfile(os.path.join(self.path, name)):
                    os.remove(os.path.join(self.path, name))


class EmbeddingIndexer(pt.Indexer):
    """Encodes ``{docno, text[, title]}`` dicts with the model's passage side into an :class:`EmbeddingIndex`, in chunks
    of ``chunk_size`` documents (length-sorted batches within a chunk). Vectors already in the model's document cache
    are reused; new ones are not added to it (a corpus can be far larger than memory). On disk the index is written
    whole or not at all by an :class:`IndexWriter`: ``lock_timeout`` is how long a second builder of the same path waits
    (None: until the first is done; then, without ``overwrite``, it finds the index built: FileExistsError)."""

    __signature__ = constructor_signature()

    def __init__(self, model, path: Optional[str] = None, overwrite: bool = False, chunk_size: int = 16384,
                 lock_timeout: Optional[float] = None):
        self.model, self.path, self.overwrite, self.chunk_size = model, path, overwrite, int(chunk_size)
        self.lock_timeout = lock_timeout

    def __repr__(self) -> str:
        return f"{self.model!r}.indexer({self.path!r})"

    def index(self, corpus_iter: Iterable[dict]) -> EmbeddingIndex:
        from .._corpus import CorpusDigest
        corpus_iter = CorpusDigest(corpus_iter, corpus_fields(self.model))
        if self.path is None:
            docnos, chunks = [], []
            for d, vectors in self._encoded(corpus_iter):
                docnos.extend(d)
                chunks.append(vectors)
            return EmbeddingIndex.from_vectors(docnos, np.concatenate(chunks) if chunks else np.zeros((0, 0)),
                                               self.model.doc_key(), repr(self.model))
        with IndexWriter(self.path, overwrite=self.overwrite, lock_timeout=self.lock_timeout) as writer:
            for d, vectors in self._encoded(corpus_iter):
                writer.add(d, vectors)
            return writer.commit({"doc_key": self.model.doc_key(), "model": repr(self.model),
                                  "revision": self.model.revision(), "corpus": corpus_iter.value})

    def _encoded(self, corpus_iter: Iterable[dict]):
        """``(docnos, vectors)`` per chunk of the corpus, with a progress bar over the documents."""
        bar = progress_bar(desc=f"{type(self.model).__name__} indexing", unit="doc", disable=not self.model.verbose)
        try:
            for frame in _frames(corpus_iter, self.chunk_size, self.model.text_field):
                vectors = self.model.encode_passages(self.model.passage_strings(frame), fill_cache=False,
                                                     progress=False)
                yield frame["docno"].astype(str).tolist(), vectors
                bar.update(len(frame))
        finally:
            bar.close()


def corpus_fields(model) -> tuple:
    """The document fields a dense index of ``model`` reads (besides ``docno``): what its corpus digest covers."""
    return (model.text_field, model.title_field)


def _frames(corpus_iter: Iterable[dict], size: int, text_field: str):
    """The corpus as frames of ``size`` documents, each checked for ``docno`` and the text column."""
    chunk = []
    for doc in corpus_iter:
        chunk.append(doc)
        if len(chunk) == size:
            yield _checked(chunk, text_field)
            chunk = []
    if chunk:
        yield _checked(chunk, text_field)


def _checked(chunk, text_field: str) -> pd.DataFrame:
    frame = pd.DataFrame(chunk)
    missing = [c for c in ("docno", text_field) if c not in frame.columns]
    if missing:
        raise KeyError(f"corpus documents lack field(s) {missing}; found {list(frame.columns)}")
    return frame
