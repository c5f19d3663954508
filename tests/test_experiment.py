"""p-MRR inside pt.Experiment on paired topics: same value as the function, per-query, significance; standard
measures beside the paired ones (pyterrier_instruct._pt_compat), column order, batch_size."""
import subprocess
import sys
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import AP, nDCG
from scipy import stats

import pyterrier_instruct as pti
from paired_toys import tiny_paired
from pyterrier_instruct import _pt_compat


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
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        pq = pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), [pti.pMRR], names=list(runs),
                           perquery=True)
    assert not pq.value.isna().any() and set(pq.qid) == {f"{q}-og" for q in range(101, 111)}  # no NaN -changed rows
    assert not [w for w in record if "not found in qrels" in str(w.message)]
    pool = pq[pq.name == "PoolBM25"]
    _, per_query = _function_value(runs["PoolBM25"], mini)
    assert dict(zip(pool.qid.str.removesuffix("-og"), pool.value)) == pytest.approx(per_query, abs=1e-12)
    res = pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), [pti.pMRR, pti.OG("AP@1000")],
                        names=list(runs), baseline=0)
    assert {"pMRR p-value", "OG(AP@1000) p-value"} <= set(res.columns)
    assert 0 <= res.loc[1, "pMRR p-value"] <= 1
    assert res.loc[1, "pMRR +"] + res.loc[1, "pMRR -"] <= len(per_query)  # paired on base queries, n = 10


def test_og_measure_equals_standard_measure_on_og_qrels(mini, runs):
    res = pt.Experiment([runs["PoolBM25"]], mini.get_topics(), mini.get_qrels(), [pti.OG("AP@1000"), pti.OG("nDCG@5")])
    run = runs["PoolBM25"](mini.get_topics("og"))
    want = pt.Experiment([pt.Transformer.from_df(run)], mini.get_topics("og"), mini.get_qrels("og"),
                         [ir_measures.AP @ 1000, ir_measures.nDCG @ 5])
    assert res["OG(AP@1000)"][0] == pytest.approx(want["AP@1000"][0], abs=1e-12)
    assert res["OG(nDCG@5)"][0] == pytest.approx(want["nDCG@5"][0], abs=1e-12)


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
    run = pd.DataFrame({"qid": ["1-og", "1-og", "1-changed", "1-changed"], "docno": ["a", "b", "b", "a"],
                        "score": [0.0] * 4})
    qrels = pti.paired_qrels({"og": pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [1]}),
                              "changed": pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [0]})})
    ir_run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    assert ir_measures.calc_aggregate([pti.pMRR], ir_qrels, ir_run)[pti.pMRR] == 0.0
    assert ir_measures.calc_aggregate([pti.pMRR(ties="input")], ir_qrels, ir_run)[pti.pMRR(ties="input")] == 0.5


def test_followir_experiment_names_a_system_that_skips_paired_topics(mini):
    pool = mini.candidates() >> pti.PoolBM25()
    drops = pool >> pt.apply.generic(lambda r: r[~r["qid"].isin(["102-changed", "108-og"])])
    with pytest.raises(ValueError, match=r"pMRR of 'drops': 2 base queries are skipped because the run has no rows for "
                                         r"their -og or -changed topic .*\(\['102', '108'\]\).*: a system returned no "
                                         "documents for some -og/-changed topics of instruct-mini"):
        pti.followir_experiment([pool, drops], mini, names=["full", "drops"])
    # pt.Experiment itself averages p-MRR over the queries it has, as pti.pmrr does, and says which it skipped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pt.Experiment([drops], mini.get_topics(), mini.get_qrels(), [pti.pMRR, AP @ 1000])
        value, per_query = _function_value(drops, mini)
    missing = [str(w.message) for w in caught if issubclass(w.category, pti.measures.MissingVariantWarning)]
    assert len(missing) == 1 and "['102', '108']" in missing[0], missing  # once, naming the system
    assert missing[0].startswith("pMRR of \"(Candidates(") and "batch_size" not in missing[0]
    assert len(per_query) == 8 and res.loc[0, "pMRR"] == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("precompute", [False, True])
