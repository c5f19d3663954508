"""Index folders (issue 42, item 6): a build replaces its folder whole and touches only the names it made (never a
sibling index such as ``bm25.stemmed`` or that index's build in progress); a build killed at any step leaves the
previous folder or the new one; docnos that an engine's files cannot hold are refused at build, naming the docno, and
the others come back whole (Anserini keeps every docno: tests/test_anserini.py)."""
import os
import re
import select
import signal
import subprocess
import sys

import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct import _atomic
from pyterrier_instruct.retrieval.pisa import bm25_index

#: one build of ``argv[2]`` holding the files ``a`` and ``b`` (text ``argv[3]``) with :mod:`_atomic` loaded from its
#: file (no package import: a child starts in a tenth of a second), killed just before its ``argv[4]``-th call of the
#: ``os`` functions below (a build that makes fewer calls finishes)
KILLED_BUILD = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("_atomic", sys.argv[1])
atomic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atomic)
calls, kill_at = [0], int(sys.argv[4])
def counted(call):
    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return call(*args, **kwargs)
    return wrapper
for name in ("open", "mkdir", "rename", "replace", "rmdir", "unlink", "fsync"):
    setattr(os, name, counted(getattr(os, name)))
with atomic.replaced_folder(sys.argv[2]) as tmp:
    for name in ("a", "b"):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(sys.argv[3])
"""


def _replace(path, text):
    with _atomic.replaced_folder(str(path)) as tmp:
        for name in ("a", "b"):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)


def _folder(path) -> str:
    """The text both files of the folder hold (a folder of the two files, whole), else what is wrong."""
    if not os.path.isdir(path):
        return "missing"
    texts = {n: open(os.path.join(path, n)).read() for n in sorted(os.listdir(path))}
    return texts["a"] if sorted(texts) == ["a", "b"] and len(set(texts.values())) == 1 else f"mixed {texts}"


def test_a_build_touches_only_the_names_it_made(tmp_path):
    path = tmp_path / "bm25"
    others = ["bm25.stemmed", "bm25.stemmed.123-abcdef01.partial", "bm25.stemmed.123-abcdef01.old",  # a sibling index
              "bm25.1-2.partial", "bm25.backup.old", "bm25.123-abcdef01.partial.keep", "bm25.123-ABCDEF01.partial"]
    for name in others:
        (tmp_path / name).mkdir()
    (tmp_path / "bm25.99-0123abcd.partial").mkdir()  # what a killed builder of bm25 leaves: removed
    _replace(path, "one")
    _replace(path, "two")
    assert _folder(path) == "two" and sorted(os.listdir(tmp_path)) == sorted(others + ["bm25", "bm25.lock"])


SIBLING_BUILD = """
import os, sys
import pandas as pd
import pyterrier_instruct as pti
def corpus():
    yield {"docno": "s0", "text": "stemmed words"}
    os.write(int(sys.argv[2]), b"building")  # PISA's log hides descriptors 1 and 2 while it indexes
    sys.stdin.readline()  # the parent builds the index beside this one meanwhile
    yield {"docno": "s1", "text": "gamma stemmed words"}
