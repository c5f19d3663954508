"""On-disk caches keyed by content and safe to interrupt or share: SavedRun (runs keyed by the system's fingerprint and
the topics, checked on read) and the dense document cache (journaled appends, torn tails ignored, corruption named,
several processes on one cache)."""
import json
import logging
import multiprocessing
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._fingerprint import NotFingerprintable, fingerprint, model_revision
from pyterrier_instruct.dense.cache import CacheError, DocCache


class Weighted(pt.Transformer):
    """A user transformer: its parameter is invisible to any repr-based key."""

    def __init__(self, w):
        self.w = w

    def transform(self, inp):
        return inp.assign(score=inp["score"] + self.w)


@pytest.fixture
def counted(monkeypatch):
    """The systems SavedRun actually ran, in order."""
    calls = []
    real = pti.SavedRun._compute

    def spy(self, topics, paths):
        calls.append(self.system)
        return real(self, topics, paths)
    monkeypatch.setattr(pti.SavedRun, "_compute", spy)
    return calls


# -- SavedRun keys ---------------------------------------------------------------------------------
def test_a_changed_setting_never_reuses_a_stored_run(mini, tmp_path, counted):
    topics = mini.get_topics().iloc[:4]
    runs = {k1: pti.SavedRun(mini.candidates() >> pti.PoolBM25(k1=k1), tmp_path, verbose=False)(topics) for k1 in (1.5, 0.5)}
    assert len(counted) == 2 and not np.allclose(runs[1.5]["score"], runs[0.5]["score"])
    again = pti.SavedRun(mini.candidates() >> pti.PoolBM25(k1=0.5), tmp_path, verbose=False)(topics)
    assert len(counted) == 2  # the same configuration, rebuilt: reused
    pd.testing.assert_frame_equal(again, runs[0.5])
    pti.SavedRun(mini.candidates() % 5 >> pti.PoolBM25(k1=0.5), tmp_path, verbose=False)(topics)
    assert len(counted) == 3  # a stage more in the pipeline: another run


def test_stages_whose_settings_cannot_be_read_need_a_key(mini, tmp_path, counted):
    topics = mini.get_topics().iloc[:2]
    for system, part in [(mini.candidates() >> Weighted(0.0), "Weighted is not a transformer of this package"),
                         (mini.candidates() >> pt.apply.doc_score(lambda r: 1.0), "pt.apply wraps a function"),
                         (mini.candidates() >> pti.ListwiseReranker(lambda prompts, n: ["[1]"] * len(prompts)),
                          "a function's behaviour")]:
        with pytest.raises(NotFingerprintable, match=f"{part}.*SavedRun\\(system, directory, key='mysystem-v2'\\)"):
            pti.SavedRun(system, tmp_path)
    assert issubclass(NotFingerprintable, TypeError)
    first = pti.SavedRun(mini.candidates() >> Weighted(0.0), tmp_path, key="weighted-0", verbose=False)(topics)
    second = pti.SavedRun(mini.candidates() >> Weighted(10.0), tmp_path, key="weighted-10", verbose=False)(topics)
    np.testing.assert_allclose(second["score"], first["score"] + 10.0)
    assert len(counted) == 2
    pti.SavedRun(mini.candidates() >> Weighted(10.0), tmp_path, key="weighted-10", verbose=False)(topics)
    assert len(counted) == 2 and "key='weighted-10'" in repr(pti.SavedRun(Weighted(1), tmp_path, key="weighted-10"))