def test_the_routed_execution_names_the_evaluated_system_in_batches(mini, precompute):
    """The system is handed over by the linear execution, not guessed from how often PyTerrier evaluated: with
    ``batch_size`` (one evaluation per batch) and after a shared prefix (the systems run are its remainders)."""
    pool = mini.candidates() >> pti.PoolBM25()
    drops = pool >> pt.apply.generic(lambda r: r[~r["qid"].isin(["102-changed", "108-og"])])
    topics = mini.get_topics()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt.Experiment([pool, drops], topics, mini.get_qrels(), [pti.pMRR], names=["full", "drops"],
                      batch_size=len(topics), precompute_prefix=precompute)
    missing = [str(w.message) for w in caught if issubclass(w.category, pti.measures.MissingVariantWarning)]
    assert len(missing) == 1 and missing[0].startswith("pMRR of 'drops': 2 base queries are skipped"), missing
    assert f"pt.Experiment(batch_size={len(topics)})" in missing[0]


# --- standard and paired measures in one pt.Experiment ---------------------------------------------------------------

MIXED = [pti.pMRR, AP @ 1000, nDCG @ 5]


def _reference(system, mini):
    """pMRR from the function, AP/nDCG from ir_measures on the whole run (every qid, -changed included)."""
    topics, qrels = mini.get_topics(), mini.get_qrels()
    run = system(topics)
    pmrr_value, pmrr_per_query = _function_value(system, mini)
    ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    ir_run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    agg = ir_measures.calc_aggregate([AP @ 1000, nDCG @ 5], ir_qrels, ir_run)
    per_query = {}
    for m in ir_measures.iter_calc([AP @ 1000, nDCG @ 5], ir_qrels, ir_run):
        per_query.setdefault(str(m.measure), {})[m.query_id] = m.value
    per_query["pMRR"] = {f"{q}-og": v for q, v in pmrr_per_query.items()}
    return {"pMRR": pmrr_value, "AP@1000": agg[AP @ 1000], "nDCG@5": agg[nDCG @ 5]}, per_query


def test_mixed_measures_means_equal_the_references(mini, runs):
    res = pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), MIXED, names=list(runs))
    assert list(res.columns) == ["name", "pMRR", "AP@1000", "nDCG@5"]
    for name, system in runs.items():
        want, _ = _reference(system, mini)
        row = res.set_index("name").loc[name]
        for measure, value in want.items():
            assert row[measure] == pytest.approx(value, abs=1e-12), measure


def test_mixed_measures_significance_pairs_each_measure_over_its_queries(mini, runs):
    res = pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), MIXED, names=list(runs), baseline=0)
    (_, base), (_, other) = (_reference(s, mini) for s in runs.values())
    row = res.iloc[1]
    for measure, n in (("pMRR", 10), ("AP@1000", 20), ("nDCG@5", 20)):
        qids = list(base[measure])
        assert len(qids) == n  # p-MRR once per base query, AP/nDCG on every -og and -changed qid
        b, o = np.array([base[measure][q] for q in qids]), np.array([other[measure][q] for q in qids])
        assert row[f"{measure} p-value"] == pytest.approx(stats.ttest_rel(o, b)[1], abs=1e-12)
        assert (row[f"{measure} +"], row[f"{measure} -"]) == (int((o > b).sum()), int((o < b).sum()))
    assert res.iloc[0][["pMRR +", "pMRR -", "pMRR p-value"]].isna().all()


def test_mixed_measures_perquery_has_no_nan_rows_and_both_agrees(mini, runs):
    topics, qrels = mini.get_topics(), mini.get_qrels()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        means, pq = pt.Experiment(list(runs.values()), topics, qrels, MIXED, names=list(runs), perquery="both")
    assert not [w for w in record if "not found in qrels" in str(w.message)]
    assert not pq["value"].isna().any()
    counts = pq[pq.name == "PoolBM25"].groupby("measure")["qid"].nunique().to_dict()
    assert counts == {"pMRR": 10, "AP@1000": 20, "nDCG@5": 20}
    assert set(pq[pq.measure == "pMRR"].qid) == {f"{q}-og" for q in range(101, 111)}
    pd.testing.assert_frame_equal(means, pt.Experiment(list(runs.values()), topics, qrels, MIXED, names=list(runs)))


