"""The bundled ``infosearch-mini`` benchmark: read from the package data by the InfoSearch reader, its exact size, the
three modes, one gold and two negatives per instance, and finite InfoSearch measures for pool rerankers."""
import numpy as np
import pyterrier as pt
import pytest

import pyterrier_instruct as pti

INSTANCES, DOCS, CANDIDATES = 12, 20, 5
MODES = ("og", "changed", "reversed")


@pytest.fixture(scope="module")
def ds():
    return pti.load_dataset("infosearch-mini")


def test_sizes(ds):
    info = ds.info()
    assert info["layout"] == "infosearch" and info["dropped_without_og_qrels"] == []
    assert info["topics"] == 3 * INSTANCES and info["base_queries"] == INSTANCES
    assert len(list(ds.get_corpus_iter())) == DOCS
    results = ds.get_results()
    assert len(results) == 3 * INSTANCES * CANDIDATES
    assert results.groupby("qid").size().eq(CANDIDATES).all()
    qrels = ds.get_qrels()
    assert qrels.groupby("variant").size().to_dict() == {m: 3 * INSTANCES for m in MODES}
    # og: the three formats of the core query; changed: the gold only; reversed: the two other formats
    assert qrels.groupby("variant")["label"].sum().to_dict() == {"og": 3 * INSTANCES, "changed": INSTANCES,
                                                                 "reversed": 2 * INSTANCES}
    # Robustness groups: the instances of one core query share the id before "_"
    assert ds.get_topics("og")["base_qid"].str.split("_").str[0].value_counts().eq(3).all()


def test_three_modes(ds):
    topics = ds.get_topics()
    assert topics["variant"].value_counts().to_dict() == {m: INSTANCES for m in MODES}
    for mode in MODES:
        part = ds.get_topics(mode)
        assert len(part) == INSTANCES and part["qid"].str.endswith(f"-{mode}").all()
    og, changed, reversed_ = (ds.get_topics(m).reset_index(drop=True) for m in MODES)
    assert (og["instruction"] == "").all()
    assert changed["instruction"].str.startswith("I want ").all()
    # as in the released data, the reversed instruction starts with the core query verbatim
    assert all(r.startswith(q + " I do not want ") for q, r in zip(reversed_["query"], reversed_["instruction"]))
    assert (og["query"] == changed["query"]).all() and (og["query"] == reversed_["query"]).all()
    assert pt.get_dataset("instruct:infosearch-mini").get_topics().equals(topics)


def test_partitions(ds):
    part = ds.partitions()
    assert set(part["qid"]) == set(ds.get_topics("og")["base_qid"])
    roles = part.groupby("qid")["role"].value_counts().unstack(fill_value=0)
    assert (roles["positive"] == 1).all() and (roles["negative"] == 2).all()
    gold = part[part["role"] == "positive"].set_index("qid")["docno"]
    changed = ds.get_qrels("changed")
    relevant = changed[changed["label"] > 0].set_index("base_qid")["docno"]
    assert gold.sort_index().equals(relevant.rename_axis("qid").sort_index())
    # every judged document is a candidate of its instance, and each pool also holds unjudged on-topic documents
    cands = ds.get_results("og").assign(qid=lambda f: f["qid"].str.removesuffix("-og"))
    pairs = set(zip(cands["qid"], cands["docno"]))
    assert all((q, d) in pairs for q, d in zip(part["qid"], part["docno"]))
    assert len(pairs) > len(part)


def test_report_is_finite_and_not_degenerate(ds):
    systems = {"candidates": ds.candidates(), "PoolBM25": ds.candidates() >> pti.PoolBM25()}
    report = pti.infosearch_report(systems, {"mini": ds}).set_index("Model")
    assert np.isfinite(report.to_numpy(dtype=float)).all()
    # the fixed candidate order is the same in every mode: no instruction sensitivity at all
    assert report.loc["candidates", ["Avg WISE", "Avg SICR", "Avg p-MRR"]].tolist() == [0.0, 0.0, 0.0]
    # PoolBM25 matches the wanted format but ignores "not": it lifts the gold in both instructed modes
    assert report.loc["PoolBM25", ["Avg WISE", "Avg SICR", "Avg p-MRR"]].tolist() == [-34.9, 0.0, 13.8]
    assert report.loc["PoolBM25", "Avg R_changed"] < report.loc["PoolBM25", "Avg R_og"]