def test_model_weights_and_hub_commits_are_part_of_the_fingerprint(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    before = fingerprint(pti.MonoT5(str(folder)))
    assert before == fingerprint(pti.MonoT5(str(folder), verbose=True)) and "@files:" in before
    os.utime(folder / "model.safetensors", ns=(1, 1))  # re-saved weights (same size)
    assert fingerprint(pti.MonoT5(str(folder))) != before
    snapshot = tmp_path / "hub" / "models--org--name" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    assert model_revision(str(snapshot)) == "commit:" + "a" * 40
    (tmp_path / "hub" / "models--org--name" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--name" / "refs" / "main").write_text("b" * 40)
    monkeypatch.setattr("pyterrier_instruct._fingerprint._hub_cache", lambda: str(tmp_path / "hub"))
    assert "'org/name'@commit:" + "b" * 40 in fingerprint(pti.MonoT5("org/name"))
    assert "@" not in fingerprint(pti.MonoT5("org/not-downloaded")).split("model_name_or_path=")[1].split(",")[0]


def test_dataset_files_and_indexes_are_part_of_the_fingerprint(mini, tmp_path):
    shutil.copytree(mini.path, tmp_path / "ds")
    ds = pti.load_dataset(str(tmp_path / "ds"))
    before = fingerprint(ds.candidates())
    os.utime(tmp_path / "ds" / "top_ranked.jsonl", ns=(1, 1))
    assert fingerprint(pti.load_dataset(str(tmp_path / "ds")).candidates()) != before
    bm25 = pti.BM25(mini.get_corpus_iter(), path=str(tmp_path / "pisa"))
    index = fingerprint(bm25)
    pti.BM25(path=str(tmp_path / "pisa"), k1=1.2)(mini.get_topics().iloc[:2])  # derives per-scorer files in the index folder
    assert fingerprint(pti.BM25(path=str(tmp_path / "pisa"))) == index
    assert fingerprint(pti.BM25(path=str(tmp_path / "pisa"), k1=1.2)) != index


def test_a_run_is_keyed_again_after_a_lazily_built_index(tiny, mini, tmp_path, counted):
    """The dense retriever builds its index on the first call; the run is stored under the key that includes it."""
    topics = mini.get_topics().iloc[:2]

    def system():
        return pti.BiEncoder(tiny["bert"]).retriever(str(tmp_path / "index"), num_results=5, corpus=mini.get_corpus_iter)
    first = pti.SavedRun(system(), tmp_path / "runs", verbose=False)(topics)
    again = pti.SavedRun(system(), tmp_path / "runs", verbose=False)(topics)
    assert len(counted) == 1
    pd.testing.assert_frame_equal(first, again)


def test_nan_scores_are_refused_naming_the_system_and_queries(mini, tmp_path):
    system = mini.candidates() >> pt.apply.generic(lambda df: df.drop(columns="rank").assign(score=np.nan))
    with pytest.raises(ValueError, match=r"returned NaN scores in 56 row\(s\) of 2 query\(ies\), e\.g\. qid\(s\) "
                                         r"\['101-og', '101-changed'\]; a NaN score has no rank"):
        pti.SavedRun(system, tmp_path, key="nan", verbose=False)(mini.get_topics().iloc[:2])
    assert not list(tmp_path.glob("*.parquet"))


def test_a_damaged_stored_run_is_computed_again(mini, tmp_path, counted, caplog):
    topics = mini.get_topics().iloc[:2]
    saved = pti.SavedRun(mini.candidates() >> pti.PoolBM25(), tmp_path, verbose=False)
    first = saved(topics)
    parquet = Path(saved.paths(topics)["parquet"])
    meta = json.loads(Path(saved.paths(topics)["json"]).read_text())
    assert meta["rows"] == len(first) and len(meta["sha256"]) == 64 and "PoolBM25(k1=1.5" in meta["system"]
    first.head(3)[["qid", "docno", "score", "rank"]].to_parquet(parquet, index=False)  # another (shorter) valid run
    with caplog.at_level(logging.WARNING, logger="pyterrier_instruct.evaluation.runs"):
        again = saved(topics)
    assert len(counted) == 2 and "SHA-256 differs" in caplog.text
    pd.testing.assert_frame_equal(again, first)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


# -- the dense document cache -------------------------------------------------------------------------
DOCS = pd.DataFrame({"docno": ["a", "b", "c"], "text": ["one doc", "another doc", "a third one"]})


def _folder(cache_dir) -> Path:
    (folder,) = [p for p in Path(cache_dir).iterdir() if p.is_dir()]
    return folder


def test_a_torn_tail_is_ignored_then_cut_off(tiny, tmp_path):
    model = pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path))
    a = np.stack(model.doc_encoder()(DOCS.iloc[:2])["doc_vec"])
    folder = _folder(tmp_path)
    sizes = {n: (folder / n).stat().st_size for n in ("keys.txt", "vectors.f32")}
    with open(folder / "vectors.f32", "ab") as f:  # an append cut short: half a vector, never committed
        f.write(np.ones(5, dtype=np.float32).tobytes())
    with open(folder / "keys.txt", "ab") as f:
        f.write(b"deadbeef")
    reader = pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path))
    b = np.stack(reader.doc_encoder()(DOCS.iloc[:2])["doc_vec"])
    assert reader.stats.cache_hits == 2 and not reader.loaded
    np.testing.assert_array_equal(a, b)
    reader.doc_encoder()(DOCS)  # a new passage: the writer cuts the torn tail before appending
    dim = a.shape[1]
    assert (folder / "keys.txt").stat().st_size == sizes["keys.txt"] + 65
    assert (folder / "vectors.f32").stat().st_size == sizes["vectors.f32"] + 4 * dim
    third = pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path))
    third.doc_encoder()(DOCS)
    assert third.stats.cache_hits == 3 and not third.loaded


