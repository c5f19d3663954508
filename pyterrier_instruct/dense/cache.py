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
only passages not there yet, so processes sharing a cache reuse each other's vectors; readers need no lock. Nothing is
read whole: the vectors are memory-mapped and the keys indexed by their first 64 bits, so a process (or Ray worker)
that opens a large cache to look up a few passages holds those rows and a small index, not the cache.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._atomic import write_json as _write_json


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


#: bytes read at a time while checking and indexing the committed rows of an on-disk cache
READ_BYTES = 1 << 18


class DocCache:
    """Passage string → float32 vector, in memory and, with ``path`` (a ``cache_dir``), on disk for the passage
    configuration ``model_key`` of the weights at ``revision`` (the files are in :attr:`folder`).

    On disk nothing is read whole: the vectors are a read-only memory map (a lookup copies only its rows) and the keys
    are indexed by their first 64 bits (sorted, 24 bytes a row; a hit is confirmed against the full key in the mapped
    ``keys.txt``), so opening a cache costs memory in proportion to the rows looked up, not to its size. The committed
    part is checked against its checksums as it is first read, in blocks of :data:`READ_BYTES`."""

    def __init__(self, path: Optional[str] = None, model_key: str = "", revision: Optional[str] = None):
        self.root, self.model_key, self.revision = path, model_key, revision
        self.folder = None if path is None else os.path.join(str(path), _key(f"{model_key}\n{revision}")[:16])
        self._rows: Dict[str, int] = {}  # in memory only (no ``path``)
        self._vectors: Optional[np.ndarray] = None  # capacity-doubling buffer; the first len(self) rows are valid
        self._reset()
        if self.folder is not None:
            self._open()

    def __len__(self) -> int:
        return len(self._rows) if self.folder is None else self._count

    def lookup(self, texts: Sequence[str]) -> Tuple[np.ndarray, List[int]]:
        """Row of each text in the cache (-1 when absent) and the positions of the absent ones; on disk, vectors that
        other processes committed since the last look are read first."""
        keys = [_key(t) for t in texts]
        rows = self._find(keys)
        if self.folder is not None and (rows < 0).any() and self._refresh():
            rows = self._find(keys)
        return rows, np.flatnonzero(rows < 0).tolist()

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        if self.folder is None:
            return self._vectors[rows]
        return np.array(self._mapped[np.asarray(rows, dtype=np.int64)], dtype=np.float32)  # only these rows are read

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """Stores ``vectors`` for ``texts`` (distinct); returns their rows. A text already stored (on disk, by another
        process meanwhile) keeps its stored vector."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        keys = [_key(t) for t in texts]
        if self.folder is None:
            self._extend(keys, vectors)
            return self._find(keys)
        from filelock import FileLock
        with FileLock(os.path.join(self.folder, "lock")):
            self._refresh()
            fresh = np.flatnonzero(self._find(keys) < 0)
            if len(fresh):
                self._append([keys[n] for n in fresh], vectors[fresh])
                self._refresh()
        return self._find(keys)

    def _reset(self) -> None:
        """Empties the in-memory state (the on-disk files stay and are read again when needed)."""
        self._rows, self._vectors, self._crc = {}, None, (0, 0)
        self._count = self._dim = 0
        self._prefix = np.zeros(0, dtype=np.uint64)  # first 64 bits of each committed row's key, in row order
        self._order = np.zeros(0, dtype=np.int64)  # rows sorted by prefix
        self._sorted = np.zeros(0, dtype=np.uint64)
        self._mapped: Optional[np.ndarray] = None
        self._keys: Optional[np.ndarray] = None

    def _find(self, keys: List[str]) -> np.ndarray:
        if self.folder is None:
            return np.fromiter((self._rows.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        rows = np.full(len(keys), -1, dtype=np.int64)
        if not self._count or not keys:
            return rows
        prefix = np.array([int(k[:16], 16) for k in keys], dtype=np.uint64)
        lo, hi = np.searchsorted(self._sorted, prefix, "left"), np.searchsorted(self._sorted, prefix, "right")
        for n in np.flatnonzero(hi > lo):
            for row in self._order[lo[n]:hi[n]]:  # almost always one: a 64-bit prefix shared by two keys is checked
                if self._keys[row].tobytes() == keys[n].encode("ascii"):
                    rows[n] = row
                    break
        return rows

    def _extend(self, keys: List[str], vectors: np.ndarray) -> None:
        start = len(self._rows)
        self._reserve(start + len(keys), vectors.shape[1])
        self._vectors[start:start + len(keys)] = vectors
        self._rows.update((k, start + n) for n, k in enumerate(keys))

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
        """Checks and indexes the rows committed on disk beyond those already known, then maps the files again;
        whether there were any."""
        commit = self._commit()
        seen, count, dim = self._count, int(commit["count"]), int(commit["dim"])
        if count < seen:
            raise self._damaged(f"commit.json records {count} rows, fewer than the {seen} already read")
        if count == seen:
            return False
        row_bytes = 4 * dim
        try:
            sizes = {n: os.path.getsize(self._file(n)) for n in ("keys.txt", "vectors.f32")}
        except FileNotFoundError as e:
            raise self._damaged(f"{os.path.basename(e.filename)} is missing, {count} rows are committed") from None
        if sizes["keys.txt"] < count * KEY_BYTES or sizes["vectors.f32"] < count * row_bytes:
            raise self._damaged(f"{count} rows are committed but keys.txt or vectors.f32 is shorter")
        prefixes = []
        keys_crc = self._crc[0]
        with open(self._file("keys.txt"), "rb") as f:
            f.seek(seen * KEY_BYTES)
            step = max(1, READ_BYTES // KEY_BYTES)
            for start in range(seen, count, step):
                block = f.read(min(step, count - start) * KEY_BYTES)
                keys_crc = zlib.crc32(block, keys_crc)
                prefixes.append(_prefixes(block))
        vectors_crc = self._crc[1]
        with open(self._file("vectors.f32"), "rb") as f:
            f.seek(seen * row_bytes)
            remaining = (count - seen) * row_bytes
            while remaining:
                block = f.read(min(READ_BYTES, remaining))
                vectors_crc = zlib.crc32(block, vectors_crc)
                remaining -= len(block)
        if (keys_crc, vectors_crc) != (int(commit["keys_crc32"]), int(commit["vectors_crc32"])):
            raise self._damaged(f"the {count} committed rows do not match their checksums")
        self._prefix = np.concatenate([self._prefix] + prefixes)
        self._order = np.argsort(self._prefix, kind="stable")
        self._sorted = self._prefix[self._order]
        self._count, self._dim, self._crc = count, dim, (keys_crc, vectors_crc)
        self._keys = np.memmap(self._file("keys.txt"), dtype=np.uint8, mode="r", shape=(count, KEY_BYTES))[:, :64]
        self._mapped = np.memmap(self._file("vectors.f32"), dtype=np.float32, mode="r", shape=(count, dim))
        return True

    def _append(self, keys: List[str], vectors: np.ndarray) -> None:
        """Appends rows after the committed ones (cutting off a torn tail), flushes them, then commits (under the lock,
        with every committed row already known)."""
        count, dim = self._count, vectors.shape[1]
        if count and self._dim != dim:
            raise ValueError(f"cached vectors have dimension {self._dim}, new ones {dim}")
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


def _prefixes(block: bytes) -> np.ndarray:
    """The first 64 bits of each key line of ``block`` (rows of 64 hex digits and a newline) as unsigned integers."""
    hex_digits = np.frombuffer(block, dtype=np.uint8).reshape(-1, KEY_BYTES)[:, :16].tobytes().decode("ascii")
    return np.frombuffer(bytes.fromhex(hex_digits), dtype=">u8").astype(np.uint64)
