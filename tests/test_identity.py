"""One identity (issue 42, item 1): ``_fingerprint.fingerprint`` describes weights wherever they are found by content,
BM25 by its corpus and settings (never a temporary folder), user functions by their code and the values they read,
the same in every process; ``differing_part`` names what differs in a refused reuse."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct import _hub
from pyterrier_instruct._fingerprint import NotFingerprintable, differing_part, file_sha256, fingerprint, model_revision
from pyterrier_instruct.backends import HFBackend, OpenAIBackend
from pyterrier_instruct.datasets.dataset import InstructDataset
from pyterrier_instruct.retrieval.anserini import PyseriniBM25
from tiny_models import resave_weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = 2  # a global a function below reads


def _python(code: str, env: dict) -> str:
    """Runs ``code`` in a fresh Python process (this checkout first on the path); its stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "tests")]), **env}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# -- 1. weights --------------------------------------------------------------------------------------------------------
def test_weights_found_through_the_models_folder_are_part_of_the_fingerprint(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv(_hub.MODELS_ENV, str(tmp_path / "models"))
    folder = shutil.copytree(tiny["t5"], tmp_path / "models" / "org" / "name")
    before = fingerprint(pti.MonoT5("org/name"))
    assert "model_name_or_path='org/name'@digest:" in before
    resave_weights(folder)  # other weights at the same hub id
    after = fingerprint(pti.MonoT5("org/name"))
    old, new = differing_part(before, after).split(" → ")
    assert all(side.startswith("model_name_or_path='org/name'@digest:") for side in (old, new))
    assert old != new
    copy = shutil.copytree(folder, tmp_path / "elsewhere")  # the same content in another folder: the same digest
    assert model_revision(str(copy)) == model_revision("org/name") and model_revision(str(copy)).startswith("digest:")
    (copy / "README.md").write_text("a model card edited")  # documentation decides no output
    assert model_revision(str(copy)) == model_revision("org/name")


def test_a_hub_cache_snapshot_is_described_by_its_blob_names(tmp_path, monkeypatch):
    weights, config = b"the weights", b"{}"
    repo = tmp_path / "hub" / "models--org--hub"
    (repo / "blobs").mkdir(parents=True)
    sha = hashlib.sha256(weights).hexdigest()
    (repo / "blobs" / sha).write_bytes(b"never read: an LFS blob is named by its SHA-256")
    (repo / "blobs" / ("c" * 40)).write_bytes(config)  # a small file's blob is named by its git sha1: read
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    os.symlink(f"../../blobs/{sha}", snapshot / "model.safetensors")
    os.symlink(f"../../blobs/{'c' * 40}", snapshot / "config.json")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "model.safetensors").write_bytes(weights)
    (plain / "config.json").write_bytes(config)
    assert _hub.weights_folder("org/hub") == str(snapshot)
    assert model_revision("org/hub") == model_revision(str(plain)) == model_revision(str(snapshot))
    assert "'org/hub'@digest:" in fingerprint(pti.MonoT5("org/hub"))


