"""Benchmark reports: paper layouts, ×100 rounding, provenance/tie-break attrs, paper numbers beside ours,
markdown and bar charts — each cell checked against the measure functions on the same runs."""
import math

import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.evaluation import (followir_experiment, followir_report, ifir_report, infosearch_report,
                                           instructir_report, plot_report, to_markdown, with_paper)
from pyterrier_instruct.measures import infosearch_eval, robustness_eval


class _Dataset:
    """The two methods a report reads, plus provenance."""

    def __init__(self, topics, qrels, name):
        self.topics, self.qrels, self.name = topics, qrels, name
        self.provenance = {"repo_id": f"test/{name}", "revision": "0" * 40}

    def get_topics(self):
        return self.topics

    def get_qrels(self):
        return self.qrels


def _infosearch(seed, prefix, n=10):
    """Instances ``<core>_<k>`` (2 per core query) × og/changed/reversed; one gold and 3 negatives each."""
    rng = np.random.default_rng(seed)
    qrels, topics, runs = [], [], {"a": [], "b": []}
    for i in range(n):
        inst = f"{prefix}{i // 2}_{i % 2}"
        docs = [f"d{i}_{j}" for j in range(15)]
        for j in range(4):
            qrels += [(f"{inst}-og", docs[j], 1), (f"{inst}-changed", docs[j], int(j == 0)),
                      (f"{inst}-reversed", docs[j], int(j != 0))]
        for v in ("og", "changed", "reversed"):
            topics.append((f"{inst}-{v}", "query", "instruction"))
            for name in runs:
                runs[name] += [(f"{inst}-{v}", d, float(s)) for d, s in zip(docs, rng.random(15))]
    topics = pd.DataFrame(topics, columns=["qid", "query", "instruction"])
    qrels = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    return topics, qrels, {k: pd.DataFrame(v, columns=["qid", "docno", "score"]) for k, v in runs.items()}


def _split(frame, variant):
    part = frame[frame["qid"].str.endswith(f"-{variant}")]
    return part.assign(qid=part["qid"].str.rsplit("-", n=1).str[0])


def test_followir_report_layout_values_provenance_and_paper(mini, mini_bm25, tmp_path):
    systems = {"BM25": mini_bm25, "BM25 q+i": pti.FoldInstruction() >> mini_bm25}
    table = followir_report(systems, {"robust04": mini, "core17": mini})
    assert table.columns.tolist() == ["Model", "robust04 MAP@1000", "robust04 p-MRR", "core17 MAP@1000",
                                      "core17 p-MRR", "Avg Score", "Avg p-MRR"]
    means = followir_experiment(list(systems.values()), mini, list(systems))
    assert table["robust04 p-MRR"].tolist() == [round(100 * v, 1) for v in means["pMRR"]]
    assert table["Avg Score"].tolist() == table["robust04 MAP@1000"].tolist()
    assert table.attrs["settings"]["ties"] == "docno" and table.attrs["provenance"]["robust04"] == mini.provenance
    beside = with_paper(table, {"BM25": "BM25"}, paper="FollowIR")
    paper_row = beside[beside["Model"].str.contains("paper: BM25")].iloc[0]
    delta_row = beside[beside["Model"].str.contains("Δ")].iloc[0]
    assert paper_row["robust04 MAP@1000"] == 12.1 and paper_row["core17 p-MRR"] == -1.1
    assert paper_row["Avg p-MRR"] == -2.1
    assert delta_row["robust04 MAP@1000"] == pytest.approx(table["robust04 MAP@1000"].iloc[0] - 12.1, abs=0.051)
    md = to_markdown(beside)
    assert "| Model | robust04 MAP@1000 |" in md and "ties=docno" in md and "paper: BM25 (FollowIR)" in md
    plot_report(beside, str(tmp_path / "bars.png"))
    assert (tmp_path / "bars.png").stat().st_size > 10_000
    with pytest.raises(ValueError, match="not systems of this table"):
        with_paper(table, {"nope": "BM25"})
    with pytest.raises(ValueError, match="unknown model='NoSuchModel'"):
        with_paper(table, {"BM25": "NoSuchModel"})
    with pytest.raises(ValueError, match="no published followir numbers for model 'GPT-4o'"):
        with_paper(table, {"BM25": "GPT-4o"})
    lenient = with_paper(table, {"BM25": "GPT-4o"}, strict=False)  # not reported here: no paper rows, no error
    assert lenient["Model"].tolist() == table["Model"].tolist() and lenient.attrs["paper_rows"] == {}
    assert beside.attrs["paper_rows"] == {"BM25": "BM25"}


