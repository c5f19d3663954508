"""Counters and the document-embedding cache of a :class:`~pyterrier_instruct.dense.BiEncoder`.

Passage embeddings do not depend on the instruction (it is part of the query string only: tevatron fork
``format_query``/``format_passage``), so a model keeps every passage vector it computed, keyed by the exact passage
string (SHA-256 of its UTF-8 bytes): scoring og, changed and reversed, or 10 prompts, encodes each distinct document
once.

With ``cache_dir`` the vectors also live on disk, in a subfolder named by the model's passage configuration and weights
revision (``cache_dir/<16 hex digits>/``; see :mod:`pyterrier_instruct._fingerprint`), so one ``cache_dir`` serves
several models and a retrained checkpoint never reads its predecessor's vectors. The subfolder holds ``meta.json``
(what the vectors depend on), ``keys.txt`` (one SHA-256 per line, 65 bytes a row), ``vectors.f32`` (float32 rows) and
``commit.json``, the journal: the committed row count and CRC-32 of both files, replaced atomically after the rows are
flushed to disk. Rows past the committed count (a write cut short by a crash or a full disk) are ignored on reading and
cut off by the next writer; a committed part that does not match its checksums is an error naming the folder (delete it
to rebuild the cache). Writers take ``lock`` (a file lock), re-read what other processes committed meanwhile and append
only passages not there yet, so processes sharing a cache reuse each other's vectors; readers need no lock.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zlib
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


KEY_BYTES = 65  # 64 hex digits and a newline


class CacheError(ValueError):
    """The committed part of an on-disk document cache does not match its journal."""


class DocCache:
    """Passage string → float32 vector, in memory and, with ``path`` (a ``cache_dir``), on disk for the passage
    configuration ``model_key`` of the weights at ``revision`` (the files are in :attr:`folder`)."""

    def __init__(self, path: Optional[str] = None, model_key: str = "", revision: Optional[str] = None):
        self.root, self.model_key, self.revision = path, model_key, revision
        self.folder = None if path is None else os.path.join(str(path), _key(f"{model_key}\n{revision}")[:16])
        self._rows: Dict[str, int] = {}
        self._vectors: Optional[np.ndarray] = None  # capacity-doubling buffer; the first len(self) rows are valid
        self._crc = (0, 0)  # CRC-32 of the keys and vectors read from disk so far
        if self.folder is not None:
            self._open()

    def __len__(self) -> int:
        return len(self._rows)

    def lookup(self, texts: Sequence[str]) -> Tuple[np.ndarray, List[int]]:
        """Row of each text in the cache (-1 when absent) and the positions of the absent ones; on disk, vectors that
        other processes committed since the last look are read first."""
        keys = [_key(t) for t in texts]
        rows = np.fromiter((self._rows.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        if self.folder is not None and (rows < 0).any() and self._refresh():
            rows = np.fromiter((self._rows.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        return rows, np.flatnonzero(rows < 0).tolist()

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        return self._vectors[rows]

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """Stores ``vectors`` for ``texts`` (distinct); returns their rows. A text already stored (on disk, by another
        process meanwhile) keeps its stored vector."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        keys = [_key(t) for t in texts]
        if self.folder is None:
            return self._extend(keys, vectors)
        from filelock import FileLock
        with FileLock(os.path.join(self.folder, "lock")):
            self._refresh()
            fresh = [n for n, k in enumerate(keys) if k not in self._rows]
            if fresh:
                self._append([keys[n] for n in fresh], vectors[fresh])
                self._extend([keys[n] for n in fresh], vectors[fresh])
        return np.array([self._rows[k] for k in keys], dtype=np.int64)

    def _extend(self, keys: List[str], vectors: np.ndarray) -> np.ndarray:
        start = len(self._rows)
        self._reserve(start + len(keys), vectors.shape[1])
        self._vectors[start:start + len(keys)] = vectors
        self._rows.update((k, start + n) for n, k in enumerate(keys))
        return np.arange(start, start + len(keys))

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
    def _file(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def _damaged(self, problem: str) -> CacheError:
        return CacheError(f"the document cache in {self.folder} is damaged: {problem}; delete that folder to rebuild it "
                          "(its passage vectors are computed again on the next run)")

    def _open(self) -> None:
        from filelock import FileLock
        os.makedirs(self.folder, exist_ok=True)
        meta = {"model": self.model_key, "revision": self.revision,
                "format": "keys.txt: sha256(passage) per line; vectors.f32: float32 rows; commit.json: rows committed"}
        with FileLock(self._file("lock")):
            if not os.path.exists(self._file("meta.json")):
                _write_json(self._file("meta.json"), meta)
        try:
            with open(self._file("meta.json"), encoding="utf-8") as f:
                found = json.load(f)
        except (OSError, ValueError) as e:
            raise self._damaged(f"meta.json is unreadable ({e})") from None
        if (found.get("model"), found.get("revision")) != (self.model_key, self.revision):
            raise self._damaged(f"meta.json names {found.get('model')!r} at revision {found.get('revision')!r}, not "
                                f"{self.model_key!r} at {self.revision!r}")
        self._refresh()

    def _commit(self) -> dict:
        try:
            with open(self._file("commit.json"), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return {"count": 0, "dim": 0, "keys_crc32": 0, "vectors_crc32": 0}
        except (OSError, ValueError) as e:
            raise self._damaged(f"commit.json is unreadable ({e})") from None

    def _refresh(self) -> bool:
        """Reads the rows committed on disk beyond those already in memory; whether there were any."""
        commit = self._commit()
        seen, count, dim = len(self._rows), int(commit["count"]), int(commit["dim"])
        if count < seen:
            raise self._damaged(f"commit.json records {count} rows, fewer than the {seen} already read")
        if count == seen:
            return False
        row_bytes = 4 * dim
        try:
            with open(self._file("keys.txt"), "rb") as f:
                f.seek(seen * KEY_BYTES)
                key_bytes = f.read((count - seen) * KEY_BYTES)
            with open(self._file("vectors.f32"), "rb") as f:
                f.seek(seen * row_bytes)
                vec_bytes = f.read((count - seen) * row_bytes)
        except FileNotFoundError as e:
            raise self._damaged(f"{os.path.basename(e.filename)} is missing, {count} rows are committed") from None
        if len(key_bytes) != (count - seen) * KEY_BYTES or len(vec_bytes) != (count - seen) * row_bytes:
            raise self._damaged(f"{count} rows are committed but keys.txt or vectors.f32 is shorter")
        crc = (zlib.crc32(key_bytes, self._crc[0]), zlib.crc32(vec_bytes, self._crc[1]))
        if crc != (int(commit["keys_crc32"]), int(commit["vectors_crc32"])):
            raise self._damaged(f"the {count} committed rows do not match their checksums")
        keys = key_bytes.decode("ascii").split("\n")[:-1]
        self._extend(keys, np.frombuffer(vec_bytes, dtype=np.float32).reshape(count - seen, dim))
        self._crc = crc
        return True

    def _append(self, keys: List[str], vectors: np.ndarray) -> None:
        """Appends rows after the committed ones (cutting off a torn tail), flushes them, then commits (under the lock,
        with every committed row already in memory)."""
        count, dim = len(self._rows), vectors.shape[1]
        if count and self._vectors.shape[1] != dim:
            raise ValueError(f"cached vectors have dimension {self._vectors.shape[1]}, new ones {dim}")
        key_bytes = "".join(k + "\n" for k in keys).encode("ascii")
        vec_bytes = vectors.tobytes()
        try:
            for name, data, offset in (("keys.txt", key_bytes, count * KEY_BYTES), ("vectors.f32", vec_bytes, count * 4 * dim)):
                with open(self._file(name), "ab") as f:
                    f.truncate(offset)
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            crc = (zlib.crc32(key_bytes, self._crc[0]), zlib.crc32(vec_bytes, self._crc[1]))
            _write_json(self._file("commit.json"), {"count": count + len(keys), "dim": dim, "keys_crc32": crc[0],
                                                    "vectors_crc32": crc[1]})
        except OSError as e:
            raise OSError(f"writing the document cache in {self.folder} failed ({e}); nothing of this write is committed "
                          "(the next write cuts it off); free disk space, or run without cache_dir") from e
        self._crc = crc


def _write_json(path: str, value: dict) -> None:
    """``value`` written to ``path`` atomically (a temporary file, flushed, then renamed over it)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
