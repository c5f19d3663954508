"""p-MRR inside pt.Experiment on paired topics: same value as the function, per-query, significance."""
import warnings

import ir_measures
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti


@pytest.fixture(scope="module")
def runs(mini):
    pool = mini.candidates()
    return {"PoolBM25": pool >> pti.PoolBM25(), "BM25+instr": pti.FoldInstruction() >> pti.BM25(mini.get_corpus_iter())}


def _function_value(system, mini):
    r = system(mini.get_topics())
    og, ch = r[r.variant == "og"], r[r.variant == "changed"]
    return pti.pmrr(og.assign(qid=og.base_qid), ch.assign(qid=ch.base_qid), mini.changed_docs(), per_query=True)


def test_experiment_pmrr_equals_function(mini, runs):
    res = pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), [pti.pMRR], names=list(runs))
    for name, system in runs.items():
        value, _ = _function_value(system, mini)
        assert res.set_index("name").loc[name, "pMRR"] == pytest.approx(value, abs=1e-12)


def test_experiment_perquery_and_significance(mini, runs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pq = pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), [pti.pMRR], names=list(runs), perquery=True)
    pool = pq[(pq.name == "PoolBM25") & pq.value.notna()]
    _, per_query = _function_value(runs["PoolBM25"], mini)
    assert dict(zip(pool.qid.str.removesuffix("-og"), pool.value)) == pytest.approx(per_query, abs=1e-12)
    res = pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), [pti.pMRR, pti.OG("AP@1000")],
                        names=list(runs), baseline=0)
    assert {"pMRR p-value", "OG(measure=AP@1000) p-value"} <= set(res.columns)
    assert 0 <= res.loc[1, "pMRR p-value"] <= 1
    assert res.loc[1, "pMRR +"] + res.loc[1, "pMRR -"] <= len(per_query)  # paired on base queries, n = 10


def test_og_measure_equals_standard_measure_on_og_qrels(mini, runs):
    res = pt.Experiment([runs["PoolBM25"]], mini.get_topics(), mini.get_qrels(), [pti.OG("AP@1000"), pti.OG("nDCG@5")])
    run = runs["PoolBM25"](mini.get_topics("og"))
    want = pt.Experiment([pt.Transformer.from_df(run)], mini.get_topics("og"), mini.get_qrels("og"),
                         [ir_measures.AP @ 1000, ir_measures.nDCG @ 5])
    assert res["OG(measure=AP@1000)"][0] == pytest.approx(want["AP@1000"][0], abs=1e-12)
    assert res["OG(measure=nDCG@5)"][0] == pytest.approx(want["nDCG@5"][0], abs=1e-12)


def test_followir_experiment_helper(mini, runs):
    means, pq = pti.followir_experiment(list(runs.values()), mini, list(runs), perquery="both")
    assert list(means.name) == list(runs) and pq.qid.str.endswith("-og").all() and not pq.value.isna().any()
    value, _ = _function_value(runs["PoolBM25"], mini)
    assert means.set_index("name").loc["PoolBM25", "pMRR"] == pytest.approx(value, abs=1e-12)
    table = pti.followir_table({"mini": (mini, means)})
    assert list(table.columns) == ["Model", "mini MAP@1000", "mini p-MRR"]
    assert table.loc[0, "mini p-MRR"] == round(100 * value, 1)
    two = pti.followir_table({"a": (mini, means), "b": (mini, means)})
    assert two["Avg p-MRR"].tolist() == two["a p-MRR"].tolist()
    with pytest.raises(ValueError, match="batch_size"):
        pti.followir_experiment(list(runs.values()), mini, batch_size=4)


def test_ties_input_uses_run_row_order():
    # all scores tied: docno ties rank "b" before "a"; input ties keep the candidate order.
    run = pd.DataFrame({"qid": ["1-og", "1-og", "1-changed", "1-changed"], "docno": ["a", "b", "b", "a"], "score": [0.0] * 4})
    qrels = pti.paired_qrels({"og": pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [1]}),
                              "changed": pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [0]})})
    ir_run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    assert ir_measures.calc_aggregate([pti.pMRR], ir_qrels, ir_run)[pti.pMRR] == 0.0
    assert ir_measures.calc_aggregate([pti.pMRR(ties="input")], ir_qrels, ir_run)[pti.pMRR(ties="input")] == 0.5


def test_followir_experiment_names_a_system_that_skips_paired_topics(mini):
    pool = mini.candidates() >> pti.PoolBM25()
    drops = pool >> pt.apply.generic(lambda r: r[~r["qid"].isin(["102-changed", "108-og"])])
    with pytest.warns(UserWarning, match="lack their -og or -changed run"), \
            pytest.raises(ValueError, match="a system returned no documents for some -og/-changed topics of instruct-mini"):
        pti.followir_experiment([pool, drops], mini, names=["full", "drops"])