def test_infosearch_report_tables_equal_the_measure_functions():
    dims = {}
    runs_by_dim = {}
    for seed, dim in enumerate(("audience", "keyword")):
        topics, qrels, runs = _infosearch(seed, dim[:3])
        dims[dim] = _Dataset(topics, qrels, dim)
        runs_by_dim[dim] = runs
    # a system that returns the precomputed run of whichever dimension it is asked about
    systems = {name: pt.Transformer.from_df(pd.concat([runs_by_dim[d][name] for d in dims])) for name in ("a", "b")}
    table2 = infosearch_report(systems, dims)
    table3 = infosearch_report(systems, dims, table=3)
    assert table3.columns.tolist() == ["Model", "audience WISE", "keyword WISE", "audience SICR", "keyword SICR",
                                       "Avg WISE", "Avg SICR"]
    for name in ("a", "b"):
        per_dim = []
        for dim, ds in dims.items():
            run, q = runs_by_dim[dim][name], ds.get_qrels()
            ref = infosearch_eval(_split(run, "og"), _split(run, "changed"), _split(run, "reversed"),
                                  og_qrels=_split(q, "og"), changed_qrels=_split(q, "changed"), warn=False)["overall"]
            rob = robustness_eval(_split(run, "changed"), _split(q, "changed"))["robustness"]
            ndcg = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], _split(q, "reversed").rename(
                columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}),
                _split(run, "reversed").rename(columns={"qid": "query_id", "docno": "doc_id"}))[ir_measures.nDCG @ 10]
            per_dim.append((ref, rob, ndcg))
            row3 = table3[table3["Model"] == name].iloc[0]
            assert row3[f"{dim} WISE"] == round(100 * ref["WISE"], 1)
        row = table2[table2["Model"] == name].iloc[0]
        assert row["Avg WISE"] == round(100 * np.mean([r["WISE"] for r, _, _ in per_dim]), 1)
        assert row["Avg SICR"] == round(100 * np.mean([r["SICR"] for r, _, _ in per_dim]), 1)
        assert row["Avg p-MRR"] == round(100 * np.mean([r["p-MRR"] for r, _, _ in per_dim]), 1)
        assert row["Avg R_og"] == round(np.mean([r["ori_pos_rank"] for r, _, _ in per_dim]), 1)  # ranks not ×100
        assert row["Avg Robustness@10/changed"] == round(100 * np.mean([b for _, b, _ in per_dim]), 1)
        assert row["Avg nDCG@10/reversed"] == round(100 * np.mean([c for _, _, c in per_dim]), 1)
    assert table2.attrs["settings"] == {"WISE": "2024", "SICR": "code", "ties": "input"}
    beside = with_paper(table2, {"a": "BM25"})
    assert beside.iloc[1]["Avg WISE"] == -12.0 and beside.iloc[1]["Avg R_og"] == 18.4
    with pytest.raises(ValueError, match="table must be 2 or 3"):
        infosearch_report(systems, dims, table=4)


def test_infosearch_report_evaluates_all_measures_in_one_experiment_per_dimension(monkeypatch):
    """Issue 45: one ``pt.Experiment`` per dimension with every measure (it was one per measure), each measure still
    averaged over its own qids: the means equal one experiment per measure, which is what runs where the layer of
    ``_pt_compat`` is off (an untested PyTerrier)."""
    from pyterrier_instruct import _pt_compat
    from pyterrier_instruct.evaluation.infosearch import infosearch_measures
    topics, qrels, runs = _infosearch(7, "aud", n=4)
    systems = {name: pt.Transformer.from_df(run) for name, run in runs.items()}
    calls, experiment = [], pt.Experiment
    monkeypatch.setattr(pt, "Experiment", lambda *a, **k: calls.append(len(a[3])) or experiment(*a, **k))
    tables = {}
    for status in ("inactive: an untested PyTerrier", "active"):
        monkeypatch.setattr(_pt_compat, "STATUS", status)
        tables[status] = infosearch_report(systems, {"audience": _Dataset(topics, qrels, "audience")})
    measures = len(infosearch_measures())
    assert calls == [1] * measures + [measures]
    apart, together = (t.attrs["long"] for t in tables.values())
    assert len(together) == 2 * measures and together["value"].notna().all()
    pd.testing.assert_frame_equal(together, apart)