def test_perquery_still_backfills_topics_absent_from_the_qrels(mini, runs):
    topics = pd.concat([mini.get_topics(),
                        pd.DataFrame({"qid": ["999-og"], "query": ["unjudged"], "instruction": [""]})],
                       ignore_index=True)
    run = runs["PoolBM25"](mini.get_topics())
    with pytest.warns(UserWarning, match=r"^1 topic\(s\) not found in qrels"):
        pq = pt.Experiment([run], topics, mini.get_qrels(), MIXED, names=["pool"], perquery=True)
    assert pq[pq.value.isna()].qid.unique().tolist() == ["999-og"]


def test_column_order_follows_the_given_order_for_every_hash_seed():
    """Columns follow the given order whatever the order of a set of the measures: each child process (a hash seed is
    fixed at start) evaluates every order of both lists; seeds 1 and 2 order the sets of both lists differently
    (``set_orders`` shows it), so an order taken from a set would differ between them."""
    code = (
        "import itertools, sys, pyterrier_instruct as pti; assert 'pyterrier' not in sys.modules\n"
        "import pyterrier as pt\n"  # the layer installs itself when pyterrier is imported after pyterrier_instruct
        "from ir_measures import AP, nDCG\n"
        "sys.path.insert(0, sys.argv[1]); from paired_toys import tiny_paired\n"
        "topics, qrels, run = tiny_paired()\n"
        "for ms in ([pti.OG(AP@1000), pti.pMRR, pti.OG(nDCG@5)], [nDCG@5, pti.pMRR, AP@1000]):\n"
        "    print('set', '|'.join(map(str, set(ms))))\n"
        "    for order in itertools.permutations(ms):\n"
        "        print('|'.join(map(str, order)), '|'.join(pt.Experiment([run], topics, qrels, list(order), "
        "names=['r']).columns))\n"
    )
    import os
    set_orders = []
    for seed in (1, 2):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, os.path.dirname(__file__)], env=env,
                              capture_output=True, text=True, check=True)
        lines = [line.split(" ") for line in done.stdout.splitlines()]
        set_orders.append([order for kind, order in lines if kind == "set"])
        given = [(order, columns) for order, columns in lines if order != "set"]
        assert len(given) == 12 and all(columns == "name|" + order for order, columns in given), given
        assert given[0] == ("OG(AP@1000)|pMRR|OG(nDCG@5)", "name|OG(AP@1000)|pMRR|OG(nDCG@5)")
        assert given[6] == ("nDCG@5|pMRR|AP@1000", "name|nDCG@5|pMRR|AP@1000")
    assert all(a != b for a, b in zip(*set_orders)), set_orders


# --- plain experiments are PyTerrier's own ----------------------------------------------------------------------------

def _plain_outputs(mini, runs):
    """Plain (trec_eval-only) experiments in every output form, as text (6 paired topics: batches of 3 split them)."""
    topics, qrels = mini.get_topics().head(6), mini.get_qrels()
    systems, names, ms = list(runs.values()), list(runs), [AP @ 1000, nDCG @ 5, "P_5"]
    extra = pd.concat([topics, pd.DataFrame({"qid": ["999-og"], "query": ["unjudged"], "instruction": [""]})])
    frames = [runs["PoolBM25"](topics), runs["BM25+instr"](topics)]
    out = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out.append(pt.Experiment(systems, topics, qrels, ms, names=names).to_csv())
        holm = pt.Experiment(systems, topics, qrels, ms, names=names, baseline=0, correction="holm", round=4)
        out.append(holm.to_csv())
        out.append(pt.Experiment(systems, topics, qrels, ms, names=names, perquery=True).to_csv())
        both = pt.Experiment(frames, extra, qrels, ms, names=names, perquery="both")
        out += [both[0].to_csv(), both[1].to_csv()]
        out.append(repr(pt.Experiment(frames, topics, qrels, ms, names=names, dataframe=False)))
        out.append(pt.Experiment(systems, topics, qrels, ms, names=names, batch_size=3, plan="tree").to_csv())
        out.append(pt.Experiment(systems, topics, qrels, ms, names=names, batch_size=3, baseline=1,
                                 highlight="bold").data.to_csv())
    out.append(sorted(str(w.message) for w in record if "DataFrame.drop" not in str(w.message)))
    return out


