"""mxbai-rerank-v2 against AnswerDotAI ``rerankers``' own ranker (``MxBaiV2Ranker``, rerankers 0.10.0) on the same tiny
random Qwen2 weights (``tiny_models.tiny_qwen(kind='qwen2')``), one query (and its instruction) per ``rank`` call."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pyterrier_instruct as pti

LONG = " ".join(["the fox jumps over a lazy dog while the reader keeps on reading"] * 20)
FRAME = pd.DataFrame({
    "qid": ["1", "1", "1", "2", "2", "2", "3", "3"],
    "query": ["who wrote hamlet"] * 6 + ["tea brewing"] * 2,
    "instruction": ["", "", "", "Documents about plays are relevant.", "Documents about plays are relevant.",
                    "Documents about plays are relevant.", "Only green tea.", "Only green tea."],
    "docno": ["a", "b", "c", "a", "b", "c", "d", "e"],
    "text": ["Shakespeare wrote Hamlet.", LONG, "no", "Shakespeare wrote Hamlet.", LONG, "no",
             "Green tea is brewed cool.", "x"],
})


def prepare_for_model_v4(ids, pair_ids, *, truncation, max_length, add_special_tokens, **_):
    """transformers 4's ``prepare_for_model`` for the one call rerankers 0.10.0 makes (removed in transformers 5): no
    special tokens, ``truncation='only_second'`` drops the excess from the end of the second sequence (if long)."""
    assert truncation == "only_second" and not add_special_tokens
    excess = len(ids) + len(pair_ids) - max_length
    if 0 < excess <= len(pair_ids):
        pair_ids = pair_ids[:len(pair_ids) - excess]
    return {"input_ids": list(ids) + list(pair_ids)}


def rerankers_scores(path, frame, **kwargs):
    """Scores of ``rerankers``' ranker, one ``rank`` call per query with that query's instruction, in frame order."""
    pytest.importorskip("rerankers", reason="AnswerDotAI rerankers (the test extra) is the reference")
    from rerankers.models.mxbai_v2 import MxBaiV2Ranker
    ranker = MxBaiV2Ranker(path, device="cpu", dtype="float32", verbose=0, **kwargs)
    if not hasattr(type(ranker.tokenizer), "prepare_for_model"):
        ranker.tokenizer.prepare_for_model = prepare_for_model_v4
    scores = pd.Series(np.nan, index=frame.index)
    for _, group in frame.groupby("qid", sort=False):
        result = ranker.rank(group["query"].iloc[0], list(group["text"]), doc_ids=list(group.index),
                             instruction=group["instruction"].iloc[0] or None)
        for r in result.results:
            scores[r.document.doc_id] = r.score
    return scores.to_numpy()


@pytest.mark.parametrize("max_length", [8192, 48])
def test_mxbai_equals_rerankers(qwen, max_length):
    ref = rerankers_scores(qwen["qwen2"], FRAME, max_length=max_length)
    for kwargs in (dict(batch_size=3), dict(batch_size=1), dict(batch_size=4, share_prefix=True)):
        model = pti.MxbaiRerankV2(qwen["qwen2"], max_length=max_length, verbose=False, **kwargs)
        out = model(FRAME)
        assert np.abs(out["score"].to_numpy() - ref).max() < 1e-4, kwargs
        for _, g in out.groupby("qid"):
            assert (np.argsort(-g["score"].to_numpy(), kind="stable") == np.argsort(-ref[g.index], kind="stable")).all()
        assert (model.truncated > 0) == (max_length < 100)
    assert not np.allclose(ref[:3], ref[3:6])  # the instruction is read


def test_mxbai_score_conventions_and_presets(qwen):
    diff = pti.MxbaiRerankV2(qwen["qwen2"], verbose=False)(FRAME)["score"].to_numpy()
    prob = pti.MxbaiRerankV2(qwen["qwen2"], score="prob", verbose=False)(FRAME)["score"].to_numpy()
    assert np.allclose(prob, 1 / (1 + np.exp(-diff)), atol=1e-6)
    assert repr(pti.MxbaiRerankV2.large(batch_size=4)) == "MxbaiRerankV2.large(batch_size=4)"
    assert pti.MxbaiRerankV2().model_name_or_path == "mixedbread-ai/mxbai-rerank-base-v2"
