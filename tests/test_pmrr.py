"""p-MRR against the reference vectors (mteb 2.26.24 and 1.7.64), through the function and ir_measures."""
import functools
import json
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import golden
import pyterrier_instruct as pti
from pyterrier_instruct.measures import changed_docs, pmrr, pmrr_per_doc

CASES = json.load(open(Path(__file__).parent / "data" / "pmrr_cases.json"))["cases"]
VERSIONS = [("mteb_2.26.24", "docno"), ("mteb_1.7.64", "input")]
TOL = 1e-9


def _diff(case):
    i = case["inputs"]
    return i["qrel_diff"] if i["qrel_diff_source"] == "explicit" else changed_docs(i["og_qrels"], i["changed_qrels"])


def _frame(run):
    return pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                        columns=["qid", "docno", "score"])


computable = [c for c in CASES if "versions" in c["expected"]]


def _bulk(version, cases=computable):
    """(the cases that mteb ``version`` refuses, the others as (n, case), the latter as one case (tests/golden.py))."""
    refused, bulk = [], []
    for n, case in enumerate(cases):
        exp = case["expected"]["versions"][version]
        if "error" in exp and "KeyError" in exp["error"]:
            # mteb 1.7 raised KeyError on a query missing from a run; we follow mteb 2 (skip + warn), whose values
            # (docno ties) are checked in the other parametrisation.
            continue
        (refused if "error" in exp else bulk).append((n, case))
    inputs = {k: golden.merged(bulk, k) for k in ("run_og", "run_changed", "og_qrels", "changed_qrels", "qrel_diff")}
    diff = {golden.prefix(n) + q: docs for n, case in bulk for q, docs in _diff_dict(case).items()}
    return [c for _, c in refused], bulk, {"inputs": {**inputs, "diff": diff}}


@functools.lru_cache(maxsize=None)
def _derived_diffs():
    """``{n: {qid: [docno]}}``: the changed documents of every computable case that derives them, in one call."""
    derived = [(n, c) for n, c in enumerate(CASES) if "versions" in c["expected"]
               and c["inputs"]["qrel_diff_source"] != "explicit"]
    frames = golden.split(changed_docs(golden.merged(derived, "og_qrels"), golden.merged(derived, "changed_qrels")))
    return {n: {q: rows["docno"].tolist() for q, rows in frames[n].groupby("qid", sort=False)} if n in frames else {}
            for n, _ in derived}


def _diff_dict(case):
    i = case["inputs"]
    return i["qrel_diff"] if i["qrel_diff_source"] == "explicit" else _derived_diffs()[CASES.index(case)]


def _values_of_case(per_query, n):
    """(the case's value: the mean of its queries' values, as pmrr computes the dataset value; its per-query values)."""
    mine = golden.of_case(per_query, n)
    return (float(pd.Series(list(mine.values()), dtype=float).mean()) if mine else None), mine


