"""WISE, ideal WISE, SICR, InfoSearch p-MRR and gold ranks against the InfoSearch reference vectors
(utils.py at d0eae63 = 2024 and f33f03d = 2025), through the functions, ir_measures and pt.Experiment."""
import json
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import golden
import pyterrier_instruct as pti
from pyterrier_instruct.measures import (GoldRank, IdealWISE, InfoSearch_pMRR, SICR, WISE, infosearch_eval,
                                         infosearch_partition, infosearch_pmrr, sicr, wise)
from pyterrier_instruct.measures.infosearch import _report, ideal_wise_values, sicr_success, wise_values

CASES = json.load(open(Path(__file__).parent / "data" / "wise_sicr_cases.json"))["cases"]
VERSIONS = [("infosearch_2024_d0eae63", "2024"), ("infosearch_2025_f33f03d", "2025")]
TOL = 1e-9
ERRORS = {  # reference exception → our ValueError message
    "no_query_has_both_positive_and_negative": "no query has both a positive",
    "query_missing_from_rev_run": r"have no rev run \(e.g. \['q1'\]\)",
    "no_negatives_anywhere": "no negative document",
}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _partition_kwargs(case, source):
    i = case["inputs"]
    if source == "qrels":
        return {"og_qrels": i["ori_qrels"], "changed_qrels": i["ins_qrels"]}
    return {"positives": i["positive_qrels"], "negatives": i["negative_qrels"]}


def _paired(case):
    """The case in the paired-qid convention (ir_measures column names), rows in dict order."""
    i = case["inputs"]
    run = [(f"{q}-{v}", d, float(s)) for v, key in (("og", "ori_run"), ("changed", "ins_run"), ("reversed", "rev_run"))
           for q, docs in i[key].items() for d, s in docs.items()]
    qrels = [(f"{q}-{v}", d, int(lab)) for v, key in (("og", "ori_qrels"), ("changed", "ins_qrels"))
             for q, docs in i[key].items() for d, lab in docs.items()]
    return (pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
            pd.DataFrame(run, columns=["query_id", "doc_id", "score"]))


REFUSED = [c for c in CASES if all("error" in e for e in c["expected"].values())]
BULK = [(n, c) for n, c in enumerate(CASES) if c not in REFUSED]  # evaluated together (tests/golden.py)
assert all("error" not in e for _, c in BULK for e in c["expected"].values())
BULK_CASE = {"inputs": {k: golden.merged(BULK, k) for k in CASES[0]["inputs"]}}


@pytest.mark.parametrize("source", ["qrels", "lists"])
@pytest.mark.parametrize("key,version", VERSIONS)
def test_function_reproduces_reference(key, version, source):
    """Every case's per-document ranks and scores and per-query values from one evaluation of all the cases, and its
    overall values (the report of its queries' rows); each case the reference refuses, alone."""
    for case in REFUSED:
        i = case["inputs"]
        with pytest.raises(ValueError, match=ERRORS[case["name"]]):
            infosearch_eval(i["ori_run"], i["ins_run"], i["rev_run"], version=version, warn=False,
                            **_partition_kwargs(case, source))
    i = BULK_CASE["inputs"]
    got = infosearch_eval(i["ori_run"], i["ins_run"], i["rev_run"], version=version, warn=False,
                          **_partition_kwargs(BULK_CASE, source))
    bad = golden.Mismatches(TOL)
    positive, negative = golden.split(got["positive"]), golden.split(got["negative"])
    for n, case in BULK:
        exp, name = case["expected"][key], case["name"]
        pos, neg = positive[n], negative[n]
        overall = _report(pos, neg, warn=False)["overall"]
        bad.equal(f"{name} overall keys", overall.keys(), exp["overall"].keys())
        for k, v in exp["overall"].items():
            bad.close(f"{name} overall {k}", overall.get(k), v)
        for m, values in exp["per_query"].items():
            mine = golden.of_case(got["per_query"][m], n)
            bad.equal(f"{name} {m} qids", mine.keys(), values.keys())
            for q, v in values.items():
                bad.close(f"{name} {m} {q}", mine.get(q), v)
        cols = ["qid", "docno", "ori_rank", "ins_rank", "rev_rank", "sum_count"]
        want = [[d["qid"], d["doc_id"], d["ori_rank"], d["ins_rank"], d["rev_rank"], d["sum_count"]]
                for d in exp["per_doc"]["positive"]]
        bad.equal(f"{name} positive ranks", pos[cols].values.tolist(), want)
        scores = ["ori_score", "ins_score", "rev_score", "WISE", "ideal_WISE"]
        bad.allclose(f"{name} positive scores", pos[scores].to_numpy(float),
                     [[d["ori_score"], d["ins_score"], d["rev_score"], d["WISE"], d["ideal_WISE"]]
                      for d in exp["per_doc"]["positive"]])
        bad.equal(f"{name} negative ranks", neg[["qid", "docno", "ori_rank", "ins_rank"]].values.tolist(),
                  [[d["qid"], d["doc_id"], d["ori_rank"], d["ins_rank"]] for d in exp["per_doc"]["negative"]])
        bad.allclose(f"{name} negative p-MRR", neg["p-MRR"], [d["p-MRR"] for d in exp["per_doc"]["negative"]])
    bad.check(f"{len(BULK)} cases, {key}, partition from {source}")