def test_a_corrupt_committed_part_names_the_folder_to_delete(tiny, tmp_path):
    pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path)).doc_encoder()(DOCS)
    folder = _folder(tmp_path)
    data = bytearray((folder / "vectors.f32").read_bytes())
    data[5] ^= 0xFF
    (folder / "vectors.f32").write_bytes(bytes(data))
    with pytest.raises(CacheError, match=f"the document cache in {folder} is damaged: the 3 committed rows do not match their "
                                         "checksums; delete that folder to rebuild it"):
        pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path)).doc_encoder()(DOCS)
    (folder / "vectors.f32").write_bytes(bytes(data[:8]))
    with pytest.raises(CacheError, match="3 rows are committed but keys.txt or vectors.f32 is shorter"):
        pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path)).doc_encoder()(DOCS)
    shutil.rmtree(folder)  # the advertised fix
    rebuilt = pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path))
    rebuilt.doc_encoder()(DOCS)
    assert rebuilt.stats.passage_texts == 3


def test_each_configuration_and_weights_revision_has_its_own_folder(tiny, tmp_path):
    model = tmp_path / "bert"
    shutil.copytree(tiny["bert"], model)
    pti.BiEncoder(str(model), cache_dir=str(tmp_path / "cache")).doc_encoder()(DOCS)
    cls = pti.BiEncoder(str(model), pooling="cls", cache_dir=str(tmp_path / "cache"))
    cls.doc_encoder()(DOCS)
    assert cls.stats.passage_texts == 3 and len(list((tmp_path / "cache").iterdir())) == 2
    weights = next(p for p in model.iterdir() if p.suffix == ".safetensors")
    os.utime(weights, ns=(1, 1))  # the checkpoint was saved again
    retrained = pti.BiEncoder(str(model), cache_dir=str(tmp_path / "cache"))
    retrained.doc_encoder()(DOCS)
    assert retrained.stats.passage_texts == 3 and len(list((tmp_path / "cache").iterdir())) == 3
    folder = Path(retrained._doc_store().folder)
    (folder / "meta.json").write_text(json.dumps({"model": "other", "revision": None}))
    with pytest.raises(CacheError, match="meta.json names 'other'"):  # a folder that does not hold what its name says
        DocCache(str(tmp_path / "cache"), retrained.doc_key(), retrained.revision())


def test_an_index_refuses_weights_saved_since_it_was_built(tiny, tmp_path):
    model = tmp_path / "bert"
    shutil.copytree(tiny["bert"], model)
    docs = [{"docno": d, "text": t} for d, t in zip(DOCS["docno"], DOCS["text"])]
    pti.BiEncoder(str(model)).index(docs, str(tmp_path / "index"))
    topics = pd.DataFrame({"qid": ["1"], "query": ["a doc"]})
    assert len(pti.BiEncoder(str(model)).retriever(str(tmp_path / "index"), num_results=2)(topics)) == 2
    os.utime(next(p for p in model.iterdir() if p.suffix == ".safetensors"), ns=(1, 1))
    with pytest.raises(ValueError, match=r"was built with revision files:\w+ of the weights, the model now has files:\w+; rebuild it"):
        pti.BiEncoder(str(model)).retriever(str(tmp_path / "index"), num_results=2)(topics)


def _encode_in_steps(bert, cache_dir, texts, barrier, out):
    barrier.wait()
    model = pti.BiEncoder(bert, cache_dir=cache_dir)
    for start in range(0, len(texts), 3):  # several appends, interleaving with the other process
        chunk = texts[start:start + 3]
        model.doc_encoder()(pd.DataFrame({"docno": [str(i) for i in range(len(chunk))], "text": chunk}))
    out.put(model.stats.as_dict())


def test_two_processes_share_one_cache(tiny, tmp_path):
    texts = [f"passage number {i} about topic {i % 4}" for i in range(24)]
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_encode_in_steps, args=(tiny["bert"], str(tmp_path), part, barrier, out))
             for part in (texts[:16], texts[8:])]  # 8 passages in common
    for p in procs:
        p.start()
    stats = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(s["passage_texts"] + s["cache_hits"] for s in stats) == 32
    model = pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path))  # a third process reuses what both committed
    vectors = model.encode_passages(np.array(texts, dtype=object))
    assert model.stats.cache_hits == 24 and model.stats.forward_passes == 0 and not model.loaded
    folder = _folder(tmp_path)
    commit = json.loads((folder / "commit.json").read_text())
    assert commit["count"] == 24 and (folder / "keys.txt").stat().st_size == 24 * 65  # each passage stored once
    fresh = pti.BiEncoder(tiny["bert"]).encode_passages(np.array(texts, dtype=object))
    np.testing.assert_allclose(vectors, fresh, atol=1e-5)
