"""First stages: PISA BM25 (robust to any instruction text) and the FollowIR PoolBM25 baseline."""
import string

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from nltk.stem import PorterStemmer
from rank_bm25 import BM25Okapi

import pyterrier_instruct as pti
from pyterrier_instruct.retrieval.pool_bm25 import FollowIRCleaner, nltk_english_stopwords

NASTY = [
    'dams "three gorges": (china) +fish -salmon ^2 ~3 * wild?card',
    "AND OR NOT #combine(dam) field:value [a TO b] {x} <y> a&&b a||b !c",
    "日本のダム 三峡大坝 😀🐟 ümlaut café naïve",
    "tab\tnew\nline\rcarriage \x00 nul \x1b esc",
    "\\ / ? ! @ % = | ` ' ;",
    "",
    "   ",
    " ".join(["instruction"] * 5000),
]


@pytest.mark.parametrize("instruction", NASTY, ids=range(len(NASTY)))
def test_bm25_never_breaks_on_instruction_text(mini_bm25, instruction):
    topics = pd.DataFrame({"qid": ["1"], "query": ["hydroelectric dams fish"], "instruction": [instruction]})
    res = (pti.FoldInstruction() >> mini_bm25 % 10)(topics)
    assert len(res) <= 10
    if len(res):
        assert res["query"].iloc[0] == pti.compose("hydroelectric dams fish", instruction)
        assert (res["instruction"] == instruction).all()
    only = (mini_bm25 % 10)(pd.DataFrame({"qid": ["1"], "query": [instruction]}))
    assert set(only.columns) >= {"qid", "docno", "score", "rank"} or len(only) == 0


def test_bm25_ranks_and_cutoff(mini, mini_bm25):
    res = (mini_bm25 % 5).search("coral reef bleaching restoration")
    assert len(res) == 5 and res["rank"].tolist() == [0, 1, 2, 3, 4]
    assert res["docno"].str.startswith("PTI-106").sum() >= 4
    assert len(mini_bm25(pd.DataFrame(columns=["qid", "query"]))) == 0
    with pytest.raises(KeyError):
        mini_bm25(pd.DataFrame({"qid": ["1"]}))


def test_bm25_pickles_by_its_index_and_runs_in_parallel(mini, mini_bm25, tiny, tmp_path):
    """BM25 pickles by its index path (PISA's native searcher is opened again in the copy), so a full pipeline runs
    with PyTerrier's ``.parallel(2)`` and gives the single-process result. The parallel run is a fresh process, as a
    user's script is: joblib's workers die in a process where an earlier test started Java (Anserini)."""
    import os
    import pickle
    import subprocess
    import sys
    from pathlib import Path
    topics = mini.get_topics().iloc[:4]
    mini_bm25(topics.iloc[:1])  # the searcher is open: it does not travel
    copy = pickle.loads(pickle.dumps(mini_bm25))
    assert repr(copy) == repr(mini_bm25) and copy._retriever is None
    pd.testing.assert_frame_equal(copy(topics), mini_bm25(topics))
    pipe = (pti.FoldInstruction() >> mini_bm25 % 10 >> mini.text_loader()
            >> pti.SBertBiEncoder(tiny["bert"], verbose=False))
    single = pipe(topics)
    (tmp_path / "in.pkl").write_bytes(pickle.dumps((pipe, topics)))
    script = ("import pickle, sys\nimport pyterrier_instruct\n"
              f"pipe, topics = pickle.loads(open({str(tmp_path / 'in.pkl')!r}, 'rb').read())\n"
              f"pipe.parallel(2)(topics).to_pickle({str(tmp_path / 'out.pkl')!r})\n")
    root = Path(__file__).parents[1]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    parallel = pd.read_pickle(tmp_path / "out.pkl")
    key = ["qid", "rank"]
    pd.testing.assert_frame_equal(parallel.sort_values(key).reset_index(drop=True)[single.columns],
                                  single.sort_values(key).reset_index(drop=True))
    assert len(single) == 4 * 10


def test_bm25_corpus_errors(tmp_path):
    with pytest.raises(KeyError, match="has no 'docno'"):
        pti.BM25([{"text": "x"}], str(tmp_path / "a"))
    with pytest.raises(KeyError, match="has no 'text' field"):
        pti.BM25([{"docno": "d1", "body": "x"}], str(tmp_path / "b"))
    with pytest.raises(FileNotFoundError, match="no PISA index"):
        pti.BM25(path=str(tmp_path / "missing"))