def test_the_measures_of_one_evaluation_split_the_variants_once(monkeypatch):
    """Issue 45: OG/Changed/Reversed, pMRR, Robustness and the InfoSearch measures evaluated together split the paired
    qrels and run by variant once (they share the evaluation's cache), with the values each gives alone."""
    from pyterrier_instruct import instructions
    from pyterrier_instruct.measures import SICR, WISE, Changed, OG, Reversed, Robustness
    topics, qrels, runs = _infosearch(3, "kw", n=4)
    measures = [OG(ir_measures.nDCG @ 10), Changed(ir_measures.RR @ 1), Reversed(ir_measures.nDCG @ 10), pti.pMRR,
                Robustness(variant="changed") @ 10, WISE(), SICR()]
    run = runs["a"].merge(topics, on="qid")
    alone = {m: ir_measures.calc_aggregate([m], qrels, run)[m] for m in measures}
    splits, split = [], instructions.split_qids  # what by_variant splits a frame's qids with
    monkeypatch.setattr(instructions, "split_qids", lambda qids: splits.append(len(qids)) or split(qids))
    together = ir_measures.calc_aggregate(measures, qrels, run)
    assert splits == [len(qrels), len(run)]
    assert together == alone


def test_instructir_report():
    rng = np.random.default_rng(5)
    qrels, run = [], []
    for g in range(6):
        for k in range(3):
            qid = f"{g}_{k}"
            qrels.append((qid, f"p{g}_{k}", 1))
            run += [(qid, f"p{g}_{k}" if j == 0 else f"x{j}", float(s)) for j, s in enumerate(rng.random(12))]
    qrels = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    run = pd.DataFrame(run, columns=["qid", "docno", "score"])
    ds = _Dataset(pd.DataFrame({"qid": qrels["qid"], "query": "q", "instruction": "i"}), qrels, "instructir")
    table = instructir_report([pt.Transformer.from_df(run)], ds, names=["sys"])
    ref = robustness_eval(run, qrels)
    assert table.columns.tolist() == ["Model", "instructir nDCG@10", "instructir Robustness@10"]
    assert table.iloc[0].tolist()[1:] == [round(100 * ref["ndcg"], 1), round(100 * ref["robustness"], 1)]
    beside = with_paper(table, {"sys": "FollowIR-7B"}, paper="FollowIR")
    assert beside.iloc[1]["instructir Robustness@10"] == 71.5


def test_ifir_report_micro_average_levels_and_origin():
    # q1 has levels 1–3, q2 only level 1: the subset value is the mean over the 4 (query, level) pairs
    # q1_2 has a second gold "z" that no run retrieves: the IFIR code ignores it, standard nDCG does not
    qrels = pd.DataFrame({"qid": ["q1_1", "q1_2", "q1_2", "q1_3", "q2_1"], "docno": ["a", "b", "z", "c", "a"],
                          "label": 1})
    topics = pd.DataFrame({"qid": ["q1_0", "q1_1", "q1_2", "q1_3", "q2_0", "q2_1"], "query": "q", "instruction": ""})
    ranked = {"q1_0": "abc", "q1_1": "xab", "q1_2": "bxy", "q1_3": "xyc", "q2_0": "ax", "q2_1": "xa"}
    run = pd.DataFrame([(q, d, float(10 - j)) for q, docs in ranked.items() for j, d in enumerate(docs)],
                       columns=["qid", "docno", "score"])
    table = ifir_report({"sys": pt.Transformer.from_df(run)}, {"fiqa": _Dataset(topics, qrels, "fiqa")}, origin=True)
    row = table[table["Model"] == "sys"].iloc[0]
    # first gold at rank p: DCG 1/log2(p + 1); the IFIR code's IDCG counts only the retrieved gold (1 here)
    code = [1 / math.log2(3), 1.0, 1 / 2, 1 / math.log2(3)]
    assert row["fiqa nDCG@20"] == round(np.mean(code), 2)
    assert row["fiqa MRR@20"] == round((1 / 2 + 1 + 1 / 3 + 1 / 2) / 4, 2)
    assert row["fiqa MRR@20/level1"] == round((1 / 2 + 1 / 2) / 2, 2)
    origin = table[table["Model"] == "sys (origin)"].iloc[0]  # the level-0 ranking against each level's gold
    assert origin["fiqa MRR@20"] == round((1 + 1 / 2 + 1 / 3 + 1) / 4, 2)
    std = ifir_report({"sys": pt.Transformer.from_df(run)}, {"fiqa": _Dataset(topics, qrels, "fiqa")}, norm="standard")
    assert std.iloc[0]["fiqa nDCG@20"] == round(np.mean([code[0], 1 / (1 + 1 / math.log2(3)), code[2], code[3]]), 2)
    assert std.iloc[0]["fiqa nDCG@20"] < row["fiqa nDCG@20"]
    assert table.attrs["settings"]["nDCG"] == "ifir_code" and table.attrs["decimals"] == 2


