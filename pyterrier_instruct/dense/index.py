"""Retrieval mode: a corpus encoded once into float32 vectors, searched by exact inner product.

On disk an ``EmbeddingIndex`` is a folder with ``vectors.f32`` (N × dim, read as a numpy memmap), ``docnos.txt`` (one
per line) and ``meta.json`` (count, dim, and the model's ``doc_key()``: a query model whose passage side differs is
refused). Without a path it lives in memory. It needs nothing beyond numpy; with pyterrier-dr installed a model composes
with its FlexIndex directly (``model >> FlexIndex(path).indexer()``, ``model >> FlexIndex(path).np_retriever()``).
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Optional, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt
from .._progress import tqdm as progress_bar


class EmbeddingIndex:
    """Document vectors and docnos (on disk at ``path``, or in memory when ``path`` is None)."""

    def __init__(self, path: Optional[str] = None):
        self.path = None if path is None else str(path)
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

    def __len__(self) -> int:
        return int(self.meta["count"]) if self.built() else 0

    def built(self) -> bool:
        return self._meta is not None or (self.path is not None and os.path.isfile(os.path.join(self.path, "meta.json")))

    @property
    def meta(self) -> dict:
        if self._meta is None:
            if not self.built():
                raise FileNotFoundError(f"{self!r} has not been built; use model.index(corpus_iter, path)")
            with open(os.path.join(self.path, "meta.json")) as f:
                self._meta = json.load(f)
        return self._meta

    @property
    def vectors(self) -> np.ndarray:
        if self._vectors is None:
            meta = self.meta
            if not int(meta["count"]):
                return np.zeros((0, int(meta["dim"])), dtype=np.float32)
            self._vectors = np.memmap(os.path.join(self.path, "vectors.f32"), dtype=np.float32, mode="r",
                                      shape=(int(meta["count"]), int(meta["dim"])))
        return self._vectors

    @property
    def docnos(self) -> np.ndarray:
        if self._docnos is None:
            with open(os.path.join(self.path, "docnos.txt"), encoding="utf-8") as f:
                self._docnos = np.array(f.read().split("\n")[:len(self)], dtype=object)
        return self._docnos

    def check(self, model) -> None:
        """Refuses a model whose passage side differs from the one that built the index."""
        if self.meta.get("doc_key") != model.doc_key():
            raise ValueError(f"{self!r} was built with passages encoded as {self.meta.get('doc_key')}, not as "
                             f"{model.doc_key()}; rebuild it with this model")
        built, now = self.meta.get("revision"), model.revision()
        if self.path is not None and now is not None and built is None:
            raise ValueError(f"{self!r} records no revision of the weights it was built with (an index built before they "
                             f"were recorded), so it cannot be checked against the model's {now}; rebuild it "
                             "(indexer(overwrite=True)) or use another path")
        if built is not None and now is not None and built != now:
            raise ValueError(f"{self!r} was built with revision {built} of the weights, the model now has {now}; "
                             "rebuild it (indexer(overwrite=True)) or use another path")

    def check_corpus(self, model, corpus_iter: Iterable[dict]) -> None:
        """Refuses an index built from another corpus than ``corpus_iter`` (see :mod:`pyterrier_instruct._corpus`)."""
        from .._corpus import check
        check(repr(self), self.meta.get("corpus"), corpus_iter, corpus_fields(model),
              "rebuild it (indexer(overwrite=True)) or use another path")

    def search(self, queries: np.ndarray, k: int, block: int = 65536, verbose: bool = True) -> Tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, row indices) per query row, exact inner product over blocks of ``block`` documents;
        each row sorted by decreasing score, ties by index order; a progress bar over the blocks unless ``verbose=False``."""
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


class EmbeddingIndexer(pt.Indexer):
    """Encodes ``{docno, text[, title]}`` dicts with the model's passage side into an :class:`EmbeddingIndex`, in chunks of
    ``chunk_size`` documents (length-sorted batches within a chunk). Vectors already in the model's document cache are
    reused; new ones are not added to it (a corpus can be far larger than memory)."""

    def __init__(self, model, path: Optional[str] = None, overwrite: bool = False, chunk_size: int = 16384):
        self.model, self.path, self.overwrite, self.chunk_size = model, path, overwrite, int(chunk_size)

    def __repr__(self) -> str:
        return f"{self.model!r}.indexer({self.path!r})"

    def index(self, corpus_iter: Iterable[dict]) -> EmbeddingIndex:
        from .._corpus import CorpusDigest
        corpus_iter = CorpusDigest(corpus_iter, corpus_fields(self.model))
        index = EmbeddingIndex(self.path)
        if self.path is not None:
            if index.built() and not self.overwrite:
                raise FileExistsError(f"{self.path} already holds an index; pass overwrite=True to replace it")
            os.makedirs(self.path, exist_ok=True)
            if index.built():  # overwriting: the index is not valid again until meta.json is rewritten at the end
                os.remove(os.path.join(self.path, "meta.json"))
        chunks, docnos, count, dim = [], [], 0, None
        sink = open(os.path.join(self.path, "vectors.f32"), "wb") if self.path is not None else None
        bar = progress_bar(desc=f"{type(self.model).__name__} indexing", unit="doc", disable=not self.model.verbose)
        try:
            for frame in _frames(corpus_iter, self.chunk_size, self.model.text_field):
                vectors = self.model.encode_passages(self.model.passage_strings(frame), fill_cache=False, progress=False)
                dim = vectors.shape[1]
                docnos.extend(frame["docno"].astype(str))
                count += len(frame)
                if sink is not None:
                    sink.write(vectors.tobytes())
                else:
                    chunks.append(vectors)
                bar.update(len(frame))
        finally:
            bar.close()
            if sink is not None:
                sink.close()
        meta = {"count": count, "dim": dim or 0, "doc_key": self.model.doc_key(), "model": repr(self.model),
                "revision": self.model.revision(), "corpus": corpus_iter.value}
        if self.path is None:
            return EmbeddingIndex.from_vectors(docnos, np.concatenate(chunks) if chunks else np.zeros((0, 0)), meta["doc_key"], meta["model"])
        with open(os.path.join(self.path, "docnos.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(docnos))
        with open(os.path.join(self.path, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return index


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
    if frame["docno"].astype(str).str.contains("\n", regex=False).any():
        raise ValueError("docnos must not contain newlines")
    return frame
