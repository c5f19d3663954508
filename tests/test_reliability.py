"""Nothing stale after a change, bounded memory, nothing secret on disk (issue 30): each test injects one fault —
weights saved again, an encoding option, corpus or topic value changed, a symlinked folder, a writer killed, a
truncated report, hostile JSON lines — and checks that the result is refused or recomputed, never served stale.
The HTTP faults (an echoed key, late headers, a far Retry-After, another model's answer, a stalled judge) are in
``test_http_faults.py``."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._corpus import CorpusChanged
from pyterrier_instruct._fingerprint import fingerprint, path_revision
from pyterrier_instruct.backends import HFBackend, VLLMBackend
from pyterrier_instruct.datasets._files import DataError, iter_jsonl
from pyterrier_instruct.datasets.docstore import DocStore
from pyterrier_instruct.evaluation import IFIRJudge
from pyterrier_instruct.evaluation.runs import SavedRun, run_key, sweep_partials
from pyterrier_instruct.reproduce.output import read_report
from tiny_models import resave_weights

DOCS = [{"docno": d, "text": t} for d, t in [("a", "one doc"), ("b", "another doc"), ("c", "a third one")]]
TOPICS = pd.DataFrame({"qid": ["1"], "query": ["a doc"]})


def _resave(folder: Path) -> None:
    resave_weights(folder)  # new weights saved over the folder


# -- 1. judge cache vs new weights -------------------------------------------------------------------------------------
def test_1_judge_keys_change_when_local_weights_are_saved_again(tmp_path):
    folder = tmp_path / "judge"
    folder.mkdir()
    for i, backend in enumerate((HFBackend(str(folder)), VLLMBackend(str(folder)))):
        (folder / "model.safetensors").write_bytes(b"weights v%d" % (2 * i))
        judge = IFIRJudge(backend, judge_model="j", verbose=False)
        before = (fingerprint(backend), judge.judge_id)
        assert "@digest:" in before[0]
        (folder / "model.safetensors").write_bytes(b"weights v%d" % (2 * i + 1))  # new weights saved over the folder
        assert fingerprint(backend) != before[0] and judge.judge_id != before[1]


# -- 2. doc cache and index vs padding_side ----------------------------------------------------------------------------
def test_2_padding_side_has_its_own_cache_and_index(tiny, tmp_path):
    frame = pd.DataFrame(DOCS)
    right = pti.BiEncoder(tiny["bert"], cache_dir=str(tmp_path / "cache"), verbose=False)
    vectors = np.stack(right.doc_encoder()(frame)["doc_vec"])
    left = pti.BiEncoder(tiny["bert"], padding_side="left", cache_dir=str(tmp_path / "cache"), verbose=False)
    left_vectors = np.stack(left.doc_encoder()(frame)["doc_vec"])
    assert left.stats.cache_hits == 0 and left.stats.passage_texts == 3  # not served the right-padded vectors
    assert right.doc_key() != left.doc_key() and not np.allclose(vectors, left_vectors, atol=1e-4)
    right.index(DOCS, str(tmp_path / "index"))
    with pytest.raises(ValueError, match="was built with passages encoded as .*'right'.*not as .*'left'"):
        left.retriever(str(tmp_path / "index"), num_results=2)(TOPICS)


# -- 3. indexes vs a changed corpus ------------------------------------------------------------------------------------
def test_3_a_pisa_index_refuses_another_corpus(tmp_path):
    path = str(tmp_path / "bm25")
    first = pti.BM25(iter(DOCS), path=path)
    assert set(first(TOPICS)["docno"]) <= {"a", "b", "c"}
    pti.BM25(iter(DOCS), path=path)  # the same corpus: reused
    changed = DOCS[:2] + [{"docno": "z", "text": "a third one"}]
    with pytest.raises(CorpusChanged,
                       match=rf"the PISA index at {path} was built from another corpus than the one given "
                             r"\(the same 3 documents in number, but their ids, text or order differ"):
        pti.BM25(iter(changed), path=path)
    with pytest.raises(CorpusChanged, match=r"3 documents then, 2 now"):
        pti.BM25(iter(DOCS[:2]), path=path)


def test_3_a_dense_index_refuses_another_corpus(tiny, tmp_path):
    model = pti.BiEncoder(tiny["bert"], verbose=False)
    path = str(tmp_path / "dense")
    built = model.retriever(path, num_results=2, corpus=lambda: iter(DOCS))(TOPICS)
    assert len(built) == 2
    assert len(model.retriever(path, num_results=2, corpus=lambda: iter(DOCS))(TOPICS)) == 2  # same corpus: reused
    SavedRun(model.retriever(path, num_results=2, corpus=lambda: iter(DOCS)), tmp_path / "runs", verbose=False)(TOPICS)
    edited = DOCS[:2] + [{"docno": "c", "text": "a new third text"}]
    with pytest.raises(CorpusChanged, match=r"EmbeddingIndex\(.*\) was built from another corpus.*rebuild it"):
        model.retriever(path, num_results=2, corpus=lambda: iter(edited))(TOPICS)
    with pytest.raises(CorpusChanged):  # nor is the run saved with the old corpus read back
        retriever = model.retriever(path, num_results=2, corpus=lambda: iter(edited))
        SavedRun(retriever, tmp_path / "runs", verbose=False)(TOPICS)


# -- 4. the Ray-built index records the weights ------------------------------------------------------------------------
class _LocalBlocks:
    """The part of ``on_ray(model)`` that ``build_index`` uses, run in this process."""

    def __init__(self, model):
        self.transformer, self.blocks = model, 0

    def run_blocks(self, model, mode, payloads, n_blocks):
        for n, strings in payloads:
            self.blocks += 1
            yield n, model.encode_passages(strings, fill_cache=False, progress=False)


def test_4_a_sharded_index_records_the_weights_and_rebuilds_their_shards(tiny, tmp_path):
    from pyterrier_instruct.scale.dense import build_index
    folder = tmp_path / "bert"
    shutil.copytree(tiny["bert"], folder)
    model = pti.BiEncoder(str(folder), verbose=False)
    build_index(_LocalBlocks(model), iter(DOCS), str(tmp_path / "index"), shard_size=1, keep_shards=True)
    meta = json.loads((tmp_path / "index" / "meta.json").read_text())
    assert meta["revision"] == model.revision() and meta["corpus"].startswith("3:")
    _resave(folder)
    retrained = pti.BiEncoder(str(folder), verbose=False)
    with pytest.raises(ValueError, match="was built with revision digest:.* of the weights, the model now has"):
        retrained.retriever(str(tmp_path / "index"), num_results=2)(TOPICS)
    wrapper = _LocalBlocks(retrained)
    build_index(wrapper, iter(DOCS), str(tmp_path / "index"), overwrite=True, shard_size=1)
    assert wrapper.last_index == {"shards": 3, "reused": 0, "encoded": 3}  # no shard of the old weights reused
    assert len(retrained.retriever(str(tmp_path / "index"), num_results=2)(TOPICS)) == 2


def test_4_an_index_without_a_weights_revision_is_refused(tiny, tmp_path):
    model = pti.BiEncoder(tiny["bert"], verbose=False)
    model.index(DOCS, str(tmp_path / "index"))
    meta = json.loads((tmp_path / "index" / "meta.json").read_text())
    del meta["revision"]  # as on_ray(model).index wrote it before
    (tmp_path / "index" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="records no revision of the weights it was built with"):
        model.retriever(str(tmp_path / "index"), num_results=2)(TOPICS)


# -- 5. saved runs keyed on exact topic values -------------------------------------------------------------------------
def test_5_topics_differing_inside_a_long_vector_get_different_runs(mini):
    system = mini.candidates() >> pti.PoolBM25()
    a = np.zeros(4096, dtype=np.float32)
    b = a.copy()
    b[2048] = 1.0
    assert str(a) == str(b)  # numpy abbreviates both to the same text
    topics = mini.get_topics().iloc[:1]
    key_a = run_key(system, topics.assign(query_vec=[a]))
    assert key_a != run_key(system, topics.assign(query_vec=[b]))
    assert key_a == run_key(system, topics.assign(query_vec=[a.copy()]))


# -- 6. opening the doc cache reads only what is looked up: tests/test_dense_store.py -------------------------------


# -- 8. killed SavedRun writers leave nothing behind -------------------------------------------------------------------
_KILLED_WRITER = """
import os, signal, sys
sys.path.insert(0, {root!r})
import pyterrier as pt
import pyterrier_instruct as pti
mini = pti.load_dataset("instruct-mini")
def killed(*args, **kwargs):  # the process dies between writing the parquet file and the TREC file
    os.kill(os.getpid(), signal.SIGKILL)
