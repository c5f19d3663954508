"""On-disk caches keyed by content and safe to interrupt or share: SavedRun (runs keyed by the system's fingerprint and
the topics, checked on read); the dense document cache is in test_dense_store.py."""
import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._fingerprint import NotFingerprintable, fingerprint, model_revision


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


class _Answers:
    """A callable object: its behaviour has no fingerprint."""

    def __call__(self, prompts, n):
        return ["[1]"] * len(prompts)


# -- SavedRun keys ---------------------------------------------------------------------------------
def test_a_changed_setting_never_reuses_a_stored_run(mini, tmp_path, counted):
    topics = mini.get_topics().iloc[:4]
    runs = {k1: pti.SavedRun(mini.candidates() >> pti.PoolBM25(k1=k1), tmp_path, verbose=False)(topics)
            for k1 in (1.5, 0.5)}
    assert len(counted) == 2 and not np.allclose(runs[1.5]["score"], runs[0.5]["score"])
    again = pti.SavedRun(mini.candidates() >> pti.PoolBM25(k1=0.5), tmp_path, verbose=False)(topics)
    assert len(counted) == 2  # the same configuration, rebuilt: reused
    pd.testing.assert_frame_equal(again, runs[0.5])
    pti.SavedRun(mini.candidates() % 5 >> pti.PoolBM25(k1=0.5), tmp_path, verbose=False)(topics)
    assert len(counted) == 3  # a stage more in the pipeline: another run


def test_stages_whose_settings_cannot_be_read_need_a_key(mini, tmp_path, counted):
    topics = mini.get_topics().iloc[:2]
    for system, part in [(mini.candidates() >> Weighted(0.0), "Weighted is not a transformer of this package"),
                         (mini.candidates() >> pt.apply.doc_score(np.negative), "a C function has no code to read"),
                         (mini.candidates() >> pti.ListwiseReranker(_Answers()),
                          "a _Answers has no content fingerprint")]:
        with pytest.raises(NotFingerprintable, match=f"{part}.*SavedRun\\(system, directory, key='mysystem-v2'\\)"):
            pti.SavedRun(system, tmp_path)
    assert issubclass(NotFingerprintable, TypeError)
    first = pti.SavedRun(mini.candidates() >> Weighted(0.0), tmp_path, key="weighted-0", verbose=False)(topics)
    second = pti.SavedRun(mini.candidates() >> Weighted(10.0), tmp_path, key="weighted-10", verbose=False)(topics)
    np.testing.assert_allclose(second["score"], first["score"] + 10.0)
    assert len(counted) == 2
    pti.SavedRun(mini.candidates() >> Weighted(10.0), tmp_path, key="weighted-10", verbose=False)(topics)
    assert len(counted) == 2 and "key='weighted-10'" in repr(pti.SavedRun(Weighted(1), tmp_path, key="weighted-10"))


def test_model_weights_are_part_of_the_fingerprint(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    before = fingerprint(pti.MonoT5(str(folder)))
    assert before == fingerprint(pti.MonoT5(str(folder), verbose=True)) and "@digest:" in before
    os.utime(folder / "model.safetensors", ns=(1, 1))  # the same weights, touched: the same content
    assert fingerprint(pti.MonoT5(str(folder))) == before
    (folder / "model.safetensors").write_bytes(b"weighs2")  # re-saved weights (same size)
    assert fingerprint(pti.MonoT5(str(folder))) != before
    assert model_revision(str(folder)) == model_revision(str(shutil.copytree(folder, tmp_path / "copy")))
    assert "@" not in fingerprint(pti.MonoT5("org/not-downloaded")).split("model_name_or_path=")[1].split(",")[0]


def test_dataset_files_and_indexes_are_part_of_the_fingerprint(mini, tmp_path):
    shutil.copytree(mini.path, tmp_path / "ds")
    ds = pti.load_dataset(str(tmp_path / "ds"))
    before = fingerprint(ds.candidates())
    with open(tmp_path / "ds" / "top_ranked.jsonl", "a") as f:
        f.write("\n")
    assert fingerprint(pti.load_dataset(str(tmp_path / "ds")).candidates()) != before
    bm25 = pti.BM25(mini.get_corpus_iter(), path=str(tmp_path / "pisa"))
    index = fingerprint(bm25)
    pti.BM25(path=str(tmp_path / "pisa"), k1=1.2)(mini.get_topics().iloc[:2])  # derives per-scorer files in the index
    assert fingerprint(pti.BM25(path=str(tmp_path / "pisa"))) == index
    assert fingerprint(pti.BM25(path=str(tmp_path / "pisa"), k1=1.2)) != index


def test_a_run_is_keyed_again_after_a_lazily_built_index(tiny, mini, tmp_path, counted):
    """The dense retriever builds its index on the first call; the run is stored under the key that includes it."""
    topics = mini.get_topics().iloc[:2]

    def system():
        return pti.BiEncoder(tiny["bert"]).retriever(str(tmp_path / "index"), num_results=5,
                                                     corpus=mini.get_corpus_iter)
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
