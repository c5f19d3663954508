"""Counters and the document-vector cache of a :class:`~pyterrier_instruct.dense.BiEncoder`.

Passage embeddings do not depend on the instruction, so a model keeps every passage vector it computed, keyed by the
SHA-256 of the passage string. With ``cache_dir`` they live in a :class:`VectorCache` (the package's SQLite store), one
row per (space, passage), the space naming the passage configuration (``doc_key``) and the weights' revision; each
batch is one ``INSERT OR IGNORE`` transaction, so a kill loses at most the batch in flight.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from .._store import SqliteStore


@dataclasses.dataclass
class EncodeStats:
    """What a model has encoded since creation (or :meth:`reset`): ``forward_passes`` (model calls),
    ``query_texts``/``passage_texts`` (strings run through the model), ``cache_hits`` (passages served from the cache),
    ``truncated`` (strings that reached the token limit)."""
    forward_passes: int = 0
    query_texts: int = 0
    passage_texts: int = 0
    cache_hits: int = 0
    truncated: int = 0

    def reset(self) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, 0)

    def as_dict(self) -> Dict[str, int]:
        return dataclasses.asdict(self)


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class VectorCache(SqliteStore):
    """Passage vectors on disk, per space (a passage configuration and weights revision; see the module docstring).

    Args:
        path: the cache's folder (created on first use); ``None``: a new temporary folder.
    """
    ARTIFACT_TYPE = "vector_cache"
    SCHEMA = """
        CREATE TABLE IF NOT EXISTS spaces (id INTEGER PRIMARY KEY, doc_key TEXT NOT NULL, revision TEXT NOT NULL,
                                           UNIQUE (doc_key, revision));
        CREATE TABLE IF NOT EXISTS vectors (space INTEGER NOT NULL, passage BLOB NOT NULL, vector BLOB NOT NULL,
                                            PRIMARY KEY (space, passage))"""  # a rowid table: 3× faster than
    # WITHOUT ROWID and half the size on disk for rows of kilobytes (benchmarks/bench_doccache.py)

    def space(self, doc_key: str, revision: Optional[str]) -> int:
        """The id of the space of vectors encoded with ``doc_key`` by the weights at ``revision`` (created if new)."""
        self.insert("spaces", ("doc_key", "revision"), [(doc_key, str(revision))])
        sql = "SELECT id FROM spaces WHERE doc_key = ? AND revision = ?"
        return self.connection().execute(sql, (doc_key, str(revision))).fetchone()[0]

    def lookup(self, space: int, texts: Sequence[str]) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """The positions of the ``texts`` stored in ``space`` and their vectors (None when none is)."""
        keys = [_key(t) for t in texts]
        found = dict(self.select_in("SELECT passage, vector FROM vectors WHERE space = ? AND passage IN {keys}",
                                    keys, (space,)))
        hits = [n for n, k in enumerate(keys) if k in found]
        vectors = np.stack([np.frombuffer(found[keys[n]], dtype=np.float32) for n in hits]) if hits else None
        return np.array(hits, dtype=np.int64), vectors

    def stored(self, space: int, texts: Sequence[str]) -> bool:
        """Whether every one of ``texts`` is stored in ``space`` (no vector is read)."""
        keys = list({_key(t) for t in texts})
        counts = self.select_in("SELECT COUNT(*) FROM vectors WHERE space = ? AND passage IN {keys}", keys, (space,))
        return sum(c for c, in counts) == len(keys)

    def add(self, space: int, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """Stores ``vectors`` for ``texts`` in one transaction; returns the stored vectors (a text that another process
        stored meanwhile keeps its first vector)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        new = self.insert("vectors", ("space", "passage", "vector"),
                          [(space, _key(t), v.tobytes()) for t, v in zip(texts, vectors)])
        if new == len(texts):
            return vectors
        hits, stored = self.lookup(space, texts)
        if stored.shape[1] != vectors.shape[1]:
            raise ValueError(f"{self!r} holds vectors of dimension {stored.shape[1]} for this model, new ones have "
                             f"{vectors.shape[1]}: delete the folder, or use another cache_dir")
        out = vectors.copy()
        out[hits] = stored
        return out


class DocCache:
    """Passage string → float32 vector for one model: in memory, or in ``store`` (a :class:`VectorCache`) under the
    space of ``doc_key`` and ``revision``."""

    def __init__(self, store: Optional[VectorCache] = None, doc_key: str = "", revision: Optional[str] = None):
        self.store = store
        self.space = None if store is None else store.space(doc_key, revision)
        self._memory: Dict[bytes, np.ndarray] = {}

    def lookup(self, texts: Sequence[str]) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """The positions of the cached ``texts`` and their vectors (None when none is cached)."""
        if self.store is not None:
            return self.store.lookup(self.space, texts)
        found = [(n, self._memory.get(_key(t))) for n, t in enumerate(texts)]
        hits = [(n, v) for n, v in found if v is not None]
        return np.array([n for n, _ in hits], dtype=np.int64), np.stack([v for _, v in hits]) if hits else None

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """Keeps ``vectors`` for ``texts``; returns the vectors kept."""
        if self.store is not None:
            return self.store.add(self.space, texts, vectors)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._memory.update((_key(t), v) for t, v in zip(texts, vectors))
        return vectors
