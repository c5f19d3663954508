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
import textwrap
from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._store import SqliteStore, StoreError

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


def _run(script: str, *args, wait: bool = True):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=180)
    return proc.returncode, out, err


#: a toy retriever and scorer, defined the same way in the test and in its children
TOYS = textwrap.dedent('''
    import json, os, sys, time
    import numpy as np, pandas as pd, pyterrier as pt, pyterrier_instruct as pti
    DOCS = pd.DataFrame({"docno": [f"d{j}" for j in range(120)], "text": ["x" * (j % 50) for j in range(120)]})
    TOPICS = pd.DataFrame({"qid": [f"q{i}" for i in range(40)], "query": [f"query number {i}" for i in range(40)]})

    def retrieve(q):
        run = q.merge(DOCS, how="cross")
        n = run["query"].str.split().str[-1].astype(int) + 1  # from what the retriever reads, not the qid
        return pt.model.add_ranks(run.assign(score=(run["docno"].str[1:].astype(int) * n % 97).astype(float)))

    def score(df):
        return df["docno"].str[1:].astype(float) + df["query"].str.split().str[-1].astype(float) / 10

    def together(folder, me, other):
        open(os.path.join(folder, me), "w").close()
        for _ in range(12000):  # both children start their work together (bounded wait)
            if os.path.exists(os.path.join(folder, other)):
                break
            time.sleep(0.005)
''')
exec(TOYS)  # noqa: S102 - the same definitions as the children's

SCORER_CHILD = TOYS + textwrap.dedent('''
    folder, me, other = sys.argv[1:4]
    rows = pd.DataFrame({"qid": [f"q{i % 4}" for i in range(400)], "query": [f"query {i % 4}" for i in range(400)],
                         "docno": [f"d{i // 4}" for i in range(400)]})
    computed = []
    scorer = pt.apply.doc_score(lambda df: computed.extend(zip(df.qid, df.docno)) or score(df), batch_size=1000)
    cache = pti.ScorerCache(os.path.join(folder, "cache"), scorer, identity="toy", verbose=False)
    together(folder, me, other)
    for start in (range(0, 400, 50) if me == "a" else range(350, -1, -50)):  # overlapping, in opposite orders
        cache(rows.iloc[start:start + 100])
    final = cache(rows)
    with open(os.path.join(folder, me + ".json"), "w") as f:
        json.dump({"computed": computed, "score": final["score"].tolist()}, f)
''')


def test_two_processes_fill_one_scorer_cache(tmp_path):
    """Was: IntegrityError after all the scoring (4/5) or FileExistsError. Both finish, each row is computed at most
    once per process and stored once, both read the same scores."""
    a, b = (_run(SCORER_CHILD, tmp_path, me, other, wait=False) for me, other in (("a", "b"), ("b", "a")))
    for proc in (a, b):
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-2000:]
    results = [json.loads((tmp_path / f"{me}.json").read_text()) for me in "ab"]
    rows = pd.DataFrame({"qid": [f"q{i % 4}" for i in range(400)], "query": [f"query {i % 4}" for i in range(400)],
                         "docno": [f"d{i // 4}" for i in range(400)]})
    for got in results:
        computed = [tuple(p) for p in got["computed"]]
        assert len(computed) == len(set(computed))  # at most once per process
        assert got["score"] == score(rows).tolist()
    assert set.union(*({tuple(p) for p in got["computed"]} for got in results)) == set(zip(rows.qid, rows.docno))
    with sqlite3.connect(tmp_path / "cache" / "store.sqlite3") as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT docno) FROM scores").fetchone() == (400, 100)


RETRIEVER_CHILD = TOYS + textwrap.dedent('''
    folder, me, other, which = sys.argv[1:5]
    cache = pti.RetrieverCache(os.path.join(folder, "cache"), pt.apply.generic(retrieve), identity="toy", verbose=False)
    if other != "-":
        together(folder, me, other)
    for i in range(int(which), 40, 2) if which in ("0", "1") else range(40):  # one query per call: one commit each
        cache(TOPICS.iloc[[i]])
        print(i, flush=True)
''')


def _all_hits(folder) -> None:
    """Every query of ``folder``'s cache is a hit (the retriever refuses any row) and is the retriever's own run."""
    def refuse(q):
        assert not len(q), "retrieved a query the cache holds"
        return retrieve(q)
    cache = pti.RetrieverCache(os.path.join(folder, "cache"), pt.apply.generic(refuse), identity="toy", verbose=False)
    pd.testing.assert_frame_equal(cache(TOPICS), retrieve(TOPICS))


def test_two_writers_on_disjoint_queries_store_every_query_once(tmp_path):
    """Was (dbm.dumb): crashes in 6/12, a query lost and another doubled, unreadable caches."""
    procs = [_run(RETRIEVER_CHILD, tmp_path, me, other, which, wait=False) for me, other, which in (("a", "b", 0),
                                                                                                    ("b", "a", 1))]
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0 and len(out.split()) == 20, err[-2000:]
    with sqlite3.connect(tmp_path / "cache" / "store.sqlite3") as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone() == (40, 40)
    _all_hits(tmp_path)


def test_a_killed_writer_loses_only_the_query_in_flight(tmp_path):
    """SIGKILL a writer after k answered queries, for several k (each child starts over: hits, then new queries):
    every query answered before the kill is still a hit and the store opens fine (dbm.dumb: hits 0 of 500)."""
    answered = set()
    for k in (2, 9, 23):
        proc = _run(RETRIEVER_CHILD, tmp_path, "w", "-", "all", wait=False)
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
    code, out, err = _run(RETRIEVER_CHILD, tmp_path, "w", "-", "all")  # a new writer finishes the rest
    assert code == 0 and len(out.split()) == 40, err[-2000:]
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
