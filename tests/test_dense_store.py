"""What the dense models keep on disk (issue 42): the document-vector cache is a ``VectorCache`` (the package's SQLite
store: two processes fill one cache, a SIGKILL loses at most the batch in flight, a space per passage configuration
and weights revision), the dense index and the cache are ``pt.Artifact``s that travel as packages, and docnos holding
``\\r``, ``\\n`` or ``\\0`` round-trip through an index."""
import contextlib
import functools
import http.server
import multiprocessing
import os
import shutil
import signal
import sqlite3
import threading

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from stubs import TaggedEncoder, tagged_corpus, tagged_rows

import pyterrier_instruct as pti
from tiny_models import resave_weights
from pyterrier_instruct.dense.cache import VectorCache
from pyterrier_instruct.dense.index import EmbeddingIndex

DOCS = pd.DataFrame({"docno": ["a", "b", "c"], "text": ["one doc", "another doc", "a third one"]})
SPAWN = multiprocessing.get_context("spawn")


def _rows(path) -> int:
    with contextlib.closing(sqlite3.connect(os.path.join(path, "store.sqlite3"))) as conn:
        return conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]


# -- the vector cache --------------------------------------------------------------------------------------------------
def test_each_configuration_and_weights_revision_has_its_own_space(tiny, tmp_path):
    model = tmp_path / "bert"
    shutil.copytree(tiny["bert"], model)
    cache = str(tmp_path / "cache")
    first = pti.BiEncoder(str(model), cache_dir=cache)
    first.doc_encoder()(DOCS)
    cls = pti.BiEncoder(str(model), pooling="cls", cache_dir=cache)
    cls.doc_encoder()(DOCS)
    assert cls.stats.passage_texts == 3 and cls.stats.cache_hits == 0
    resave_weights(model)  # the checkpoint saved again, with other weights
    retrained = pti.BiEncoder(str(model), cache_dir=cache)
    retrained.doc_encoder()(DOCS)
    assert retrained.stats.passage_texts == 3 and retrained.stats.cache_hits == 0
    assert len({m._doc_store().space for m in (first, cls, retrained)}) == 3 and _rows(cache) == 9
    assert isinstance(pt.Artifact.load(cache), VectorCache)


def test_an_index_refuses_weights_saved_since_it_was_built(tiny, tmp_path):
    model = tmp_path / "bert"
    shutil.copytree(tiny["bert"], model)
    docs = [{"docno": d, "text": t} for d, t in zip(DOCS["docno"], DOCS["text"])]
    pti.BiEncoder(str(model)).index(docs, str(tmp_path / "index"))
    topics = pd.DataFrame({"qid": ["1"], "query": ["a doc"]})
    assert len(pti.BiEncoder(str(model)).retriever(str(tmp_path / "index"), num_results=2)(topics)) == 2
    resave_weights(model)
    with pytest.raises(ValueError, match=r"was built with revision digest:\w+ of the weights, the model now has "
                                         r"digest:\w+; rebuild it"):
        pti.BiEncoder(str(model)).retriever(str(tmp_path / "index"), num_results=2)(topics)


def _encode_in_steps(bert, cache_dir, texts, barrier, out):
    barrier.wait(120)
    model = pti.BiEncoder(bert, cache_dir=cache_dir)
    for start in range(0, len(texts), 3):  # several transactions, interleaving with the other process
        chunk = texts[start:start + 3]
        model.doc_encoder()(pd.DataFrame({"docno": [str(i) for i in range(len(chunk) + 1)], "text": chunk + chunk[:1]}))
    out.put(model.stats.as_dict())