@pytest.mark.parametrize("version,ties", VERSIONS)
def test_function_reproduces_reference(version, ties):
    """Every case's value, per-query values, per-document ranks and missing-query warnings from one evaluation of all
    the cases; each case that mteb refuses, alone."""
    refused, bulk, whole = _bulk(version)
    for case in refused:
        i = case["inputs"]
        with pytest.raises(ValueError, match="undefined"):
            pmrr(i["run_og"], i["run_changed"], _diff(case), ties=ties)
    i = whole["inputs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, per_query = pmrr(i["run_og"], i["run_changed"], i["diff"], ties=ties, per_query=True)
    assert value == pytest.approx(pd.Series(list(per_query.values())).mean(), abs=TOL)  # the mean of the queries'
    with warnings.catch_warnings(record=True) as caught:  # mteb warns once per qrel_diff query missing from a run
        warnings.simplefilter("always")
        pmrr(i["run_og"], i["run_changed"], i["qrel_diff"], ties=ties)
    missing = [str(w.message) for w in caught if "not found in the runs" in str(w.message)]
    docs = golden.split(pmrr_per_doc(i["run_og"], i["run_changed"], i["diff"], ties=ties, warn=False))
    bad = golden.Mismatches(TOL)
    for n, case in bulk:
        exp, name = case["expected"]["versions"][version], case["name"]
        mine, mine_per_query = _values_of_case(per_query, n)
        bad.close(f"{name} p-MRR", mine, exp["p-MRR"])
        bad.equal(f"{name} qids", mine_per_query.keys(), exp["per_query"].keys())
        for q, v in exp["per_query"].items():
            bad.close(f"{name} {q}", mine_per_query.get(q), v)
        warned = [m for m in missing if f"query '{golden.prefix(n)}" in m]
        bad.equal(f"{name} warnings", len(warned), len(exp.get("warnings", [])))
        got = docs.get(n, pd.DataFrame(columns=["og_rank", "new_rank"]))
        bad.equal(f"{name} per doc", got[["og_rank", "new_rank"]].values.tolist(),
                  [[d["og_rank"], d["new_rank"]] for d in exp["per_doc"]])
    bad.check(f"{len(bulk)} cases, {version}")


@pytest.mark.parametrize("version,ties", VERSIONS)
def test_frames_equal_dicts(version, ties):
    """The cases as frames (but those with a query present with an empty run: a frame cannot hold one), in one
    evaluation: every case's value as from the dicts."""
    framed = [c for c in computable if not any(len(d) == 0 for run in ("run_og", "run_changed")
                                               for d in c["inputs"][run].values())]
    _, bulk, whole = _bulk(version, framed)
    i = whole["inputs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, per_query = pmrr(_frame(i["run_og"]), _frame(i["run_changed"]), i["diff"], ties=ties, per_query=True)
    assert value == pytest.approx(pd.Series(list(per_query.values())).mean(), abs=TOL)
    bad = golden.Mismatches(TOL)
    for n, case in bulk:
        want = case["expected"]["versions"][version]["p-MRR"]
        bad.close(f"{case['name']} p-MRR", _values_of_case(per_query, n)[0], want)
    bad.check(f"{len(bulk)} cases, {version}")


def test_changed_docs_equal_create_qrel_diff():
    cases = [(n, c) for n, c in enumerate(CASES)
             if c["inputs"]["qrel_diff_source"] == "create_qrel_diff" and "qrel_diff" in c["inputs"]]
    got = golden.split(changed_docs(golden.merged(cases, "og_qrels"), golden.merged(cases, "changed_qrels")))
    bad = golden.Mismatches(TOL)
    for n, case in cases:
        rows = got.get(n, pd.DataFrame(columns=["qid", "docno"]))
        want = [(q, d) for q, docs in case["inputs"]["qrel_diff"].items() for d in docs]
        bad.equal(case["name"], sorted(map(tuple, rows[["qid", "docno"]].values.tolist())), sorted(want))
    bad.check(f"{len(cases)} cases")


def test_og_doc_missing_from_changed_qrels_is_an_error():
    case = next(c for c in CASES if c["name"] == "og_doc_absent_from_changed_qrels")
    with pytest.raises(ValueError, match="'b' of query 'q1'.*missing from the changed qrels"):
        changed_docs(case["inputs"]["og_qrels"], case["inputs"]["changed_qrels"])


def _paired(case):
    """The case in the paired-qid convention: one run frame and one qrels frame, rows in dict order."""
    i = case["inputs"]
    run = pd.concat([_frame(i["run_og"]).assign(qid=lambda d: d.qid + "-og"),
                     _frame(i["run_changed"]).assign(qid=lambda d: d.qid + "-changed")], ignore_index=True)
    qrels = pti.paired_qrels({v: pd.DataFrame([(q, d, lab) for q, docs in i[f"{v}_qrels"].items()
                                               for d, lab in docs.items()],
                                              columns=["qid", "docno", "label"]) for v in ("og", "changed")})
    return run, qrels


measure_cases = [c for c in computable if c["inputs"]["qrel_diff_source"] == "create_qrel_diff"
                 and not any(len(d) == 0 for d in c["inputs"]["run_changed"].values())]


@pytest.mark.parametrize("version,ties", VERSIONS)
def test_ir_measures_path_reproduces_reference(version, ties):
    """Every case's aggregate (its metrics into the measure's ir_measures aggregator, as calc_aggregate does) and
    per-query values from one iter_calc over all the cases; each case that mteb refuses, alone."""
    measure = ir_measures.parse_measure("pMRR" if ties == "docno" else "pMRR(ties='input')")

    def ir(case):
        run, qrels = _paired(case)
        return (qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}),
                run.rename(columns={"qid": "query_id", "docno": "doc_id"}))
    refused, bulk, whole = _bulk(version, measure_cases)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in refused:
            with pytest.raises(ValueError, match="undefined"):
                list(ir_measures.iter_calc([measure], *ir(case)))
        metrics = list(ir_measures.iter_calc([measure], *ir(whole)))
    bad = golden.Mismatches(TOL)
    for n, case in bulk:
        exp, name = case["expected"]["versions"][version], case["name"]
        per_query = golden.of_case({m.query_id: m.value for m in metrics}, n)
        agg = measure.aggregator()
        for value in per_query.values():
            agg.add(value)
        bad.equal(f"{name} qids", per_query.keys(), {f"{q}-og" for q in exp["per_query"]})
        for q, v in exp["per_query"].items():
            bad.close(f"{name} {q}", per_query.get(f"{q}-og"), v)
        bad.close(f"{name} aggregate", agg.result(), exp["p-MRR"])
    bad.check(f"{len(bulk)} cases, {version}")


