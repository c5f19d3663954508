"""The SQLite store under the package's caches (``_store.SqliteStore``) and the two caches built on it
(``pti.ScorerCache``, ``pti.RetrieverCache``) shared by processes and killed mid-way (issue 42). Children are fresh
interpreters (``subprocess``) on tiny frames, each bounded by a timeout."""
import json
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._store import SqliteStore, StoreError
import store_toys
from store_toys import ROWS, TOPICS, retrieve, score

ROOT = str(Path(__file__).resolve().parents[1])


class Pairs(SqliteStore):
    ARTIFACT_TYPE = "pairs"
    SCHEMA = "CREATE TABLE IF NOT EXISTS pairs (k TEXT PRIMARY KEY, v INTEGER)"


def test_a_store_folder_is_an_artifact_and_other_folders_are_refused(tmp_path):
    store = Pairs(tmp_path / "s")
    assert not os.path.exists(store.path)  # nothing written before the first use
    assert store.insert("pairs", ("k", "v"), [("a", 1)]) == 1
    meta = json.loads((tmp_path / "s" / "pt_meta.json").read_text())
    assert meta == {"type": "pairs", "format": "instruct", "package_hint": "pyterrier-instruct", "schema_version": 1}
    with pytest.raises(StoreError, match=r"holds a pairs.instruct artifact, not the scorer_cache.instruct .* path"):
        pti.ScorerCache(tmp_path / "s", pti.MonoT5(), verbose=False).store.connection()

    class Newer(Pairs):
        SCHEMA_VERSION = 2
    with pytest.raises(StoreError, match="schema version 1, this version reads 2: delete the folder"):
        Newer(tmp_path / "s").connection()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "pt_meta.json").write_text("{")
    with pytest.raises(StoreError, match="pt_meta.json is not valid JSON"):
        Pairs(tmp_path / "bad").connection()


def test_insert_or_ignore_and_chunked_lookups_survive_pickling(tmp_path):
    store = Pairs(tmp_path / "s")
    assert store.insert("pairs", ("k", "v"), [(f"k{i}", i) for i in range(2000)]) == 2000
    assert store.insert("pairs", ("k", "v"), [(f"k{i}", -1) for i in range(1500, 2500)]) == 500  # the first value stays
    copy = pickle.loads(pickle.dumps(store))
    rows = dict(copy.select_in("SELECT k, v FROM pairs WHERE k IN {keys}", [f"k{i}" for i in range(2500)]))
    assert len(rows) == 2500 and rows["k1999"] == 1999 and rows["k2000"] == -1
    assert copy._conn is not store._conn