bm25 = pti.BM25(corpus(), path=sys.argv[1], verbose=False)
print(bm25(pd.DataFrame({"qid": ["1"], "query": ["gamma"]}))["docno"].tolist())
"""


def test_building_an_index_leaves_a_sibling_index_being_built(tmp_path):
    """``bm25`` is built while ``bm25.stemmed`` is being built by another process (its partial folder beside): that
    build survives and completes (before: its partial folder was removed and PISA died with SIGABRT)."""
    signal_r, signal_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", SIBLING_BUILD, str(tmp_path / "bm25.stemmed"), str(signal_w)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             pass_fds=(signal_w,))
    os.close(signal_w)
    try:
        assert select.select([signal_r], [], [], 300)[0] and os.read(signal_r, 8) == b"building", child.stderr.read()
        assert [n for n in os.listdir(tmp_path) if n.endswith(".partial")], "the sibling's build in progress"
        docs = [{"docno": "d0", "text": "plain words"}, {"docno": "d1", "text": "delta plain words"}]
        bm25 = pti.BM25(iter(docs), path=str(tmp_path / "bm25"), verbose=False)
        assert bm25.search("delta")["docno"].tolist() == ["d1"]
        out, err = child.communicate("go\n", timeout=300)
    finally:
        os.close(signal_r)
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err[-3000:]
    assert out == "['s1']\n"
    assert sorted(os.listdir(tmp_path)) == ["bm25", "bm25.lock", "bm25.stemmed", "bm25.stemmed.lock"]


def test_a_build_killed_at_every_step_leaves_the_previous_folder_or_the_new(tmp_path):
    """A child build of B over A, killed before each of its file-system calls in turn: a reader (:func:`settled`) finds
    A or B whole, and the next build removes what the killed one left."""
    path, seen = tmp_path / "f", []
    for kill_at in range(1, 200):
        _replace(path, "A")
        child = subprocess.run([sys.executable, "-c", KILLED_BUILD, _atomic.__file__, str(path), "B", str(kill_at)],
                               capture_output=True, text=True, timeout=60)
        missing = not path.exists()  # killed between the swap's two renames
        assert _atomic.settled(str(path)) == str(path)
        seen.append(("-" if missing else "") + _folder(path))
        assert seen[-1] in ("A", "B", "-A"), (kill_at, seen, child.stderr[-2000:])
        _replace(path, "C")
        assert _folder(path) == "C" and sorted(os.listdir(tmp_path)) == ["f", "f.lock"], kill_at
        if child.returncode == 0:
            break
        assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    assert seen[-1] == "B" and "-A" in seen and seen.count("A") > 5, seen  # kills inside the build, and between renames


def test_a_reader_finds_the_previous_index_after_a_kill_between_the_renames(tmp_path):
    docs = [{"docno": "d0", "text": "plain words"}, {"docno": "d1", "text": "delta plain words"}]
    path = str(tmp_path / "bm25")
    pti.BM25(iter(docs), path=path, verbose=False)
    os.rename(path, path + ".123-abcdef01.old")  # as a kill between the swap's two renames leaves it
    assert pti.BM25(path=path).search("delta")["docno"].tolist() == ["d1"]
    assert sorted(os.listdir(tmp_path)) == ["bm25", "bm25.lock"]


def search_each(bm25, docs) -> list:
    """The top docno of a search for each document's own word."""
    topics = pd.DataFrame({"qid": [str(i) for i in range(len(docs))], "query": [f"word{i}" for i in range(len(docs))]})
    return bm25(topics).groupby("qid", sort=False)["docno"].first().tolist()


def _corpus(docno):
    """Five documents, the third with ``docno``."""
    return [{"docno": docno if i == 2 else f"d{i}", "text": f"word{i} common"} for i in range(5)]


@pytest.mark.parametrize("docno", ["x\ry", "x\ny", "x\r\ny", "x y", "x\ty", "", "\r"])
def test_pisa_refuses_a_docno_it_cannot_keep(tmp_path, docno):
    """PISA keeps one docno per line, cut at whitespace (before: ``x\\ry`` came back as ``x``, ``x\\ny`` as ``y``, an
    empty docno shifted every later one): refused at build, naming the document and its docno; the previous index is
    kept."""
    path = str(tmp_path / "bm25")
    before = _corpus("d2")
    pti.BM25(iter(before), path=path, verbose=False)
    message = f"BM25: corpus document #2 has docno {docno!r}, which PISA cannot keep (it cuts docnos at spaces"
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        bm25_index(iter(_corpus(docno)), path, overwrite=True, verbose=False)
    assert search_each(pti.BM25(path=path), before) == ["d0", "d1", "d2", "d3", "d4"]
    assert sorted(os.listdir(tmp_path)) == ["bm25", "bm25.lock"]


def test_pisa_keeps_a_nul_and_other_characters(tmp_path):
    docnos = ["a\0b", "\0", "é\x85\u2028", "x\x1cy", "z"]
    docs = [{"docno": d, "text": f"word{i} common"} for i, d in enumerate(docnos)]
    assert search_each(pti.BM25(iter(docs), path=str(tmp_path / "bm25"), verbose=False), docs) == docnos


def test_pisa_refuses_an_empty_corpus(tmp_path):
    with pytest.raises(ValueError, match="^BM25: the corpus holds no documents; nothing to index$"):
        pti.BM25(iter([]), path=str(tmp_path / "bm25"), verbose=False)
    assert sorted(os.listdir(tmp_path)) == ["bm25.lock"]

