"""Multi-file artefacts are written whole or not at all (issue 39): the dense index (a build killed at random points, an
overwrite under an open reader, two builders at once), its Ray-built shards and their merge, and the folders replaced
whole (PISA and Anserini indexes). The stand-in encoder's vectors hold their own document's tag and number
(tests/stubs.py ``TaggedEncoder``), so every row is checked against its docno."""
import contextlib
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import time

import numpy as np
import pytest
from stubs import TaggedEncoder, tagged_corpus, tagged_rows

from pyterrier_instruct import _atomic
from pyterrier_instruct.dense.index import VERSION_PREFIX, EmbeddingIndex

FORK = multiprocessing.get_context("fork")  # children start with everything imported: a kill lands inside the build


def build(path, tag, n, overwrite=False, delay=0.0, **kwargs):
    return TaggedEncoder(delay=delay).index(tagged_corpus(tag, n), str(path), overwrite=overwrite, chunk_size=20,
                                            **kwargs)


def state(path) -> str:
    """``'A300'``: the index holds documents of tag A only, 300 of them, every row consistent; else what is wrong."""
    index = EmbeddingIndex(str(path))
    if not index.built():
        return "not built"
    bad = tagged_rows(index)
    assert not bad, f"{len(bad)} rows disagree with their docno, e.g. {bad[:3]}"
    tags = sorted({d[0] for d in index.docnos})
    assert len(tags) == 1, f"rows of corpora {tags} in one index"
    return f"{tags[0]}{len(index)}"


def versions(path) -> list:
    return sorted(p for p in os.listdir(path) if p.startswith(VERSION_PREFIX))


def _kill_at(target, args, after: float) -> int:
    child = FORK.Process(target=target, args=args)
    child.start()
    child.join(after)
    if child.is_alive():
        os.kill(child.pid, signal.SIGKILL)
        child.join()
    return child.exitcode


def test_a_build_killed_at_random_points_leaves_the_old_index_or_the_new(tmp_path):
    path = tmp_path / "index"
    build(path, "A", 300)
    t = time.perf_counter()
    assert _kill_at(build, (path, "B", 400, True, 0.002), 60) == 0  # one whole overwrite: how long a build takes
    span = time.perf_counter() - t
    build(path, "A", 300, overwrite=True)
    rng, seen = random.Random(39), []
    for trial in range(12):  # kill times spread over the build and a little past it
        code = _kill_at(build, (path, "B", 400, True, 0.002), span * 1.3 * (trial + rng.random()) / 12)
        seen.append(state(path))
        assert seen[-1] == ("B400" if code == 0 else seen[-1]) and seen[-1] in ("A300", "B400"), seen
        if seen[-1] == "B400":
            build(path, "A", 300, overwrite=True)
    assert "A300" in seen, f"no kill landed inside a build: {seen}"
    build(path, "C", 50, overwrite=True)  # the next build removes what killed ones left
    assert state(path) == "C50" and len(versions(path)) == 1
    assert not [p for p in os.listdir(path) if p.endswith(".partial")]
    fresh = tmp_path / "fresh"  # a killed first build: nothing built, and the next build works
    assert _kill_at(build, (fresh, "A", 400, False, 0.01), span / 3) == -signal.SIGKILL
    assert state(fresh) == "not built" and state(build(fresh, "A", 10).path) == "A10"


def _reader(path, ready, go, out):
    index = EmbeddingIndex(path)
    query = np.zeros((1, 1024), dtype=np.float32)
    query[0, 1] = 1.0  # the score of a row is its document's number
    scores, rows = index.search(query, 3, verbose=False)
    before = [str(d) for d in index.docnos[rows[0]]], scores[0].tolist()
    ready.set()
    go.wait(60)
    scores, rows = index.search(query, 3, verbose=False)
    out.put({"before": before, "after": ([str(d) for d in index.docnos[rows[0]]], scores[0].tolist()),
             "bad": tagged_rows(index), "changed": index.changed(), "reopened": len(EmbeddingIndex(path))})


