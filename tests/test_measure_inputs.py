"""One set of input rules for every measure: string ids, duplicate rows refused, unmatched ids and missing
instructions named in warnings (through ir_measures, pt.Experiment and the plain functions)."""
import re
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import AP, nDCG

import pyterrier_instruct as pti
from pyterrier_instruct.measures import ifir_ndcg, infosearch_eval, pmrr, robustness, sicr, wise
from pyterrier_instruct.measures._runs import id_strings

MEASURES = [pti.pMRR, pti.WISE, pti.IdealWISE, pti.SICR, pti.InfoSearch_pMRR, pti.GoldRank, pti.OG(AP @ 1000),
            pti.Changed(nDCG @ 10), pti.Reversed(nDCG @ 10), pti.Robustness @ 10, pti.IFIR_nDCG @ 10]
VARIANTS = ("og", "changed", "reversed")


def _paired(n=6, seed=0, numeric=False):
    """Paired qrels and run for n instances of 8 candidates: doc 0 is gold in og and changed, docs 1-2 turn
    0 with the changed instruction (p-MRR's changed docs, InfoSearch's negatives), docs 3-5 are judged 0."""
    rng = np.random.default_rng(seed)
    labels = {"og": [1, 1, 1, 0, 0, 0], "changed": [1, 0, 0, 0, 0, 0], "reversed": [0, 1, 1, 0, 0, 0]}
    qrels, run = [], []
    for q in range(n):
        docs = [q * 100 + j if numeric else f"d{q}_{j}" for j in range(8)]
        for v in VARIANTS:
            qrels += [(f"i{q}-{v}", d, lab) for d, lab in zip(docs, labels[v])]
            run += [(f"i{q}-{v}", d, float(s)) for d, s in zip(docs, rng.random(8))]
    return pd.DataFrame(qrels, columns=["qid", "docno", "label"]), pd.DataFrame(run, columns=["qid", "docno", "score"])


def _ir(qrels, run):
    return (qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}),
            run.rename(columns={"qid": "query_id", "docno": "doc_id"}))