def test_a_file_is_hashed_once_per_change(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTERRIER_INSTRUCT_CACHE", str(tmp_path / "cache"))
    file = tmp_path / "weights.bin"
    file.write_bytes(b"aaaa")
    os.utime(file, ns=(10 ** 18, 10 ** 18))  # saved long ago: settled
    first = file_sha256(str(file))
    assert first == hashlib.sha256(b"aaaa").hexdigest()
    with open(file, "r+b") as f:  # rewritten in place, its size, inode and time put back: the memo answers
        f.write(b"bbbb")
    os.utime(file, ns=(10 ** 18, 10 ** 18))
    assert file_sha256(str(file)) == first
    code = f"from pyterrier_instruct._fingerprint import file_sha256; print(file_sha256({str(file)!r}))"
    assert _python(code, {"PYTERRIER_INSTRUCT_CACHE": str(tmp_path / "cache")}).strip() == first  # remembered on disk
    os.utime(file, ns=(10 ** 18 + 1, 10 ** 18 + 1))  # changed since: hashed again
    assert file_sha256(str(file)) == hashlib.sha256(b"bbbb").hexdigest()
    fresh = tmp_path / "fresh.bin"  # written just now: not remembered (it may change again within the same time tick)
    fresh.write_bytes(b"cccc")
    stat = os.stat(fresh)
    assert file_sha256(str(fresh)) == hashlib.sha256(b"cccc").hexdigest()
    fresh.write_bytes(b"dddd")
    os.utime(fresh, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_sha256(str(fresh)) == hashlib.sha256(b"dddd").hexdigest()


# -- 2. BM25 by corpus and settings ------------------------------------------------------------------------------------
README_SYSTEMS = """
    import json
    import numpy as np
    import pyterrier as pt
    import pyterrier_instruct as pti
    from pyterrier_instruct._fingerprint import fingerprint

    ds = pti.load_dataset("instruct-mini")
    bm25 = pti.BM25(ds.get_corpus_iter(), verbose=False)
    minilm = pti.SBertBiEncoder.all_minilm_l6_v2()
    factor = 3
    systems = [pti.FoldInstruction() >> bm25, bm25 % 20 >> ds.text_loader() >> minilm, ds.candidates() >> minilm,
               ds.candidates() >> pti.PoolBM25(),
               bm25 >> pt.apply.generic(lambda df: df.assign(score=np.log1p(df.score) * factor)),
               pti.ListwiseReranker(pti.FunctionBackend(lambda prompt: "[1] > [2]"), window_size=4, stride=2)]
    print(json.dumps([fingerprint(s) for s in systems]))
"""


def test_the_readme_systems_have_one_fingerprint_in_two_fresh_processes(tmp_path):
    env = {"PYTERRIER_INSTRUCT_CACHE": str(tmp_path / "cache")}
    first, second = (json.loads(_python(README_SYSTEMS, env).strip().splitlines()[-1]) for _ in range(2))
    assert first == second
    text = "\n".join(first)
    assert "pti-pisa" not in text and " at 0x" not in text and "'/tmp" not in text.replace(ROOT, "")
    assert "BM25(index=pyterrier_pisa.PisaIndex(revision='index:" in first[0]
    assert "globals={'factor': 3, 'np': module('numpy', numpy==" in first[4]


def test_a_bm25_index_is_identified_by_its_content_not_its_path(mini, tmp_path):
    docs = list(mini.get_corpus_iter())
    built = fingerprint(pti.BM25(docs, path=str(tmp_path / "a"), verbose=False))
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert fingerprint(pti.BM25(path=str(tmp_path / "b"))) == built
    assert fingerprint(pti.BM25(docs[1:], path=str(tmp_path / "c"), verbose=False)) != built  # another corpus
    assert fingerprint(pti.BM25(path=str(tmp_path / "b"), k1=1.2)) != built
    os.remove(tmp_path / "b" / "corpus.json")  # an index built elsewhere, without a corpus record: by its files
    shutil.copytree(tmp_path / "b", tmp_path / "d")
    plain = fingerprint(pti.BM25(path=str(tmp_path / "b")))
    pti.BM25(path=str(tmp_path / "b"))(mini.get_topics().iloc[:2])  # derives per-scorer files in the folder
    assert fingerprint(pti.BM25(path=str(tmp_path / "b"))) == plain == fingerprint(pti.BM25(path=str(tmp_path / "d")))
    assert str(tmp_path) not in plain


def _lucene(folder, segments: bytes, corpus: str) -> PyseriniBM25:
    os.makedirs(folder)
    with open(os.path.join(folder, "segments_3"), "wb") as f:
        f.write(segments)
    with open(str(folder) + ".corpus.json", "w") as f:
        json.dump({"corpus": corpus, "fields": ["text", "title"]}, f)
    bm25 = object.__new__(PyseriniBM25)  # no Java needed to read its identity
    bm25.path, bm25.k1, bm25.b, bm25.num_results = str(folder), 0.9, 0.4, 1000
    return bm25


def test_an_anserini_index_is_identified_by_its_corpus_not_its_path(tmp_path):
    one = fingerprint(_lucene(tmp_path / "x" / "index", b"segment ids 1", "3:abc"))
    assert fingerprint(_lucene(tmp_path / "y" / "index", b"segment ids 2", "3:abc")) == one  # rebuilt elsewhere
    assert fingerprint(_lucene(tmp_path / "z" / "index", b"segment ids 1", "4:def")) != one
    assert "index=" in one and str(tmp_path) not in one


# -- 3. functions ------------------------------------------------------------------------------------------------------
def _scaled(df):
    return df.assign(score=df.score * SCALE)


def _factorial(n):
    return 1 if n <= 1 else n * _factorial(n - 1)


def test_functions_are_fingerprinted_by_code_closure_defaults_and_globals(monkeypatch):
    two, three = (pt.apply.generic(lambda df: df.assign(score=df.score * 2)),
                  pt.apply.generic(lambda df: df.assign(score=df.score * 3)))
    assert fingerprint(two) != fingerprint(three)
    assert fingerprint(two) == fingerprint(pt.apply.generic(lambda df: df.assign(score=df.score * 2)))

    def times(k):
        return pt.apply.doc_score(lambda row: row["score"] * k)
    assert differing_part(fingerprint(times(2)), fingerprint(times(3))) == "'k': 2 → 'k': 3"
    assert fingerprint(lambda x, k=1: x * k) != fingerprint(lambda x, k=2: x * k)
    assert fingerprint(lambda x: (lambda y: y * 2)(x)) != fingerprint(lambda x: (lambda y: y * 3)(x))  # nested code
    before = fingerprint(pt.apply.generic(_scaled))
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3)  # a global it reads
    assert differing_part(before, fingerprint(pt.apply.generic(_scaled))) == "'SCALE': 2 → 'SCALE': 3"
    assert "function('_factorial', recursive)" in fingerprint(_factorial)
    table = {str(i): i for i in range(1000)}  # a captured table: by the digest of its text, the fingerprint stays short
    captured = fingerprint(lambda qid: table[qid])
    table["0"] = -1
    assert len(captured) < 300 and fingerprint(lambda qid: table[qid]) != captured
    assert fingerprint(pti.FunctionBackend(lambda p: "a")) != fingerprint(pti.FunctionBackend(lambda p: "b"))
    # an explicit name= is the caller's key (as identity= of the caches, key= of SavedRun): the function's state no part
    assert fingerprint(pti.FunctionBackend(lambda p: "a", name="x")) == \
        fingerprint(pti.FunctionBackend(lambda p: "b", name="x"))
    assert fingerprint(pti.FunctionBackend(lambda p: "a", name="x")) != \
        fingerprint(pti.FunctionBackend(lambda p: "a", name="y"))


def test_what_cannot_be_read_is_not_fingerprintable():
    with pytest.raises(NotFingerprintable, match="a C function has no code to read"):
        fingerprint(pt.apply.doc_score(np.negative))
    state = object()
    with pytest.raises(NotFingerprintable, match=r"<object object>: a object has no content fingerprint .*read by the "
                                                 r"function .*<lambda>"):
        fingerprint(pt.apply.generic(lambda df: df.assign(x=id(state))))


# -- 4. one identity ---------------------------------------------------------------------------------------------------
def test_backends_and_datasets_have_one_identity(mini, tiny, tmp_path):
    assert not hasattr(InstructDataset, "identity")
    assert mini.candidates() == mini.candidates() and mini.exclude() == mini.exclude()
    folder = shutil.copytree(tiny["mistral"], tmp_path / "judge")
    backend = fingerprint(HFBackend(str(folder)))
    assert backend == fingerprint(HFBackend(str(folder), batch_size=2)) and "@digest:" in backend  # answers, not speed
    resave_weights(folder)
    assert fingerprint(HFBackend(str(folder))) != backend
    api = fingerprint(OpenAIBackend("gpt-4o-mini", api_key_env=None, check_model=False))
    assert "@" not in api and api == fingerprint(OpenAIBackend("gpt-4o-mini", api_key_env=None, check_model=False,
                                                               concurrency=2))


# -- 5. explaining a refused reuse -------------------------------------------------------------------------------------
@pytest.mark.parametrize("old, new, named", [
    ("A(q='a)b', k=10)", "A(q='a)b', k=20)", "k=10 → k=20"),
    ("A(q='x, (y', k=1)", "A(q='x, (z', k=1)", "q='x, (y' → q='x, (z'"),
    (r"A(q='it\'s, [x', k=1)", r"A(q='it\'s, [x', k=2)", "k=1 → k=2"),
    ("C(t=[A(k=10), B(m=1)])", "C(t=[A(k=20), B(m=1)])", "k=10 → k=20"),
    ("M(model_name_or_path='x'@digest:aaa, b=1)", "M(model_name_or_path='x'@digest:bbb, b=1)",
     "model_name_or_path='x'@digest:aaa → model_name_or_path='x'@digest:bbb"),
    ("A(k=1)", "A(k=1, b=2)", "A(k=1) → A(k=1, b=2)"),
    ("A(k=1)", "A(k=1)", ""),
])
def test_differing_part_names_the_argument(old, new, named):
    assert differing_part(old, new) == named