def test_mteb_unit_vectors():
    og = {"q": {"0": 1, "1": 2, "2": 3, "3": 4}}
    new = {"q": {"0": 4, "1": 1, "2": 2, "3": 3}}
    assert pmrr(og, new, {"q": ["0"]}) == pytest.approx(-0.75)
    assert pmrr(new, og, {"q": ["0"]}) == pytest.approx(0.75)
    assert pmrr(og, og, {"q": ["0"]}) == 0.0
    tied = {"q": {"0": 1, "1": 1, "2": 1}}
    assert pmrr(tied, tied, {"q": ["0"]}) == 0.0


def _run_with(positions, n):
    """A run of n docs ("f1".."fn" as filler) where each named doc sits at the given 1-based rank."""
    fillers = iter(f"f{i}" for i in range(1, n + 1))
    at = {rank: doc for doc, rank in positions.items()}
    return {at.get(rank) or next(fillers): float(n - rank) for rank in range(1, n + 1)}


def test_metrics_worked_example():
    # FollowIR eq. 1 by hand: q1 C = {a: 1→2, b: 10→5, c: 3→30} gives (+0.5, −0.5, +0.9) → 0.3; q2 C = {d: 4→4} → 0;
    # q3 has no changed documents and is excluded; the dataset value is (0.3 + 0) / 2 = 0.15.
    og = {"q1": _run_with({"a": 1, "c": 3, "b": 10}, 30), "q2": _run_with({"d": 4}, 10), "q3": _run_with({}, 5)}
    new = {"q1": _run_with({"a": 2, "b": 5, "c": 30}, 30), "q2": _run_with({"d": 4}, 10), "q3": _run_with({}, 5)}
    value, per_query = pmrr(og, new, {"q1": ["a", "b", "c"], "q2": ["d"], "q3": []}, per_query=True)
    assert per_query == {"q1": pytest.approx(0.3, abs=1e-12), "q2": 0.0}
    assert value == pytest.approx(0.15, abs=1e-12)
    docs = pmrr_per_doc(og, new, {"q1": ["a", "b", "c"]})
    assert docs["pmrr"].tolist() == pytest.approx([0.5, -0.5, 0.9])
    # a document missing from a 1000-document run ranks 1001: 5 → 1001 gives 1 − 5/1001
    assert pmrr({"q": _run_with({"z": 5}, 1000)}, {"q": _run_with({}, 1000)}, {"q": ["z"]}) == \
        pytest.approx(0.995, abs=1e-3)


@pytest.mark.parametrize("bad,match", [
    (pd.DataFrame({"qid": ["q"], "doc": ["a"], "score": [1.0]}), r"og_run lacks column\(s\) \['docno'\]"),
    (pd.DataFrame({"qid": ["q", "q"], "docno": ["a", "a"], "score": [1.0, 2.0]}),
     r"og_run lists 1 \(qid, docno\) pair\(s\) more than once: \('q', 'a'\)"),
    (pd.DataFrame({"qid": ["q"], "docno": ["a"], "score": [np.nan]}), "NaN score"),
])
def test_bad_runs_get_clear_errors(bad, match):
    good = pd.DataFrame({"qid": ["q"], "docno": ["a"], "score": [1.0]})
    with pytest.raises((KeyError, ValueError), match=match):
        pmrr(bad, good, {"q": ["a"]})


def test_needs_changed_docs_or_qrels():
    run = {"q": {"a": 1.0}}
    with pytest.raises(ValueError, match="needs the changed documents"):
        pmrr(run, run)
    with pytest.raises(ValueError, match="not both"):
        pmrr(run, run, {"q": ["a"]}, og_qrels={"q": {"a": 1}}, changed_qrels={"q": {"a": 0}})
    assert pmrr(run, run, og_qrels={"q": {"a": 1}}, changed_qrels={"q": {"a": 0}}) == 0.0


def test_measure_requires_paired_qrels():
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0]})
    with pytest.raises(ValueError, match="needs paired qrels"):
        ir_measures.calc_aggregate([pti.pMRR], qrels, run)


def test_measure_names_and_params():
    assert str(ir_measures.parse_measure("pMRR")) == "pMRR"
    assert ir_measures.parse_measure("pMRR(ties='input')") == pti.pMRR(ties="input")
    og = pti.OG("AP@1000")
    assert str(og) == repr(og) == "OG(AP@1000)" and str(pti.Changed(ir_measures.nDCG @ 10)) == "Changed(nDCG@10)"
    assert og == pti.OG(ir_measures.AP @ 1000) and hash(og) == hash(pti.OG(ir_measures.AP @ 1000))
    assert og != pti.Changed("AP@1000") and og != pti.OG("AP@100") and {og: 1}[pti.OG(ir_measures.AP @ 1000)] == 1
    with pytest.raises(ValueError, match=r"pMRR: ties='random' is not one of \['docno', 'input'\]"):
        pti.pMRR(ties="random")  # refused when built, not at evaluation