def test_two_processes_share_one_cache(tiny, tmp_path):
    """A spawned process and this one fill one cache at once, in interleaved transactions; a fresh model here then
    reads every passage back, those the other process committed included."""
    texts = [f"passage number {i} about topic {i % 4}" for i in range(24)]
    barrier, out = SPAWN.Barrier(2), SPAWN.Queue()
    child = SPAWN.Process(target=_encode_in_steps, args=(tiny["bert"], str(tmp_path), texts[:16], barrier, out))
    child.start()  # 8 passages in common with this process's
    try:
        _encode_in_steps(tiny["bert"], str(tmp_path), texts[8:], barrier, out)
        stats = [out.get(timeout=120) for _ in range(2)]
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0
    assert all(s["passage_texts"] + s["cache_hits"] == 16 for s in stats)  # each passage encoded at most once a process
    model = pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path))  # a fresh model reuses what both committed
    vectors = model.encode_passages(np.array(texts, dtype=object))
    assert model.stats.cache_hits == 24 and model.stats.forward_passes == 0 and not model.loaded
    assert _rows(tmp_path) == 24  # each passage stored once
    fresh = pti.BiEncoder(tiny["bert"]).encode_passages(np.array(texts, dtype=object))
    np.testing.assert_allclose(vectors, fresh, atol=1e-5)


def _write_batches(path, done, ready, start):
    cache = VectorCache(path)
    space = cache.space("m", "r1")
    for batch in range(start, 100_000):
        texts = [f"{batch}-{i}" for i in range(50)]
        cache.add(space, texts, np.full((50, 64), batch, dtype=np.float32))
        done.value = batch + 1
        if done.value >= start + 3:
            ready.set()