def test_partition_equals_create_qrel_match():
    i = {k: golden.merged(list(enumerate(CASES)), k) for k in ("ori_qrels", "ins_qrels")}
    part = infosearch_partition(i["ori_qrels"], i["ins_qrels"])  # every case's queries at once
    bad = golden.Mismatches(TOL)
    for n, got in golden.split(part).items():
        case = CASES[n]
        for role in ("positive", "negative"):
            lists, docs = case["inputs"][f"{role}_qrels"], got[got["role"] == role]
            bad.equal(f"{case['name']} {role}", {q: docs[docs["qid"] == q]["docno"].tolist() for q in lists}, lists)
    bad.check(f"{len(CASES)} cases")


@pytest.mark.parametrize("key,version", VERSIONS)
def test_ir_measures_path_reproduces_reference(key, version):
    """Every case's aggregates (its metrics into each measure's ir_measures aggregator, as calc_aggregate does) and
    per-query values from one iter_calc over all the cases; each case the reference refuses, alone."""
    ms = {"WISE": WISE(version=version), "ideal_WISE": IdealWISE(version=version), "SICR": SICR,
          "p-MRR": InfoSearch_pMRR, "ori_pos_rank": GoldRank(run="og"), "ins_pos_rank": GoldRank(run="changed"),
          "rev_pos_rank": GoldRank(run="reversed")}
    for case in REFUSED:
        with pytest.raises(ValueError, match=ERRORS[case["name"]]):
            _quiet(ir_measures.calc_aggregate, list(ms.values()), *_paired(case))
    metrics = _quiet(lambda: list(ir_measures.iter_calc(list(ms.values()), *_paired(BULK_CASE))))
    bad = golden.Mismatches(TOL)
    for n, case in BULK:
        exp, name = case["expected"][key], case["name"]
        mine = [m._replace(query_id=m.query_id[len(golden.prefix(n)):]) for m in metrics
                if m.query_id.startswith(golden.prefix(n))]
        agg = {m: m.aggregator() for m in ms.values()}
        for metric in mine:
            agg[metric.measure].add(metric.value)
        for k, m in ms.items():
            bad.close(f"{name} {k}", agg[m].result(), exp["overall"][k])
        per_q = {}
        for metric in mine:
            per_q.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
        for measure, ref in (("WISE", "WISE"), ("SICR", "SICR"), ("InfoSearch_pMRR", "p-MRR")):
            measure = f"WISE(version='{version}')" if measure == "WISE" and version != "2024" else measure
            bad.close(f"{name} {measure} per query", per_q.get(measure),
                      {f"{q}-og": v for q, v in exp["per_query"][ref].items()})
    bad.check(f"{len(BULK)} cases, {key}")


def test_wise_worked_examples():
    # InfoSearch eq. 6-9 and utils.py by hand (N = 3 unless noted): (o, i, r, N) → paper, code2024, code2025
    rows = [((4, 1, 9, 3), (0.85, 0.85, 0.9134)), ((2, 1, 5, 3), (1, 1, 1)), ((2, 1, 5, 2), (1, 0.95, 0.95)),
            ((10, 4, 30, 3), (0.35, 0.35, 0.4388)), ((30, 1, 40, 3), (0.01, 0.01, 0.01)),
            ((5, 5, 6, 3), (0.4472, 0.4472, 0.4472)), ((20, 1, 21, 3), (0.05, 0.05, 0.7821)),
            ((3, 6, 10, 3), (-0.5, -0.5, -0.5)), ((6, 2, 3, 3), (-0.5, -0.5, -0.5)),
            ((5, 8, 2, 3), (-1, -0.375, -1)), ((1, 1, 1, 3), (0, 0, 0)), ((1, 2, 5, 3), (-0.5, -0.5, -0.5))]
    o, i, r, n = np.array([x for x, _ in rows]).T
    for col, version in enumerate(("paper", "2024", "2025")):
        np.testing.assert_allclose(wise_values(o, i, r, n, version), [y[col] for _, y in rows], atol=5e-5)
    np.testing.assert_allclose(ideal_wise_values([3, 10], [3, 3], "2024"), [0.9, 0.55])
    np.testing.assert_allclose(ideal_wise_values([3, 10], [3, 3], "2025"), [0.9293, 0.85], atol=5e-5)
    np.testing.assert_allclose(ideal_wise_values([3, 10], [3, 3], "paper"), [1, 0.55])