def _value(measure, qrels, run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ir_measures.calc_aggregate([measure], *_ir(qrels, run))[measure]


def _split(frame, variant):
    part = frame[frame["qid"].str.endswith(f"-{variant}")]
    return part.assign(qid=part["qid"].str.rsplit("-", n=1).str[0])


# --- duplicate (qid, docno) rows: one error, from every measure -------------------------------------------------

DUP_MESSAGE = (r"run lists 1 \(qid, docno\) pair\(s\) more than once: \('i0-og', 'd0_3'\); .*"
               r"run\.drop_duplicates\(\['qid', 'docno'\]\)")


@pytest.mark.parametrize("measure", MEASURES, ids=str)
def test_every_measure_refuses_duplicate_rows(measure):
    qrels, run = _paired()
    assert np.isfinite(_value(measure, qrels, run))
    dup = pd.concat([run, run[(run.qid == "i0-og") & (run.docno == "d0_3")].assign(score=5.0)], ignore_index=True)
    with pytest.raises(ValueError, match=DUP_MESSAGE):
        _value(measure, qrels, dup)


def test_duplicate_error_lists_a_few_pairs_and_the_count():
    qrels, run = _paired()
    dup = pd.concat([run, run.iloc[:7]], ignore_index=True)
    with pytest.raises(ValueError, match=r"lists 7 \(qid, docno\) pair\(s\) more than once: \('i0-og', 'd0_0'\), .*"
                                         r"\('i0-og', 'd0_4'\) and 2 more;"):
        _value(pti.pMRR, qrels, dup)


@pytest.mark.parametrize("fn", ["pmrr", "wise", "sicr", "infosearch_eval", "robustness", "ifir_ndcg"])
def test_every_function_refuses_duplicate_rows(fn):
    qrels, run = _paired()
    og, ch, rev = (_split(run, v) for v in VARIANTS)
    og = pd.concat([og, og.iloc[[3]]], ignore_index=True)
    q_og, q_ch = _split(qrels, "og"), _split(qrels, "changed")
    calls = {
        "pmrr": lambda: pmrr(og, ch, og_qrels=q_og, changed_qrels=q_ch),
        "wise": lambda: wise(og, ch, rev, og_qrels=q_og, changed_qrels=q_ch),
        "sicr": lambda: sicr(og, ch, rev, og_qrels=q_og, changed_qrels=q_ch),
        "infosearch_eval": lambda: infosearch_eval(og, ch, rev, og_qrels=q_og, changed_qrels=q_ch),
        "robustness": lambda: robustness(og, q_og, 10),
        "ifir_ndcg": lambda: ifir_ndcg(og, q_og, 10),
    }
    with pytest.raises(ValueError, match=r"lists 1 \(qid, docno\) pair\(s\) more than once: \('i0', 'd0_3'\)"):
        calls[fn]()


# --- ids: strings, float columns of integral values as integers ---------------------------------------------------

def test_id_strings():
    assert id_strings(pd.Series([10.0, 2.5, np.nan, -3.0])).tolist() == ["10", "2.5", "nan", "-3"]
    assert id_strings(pd.Series([10.0, "a", 3, np.int64(4)], dtype=object)).tolist() == ["10", "a", "3", "4"]
    assert id_strings(pd.Series([7, 8])).tolist() == ["7", "8"]
    assert id_strings(pd.Series(["x", "10.0"])).tolist() == ["x", "10.0"]  # a string id is never rewritten


@pytest.mark.parametrize("measure", MEASURES, ids=str)
def test_float_docnos_match_integer_qrels(measure):
    qrels, run = _paired(numeric=True)
    want = _value(measure, qrels.astype({"docno": str}), run.astype({"docno": str}))
    floats = run.astype({"docno": "float64"})  # e.g. read from a file with a missing value somewhere
    assert _value(measure, qrels, floats) == pytest.approx(want, abs=1e-12)
    assert _value(measure, qrels.astype({"docno": "float64"}), run) == pytest.approx(want, abs=1e-12)


def test_pmrr_function_with_float_ids_equals_strings():
    qrels, run = _paired(numeric=True)
    og, ch = _split(run, "og"), _split(run, "changed")
    q_og, q_ch = _split(qrels, "og"), _split(qrels, "changed")
    want = pmrr(og.astype({"docno": str}), ch.astype({"docno": str}), og_qrels=q_og.astype({"docno": str}),
                changed_qrels=q_ch.astype({"docno": str}))
    as_float = {"qid": "float64", "docno": "float64"}
    numbered = [f.assign(qid=f["qid"].str[1:].astype(int)).astype(as_float) for f in (og, ch)]
    numbered_qrels = [f.assign(qid=f["qid"].str[1:].astype(int)) for f in (q_og, q_ch)]
    assert pmrr(*numbered, og_qrels=numbered_qrels[0], changed_qrels=numbered_qrels[1]) == \
        pytest.approx(want, abs=1e-12)


# --- a run that shares no docno with its qrels -------------------------------------------------------------------

def _unmatched(record):
    return [str(w.message) for w in record if "shares no docno" in str(w.message)]


@pytest.mark.parametrize("measure", MEASURES, ids=str)
def test_unmatched_ids_are_named_for_every_measure(measure):
    qrels, run = _paired()
    changed = run["qid"].str.endswith("-changed")  # e.g. the -changed runs made elsewhere, with other ids
    prefixed = run.assign(docno=np.where(changed, "doc-" + run["docno"], run["docno"]))
    one_query = run.assign(docno=np.where(run["qid"] == "i2-og", "doc-" + run["docno"], run["docno"]))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ir_measures.calc_aggregate([measure], *_ir(qrels, run))
        ir_measures.calc_aggregate([measure], *_ir(qrels, one_query))  # other -og queries match: a retrieval miss
        assert _unmatched(record) == []
        ir_measures.calc_aggregate([measure], *_ir(qrels, prefixed))
    messages = _unmatched(record)
    assert len(messages) == 1
    assert re.search(r"for 6 of 18 queries the run shares no docno with the qrels.*: 'i0-changed', 'i1-changed', "
                     r"'i2-changed', 'i3-changed', 'i4-changed' and 1 more \(query 'i0-changed': run "
                     r"\['doc-d0_0', 'doc-d0_1'\], qrels \['d0_0', 'd0_1'\]\)", messages[0]), messages[0]


def test_unmatched_warning_lists_a_few_queries_and_the_count():
    qrels, run = _paired()
    with pytest.warns(UserWarning, match=r"pMRR: for 18 of 18 queries .*: 'i0-og', 'i0-changed', 'i0-reversed', "
                                         r"'i1-og', 'i1-changed' and 13 more"):
        _ = ir_measures.calc_aggregate([pti.pMRR], *_ir(qrels, run.assign(docno="x" + run["docno"])))


@pytest.mark.parametrize("fn", ["pmrr", "infosearch_eval", "robustness", "ifir_ndcg"])
def test_functions_name_unmatched_queries(fn):
    qrels, run = _paired()
    og, ch, rev = (_split(run, v) for v in VARIANTS)
    og = og.assign(docno="doc-" + og["docno"])
    q_og, q_ch = _split(qrels, "og"), _split(qrels, "changed")
    calls = {
        "pmrr": lambda: pmrr(og, ch, og_qrels=q_og, changed_qrels=q_ch),
        "infosearch_eval": lambda: infosearch_eval(og, ch, rev, og_qrels=q_og, changed_qrels=q_ch),
        "robustness": lambda: robustness(og, q_og, 10),
        "ifir_ndcg": lambda: ifir_ndcg(og, q_og, 10),
    }
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        calls[fn]()
    messages = _unmatched(record)
    assert len(messages) == 1 and "for 6 of 6 queries" in messages[0]
    assert ": 'i0', 'i1', 'i2', 'i3', 'i4' and 1 more (query 'i0'" in messages[0]


def test_pt_experiment_float_docnos_are_named(mini):
    import pyterrier as pt
    run = (mini.candidates() >> pti.PoolBM25())(mini.get_topics())
    numbered = mini.get_qrels().assign(docno=lambda f: pd.factorize(f["docno"])[0])
    codes = dict(zip(mini.get_qrels()["docno"], numbered["docno"]))
    floats = run.assign(docno=run["docno"].map(codes).astype("float64"))  # pt.Experiment makes these "10.0"
    with pytest.warns(UserWarning,
                      match=r"OG\(AP@1000\), pMRR: for 20 of 20 queries the run shares no docno") as record:
        res = pt.Experiment([floats], mini.get_topics(), numbered, [pti.pMRR, pti.OG(AP @ 1000)], names=["f"])
    message = _unmatched(record)[0]
    assert "'101-og'" in message and re.search(r"run \['\d+\.0', '\d+\.0'\], qrels \['\d+', '\d+'\]", message)
    assert res.loc[0, "OG(AP@1000)"] == 0.0


# --- a run without the instruction column --------------------------------------------------------------------------

def _instruction_warnings(record):
    return [str(w.message) for w in record if "the run has no 'instruction' column" in str(w.message)]


def test_pt_experiment_warns_when_runs_lack_the_instruction(mini):
    import pyterrier as pt
    system = mini.candidates() >> pti.PoolBM25()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        res = pt.Experiment([system], mini.get_topics().drop(columns=["instruction"]), mini.get_qrels(), [pti.pMRR])
    assert res.loc[0, "pMRR"] == 0.0  # the silent failure: same ranking for -og and -changed
    (message,) = set(_instruction_warnings(record))
    assert message.startswith("pMRR: the run has no 'instruction' column")
    assert "pyterrier_instruct.paired_topics" in message and "get_topics()" in message
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        pt.Experiment([system], mini.get_topics(), mini.get_qrels(), [pti.pMRR, pti.OG(AP @ 1000)])
    assert _instruction_warnings(record) == []


@pytest.mark.parametrize("measure", MEASURES, ids=str)
def test_instruction_warning_only_for_measures_comparing_variants(measure):
    qrels, run = _paired()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ir_measures.calc_aggregate([measure], *_ir(qrels, run))
        ir_measures.calc_aggregate([measure], *_ir(qrels, run.assign(instruction="i")))
    compares = measure.NAME in {"pMRR", "WISE", "IdealWISE", "SICR", "InfoSearch_pMRR", "GoldRank"}
    messages = _instruction_warnings(record)
    if compares:  # once: the run with the column passes
        assert len(messages) == 1 and messages[0].startswith(f"{measure}: the run has no 'instruction' column")
    else:
        assert messages == []