def test_plain_experiments_are_byte_identical_with_and_without_the_layer(mini, runs):
    assert _pt_compat.STATUS == "active"
    with_layer = _plain_outputs(mini, runs)
    _pt_compat.uninstall()
    try:
        assert not hasattr(pt.Experiment, "__wrapped__")
        without = _plain_outputs(mini, runs)
        # what the layer is for: PyTerrier alone fails on a qid that lacks a measure
        with pytest.raises(KeyError, match="pMRR"):
            pt.Experiment(list(runs.values()), mini.get_topics(), mini.get_qrels(), MIXED)
    finally:
        assert _pt_compat.install() == "active"
    assert with_layer == without
    assert any("1 topic(s) not found in qrels" in m for m in with_layer[-1])  # PyTerrier's back-fill kept


def test_layer_is_off_outside_the_tested_pyterrier_versions(monkeypatch, mini, runs):
    """On an untested PyTerrier only a guard is installed: a list mixing the package's measures with standard ones is
    refused with one error naming the version and what to do, before any system runs (PyTerrier alone would run every
    system, then raise KeyError: 'pMRR'); other lists go to PyTerrier untouched."""
    calls = []
    counting = pt.apply.generic(lambda r: calls.append(len(r)) or r) >> mini.candidates() >> pti.PoolBM25()
    topics, qrels = mini.get_topics(), mini.get_qrels()
    _pt_compat.uninstall()
    try:
        monkeypatch.setattr(pt, "__version__", "1.2.0")
        assert _pt_compat.install().startswith("inactive: pyterrier 1.2.0 is outside the tested range 1.1.0–1.1.2")
        for measures in (MIXED, ["pMRR", AP @ 1000], [pti.OG(nDCG @ 5), "map"]):
            with pytest.raises(RuntimeError, match=r"pt.Experiment with pyterrier_instruct's measures \(.+\) beside "
                               r"standard ones \(.+\) .* tested on PyTerrier 1.1.0–1.1.2 and is off on PyTerrier "
                               r"1.2.0.*separate pt.Experiment calls, or install a tested PyTerrier \(pip install "
                               r"'pyterrier>=1.1.0,<=1.1.2'\)"):
                pt.Experiment([counting], topics, qrels, measures)
        assert calls == []
        alone = pt.Experiment([counting], topics, qrels, [pti.pMRR], names=["x"])
        plain = pt.Experiment([counting], topics, qrels, [AP @ 1000], names=["x"])
        assert list(alone.columns) == ["name", "pMRR"] and list(plain.columns) == ["name", "AP@1000"]
    finally:
        monkeypatch.undo()
        _pt_compat.uninstall()
        assert _pt_compat.install() == "active"
    assert hasattr(pt.Experiment, "__wrapped__")


# --- batch_size -------------------------------------------------------------------------------------------------------

def test_batch_size_that_splits_variants_is_refused_before_any_system_runs(mini):
    calls = []
    counting = pt.apply.generic(lambda r: calls.append(len(r)) or r) >> mini.candidates() >> pti.PoolBM25()
    for plan, where in (("linear",
                         r" \('102' in batches \[1, 2\]; '105' in batches \[3, 4\]; '108' in batches \[5, 6\]\)"),
                        ("tree", r" \('10\d' in batches \[\d, \d\]")):
        with pytest.raises(ValueError, match=r"pt.Experiment\(batch_size=3\) would evaluate the variants of \d+ base "
                                             rf"queries in different batches{where}.*the measures pMRR compare.*"
                                             r"Drop batch_size=.*batch_size=2 keeps them together"):
            pt.Experiment([counting], mini.get_topics(), mini.get_qrels(), [pti.pMRR, AP @ 1000], batch_size=3,
                          plan=plan)
    assert set(calls) == {0}  # no topic ran: only PyTerrier's inspection (validate='warn') called it on empty frames
    shuffled = mini.get_topics().sort_values("variant", kind="stable")  # all -changed after all -og
    with pytest.raises(ValueError, match=r"variants of 10 base queries.*order the topics so that each query's variants "
                                         r"are adjacent"):
        pt.Experiment([counting], shuffled, mini.get_qrels(), [pti.pMRR], batch_size=4)


