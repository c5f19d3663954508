"""The one on-disk store under every cache this package keeps: a folder that is a ``pt.Artifact`` (``pt_meta.json``
naming its type and format) holding one SQLite database (``store.sqlite3``).

Why SQLite and not a format of our own: it gives what every cache needs from one well-kept library, tested by its
authors far beyond what a hand-written journal can be: write-ahead logging (readers never block the writer and see
only committed transactions), ``BEGIN IMMEDIATE`` transactions (two processes writing one cache take turns, each
waits up to ``busy_timeout``), ``INSERT OR IGNORE`` on a primary key (a row two processes computed at the same time is
stored once, the first one winning, never an ``IntegrityError``), and durability across a kill (a killed writer's
open transaction is rolled back on the next open; everything committed before it stays). pyterrier-caching's
``Sqlite3ScorerCache`` stands on the same library; its plain ``INSERT`` and folder creation are what fail between two
processes, and ``DbmRetrieverCache`` (``dbm.dumb``) has no lock at all, which is why this module does not wrap them.

A store opens lazily, once per process (a connection is never shared with a forked or pickled copy), and pickles by
its path.
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from typing import Iterable, Iterator, List, Optional, Sequence

import pyterrier as pt

from ._atomic import temporary_folder, write_json

#: the database file inside a store's folder
DB_NAME = "store.sqlite3"
#: seconds a writer waits for another process's transaction before SQLite raises "database is locked"
BUSY_TIMEOUT = 600.0
#: bound parameters per ``IN (...)`` look-up (SQLite's limit is 32,766 since 3.32; older builds allow 999)
CHUNK = 900


class StoreError(RuntimeError):
    """A folder that is not a store of the expected type, or a store written by an incompatible version."""


class SqliteStore(pt.Artifact):
    """Base of the package's SQLite artifacts (subclasses set :attr:`ARTIFACT_TYPE` and :attr:`SCHEMA`).

    Args:
        path: the store's folder (created on first use); ``None``: a new temporary folder, removed when this process
            exits.
    """
    ARTIFACT_TYPE = "store"
    ARTIFACT_FORMAT = "instruct"
    ARTIFACT_PACKAGE_HINT = "pyterrier-instruct"
    #: bumped when a subclass's tables change incompatibly; a store of another version is refused, naming its folder
    SCHEMA_VERSION = 1
    #: ``CREATE TABLE IF NOT EXISTS ...`` statements run when the store is opened
    SCHEMA = ""

    def __init__(self, path: Optional[str] = None):
        super().__init__(temporary_folder(f"pti-{self.ARTIFACT_TYPE}-") if path is None else os.fspath(path))
        self._conn: Optional[sqlite3.Connection] = None
        self._pid: Optional[int] = None
        self._mutex = threading.RLock()

    # -- opening ------------------------------------------------------------------------------------------------
    def _meta(self) -> dict:
        return {"type": self.ARTIFACT_TYPE, "format": self.ARTIFACT_FORMAT, "package_hint": self.ARTIFACT_PACKAGE_HINT,
                "schema_version": self.SCHEMA_VERSION}

    def _check_meta(self) -> None:
        """Creates the folder and ``pt_meta.json`` (two processes may both do it: the file is replaced whole, same
        content) or checks that an existing one is a store of this type and version."""
        os.makedirs(self.path, exist_ok=True)
        meta_path = os.path.join(self.path, "pt_meta.json")
        try:
            with open(meta_path, encoding="utf-8") as f:
                meta = json.load(f)
        except FileNotFoundError:
            write_json(meta_path, self._meta())
            return
        except ValueError as e:
            raise StoreError(f"{meta_path} is not valid JSON ({e}): not a {type(self).__name__} folder; pass another "
                             "path, or delete the folder to start a new store") from None
        want = (self.ARTIFACT_TYPE, self.ARTIFACT_FORMAT)
        if (meta.get("type"), meta.get("format")) != want:
            raise StoreError(f"{self.path} holds a {meta.get('type')}.{meta.get('format')} artifact, not the "
                             f"{want[0]}.{want[1]} a {type(self).__name__} reads: pass another path")
        if meta.get("schema_version", 1) != self.SCHEMA_VERSION:
            raise StoreError(f"{self.path} was written with {type(self).__name__} schema version "
                             f"{meta.get('schema_version')}, this version reads {self.SCHEMA_VERSION}: delete the "
                             "folder (its entries are recomputed) or use another path")

    def connection(self) -> sqlite3.Connection:
        """This process's connection (opened on first use: WAL, ``synchronous=NORMAL``, the schema created)."""
        with self._mutex:
            if self._conn is None or self._pid != os.getpid():
                self._check_meta()
                conn = sqlite3.connect(os.path.join(self.path, DB_NAME), timeout=BUSY_TIMEOUT, isolation_level=None,
                                       check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
                _when_free(lambda: conn.execute("PRAGMA journal_mode = WAL"))
                conn.execute("PRAGMA synchronous = NORMAL")
                if self.SCHEMA:
                    with _immediate(conn):
                        for statement in self.SCHEMA.split(";"):
                            if statement.strip():
                                conn.execute(statement)
                self._conn, self._pid = conn, os.getpid()
            return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): committed when the block ends, rolled back on an error."""
        with self._mutex:
            conn = self.connection()
            with _immediate(conn):
                yield conn

    def close(self) -> None:
        """Closes this process's connection (reopened on the next use)."""
        with self._mutex:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = self._pid = None

    # -- reading ------------------------------------------------------------------------------------------------
    def select_in(self, sql: str, keys: Sequence, extra: Sequence = ()) -> List[tuple]:
        """Rows of ``sql`` (with one ``{keys}`` placeholder standing for ``(?, ?, …)``) over ``keys`` in chunks;
        ``extra`` parameters come before the keys."""
        out: List[tuple] = []
        keys = list(keys)
        with self._mutex:
            conn = self.connection()
            for i in range(0, len(keys), CHUNK):
                chunk = keys[i:i + CHUNK]
                marks = "(" + ", ".join("?" * len(chunk)) + ")"
                out.extend(conn.execute(sql.format(keys=marks), (*extra, *chunk)).fetchall())
        return out

    def insert(self, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> int:
        """``INSERT OR IGNORE`` of ``rows`` in one transaction (a key already stored, by this or another process,
        keeps its first value); returns how many rows were new."""
        rows = list(rows)
        if not rows:
            return 0
        sql = f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        with self.transaction() as conn:
            before = conn.total_changes
            conn.executemany(sql, rows)
            return conn.total_changes - before

    # -- pickling -----------------------------------------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.update(_conn=None, _pid=None, _mutex=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._mutex = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"


def _when_free(step, wait: float = BUSY_TIMEOUT):
    """``step()`` retried while another process holds the lock SQLite needs for it: switching a new database to WAL
    takes an exclusive lock without calling the busy handler, so two processes opening a new store at once would
    otherwise get "database is locked"."""
    deadline, pause = time.monotonic() + wait, 0.005
    while True:
        try:
            return step()
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


@contextlib.contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