def _reference_followir_bm25(query, instruction, docs):
    """FollowIR models/bm25/evaluate_bm25.py, (the FollowIR repository's BM25 baseline, the oracle)."""
    stemmer, stop = PorterStemmer(), nltk_english_stopwords()

    def clean(s):
        s = s.lower()
        s = " ".join([stemmer.stem(w) for w in s.split(" ") if w not in stop])
        return s.translate(str.maketrans("", "", string.punctuation)).strip()

    corpus = [[t for t in clean(d).split(" ") if t] for d in docs]
    q = (clean(query) + " " + clean(instruction.strip())).strip()
    return BM25Okapi(corpus).get_scores([t for t in q.split(" ") if t])


def test_pool_bm25_equals_reference(mini):
    cands = mini.candidates()(mini.get_topics())
    got = pti.PoolBM25()(cands)
    assert got[["qid", "docno"]].values.tolist() == cands[["qid", "docno"]].values.tolist()  # order kept
    for qid, group in got.groupby("qid", sort=False):
        docs = (group["title"] + " " + group["text"]).str.strip().tolist()
        want = _reference_followir_bm25(group["query"].iloc[0], group["instruction"].iloc[0], docs)
        np.testing.assert_allclose(group["score"].to_numpy(), want, rtol=0, atol=1e-12)
    og = got[got.variant == "og"].set_index(["base_qid", "docno"])["score"]
    ch = got[got.variant == "changed"].set_index(["base_qid", "docno"])["score"]
    assert not np.allclose(og.sort_index(), ch.sort_index())  # the instruction is used


def test_stopwords_and_clean():
    stop = nltk_english_stopwords()
    assert len(stop) == 179 and {"the", "don't", "wouldn't", "ourselves"} <= stop and "dams" not in stop
    c = FollowIRCleaner()
    # punctuation is stripped after stemming, so attached punctuation blocks the stemmer (reference quirk)
    assert c.clean("The Dams' effects, on FISH!") == "dams effects fish"
    assert c.clean("The dams effects on fishing") == "dam effect fish"
    assert c.tokens("  the  of ") == []


def test_pool_bm25_transformer_contract(mini):
    model = pti.PoolBM25()
    empty = model(pd.DataFrame(columns=["qid", "query", "docno", "text"]))
    assert list(empty.columns) == ["qid", "query", "docno", "text", "score", "rank"] and len(empty) == 0
    assert model._cleaner is None  # nothing prepared for an empty frame
    assert "instruct" in str(pt.inspect.transformer_inputs(model)) or pt.inspect.transformer_inputs(model)
    frame = pd.DataFrame({"qid": ["1", "1"], "query": ["fish dams", "fish dams"], "docno": ["a", "b"],
                          "text": ["dams kill fish", "tourism"], "score": [5.0, 7.0], "rank": [1, 0], "extra": [1, 2]})
    out = model(frame)
    assert out["extra"].tolist() == [1, 2] and out["rank"].tolist() == [0, 1] and "instruction" not in out.columns
    assert repr(pti.PoolBM25()) == "PoolBM25()" and repr(pti.PoolBM25(k1=1.2)) == "PoolBM25(k1=1.2)"
    assert pti.PoolBM25() == pti.PoolBM25() and hash(pti.PoolBM25()) == hash(pti.PoolBM25())
    assert pti.PoolBM25(instruction="x") != pti.PoolBM25()
    with pytest.raises(KeyError):
        model(pd.DataFrame({"qid": ["1"], "docno": ["a"], "text": ["t"]}))


def test_optional_first_stages_name_what_is_missing(monkeypatch):
    import pyterrier_instruct.retrieval.optional as opt
    monkeypatch.setattr(opt.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="needs Java"):
        pti.TerrierBM25("/nonexistent")
    if not opt.is_available("pyserini"):
        with pytest.raises(ImportError, match=r"pip install 'pyterrier-instruct\[pyserini\]'"):
            pti.PyseriniBM25("/nonexistent")


def test_temporary_index_folder_is_removed_at_exit(tmp_path):
    """``pti.BM25(corpus)`` without a path indexes into a temporary folder, which the process removes when it exits;
    a folder given as ``path=`` stays."""
    import os
    import subprocess
    import sys
    kept = tmp_path / "kept"
    code = ("import pyterrier_instruct as pti\n"
            "ds = pti.load_dataset('instruct-mini')\n"
            "bm25 = pti.BM25(ds.get_corpus_iter())\n"
            f"pti.BM25(ds.get_corpus_iter(), path={str(kept)!r})\n"
            "print(bm25.index.path)\n"
            "assert len(bm25.search('dams fish')) > 0\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # mkdtemp's folder: this test's own
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    folder = done.stdout.strip().splitlines()[-1]
    assert os.path.basename(folder).startswith("pti-pisa-") and os.path.dirname(folder) == str(tmp_path)
    # the builders' lock stays
    assert not os.path.exists(folder) and sorted(p.name for p in tmp_path.iterdir()) == ["kept", "kept.lock"]
