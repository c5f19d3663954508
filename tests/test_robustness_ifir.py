"""Robustness@k against the mteb 2.26.24 vectors, and IFIR nDCG@k (code and standard normalisation)."""
import json
import math
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

from pyterrier_instruct.measures import IFIR_nDCG, Robustness, group_of, ifir_ndcg, robustness, robustness_eval

CASES = json.load(open(Path(__file__).parent / "data" / "robustness_cases.json"))["cases"]
TOL = 1e-9
ERRORS = {
    "query_in_qrels_missing_from_run": r"1 judged queries have no run \(e.g. \['1_1'\]\)",
    "run_contains_query_absent_from_qrels": r"1 run queries have no qrels \(e.g. \['2_0'\]\)",
}


def _frames(case):
    i = case["inputs"]
    run = pd.DataFrame([(q, d, float(s)) for q, docs in i["run"].items() for d, s in docs.items()],
                       columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame([(q, d, int(lab)) for q, docs in i["qrels"].items() for d, lab in docs.items()],
                         columns=["query_id", "doc_id", "relevance"])
    return qrels, run


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_robustness_reproduces_mteb(case):
    i, exp = case["inputs"], case["expected"]
    if case["name"] in ERRORS:
        with pytest.raises(ValueError, match=ERRORS[case["name"]]):
            robustness_eval(i["run"], i["qrels"])
        return
    got = robustness_eval(i["run"], i["qrels"], 10)
    assert got["robustness"] == pytest.approx(exp["robustness_at_10"], abs=TOL)
    assert got["ndcg"] == pytest.approx(exp["ndcg_at_10_unrounded"], abs=TOL)
    assert round(got["ndcg"], 5) == pytest.approx(exp["ndcg_at_10"], abs=1e-12)
    assert got["per_query"] == pytest.approx(exp["per_query_ndcg_cut_10"], abs=TOL)
    assert got["groups"] == exp["groups"]
    assert got["per_group_min"] == pytest.approx(exp["per_group_min"], abs=TOL)
    assert not set(exp["filtered_out_queries"]) & set(got["per_query"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_robustness_through_ir_measures(case):
    qrels, run = _frames(case)
    if case["name"] in ERRORS:
        with pytest.raises(ValueError, match=ERRORS[case["name"]]):
            ir_measures.calc_aggregate([Robustness @ 10], qrels, run)
        return
    exp = case["expected"]
    assert ir_measures.calc_aggregate([Robustness @ 10], qrels, run)[Robustness @ 10] == \
        pytest.approx(exp["robustness_at_10"], abs=TOL)
    per_group = {m.query_id: m.value for m in ir_measures.iter_calc([Robustness @ 10], qrels, run)}
    assert per_group == pytest.approx(exp["per_group_min"], abs=TOL)
    # the per-instance nDCG@10 mean is ir_measures' own nDCG@10
    assert ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, run)[ir_measures.nDCG @ 10] == \
        pytest.approx(exp["ndcg_at_10_unrounded"], abs=TOL)


def test_grouping_rules():
    assert [group_of(q) for q in ["a_b_1", "q", "q_1", "_1", "10", "100_2"]] == ["a", "q", "q", "", "10", "100"]


def test_min_per_group_then_mean_over_groups():
    # one relevant document per instance at rank p has nDCG@10 = 1/log2(p + 1)
    ranks = {"A_1": 1, "A_2": 2, "A_3": 3, "A_4": 4, "B_1": 1, "B_2": 2}
    run = {q: {f"x{j}": 10.0 - j for j in range(p - 1)} | {"rel": 10.0 - p} for q, p in ranks.items()}
    qrels = {q: {"rel": 1} for q in ranks}
    ndcg = {q: 1 / math.log2(p + 1) for q, p in ranks.items()}
    value, per_group = robustness(run, qrels, per_group=True)
    assert per_group == pytest.approx({"A": ndcg["A_4"], "B": ndcg["B_2"]})
    assert value == pytest.approx((ndcg["A_4"] + ndcg["B_2"]) / 2)
    assert robustness_eval(run, qrels)["ndcg"] == pytest.approx(np.mean(list(ndcg.values())))
    assert robustness(run, qrels, k=1) == 0.0  # every group has an instance with the document below rank 1


def test_variant_restricts_to_one_mode_of_a_paired_frame():
    qrels = pd.DataFrame({"query_id": ["1_0-og", "1_1-og", "1_0-changed", "1_1-changed"],
                          "doc_id": ["a", "a", "b", "c"], "relevance": [1, 1, 1, 1]})
    run = pd.DataFrame({"query_id": ["1_0-og", "1_1-og", "1_0-changed", "1_0-changed", "1_1-changed"],
                        "doc_id": ["a", "a", "b", "z", "c"], "score": [1.0, 1.0, 1.0, 2.0, 1.0]})
    og = ir_measures.calc_aggregate([Robustness(variant="og") @ 10], qrels, run)
    ch = ir_measures.calc_aggregate([Robustness(variant="changed") @ 10], qrels, run)
    assert list(og.values()) == [1.0]
    assert list(ch.values()) == [pytest.approx(1 / math.log2(3))]
    keys = {m.query_id for m in ir_measures.iter_calc([Robustness(variant="changed") @ 10], qrels, run)}
    assert keys == {"1"}


def test_variant_absent_from_the_qrels_is_named():
    qrels = pd.DataFrame({"query_id": ["1_0-og", "1_0-changed"], "doc_id": ["a", "b"], "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["1_0-og", "1_0-changed"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})
    with pytest.raises(ValueError, match=r"'<qid>-reversed' query ids .*found variants \['changed', 'og'\]"):
        ir_measures.calc_aggregate([Robustness(variant="reversed") @ 10], qrels, run)


def test_robustness_in_pt_experiment_with_baseline():
    import pyterrier as pt
    rng = np.random.default_rng(1)
    qrels, runs = [], {"a": [], "b": []}
    for g in range(8):
        for n in range(4):
            qid = f"{g}_{n}"
            qrels.append((qid, f"d{g}{n}", 1))
            for name in runs:
                for j, s in enumerate(rng.random(15)):
                    runs[name].append((qid, f"d{g}{n}" if j == 0 else f"x{j}", float(s)))
    qrels = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    runs = {k: pd.DataFrame(v, columns=["qid", "docno", "score"]) for k, v in runs.items()}
    topics = pd.DataFrame({"qid": qrels["qid"], "query": "q"})
    res = pt.Experiment(list(runs.values()), topics, qrels, [Robustness @ 10], names=list(runs), baseline=0,
                        test="wilcoxon")
    for name, run in runs.items():
        assert res.loc[res["name"] == name, "Robustness@10"].iloc[0] == pytest.approx(robustness(run, qrels))
    assert np.isfinite(res["Robustness@10 p-value"].iloc[1])


# -- IFIR nDCG --------------------------------------------------------------------------------------

def _ranked(qid, docnos):
    return [(qid, d, float(len(docnos) - j)) for j, d in enumerate(docnos)]


def test_ifir_worked_example_both_normalisations():
    # IFIR src/utils/metrics.py by hand: G has 4 documents; L has gold only at ranks 2 and 5
    docs = ["x1", "g1", "x2", "x3", "g2"] + [f"y{j}" for j in range(15)]
    run = pd.DataFrame(_ranked("q", docs), columns=["qid", "docno", "score"])
    qrels = pd.DataFrame({"qid": "q", "docno": ["g1", "g2", "g3", "g4"], "label": 1})
    assert ifir_ndcg(run, qrels) == pytest.approx(0.6241, abs=5e-5)
    assert ifir_ndcg(run, qrels, norm="standard") == pytest.approx(0.3973, abs=5e-5)
    std = ir_measures.calc_aggregate([ir_measures.nDCG @ 20], qrels.rename(columns={
        "qid": "query_id", "docno": "doc_id", "label": "relevance"}), run.rename(columns={
            "qid": "query_id", "docno": "doc_id"}))
    assert ifir_ndcg(run, qrels, norm="standard") == pytest.approx(std[ir_measures.nDCG @ 20])


def test_ifir_micro_average_missing_runs_and_cutoff():
    rows = _ranked("q_1", ["g"] + [f"x{j}" for j in range(25)]) + _ranked("q_2", [f"x{j}" for j in range(20)] + ["g"])
    run = pd.DataFrame(rows + _ranked("extra", ["g"]), columns=["qid", "docno", "score"])
    qrels = pd.DataFrame({"qid": ["q_1", "q_2", "q_3"], "docno": "g", "label": 1})
    value, per_query = ifir_ndcg(run, qrels, per_query=True)
    assert per_query == {"q_1": 1.0, "q_2": 0.0, "q_3": 0.0}  # rank 21 is beyond @20; q_3 has no run
    assert value == pytest.approx(1 / 3)
    agg = ir_measures.calc_aggregate([IFIR_nDCG @ 20, ir_measures.RR @ 20], qrels.rename(columns={
        "qid": "query_id", "docno": "doc_id", "label": "relevance"}), run.rename(columns={
            "qid": "query_id", "docno": "doc_id"}))
    assert agg[IFIR_nDCG @ 20] == pytest.approx(1 / 3)


def test_ifir_ifir_code_is_never_below_standard():
    rng = np.random.default_rng(3)
    rows, qrels = [], []
    for q in range(30):
        docs = [f"d{j}" for j in range(40)]
        rows += [(f"q{q}", d, float(s)) for d, s in zip(docs, rng.random(40))]
        qrels += [(f"q{q}", d, 1) for d in rng.choice(docs, size=rng.integers(1, 8), replace=False)]
    run = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    qrels = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    code = pd.Series(ifir_ndcg(run, qrels, per_query=True)[1])
    std = pd.Series(ifir_ndcg(run, qrels, norm="standard", per_query=True)[1])
    assert (code >= std - 1e-12).all() and (code > std).any()


def test_ifir_ties_and_bad_parameters():
    run = pd.DataFrame({"qid": "q", "docno": ["a", "b", "c"], "score": 1.0})
    qrels = pd.DataFrame({"qid": "q", "docno": ["a"], "label": 1})
    assert ifir_ndcg(run, qrels, k=1) == 0.0  # docno descending puts c first
    assert ifir_ndcg(run, qrels, k=1, ties="input") == 1.0
    with pytest.raises(ValueError, match="norm must be one of"):
        ifir_ndcg(run, qrels, norm="trec")
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ifir_ndcg(run, qrels, k=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ir_measures.parse_measure("IFIR_nDCG(norm='standard')@20") == IFIR_nDCG(norm="standard") @ 20