@pytest.mark.parametrize("new_size", [300, 100])
def test_a_reader_keeps_the_index_it_opened_through_an_overwrite(tmp_path, new_size):
    path = str(tmp_path / "index")
    build(path, "A", 300)
    ready, go, out = FORK.Event(), FORK.Event(), FORK.Queue()
    reader = FORK.Process(target=_reader, args=(path, ready, go, out))
    reader.start()
    assert ready.wait(60)
    build(path, "B", new_size, overwrite=True)  # same size, then smaller: the old file truncated under a map was SIGBUS
    go.set()
    got = out.get(timeout=60)
    reader.join(60)
    assert reader.exitcode == 0
    assert got["before"] == got["after"] == (["A299", "A298", "A297"], [299.0, 298.0, 297.0]) and got["bad"] == []
    assert got["changed"] and got["reopened"] == new_size and state(path) == f"B{new_size}"


def _builder(path, tag, overwrite, barrier, out):
    barrier.wait()
    try:
        build(path, tag, 300, overwrite, 0.002)
        out.put((tag, "built"))
    except Exception as err:  # noqa: BLE001 - reported to the test
        out.put((tag, f"{type(err).__name__}: {err}"))


@pytest.mark.parametrize("overwrite", [False, True])
def test_two_builders_of_one_path_one_after_the_other(tmp_path, overwrite):
    path = str(tmp_path / "index")
    barrier, out = FORK.Barrier(2), FORK.Queue()
    procs = [FORK.Process(target=_builder, args=(path, tag, overwrite, barrier, out)) for tag in "AB"]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(60)
    final = state(path)
    if overwrite:  # both build, in turn: the index is the second's, whole
        assert set(results.values()) == {"built"} and final in ("A300", "B300")
    else:  # the second waits for the first, then finds its index
        winner = next(tag for tag, r in results.items() if r == "built")
        loser = "B" if winner == "A" else "A"
        assert final == f"{winner}300"
        assert results[loser] == f"FileExistsError: {path} already holds an index; pass overwrite=True to replace it"
    assert len(versions(path)) == 1


def test_a_second_builder_can_be_refused_instead_of_waiting(tmp_path):
    path = tmp_path / "index"
    build(path, "A", 10)
    held = _atomic.lock(str(path / ".lock"), None, "test")
    try:
        with pytest.raises(TimeoutError, match=rf"the index at {path} is being written by another process \(it holds "
                                               rf"{path}/.lock\), still after 0.2 s: wait for it to finish"):
            build(path, "B", 10, overwrite=True, lock_timeout=0.2)
    finally:
        held.release()
    assert state(path) == "A10" and state(build(path, "B", 10, overwrite=True, lock_timeout=0.2).path) == "B10"


def test_an_index_written_before_versions_is_read_and_replaced(tmp_path):
    path = tmp_path / "index"
    index = build(path, "A", 30)
    folder = path / index.version
    os.replace(folder / "vectors.f32", path / "vectors.f32")  # the layout before versions: the three files side by side
    (path / "docnos.txt").write_text("\n".join(index.docnos))
    shutil.rmtree(folder)
    meta = (path / "meta.json").read_text().replace(f'"version": "{index.version}"', '"old": 1')
    (path / "meta.json").write_text(meta)
    old = EmbeddingIndex(str(path))
    assert old.version is None and state(path) == "A30"
    build(path, "B", 20, overwrite=True)
    assert state(path) == "B20" and not (path / "vectors.f32").exists() and len(old.docnos) == 30 and old.changed()
    (path / versions(path)[0] / "docnos.json").write_text('["B0"]')  # damaged: named, not misread
    with pytest.raises(ValueError,
                       match=r"holds 1 docnos and 81920 bytes of vectors, meta.json says 20 rows of 1024 float32: "
                             r"the index is damaged; rebuild it"):
        EmbeddingIndex(str(path)).docnos


# -- the Ray path: shards, then their merge ----------------------------------------------------------------------------
class _LocalBlocks:
    """What ``scale.dense.build_index`` uses of ``on_ray(model)``, run in this process."""

    def __init__(self, model):
        self.transformer = model

    def run_blocks(self, model, mode, payloads, n_blocks):
        for n, strings in payloads:
            yield n, model.encode_passages(strings)


def _sharded(path, tag, n, overwrite, delay=0.0):
    from pyterrier_instruct.scale.dense import build_index
    wrapper = _LocalBlocks(TaggedEncoder(delay=delay))
    build_index(wrapper, iter(tagged_corpus(tag, n)), str(path), overwrite=overwrite, shard_size=25, keep_shards=True)
    return wrapper.last_index