def test_sicr_worked_examples():
    # InfoSearch eq. 4-5 and utils.py by hand: instances a–d → paper 25.0, code 50.0
    o, i, r = np.array([4, 4, 1, 3]), np.array([1, 1, 1, 2]), np.array([9, 9, 3, 3])
    s_o, s_i, s_r = np.array([.6, .6, .8, .5]), np.array([.9, .5, .85, .7]), np.array([.2, .2, .3, .4])
    assert sicr_success(o, i, r, s_o, s_i, s_r, "paper").tolist() == [1, 0, 0, 0]
    assert sicr_success(o, i, r, s_o, s_i, s_r, "code").tolist() == [1, 0, 1, 0]


def _two_gold_case():
    case = next(c for c in CASES if c["name"] == "sicr_multiple_golds_last_gold_decides")
    return case, case["inputs"]


def test_sicr_versions_and_the_multi_gold_warning():
    case, i = _two_gold_case()
    args = (i["ori_run"], i["ins_run"], i["rev_run"])
    kw = {"og_qrels": i["ori_qrels"], "changed_qrels": i["ins_qrels"]}
    with pytest.warns(UserWarning, match="more than one gold document"):
        code = sicr(*args, **kw)
    assert code == pytest.approx(case["expected"]["infosearch_2024_d0eae63"]["overall"]["SICR"], abs=TOL)
    got = infosearch_eval(*args, warn=False, **kw)["positive"]
    ok = sicr_success(got["ori_rank"], got["ins_rank"], got["rev_rank"], got["ori_score"], got["ins_score"],
                      got["rev_score"])
    assert sicr(*args, version="mean", **kw) == pytest.approx(pd.Series(ok).groupby(got["qid"]).mean().mean())


def test_identical_runs_score_zero_everywhere():
    qrels = {"q1": {"g": 1, "n1": 1, "n2": 1}, "q2": {"h": 1, "m": 1}}
    changed = {"q1": {"g": 1, "n1": 0, "n2": 0}, "q2": {"h": 1, "m": 0}}
    run = {"q1": {"x": 5.0, "n1": 4.0, "g": 3.0, "n2": 2.0}, "q2": {"m": 2.0, "h": 1.0, "y": 0.5}}
    kw = {"og_qrels": qrels, "changed_qrels": changed}
    assert wise(run, run, run, **kw) == 0
    assert sicr(run, run, run, **kw) == 0
    assert infosearch_pmrr(run, run, **kw) == 0


def test_ties_input_follows_run_order_docno_follows_docno():
    kw = {"og_qrels": {"q": {"g": 1, "n": 1}}, "changed_qrels": {"q": {"g": 1, "n": 0}}, "warn": False}
    ori = {"q": {"n": 3.0, "g": 2.0, "x": 1.0}}
    ins = {"q": {"g": 1.0, "z": 1.0, "n": 0.5}}  # g and z tie: run order puts g first, docno descending z
    rev = {"q": {"n": 3.0, "x": 2.0, "g": 1.0}}
    assert infosearch_eval(ori, ins, rev, **kw)["positive"]["ins_rank"].tolist() == [1]
    assert infosearch_eval(ori, ins, rev, ties="docno", **kw)["positive"]["ins_rank"].tolist() == [2]