def test_batch_size_that_keeps_variants_together_gives_the_unbatched_values(mini, runs):
    systems, topics, qrels = list(runs.values()), mini.get_topics(), mini.get_qrels()
    whole = pt.Experiment(systems, topics, qrels, MIXED, names=list(runs), baseline=0)
    for plan in ("linear", "tree"):
        batched = pt.Experiment(systems, topics, qrels, MIXED, names=list(runs), baseline=0, batch_size=4, plan=plan,
                                verbose=False)
        pd.testing.assert_frame_equal(batched, whole, check_exact=False, rtol=0, atol=1e-12)


def test_batch_size_that_splits_a_robustness_group_is_refused():
    rng = np.random.default_rng(1)
    qids = [f"q{g}_{i}" for g in range(3) for i in range(3)]
    qrels = pd.DataFrame({"qid": qids, "docno": "d0", "label": 1})
    run = pd.DataFrame({"qid": np.repeat(qids, 2), "docno": ["d0", "d1"] * len(qids),
                        "score": rng.random(2 * len(qids))})
    topics = pd.DataFrame({"qid": qids, "query": "q"})
    system = pt.Transformer.from_df(run)
    with pytest.raises(ValueError, match=r"'q0' in batches \[1, 2\].*batch_size=3 keeps them together"):
        pt.Experiment([system], topics, qrels, [pti.Robustness @ 10, nDCG @ 10], batch_size=2)
    res = pt.Experiment([system], topics, qrels, [pti.Robustness @ 10, nDCG @ 10], batch_size=3)
    assert list(res.columns) == ["name", "Robustness@10", "nDCG@10"]
    assert res.loc[0, "Robustness@10"] == pytest.approx(pti.measures.robustness(run, qrels, 10), abs=1e-12)
    # result frames are evaluated whole, whatever batch_size says
    assert pt.Experiment([run], topics, qrels, [pti.Robustness @ 10], batch_size=2).loc[0, "Robustness@10"] == \
        pytest.approx(res.loc[0, "Robustness@10"], abs=1e-12)


# --- the upstream patch does what the layer does ----------------------------------------------------------------------

PATCH = Path(__file__).parents[1] / "docs" / "upstream" / "pyterrier-mean-of-measures.patch"
def _mixed_outputs() -> str:
    """Experiments mixing the package's measures with standard ones (baseline, per-query), as text."""
    topics, qrels, run = tiny_paired(6)
    other = run.assign(score=run["score"][::-1].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean = pt.Experiment([run, other], topics, qrels, [pti.pMRR, AP @ 1000, nDCG @ 5], names=["a", "b"], baseline=0)
        perquery = pt.Experiment([run, other], topics, qrels, [pti.OG(nDCG @ 5), pti.pMRR], names=["a", "b"],
                                 perquery=True)
    return mean.to_csv() + "\n" + perquery.to_csv() + "\n"


#: PyTerrier patched (its folder first on the path), the layer uninstalled: the experiments in a fresh process
PATCHED_SCRIPT = (
    "import sys\n"
    "import pyterrier as pt\n"
    "from pyterrier_instruct import _pt_compat\n"
    "_pt_compat.uninstall()\n"
    "sys.path.insert(0, sys.argv[1]); from test_experiment import _mixed_outputs\n"
    "print(pt.__file__, _pt_compat.STATUS)\n"
    "print(_mixed_outputs(), end='')\n"
)


@pytest.mark.skipif(pt.__version__ != "1.1.2", reason="the patch is against PyTerrier 1.1.2's source")
def test_upstream_patch_applies_to_pyterrier_and_gives_the_layers_results(tmp_path):
    """The patched PyTerrier alone (a child process) gives the layer's text (this process, the layer active)."""
    import os
    import shutil
    tool = shutil.which("patch")
    assert tool is not None, "the `patch` program is needed to check docs/upstream/pyterrier-mean-of-measures.patch"
    shutil.copytree(Path(pt.__file__).parent, tmp_path / "pyterrier", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([tool, "-p1", "--quiet", "-i", str(PATCH)], cwd=tmp_path, check=True)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run([sys.executable, "-c", PATCHED_SCRIPT, os.path.dirname(__file__)], env=env,
                          capture_output=True, text=True, check=True)
    first, _, patched = done.stdout.partition("\n")
    assert str(tmp_path) in first and first.endswith("uninstalled")
    assert _pt_compat.STATUS == "active" and str(tmp_path) not in pt.__file__
    layer = _mixed_outputs()
    assert patched == layer and ",pMRR,AP@1000,nDCG@5,pMRR +" in layer
