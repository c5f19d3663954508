"""Messages that point at the real problem (issue 38): a dataset id written with ``:``, one-sided topics behind a paired
measure, the presets ``help()`` shows, and no scipy warning for a t-test on constant differences."""
import pydoc
import warnings

import ir_datasets
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from scipy import stats

import pyterrier_instruct as pti
from pyterrier_instruct._pt_compat import _paired_p_value
from pyterrier_instruct.datasets import UnknownDatasetError


@pytest.mark.parametrize("load, name, suggestion", [
    (pti.load_dataset, "instruct:mini", "'instruct-mini'"),  # before: no suggestion ('mini' after the prefix)
    (pti.load_dataset, "robust4", "'followir/robust04'"),    # the ids' last part: before, no suggestion
    (pt.get_dataset, "instruct:mini", "'instruct:instruct-mini'"),
    (ir_datasets.load, "instruct/mini", "'instruct/instruct-mini'"),
])
def test_unknown_ids_get_the_id_meant(load, name, suggestion):
    with pytest.raises(UnknownDatasetError, match=rf"^'{name}' is not a known dataset id; did you mean {suggestion}"):
        load(name)


def test_one_sided_topics_are_named_not_the_qrels(mini):
    with pytest.raises(ValueError,
                       match=r"^pMRR needs the topics of every variant it compares \(og, changed\): the topics "
                             r"given to pt.Experiment have variants \['og'\] only, no '<qid>-changed' "
                             r"query; pass all the variants' topics, e.g. ds.get_topics\(\) rather than "
                             r"ds.get_topics\('og'\)"):
        pt.Experiment([mini.candidates()], mini.get_topics("og"), mini.get_qrels(), [pti.pMRR])
    with pytest.raises(ValueError, match=r"^pMRR needs paired qrels with '<qid>-og' and '<qid>-changed' query ids .*"
                                         r"found variants \['og'\]"):  # the qrels are the one-sided part here
        pt.Experiment([mini.candidates()], mini.get_topics(), mini.get_qrels("og"), [pti.pMRR])
    with pytest.raises(ValueError, match=r"^InfoSearch_pMRR needs the topics of every variant"):
        pt.Experiment([mini.candidates()], mini.get_topics("og"), mini.get_qrels(), [pti.InfoSearch_pMRR])


def test_help_lists_only_the_presets_that_work():
    text = pydoc.render_doc(pti.Qwen3Reranker, renderer=pydoc.plaintext)
    for refused in ("gritlm", "llama", "llama_chat", "mistral_instruct"):  # CausalLMReranker's: Qwen3Reranker refuses
        assert f" |  {refused}(" not in text and refused not in dir(pti.Qwen3Reranker)
        with pytest.raises(AttributeError, match="is a preset of CausalLMReranker"):
            getattr(pti.Qwen3Reranker, refused)
        assert refused in dir(pti.CausalLMReranker)
    assert {"four_b", "eight_b"} <= set(dir(pti.Qwen3Reranker)) and " |  four_b(" in text
    assert {"transform", "config", "__init__"} <= set(dir(pti.Qwen3Reranker))  # everything else is still listed


def test_t_test_on_constant_differences_gives_its_limit_without_a_warning():
    s, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _paired_p_value(stats.ttest_rel, s, b) == 0.0  # every query moved by the same amount: scipy's limit
        assert np.isnan(_paired_p_value(stats.ttest_rel, s, s))  # none moved: undefined
        assert np.isnan(_paired_p_value(stats.ttest_rel, s[:0], b[:0]))
    varied = np.array([1.5, 2.0, 3.2])
    assert _paired_p_value(stats.ttest_rel, varied, b) == stats.ttest_rel(varied, b).pvalue
    with pytest.warns(RuntimeWarning, match="Precision loss"):  # what pt.Experiment printed before
        stats.ttest_rel(s, b)


def test_experiment_with_a_constant_improvement_warns_nothing(mini):
    topics, qrels = mini.get_topics(), mini.get_qrels()
    base = mini.candidates()(topics)
    # the reversed candidate order: the same lists, so each paired query moves by a fixed amount, or not at all
    flipped = base.assign(score=lambda f: f["rank"].astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = pt.Experiment([base, flipped, flipped], topics, qrels, [pti.pMRR, pti.OG(pt.measures.AP @ 1000)],
                            names=["a", "b", "c"], baseline=1)
    assert isinstance(res, pd.DataFrame) and np.isnan(res.loc[2, "pMRR p-value"])