def test_bad_input_is_named():
    i = CASES[0]["inputs"]
    with pytest.raises(ValueError, match="version must be one of"):
        wise(i["ori_run"], i["ins_run"], i["rev_run"], og_qrels=i["ori_qrels"], changed_qrels=i["ins_qrels"],
             version="2023")
    with pytest.raises(ValueError, match="version must be one of"):
        sicr(i["ori_run"], i["ins_run"], i["rev_run"], og_qrels=i["ori_qrels"], changed_qrels=i["ins_qrels"],
             version="strict")
    with pytest.raises(ValueError, match="'g' of query 'q1'.*missing from the changed qrels"):
        wise(i["ori_run"], i["ins_run"], i["rev_run"], og_qrels=i["ori_qrels"], changed_qrels={"q1": {"n1": 0}})
    with pytest.raises(ValueError, match="pass both `positives` and `negatives`"):
        wise(i["ori_run"], i["ins_run"], i["rev_run"], positives={"q1": ["g"]})
    with pytest.raises(ValueError, match="listed twice"):
        wise(i["ori_run"], i["ins_run"], i["rev_run"], positives={"q1": ["g"]}, negatives={"q1": ["g"]})
    qrels, run = _paired(CASES[0])
    with pytest.raises(ValueError, match="'<qid>-og' and '<qid>-changed'"):
        ir_measures.calc_aggregate([WISE], qrels[qrels["query_id"].str.endswith("-og")], run)


def _systems_and_paired(n=12, seed=0):
    """A small InfoSearch-like benchmark: each instance has a gold and 3 negatives among 20 candidates."""
    rng = np.random.default_rng(seed)
    qrels, runs = [], {"a": [], "b": []}
    for q in range(n):
        docs = [f"d{q}_{j}" for j in range(20)]
        for j in range(4):
            qrels.append((f"i{q}-og", docs[j], 1))
            qrels.append((f"i{q}-changed", docs[j], 1 if j == 0 else 0))
        for name in runs:
            for v in ("og", "changed", "reversed"):
                for d, s in zip(docs, rng.random(20)):
                    runs[name].append((f"i{q}-{v}", d, float(s)))
    qrels = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    topics = pd.DataFrame({"qid": pd.unique(np.array(qrels["qid"].tolist() + [f"i{q}-reversed" for q in range(n)])),
                           "query": "q"})
    return topics, qrels, {k: pd.DataFrame(v, columns=["qid", "docno", "score"]) for k, v in runs.items()}


def test_pt_experiment_means_perquery_and_baseline():
    import pyterrier as pt
    topics, qrels, runs = _systems_and_paired()
    ms = [WISE, SICR, InfoSearch_pMRR]
    res = _quiet(pt.Experiment, [runs["a"], runs["b"]], topics, qrels, ms, names=["a", "b"], baseline=0)
    for name in ("a", "b"):
        r = runs[name]
        split = {v: r[r["qid"].str.endswith(f"-{v}")].assign(qid=lambda f: f["qid"].str.rsplit("-", n=1).str[0])
                 for v in ("og", "changed", "reversed")}
        q = {v: qrels[qrels["qid"].str.endswith(f"-{v}")].assign(qid=lambda f: f["qid"].str.rsplit("-", n=1).str[0])
             for v in ("og", "changed")}
        ref = infosearch_eval(split["og"], split["changed"], split["reversed"], og_qrels=q["og"],
                              changed_qrels=q["changed"], warn=False)["overall"]
        row = res[res["name"] == name].iloc[0]
        assert row["WISE"] == pytest.approx(ref["WISE"], abs=TOL)
        assert row["SICR"] == pytest.approx(ref["SICR"], abs=TOL)
        assert row["InfoSearch_pMRR"] == pytest.approx(ref["p-MRR"], abs=TOL)
    assert "WISE p-value" in res.columns and np.isfinite(res["WISE p-value"].iloc[1])
    long = _quiet(pt.Experiment, [runs["a"]], topics, qrels, ms, names=["a"], perquery=True)
    long = long.dropna(subset=["value"])
    assert set(long["qid"]) == {f"i{q}-og" for q in range(12)}  # one value per instance, on its -og qid


def test_top_level_names():
    assert pti.WISE is WISE and pti.SICR is SICR and pti.InfoSearch_pMRR is InfoSearch_pMRR
    assert ir_measures.parse_measure("WISE(version='2025')") == WISE(version="2025")
    assert ir_measures.parse_measure("SICR(version='paper')") == SICR(version="paper")
    with pytest.raises(ValueError,
                       match=r"SICR: unknown parameter\(s\) \['variant'\]; supported: \['ties', 'version'\]"):
        SICR(variant="paper")
    with pytest.raises(ValueError, match=r"WISE: version='2023' is not one of \['2024', '2025', 'paper'\]"):
        WISE(version="2023")
    with pytest.raises(TypeError, match="version="):
        sicr({}, {}, {}, sicr="mean")