def _run(*args) -> subprocess.Popen:
    """``python store_toys.py <args>`` started in a fresh interpreter (this worktree's package first on the path)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1")
    return subprocess.Popen([sys.executable, str(Path(__file__).with_name("store_toys.py")), *map(str, args)], env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_processes_fill_one_scorer_cache(tmp_path):
    """Was (pyterrier-caching): FileExistsError or IntegrityError after all the scoring (this test: 5 of 6 runs). Both
    (a child and this process) finish, each row is computed at most once per process and stored once, both read the
    same scores."""
    proc = _run("fill_scores", tmp_path, "a", "b")
    try:
        store_toys.fill_scores(str(tmp_path), "b", "a")
    finally:
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-2000:]
    results = [json.loads((tmp_path / f"{me}.json").read_text()) for me in "ab"]
    for got in results:
        computed = [tuple(p) for p in got["computed"]]
        assert len(computed) == len(set(computed))  # at most once per process
        assert got["score"] == score(ROWS).tolist()
    assert set.union(*({tuple(p) for p in got["computed"]} for got in results)) == set(zip(ROWS.qid, ROWS.docno))
    with sqlite3.connect(tmp_path / "cache" / "store.sqlite3") as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT docno) FROM scores").fetchone() == (400, 100)


def _all_hits(folder) -> None:
    """Every query of ``folder``'s cache is a hit (the retriever refuses any row) and is the retriever's own run."""
    def refuse(q):
        assert not len(q), "retrieved a query the cache holds"
        return retrieve(q)
    cache = pti.RetrieverCache(os.path.join(folder, "cache"), pt.apply.generic(refuse), identity="toy", verbose=False)
    pd.testing.assert_frame_equal(cache(TOPICS), retrieve(TOPICS))


def test_two_writers_on_disjoint_queries_store_every_query_once(tmp_path, capsys):
    """Was (dbm.dumb): queries lost in 6 of 6 runs of this test (1 and 37 of 40 left in two), a crash in 1. The writers:
    a child and this process."""
    proc = _run("fill_runs", tmp_path, "a", "b", 0)
    try:
        store_toys.fill_runs(str(tmp_path), "b", "a", "1")
    finally:
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0 and len(out.split()) == 20, err[-2000:]
    assert capsys.readouterr().out.split() == [str(i) for i in range(1, 40, 2)]
    with sqlite3.connect(tmp_path / "cache" / "store.sqlite3") as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone() == (40, 40)
    _all_hits(tmp_path)


def test_a_killed_writer_loses_only_the_query_in_flight(tmp_path, capsys):
    """SIGKILL a writer after k answered queries, for several k (each child starts over: hits, then new queries):
    every query answered before the kill is still a hit and the store opens fine (dbm.dumb: hits 0 of 500)."""
    answered = set()
    for k in (2, 9, 23):
        proc = _run("fill_runs", tmp_path, "w", "-", "all")
        seen = [int(proc.stdout.readline()) for _ in range(k)]
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL and seen == list(range(k))
        answered.update(seen)
        hits = pti.RetrieverCache(tmp_path / "cache", pt.apply.generic(retrieve), identity="toy", verbose=False)
        pd.testing.assert_frame_equal(hits(TOPICS.iloc[sorted(answered)]), retrieve(TOPICS.iloc[sorted(answered)]))
        assert (hits.hits, hits.misses) == (len(answered), 0)
    with sqlite3.connect(tmp_path / "cache" / "store.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store_toys.fill_runs(str(tmp_path), "w", "-", "all")  # a new writer (this process) finishes the rest
    assert capsys.readouterr().out.split() == [str(i) for i in range(40)]
    _all_hits(tmp_path)


def test_the_artifact_entry_points_name_the_cache_stores():
    """pyproject.toml registers each cache folder's type for ``pt.Artifact.load`` (active once the package is
    reinstalled); each entry names the store class that writes that type."""
    import importlib
    import tomllib
    entries = tomllib.loads(Path(ROOT, "pyproject.toml").read_text())["project"]["entry-points"]["pyterrier.artifact"]
    for name in ("scorer_cache.instruct", "retriever_cache.instruct"):
        module, cls = entries[name].split(":")
        store = getattr(importlib.import_module(module), cls)
        assert issubclass(store, SqliteStore) and f"{store.ARTIFACT_TYPE}.{store.ARTIFACT_FORMAT}" == name


def test_a_temporary_store_is_removed_when_its_process_exits(tmp_path):
    """``path=None``: a folder in the temporary directory, removed at exit by the process that made it (not by a child
    that inherited it); a store at a given path stays."""
    code = ("import os, sys; from pyterrier_instruct.calls import CallStore\n"
            "temporary, kept = CallStore(), CallStore(sys.argv[1])\n"
            "for store in (temporary, kept):\n"
            "    store.connection()  # created and opened\n"
            "if os.fork() == 0: os._exit(0)\n"
            "os.wait(); print(temporary.path); assert os.path.isdir(temporary.path)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "kept")], capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=str(tmp_path)), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    path = done.stdout.strip().splitlines()[-1]
    assert Path(path).parent == tmp_path and not os.path.exists(path)
    assert (tmp_path / "kept" / "pt_meta.json").is_file()