pt.io.write_results = killed
pti.SavedRun(mini.candidates() >> pti.PoolBM25(), {directory!r}, verbose=False)(mini.get_topics().iloc[:2])
"""


def test_8_the_next_writer_removes_a_killed_writers_temporary_files(mini, tmp_path):
    code = _KILLED_WRITER.format(root=str(Path(__file__).resolve().parents[1]), directory=str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent)] + sys.path)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    left = [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    assert left, "the killed writer left no temporary file: the fault was not injected"
    SavedRun(mini.candidates() >> pti.PoolBM25(), tmp_path, verbose=False)(mini.get_topics().iloc[2:4])
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []  # the next writer removed them
    m = re.search(r"\.([0-9a-f]{8})-(\d+)-[0-9a-f]{8}\.partial$", left[0])
    live = tmp_path / f"{left[0][:m.start()]}.{m.group(1)}-{os.getpid()}-0000abcd.partial"
    other_host = tmp_path / f"{left[0][:m.start()]}.{'0' * 8}-{m.group(2)}-0000abcd.partial"
    for p in (live, other_host):
        p.write_bytes(b"a writer's file")
    assert sweep_partials(str(tmp_path)) == 0 and live.exists() and other_host.exists()  # alive, or not ours to judge


# -- 9. hostile JSON lines ---------------------------------------------------------------------------------------------
def test_9_deep_nesting_and_duplicate_ids_name_file_and_line(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    good = '{"_id": "d1", "text": "fine"}\n'
    corpus.write_text(good + '{"_id": "d2", "text": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    with pytest.raises(DataError, match=rf"{corpus}:2: JSON nested too deeply to parse"):
        list(DocStore(corpus))
    with pytest.raises(DataError, match=rf"{corpus}:2: JSON nested too deeply"):
        list(iter_jsonl(corpus))
    corpus.write_text(good + '{"_id": "d2", "text": "two ids", "_id": "d3"}\n')
    with pytest.raises(DataError, match=rf"{corpus}:2: the key '_id' occurs twice in one object; keep one"):
        list(DocStore(corpus))
    with pytest.raises(DataError, match="'_id' occurs twice"):
        DocStore(corpus).get_many(["d2"])  # the lookup index reads the same id as iteration, or none


# -- 10. a symlinked sub-folder is part of a revision ------------------------------------------------------------------
def test_10_a_symlinked_sub_folder_changes_the_revision(tmp_path):
    data, outside = tmp_path / "dataset", tmp_path / "elsewhere"
    data.mkdir()
    outside.mkdir()
    (data / "queries.jsonl").write_text("{}\n")
    (outside / "corpus.jsonl").write_text('{"_id": "1", "text": "a"}\n')
    os.symlink(outside, data / "corpus", target_is_directory=True)
    os.symlink(data, outside / "loop", target_is_directory=True)  # a cycle is walked once
    before = path_revision(str(data))
    (outside / "corpus.jsonl").write_text('{"_id": "1", "text": "b, edited"}\n')
    assert path_revision(str(data)) != before


# -- 12. report.json is replaced whole ---------------------------------------------------------------------------------
def test_12_a_truncated_report_is_set_aside_and_a_failed_write_keeps_the_old_one(tmp_path, monkeypatch, caplog):
    report = tmp_path / "report.json"
    report.write_text('{"command": "followir", "tables": {"followir": {"tit')  # a kill or a full disk mid-write
    assert read_report(str(report)) == {}
    assert (tmp_path / "report.json.damaged").exists() and not report.exists() and "unreadable" in caplog.text
    from pyterrier_instruct import _atomic
    _atomic.write_json(str(report), {"command": "followir"})

    def full_disk(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(_atomic.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        _atomic.write_json(str(report), {"command": "ifir", "tables": {}})
    assert read_report(str(report)) == {"command": "followir"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.json.damaged"]  # no temporary file