def test_a_killed_sharded_build_keeps_the_old_index_and_its_finished_shards(tmp_path):
    path = tmp_path / "index"
    _sharded(path, "A", 100, False)
    for trial, after in enumerate((0.05, 0.12, 0.2, 0.3)):
        _kill_at(_sharded, (path, "B", 200, True, 0.03), after)
        assert state(path) in ("A100", "B200"), trial
        if (path / "shards" / "store.sqlite3").exists():  # each shard stored whole, in one transaction, or not at all
            with contextlib.closing(sqlite3.connect(path / "shards" / "store.sqlite3")) as conn:
                assert conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] % 25 == 0
    stats = _sharded(path, "B", 200, True)
    assert state(path) == "B200" and stats["reused"] > 0 and stats["shards"] == 8  # finished shards reused after kills


# -- folders replaced whole (PISA and Anserini index folders) ----------------------------------------------------------
def _replace(path, text, fail=False):
    with _atomic.replaced_folder(str(path)) as tmp:
        for name in ("a", "b"):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        if fail:
            raise RuntimeError("the indexer failed")


def _folder(path) -> str:
    texts = {open(os.path.join(path, n)).read() for n in sorted(os.listdir(path))}
    assert len(texts) == 1, texts
    return texts.pop()


def test_a_folder_is_replaced_whole(tmp_path):
    path = tmp_path / "pisa"
    _replace(path, "one")
    with pytest.raises(RuntimeError, match="the indexer failed"):
        _replace(path, "two", fail=True)
    assert _folder(path) == "one" and sorted(os.listdir(tmp_path)) == ["pisa", "pisa.lock"]
    _replace(path, "two")
    assert _folder(path) == "two" and sorted(os.listdir(tmp_path)) == ["pisa", "pisa.lock"]
    os.rename(path, str(path) + ".123-abcd0123.old")  # as a kill between the swap's two renames leaves it
    (tmp_path / "pisa.456-abcd0123.partial").mkdir()
    with pytest.raises(RuntimeError):
        _replace(path, "three", fail=True)  # the next build puts the previous folder back and removes the partial one
    assert _folder(path) == "two" and sorted(os.listdir(tmp_path)) == ["pisa", "pisa.lock"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # PISA's reader thread reports it
def test_a_pisa_build_that_fails_leaves_the_previous_index(tmp_path):
    import pandas as pd

    import pyterrier_instruct as pti
    from pyterrier_instruct.retrieval.pisa import bm25_index
    docs = [{"docno": f"d{i}", "text": f"word{i} common"} for i in range(20)]
    path = str(tmp_path / "bm25")
    topics = pd.DataFrame({"qid": ["1"], "query": ["word3"]})
    assert pti.BM25(iter(docs), path=path)(topics)["docno"].iloc[0] == "d3"

    def failing():
        yield from docs[:5]
        raise OSError("the corpus file went away")
    with pytest.raises(RuntimeError,
                       match=rf"PISA: reading the corpus stopped after 5 documents \(the error is in the warning "
                             rf"above\); the previous index at {path} is kept"):
        bm25_index(failing(), path, overwrite=True, verbose=False)
    assert pti.BM25(iter(docs), path=path)(topics)["docno"].iloc[0] == "d3"  # the previous index, whole, and its record
    assert sorted(os.listdir(tmp_path)) == ["bm25", "bm25.lock"]


def test_a_retriever_that_finds_its_index_built_meanwhile_uses_it(tiny, tmp_path):
    import pandas as pd

    import pyterrier_instruct as pti
    from pyterrier_instruct._corpus import CorpusChanged
    model = pti.BiEncoder(tiny["bert"], verbose=False)
    path = str(tmp_path / "dense")
    docs = [{"docno": d, "text": t} for d, t in [("a", "one doc"), ("b", "another doc"), ("c", "a third one")]]
    other = []

    def corpus():  # another builder commits while this one waits for the lock
        if not other:
            other.append(model.index(iter(docs), path))
        return iter(docs)
    retriever = model.retriever(path, num_results=2, corpus=corpus)
    out = retriever(pd.DataFrame({"qid": ["1"], "query": ["a doc"]}))
    assert len(out) == 2 and retriever.index.version == other[0].version  # its index, not a second build
    with pytest.raises(CorpusChanged, match="built from another corpus"):  # and checked against the corpus it was given
        model.retriever(path, num_results=2, corpus=lambda: iter(docs[:2]))(
            pd.DataFrame({"qid": ["1"], "query": ["a doc"]}))
