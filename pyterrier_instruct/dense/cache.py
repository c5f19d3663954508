"""Counters and the document-embedding cache of a :class:`~pyterrier_instruct.dense.BiEncoder`.

Passage embeddings do not depend on the instruction (it is part of the query string only: tevatron fork
``format_query``/``format_passage``), so a model keeps every passage vector it computed, keyed by the exact passage
string (SHA-256 of its UTF-8 bytes): scoring og, changed and reversed, or 10 prompts, encodes each distinct document
once. With ``path`` the cache also lives on disk (``meta.json``, ``keys.txt``, ``vectors.f32``, append-only) and is
reused by later sessions of the same model configuration.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np


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


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DocCache:
    """Passage string → float32 vector, in memory and, with ``path``, on disk for the model identified by ``model_key``."""

    def __init__(self, path: Optional[str] = None, model_key: str = ""):
        self.path, self.model_key = path, model_key
        self._rows: Dict[str, int] = {}
        self._vectors: Optional[np.ndarray] = None  # capacity-doubling buffer; the first len(self) rows are valid
        if path is not None:
            self._open()

    def __len__(self) -> int:
        return len(self._rows)

    def lookup(self, texts: Sequence[str]) -> Tuple[np.ndarray, List[int]]:
        """Row of each text in the cache (-1 when absent) and the positions of the absent ones."""
        rows = np.fromiter((self._rows.get(_key(t), -1) for t in texts), dtype=np.int64, count=len(texts))
        return rows, np.flatnonzero(rows < 0).tolist()

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        return self._vectors[rows]

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """Stores ``vectors`` for ``texts`` (distinct, absent); returns their rows."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        start = len(self._rows)
        self._reserve(start + len(texts), vectors.shape[1])
        self._vectors[start:start + len(texts)] = vectors
        keys = [_key(t) for t in texts]
        self._rows.update((k, start + n) for n, k in enumerate(keys))
        if self.path is not None:
            self._append(keys, vectors)
        return np.arange(start, start + len(texts))

    def clear(self) -> None:
        """Empties the in-memory cache (the on-disk files stay)."""
        self._rows, self._vectors = {}, None

    def _reserve(self, n: int, dim: int) -> None:
        if self._vectors is None:
            self._vectors = np.empty((max(n, 1024), dim), dtype=np.float32)
        elif self._vectors.shape[1] != dim:
            raise ValueError(f"cached vectors have dimension {self._vectors.shape[1]}, new ones {dim}")
        elif n > len(self._vectors):
            grown = np.empty((max(n, 2 * len(self._vectors)), dim), dtype=np.float32)
            grown[:len(self._rows)] = self._vectors[:len(self._rows)]
            self._vectors = grown

    # -- on disk -------------------------------------------------------------------------------
    def _open(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        meta_path = os.path.join(self.path, "meta.json")
        if not os.path.exists(meta_path):
            with open(meta_path, "w") as f:
                json.dump({"model": self.model_key, "format": "float32 rows, sha256(passage) per line"}, f, indent=1)
            return
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("model") != self.model_key:
            raise ValueError(f"the document cache in {self.path} was written by {meta.get('model')!r}, not {self.model_key!r}; "
                             "use another cache_dir")
        keys_path = os.path.join(self.path, "keys.txt")
        if not os.path.exists(keys_path):
            return
        with open(keys_path) as f:
            keys = f.read().split()
        raw = np.fromfile(os.path.join(self.path, "vectors.f32"), dtype=np.float32)
        if not keys or raw.size % len(keys):
            raise ValueError(f"the document cache in {self.path} is inconsistent ({len(keys)} keys, {raw.size} floats)")
        vectors = raw.reshape(len(keys), -1)
        self._reserve(len(keys), vectors.shape[1])
        self._vectors[:len(keys)] = vectors
        self._rows = {k: n for n, k in enumerate(keys)}

    def _append(self, keys: List[str], vectors: np.ndarray) -> None:
        with open(os.path.join(self.path, "vectors.f32"), "ab") as f:
            f.write(vectors.tobytes())
        with open(os.path.join(self.path, "keys.txt"), "a") as f:
            f.write("".join(k + "\n" for k in keys))