def test_a_killed_writer_loses_at_most_the_batch_in_flight(tmp_path):
    path = str(tmp_path / "cache")
    for trial in range(2):  # a writer on a fresh folder, then one on the folder a SIGKILL left
        start = _rows(path) // 50 if trial else 0  # each writer goes on past what the killed ones committed,
        done, ready = SPAWN.Value("i", start, lock=False), SPAWN.Event()  # however far they ran before the kill
        writer = SPAWN.Process(target=_write_batches, args=(path, done, ready, start))  # (no lock a kill could hold)
        writer.start()
        assert ready.wait(120)  # this trial's writer has committed 3 batches of its own
        os.kill(writer.pid, signal.SIGKILL)
        writer.join(30)
        committed = done.value
        cache = VectorCache(path)
        space = cache.space("m", "r1")
        rows = _rows(path)
        assert rows % 50 == 0 and committed * 50 <= rows <= (committed + 1) * 50, (trial, committed, rows)
        for batch in range(rows // 50):  # every committed batch whole, with its own vectors
            hits, vectors = cache.lookup(space, [f"{batch}-{i}" for i in range(50)])
            assert len(hits) == 50 and (vectors == batch).all()
        assert cache.connection().execute("PRAGMA integrity_check").fetchone() == ("ok",)
        cache.close()


def test_opening_a_vector_cache_costs_memory_in_proportion_to_the_lookup(tmp_path):
    import tracemalloc
    texts = [f"passage {i}" for i in range(4096)]
    writer = VectorCache(str(tmp_path))
    vectors = np.random.default_rng(0).standard_normal((len(texts), 768)).astype(np.float32)
    writer.add(writer.space("m", "r1"), texts, vectors)
    writer.close()
    size = sum(f.stat().st_size for f in tmp_path.iterdir())
    assert size > 12 * 2 ** 20
    tracemalloc.start()
    try:
        reader = VectorCache(str(tmp_path))
        space = reader.space("m", "r1")
        hits, found = reader.lookup(space, texts[100:110])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert hits.tolist() == list(range(10)) and peak < 0.02 * size, f"{size} byte cache, 10 rows: peak {peak} bytes"
    np.testing.assert_array_equal(found, vectors[100:110])
    hits, found = reader.lookup(space, ["not cached", texts[5]])
    assert hits.tolist() == [1] and reader.lookup(reader.space("m", "r2"), texts[:5])[0].tolist() == []
    np.testing.assert_array_equal(found, vectors[5:6])


# -- docnos ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("char", ["\r", "\n", "\0", "\r\n"])
def test_docnos_with_line_breaks_and_nuls_round_trip(tmp_path, char):
    corpus = tagged_corpus("A", 6)
    docnos = [f"A{i}" if i % 2 else f"A{i}{char}x" for i in range(6)]
    index = TaggedEncoder(dim=8).index([dict(d, docno=n) for d, n in zip(corpus, docnos)], str(tmp_path / "index"))
    for opened in (index, EmbeddingIndex(str(tmp_path / "index"))):
        assert opened.docnos.tolist() == docnos and len(opened) == 6
        assert [int(v[1]) for v in np.asarray(opened.vectors)] == list(range(6))  # every docno on its own row


def test_an_index_written_before_docnos_json_reads_a_carriage_return(tmp_path):
    index = TaggedEncoder(dim=8).index(tagged_corpus("A", 3), str(tmp_path / "index"))
    folder = tmp_path / "index" / index.version
    os.remove(folder / "docnos.json")
    (folder / "docnos.txt").write_bytes(b"A0\rold\nA1\nA2")  # as IndexWriter wrote it: one a line, "\r" kept
    assert EmbeddingIndex(str(tmp_path / "index")).docnos.tolist() == ["A0\rold", "A1", "A2"]


# -- artifacts ---------------------------------------------------------------------------------------------------------
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _served(folder):
    """``folder`` over HTTP on 127.0.0.1 (the hub is not reachable from tests): the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_index_and_the_cache_are_artifacts_that_travel_as_packages(tmp_path, monkeypatch):
    import pyterrier._artifact as artifact
    monkeypatch.setenv("PYTERRIER_HOME", str(tmp_path / "home"))
    path = str(tmp_path / "index")
    TaggedEncoder(dim=8).index(tagged_corpus("A", 30), path)
    index = pt.Artifact.load(path)
    assert type(index) is EmbeddingIndex and len(index) == 30 and not tagged_rows(index)
    cache = VectorCache(str(tmp_path / "cache"))
    cache.add(cache.space("m", "r1"), ["one", "two"], np.eye(2, 4, dtype=np.float32))
    cache.close()
    served = tmp_path / "served"
    served.mkdir()
    index.build_package(str(served / "index.tar.lz4"), verbose=False)
    cache.build_package(str(served / "cache.tar.lz4"), verbose=False)
    with _served(served) as url:
        got = pt.Artifact.from_url(f"{url}/index.tar.lz4")
        monkeypatch.setattr(artifact, "_hf_url_resolver", lambda parsed: f"{url}/{parsed.path}.tar.lz4")
        from_hf = pt.Artifact.from_hf("cache")  # hf:cache, resolved to the local server
    assert type(got) is EmbeddingIndex and got.path != path and got.docnos.tolist() == index.docnos.tolist()
    np.testing.assert_array_equal(np.asarray(got.vectors), np.asarray(index.vectors))
    got.check(TaggedEncoder(dim=8))
    assert type(from_hf) is VectorCache
    hits, vectors = from_hf.lookup(from_hf.space("m", "r1"), ["two", "three", "one"])
    assert hits.tolist() == [0, 2] and vectors.tolist() == np.eye(2, 4)[::-1].tolist()


def test_an_index_fingerprints_by_its_rows_in_memory_and_its_revision_on_disk(tmp_path):
    from pyterrier_instruct._fingerprint import fingerprint
    vectors = np.eye(3, dtype=np.float32)
    same = [fingerprint(EmbeddingIndex.from_vectors(["a", "b", "c"], vectors.copy())) for _ in range(2)]
    assert same[0] == same[1] != fingerprint(EmbeddingIndex.from_vectors(["a", "b", "d"], vectors))
    assert same[0] != fingerprint(EmbeddingIndex.from_vectors(["a", "b", "c"], vectors[::-1]))
    path = str(tmp_path / "index")
    before = fingerprint(EmbeddingIndex(path))
    TaggedEncoder(dim=8).index(tagged_corpus("A", 3), path)
    built = fingerprint(EmbeddingIndex(path))
    assert before != built and path in built and fingerprint(pt.Artifact.load(path)) == built
    TaggedEncoder(dim=8).index(tagged_corpus("B", 3), path, overwrite=True)
    assert fingerprint(EmbeddingIndex(path)) not in (before, built)