def test_tables_never_show_minus_zero(tmp_path):
    """A mean rounding to zero from below is 0.0 in the frame, csv and markdown (pandas writes -0.0 as "-0.0")."""
    from pyterrier_instruct.evaluation._report import build_table
    long = pd.DataFrame({"model": ["a", "a", "b", "b"], "dataset": ["d"] * 4, "measure": ["p-MRR", "MAP@1000"] * 2,
                         "value": [-0.0004, 0.5, -0.0, 0.25]})
    table = build_table(long, "followir", models=["a", "b"], settings={}, provenance={})
    assert table["d p-MRR"].tolist() == [0.0, 0.0] and not np.signbit(table["d p-MRR"].to_numpy()).any()
    table.to_csv(tmp_path / "t.csv", index=False)
    assert "-0.0" not in (tmp_path / "t.csv").read_text() and "-0.0" not in to_markdown(table)


def test_per_query_plot_marks_all_zero_series_and_means_in_table_order(tmp_path):
    """Systems keep the given (table) order in the legend, not pivot_table's alphabetical one; a series that is 0 on
    every query, which draws no visible bars, is marked; every series has a mean marker."""
    from pyterrier_instruct.evaluation import plot_per_query_pmrr
    values = {"Zeta (query only)": [0.0, -0.0, 0.0], "Alpha": [0.10, -0.05, 0.25], "Mid": [0.0, 0.3, np.nan],
              "Tiny": [-0.0001, 0.0, 0.0]}
    perquery = pd.DataFrame([(name, f"{q}-og", "pMRR", v) for name, vs in values.items() for q, v in zip("123", vs)],
                            columns=["name", "qid", "measure", "value"])
    fig = plot_per_query_pmrr(perquery, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").stat().st_size > 5000
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Zeta (query only) (all 0)", "Alpha", "Mid", "Tiny"]
    marks = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
    assert set(marks) == {"all 0:Zeta (query only)", "mean:Zeta (query only)", "mean:Alpha", "mean:Mid", "mean:Tiny"}
    np.testing.assert_allclose(marks["all 0:Zeta (query only)"].get_ydata(), [0, 0, 0])
    assert len(marks["all 0:Zeta (query only)"].get_xdata()) == 3
    for name, vs in values.items():
        assert marks[f"mean:{name}"].get_ydata()[0] == pytest.approx(100 * np.nanmean(vs))
        assert marks[f"mean:{name}"].get_xdata()[0] > 2.5  # the "mean" group after the three queries
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "mean"]
    assert [t.get_text() for t in ax.texts] == ["+0.0", "+10.0", "+15.0", "+0.0"]  # rounded to 0: never "-0.0"
    again = plot_per_query_pmrr(perquery, names=["Mid", "Alpha", "Zeta (query only)", "Tiny"])
    assert [t.get_text() for t in again.axes[0].get_legend().get_texts()] == \
        ["Mid", "Alpha", "Zeta (query only) (all 0)", "Tiny"]
