"""Issue 43: one suite (pti.suite, `pyterrier-instruct suite`), instruction sensitivity (pti.sensitivity) and what a
run costs (measures/cost.py: the suite's cost table, pti.Calls/Tokens/Cost) on the miniature layouts of conftest.py."""
import json
import math
import os
import random
from collections import Counter

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._config import Configured
from pyterrier_instruct.backends import FunctionBackend, Generation
from pyterrier_instruct.evaluation import IFIRJudge
from pyterrier_instruct.evaluation.runs import SavedRun

BENCHMARKS = ["followir/robust04", "nevir", "instructir"]


class Failing(Configured, pt.Transformer):
    """A reranker that fails on every input."""

    def __init__(self, reason: str = "broken"):
        self.reason = reason

    def transform(self, inp):
        raise RuntimeError(self.reason)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("suite"))
    return out, pti.suite({"pool": pti.PoolBM25(verbose=False)}, BENCHMARKS, out=out, standins=True, verbose=False)


def test_each_column_equals_the_benchmarks_own_evaluation(board):
    out, leaderboard = board
    row = leaderboard.set_index("system").loc["pool"]
    robust04 = pti.load_dataset("followir/robust04")
    own = pti.followir_report({"pool": robust04.candidates() >> pti.PoolBM25(verbose=False)}, {"robust04": robust04})
    assert row["followir"] == own["robust04 p-MRR"].iloc[0]
    nevir = pti.load_dataset("nevir")  # pipelines/nevir.py's evaluation
    res = pt.Experiment([nevir.candidates() >> pti.PoolBM25(verbose=False)], nevir.get_topics(), nevir.get_qrels(),
                        [pti.PairedAccuracy], names=["pool"])
    assert row["nevir"] == round(100 * res["PairedAccuracy"].iloc[0], 1)
    instructir = pti.load_dataset("instructir")  # the instructir command's reranking rows
    bm25 = pti.FoldInstruction() >> pti.BM25(instructir.get_corpus_iter(verbose=False), verbose=False)
    own = pti.instructir_report({"pool": bm25 % 100 >> instructir.text_loader() >> pti.PoolBM25(verbose=False)},
                                instructir)
    assert row["instructir"] == own["instructir Robustness@10"].iloc[0]
    first_stage = pti.instructir_report({"BM25": bm25}, instructir)
    assert leaderboard.set_index("system").loc["BM25", "instructir"] == first_stage["instructir Robustness@10"].iloc[0]


NEW = ["bright-pro/biology", "r2med/Biology", "crumb/clinical_trial", "freshstack/langchain", "multiconir/books"]


def test_the_2025_26_columns_equal_each_benchmarks_official_evaluate(tmp_path):
    """Issue 44 in the suite: each column is ``ds.official_evaluate``'s main measure (its own rules), ×100."""
    from pyterrier_instruct.evaluation.leaderboard import BENCHMARKS as SPECS, benchmark_of
    board = pti.suite({"pool": pti.PoolBM25(verbose=False)}, NEW, out=str(tmp_path), standins=True, verbose=False)
    assert board["notes"].tolist() == ["", ""] and board[["bright-pro", "r2med", "crumb", "freshstack",
                                                          "multiconir"]].notna().all().all()
    assert board.attrs["perquery"].empty  # ds.official_evaluate gives means only
    for dataset_id in NEW:
        ds = pti.load_dataset(dataset_id)
        spec = SPECS[benchmark_of(ds)]
        if spec.pooled:
            first = ds.candidates() >> pti.PoolBM25(verbose=False)
            pool = first
        else:
            first = pti.FoldInstruction() >> pti.BM25(ds.get_corpus_iter(verbose=False), verbose=False, **spec.bm25)
            pool = first % 100 >> ds.text_loader() >> pti.PoolBM25(verbose=False)
        for name, system in (("BM25", first), ("pool", pool)):
            own = ds.official_evaluate(system(ds.get_topics()))[spec.main]
            assert board.set_index("system").loc[name, benchmark_of(ds)] == round(100 * own, 1), (dataset_id, name)


def test_leaderboard_ranks_and_labels_stand_ins_in_every_file(board):
    out, leaderboard = board
    assert list(leaderboard.columns) == ["system", "followir", "nevir", "instructir", "mean rank", "mean normalised",
                                         "data", "notes"]
    scores = leaderboard[["followir", "nevir", "instructir"]]
    ranks = scores.rank(ascending=False).mean(axis=1).round(2)
    assert leaderboard["mean rank"].tolist() == ranks.tolist()
    best, worst = scores.max(), scores.min()
    scaled = [(v - worst[b]) / (best[b] - worst[b]) if best[b] > worst[b] else 1.0 for b, v in scores.iloc[0].items()]
    assert leaderboard["mean normalised"].iloc[0] == round(sum(scaled) / 3, 3)
    assert scores.iloc[0].tolist() != scores.iloc[1].tolist() and 0 < leaderboard["mean normalised"].min() < 1
    assert set(leaderboard["data"]) == {"stand-in"}
    for name in ("leaderboard.csv", "cost.csv", "followir.csv", "nevir.csv", "instructir.csv"):
        assert set(pd.read_csv(os.path.join(out, name))["data"]) == {"stand-in"}, name
    for name in ("leaderboard.md", "followir.md", "nevir.md", "instructir.md"):
        assert "stand-in" in open(os.path.join(out, name), encoding="utf-8").read(), name
    saved = json.load(open(os.path.join(out, "leaderboard.json"), encoding="utf-8"))
    assert saved["data"] == "stand-in" and {r["data"] for r in saved["leaderboard"]} == {"stand-in"}
    assert os.path.getsize(os.path.join(out, "leaderboard.png")) > 0
    cost = leaderboard.attrs["cost"]
    assert cost[["system", "benchmark"]].values.tolist() == [[s, b] for b in ("followir", "nevir", "instructir")
                                                            for s in ("BM25", "pool")]
    assert (cost["queries"] > 0).all() and (cost["calls"] == 0).all()


def test_second_run_computes_nothing_new(board, monkeypatch):
    out, first = board

    def refuse(*args, **kwargs):
        raise AssertionError("a saved run was computed again")
    monkeypatch.setattr(SavedRun, "_compute", refuse)
    again = pti.suite({"pool": pti.PoolBM25(verbose=False)}, BENCHMARKS, out=out, standins=True, verbose=False)
    pd.testing.assert_frame_equal(again.drop(columns="notes"), first.drop(columns="notes"))
    assert (again["notes"] == "").all()
    cost, cost_again = first.attrs["cost"], again.attrs["cost"]
    assert set(cost["runs"]) == {"computed"} and set(cost_again["runs"]) == {"reused"}
    assert cost_again["seconds"].tolist() == cost["seconds"].tolist()  # the cost of computing them, not of reading


def test_absent_data_and_a_failing_system_are_rows_saying_why(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    board = pti.suite({"pool": pti.PoolBM25(verbose=False), "broken": Failing("out of memory")},
                      ["nevir", "instructir"], out=str(tmp_path / "out"), paths={"instructir": str(empty)},
                      verbose=False)
    rows = board.set_index("system")
    assert rows.loc["pool", "nevir"] == rows.loc["pool", "nevir"]  # scored
    assert rows.loc["broken", "nevir"] != rows.loc["broken", "nevir"]  # NaN
    assert "nevir: failed: RuntimeError: out of memory" in rows.loc["broken", "notes"]
    assert all("instructir: no data" in n for n in rows["notes"])
    assert board["instructir"].isna().all()
    assert board.attrs["status"]["instructir"]["absent"][0].startswith("instructir:")
    assert [os.path.basename(d) for d in board.attrs["status"]["nevir"]["runs"]["broken"]] == ["broken"]
    assert set(board["data"]) == {"real"}


class Forcing(Configured, pt.Transformer):
    """A reasoning reranker stand-in whose every generation ends without a verdict (counted as Rank1 counts them)."""

    def __init__(self):
        self.stats = Counter()

    def transform(self, inp):
        self.stats.update(forced=len(inp), complete=0)
        return pt.model.add_ranks(inp.assign(score=0.0))


def test_generations_without_a_verdict_are_counted_in_the_row(tmp_path):
    board = pti.suite({"forcing": Forcing()}, ["nevir"], out=str(tmp_path), baseline=None, verbose=False)
    nevir = pti.load_dataset("nevir")
    candidates = len(nevir.candidates()(nevir.get_topics()))
    assert board["notes"].iloc[0] == (f"nevir: {candidates} generations without a verdict within the budget "
                                      "(verdict forced)")
    assert json.loads(board.attrs["cost"]["stats"].iloc[0]) == {"forced": candidates}


# --- issue 43 item 1: published numbers, stand-in labels, secondary and per-query tables, INSTFOL, shared BM25 --------

def _shown(table, measure, value):
    """A raw mean as the report prints it (its scale, unless the measure is unscaled; its decimals)."""
    scale = 1.0 if str(measure).startswith(table.attrs["unscaled"]) else table.attrs["scale"]
    return round(value * scale, table.attrs["decimals"]) + 0.0


def _marked_copy(tmp_path, dataset_id):
    """The dataset's layout folder copied and marked as a stand-in (as ``pti.testing.install_datasets`` marks it)."""
    import shutil

    from pyterrier_instruct._hub import STAND_IN_MARKER
    folder = tmp_path / "marked"
    shutil.copytree(pti.load_dataset(dataset_id).provenance["path"], folder)
    (folder / STAND_IN_MARKER).write_text(json.dumps({"stand_in": "test"}))
    return str(folder)


def test_published_numbers_beside_real_data_rows(tmp_path):
    out = tmp_path / "real"  # the conftest layouts carry no stand-in marker: real-looking data
    board = pti.suite({"pool": pti.PoolBM25(verbose=False)}, ["followir/robust04", "instructir"], out=str(out),
                      published={"BM25": "BM25"}, verbose=False)
    assert board["data"].tolist() == ["real", "real"]
    published = board.attrs["published"].set_index("benchmark")
    assert published.index.tolist() == ["followir", "instructir"] and set(published["system"]) == {"BM25"}
    for benchmark, dataset, measure in (("followir", "robust04", "p-MRR"), ("instructir", "instructir",
                                                                           "Robustness@10")):
        row = published.loc[benchmark]
        paper = pti.paper_numbers(paper=row["paper"], benchmark=benchmark, model="BM25", dataset=dataset,
                                  measure=measure)
        assert len(paper) == 1 and row["value"] == paper["value"].iloc[0], benchmark
        table = board.attrs["tables"][benchmark]  # with_paper's rows below the system, on the report's cells
        models = table["Model"].tolist()
        assert models[1] == f"  paper: BM25 ({row['paper']})" and models[2] == "  Δ ours − paper"
        column = f"{dataset} {measure}"
        assert table[column].iloc[1] == row["value"]
        assert table[column].iloc[2] == round(table[column].iloc[0] - row["value"], 1) + 0.0
        assert "pool" in models and not any(m.startswith("  paper") for m in models[models.index("pool"):])
    md = (out / "leaderboard.md").read_text(encoding="utf-8")
    paper_row = [line for line in md.splitlines() if line.startswith("|   paper: BM25 |")]
    assert paper_row == [f"|   paper: BM25 | {published.loc['followir', 'value']} | "
                         f"{published.loc['instructir', 'value']} | – | – | – | – |"]
    assert "paper: BM25" in (out / "followir.md").read_text(encoding="utf-8")
    assert json.loads((out / "leaderboard.json").read_text())["published"][0]["system"] == "BM25"
    again = pti.suite({"pool": pti.PoolBM25(verbose=False)}, ["followir/robust04", "instructir"], out=str(out),
                      published={"BM25": {"instructir": "BM25"}}, verbose=False)  # per benchmark, where names differ
    assert again.attrs["published"]["benchmark"].tolist() == ["instructir"]
    assert again.attrs["tables"]["followir"]["Model"].tolist() == ["BM25", "pool"]
    with pytest.raises(ValueError, match="unknown model='BM-25'"):
        pti.suite({}, ["nevir"], out=str(tmp_path / "x"), published={"BM25": "BM-25"}, verbose=False)
    with pytest.raises(ValueError, match=r"published= names \['monoT5'\], which are not systems"):
        pti.suite({}, ["nevir"], out=str(tmp_path / "x"), published={"monoT5": "MonoT5-base"}, verbose=False)


@pytest.mark.parametrize("standins", [None, False])
def test_stand_in_data_is_labelled_from_its_marker_and_never_gets_published_numbers(tmp_path, standins):
    paths = {"followir/robust04": _marked_copy(tmp_path, "followir/robust04")}
    out = tmp_path / "out"
    board = pti.suite({"pool": pti.PoolBM25(verbose=False)}, ["followir/robust04"], out=str(out), paths=paths,
                      standins=standins, published={"BM25": "BM25"}, verbose=False)
    assert board["data"].tolist() == ["stand-in", "stand-in"] and board.attrs["published"].empty
    table = board.attrs["tables"]["followir"]
    assert table["Model"].tolist() == ["BM25 [stand-in]", "pool [stand-in]"]  # no paper or Δ row
    for name in ("leaderboard.md", "followir.md", "secondary.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert "stand-in" in text and "paper:" not in text, name
    for name in ("leaderboard.csv", "cost.csv", "followir.csv", "secondary.csv", "perquery.csv"):
        assert set(pd.read_csv(out / name)["data"]) == {"stand-in"}, name


class StandInWeights(Configured, pt.Transformer):
    """A reranker whose model argument is a folder carrying the stand-in marker (scores: shorter text first)."""

    def __init__(self, model_name_or_path: str):
        self.model_name_or_path = model_name_or_path

    def transform(self, inp):
        return pt.model.add_ranks(inp.assign(score=-inp["text"].str.len().astype(float)))


def test_a_system_with_stand_in_weights_is_labelled_on_real_data(tmp_path):
    from pyterrier_instruct._hub import STAND_IN_MARKER
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / STAND_IN_MARKER).write_text(json.dumps({"stand_in": "test"}))
    board = pti.suite({"tiny": StandInWeights(str(weights))}, ["nevir"], out=str(tmp_path / "out"),
                      published={"tiny": "BM25"}, verbose=False)
    assert board.set_index("system")["data"].to_dict() == {"BM25": "real", "tiny": "stand-in"}
    assert board.attrs["tables"]["nevir"]["Model"].tolist() == ["BM25", "tiny [stand-in]"]
    assert "stand-in weights" in (tmp_path / "out" / "leaderboard.md").read_text(encoding="utf-8")


def _judge_answers(message_lists, **kwargs):
    """A scripted INSTFOL judge: every passage scores 2 or 3 with equal probability."""
    tokens = ['{"', "score", '":', " ", "2", "}"]
    tops = [[(t, 0.0)] for t in tokens]
    tops[4] = [("2", math.log(0.5)), ("3", math.log(0.5))]
    _judge_answers.prompts += len(message_lists)
    return [Generation.of("".join(tokens), tokens, tops) for _ in message_lists]


WIDE = ["mfollowir/fas", "infosearch/audience", "ifir/aila", "mair/dd-15", "bright/biology"]


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """One suite over a dataset of every other benchmark, with an INSTFOL judge (scripted, its own call store)."""
    out = tmp_path_factory.mktemp("wide")
    _judge_answers.prompts = 0
    judge = IFIRJudge(FunctionBackend(logprobs=_judge_answers), store=str(out / "judge"), verbose=False)
    board = pti.suite({"pool": pti.PoolBM25(verbose=False)}, WIDE, out=str(out / "suite"), judge=judge, verbose=False)
    return out, judge, board, _judge_answers.prompts


def test_secondary_cells_equal_each_reports_cells(wide, board):
    _, _, leaderboard, _ = wide
    secondary = leaderboard.attrs["secondary"].set_index("system")
    assert list(secondary.columns) == ["mfollowir:fas nDCG@20", "infosearch:audience SICR", "ifir:aila MRR@20",
                                       "ifir:aila INSTFOL@20"]
    fas = pti.load_dataset("mfollowir/fas")  # the benchmarks' own reports, computed here
    own = pti.followir_report({"pool": fas.candidates() >> pti.PoolBM25(verbose=False)}, {"fas": fas})
    assert secondary.loc["pool", "mfollowir:fas nDCG@20"] == own["fas nDCG@20"].iloc[0]
    audience = pti.load_dataset("infosearch/audience")
    own = pti.infosearch_report({"pool": audience.candidates() >> pti.PoolBM25(verbose=False)}, {"audience": audience},
                                table=3)
    assert secondary.loc["pool", "infosearch:audience SICR"] == own["audience SICR"].iloc[0]
    assert leaderboard.set_index("system").loc["pool", "infosearch"] == own["audience WISE"].iloc[0]
    for system in secondary.index:  # every cell is its report's cell
        for column, value in secondary.loc[system].items():
            benchmark, cell = column.split(":", 1)
            table = leaderboard.attrs["tables"][benchmark].set_index("Model")
            assert value == table.loc[system, cell], (system, column)
    assert list(board[1].attrs["secondary"].columns) == ["system", "followir:robust04 MAP@1000",
                                                         "instructir:instructir nDCG@10"]


def test_per_query_main_measure_averages_to_the_leaderboard_cell(wide, board):
    rows = []
    for out, leaderboard in ((wide[0] / "suite", wide[2]), board):
        perquery = leaderboard.attrs["perquery"]
        assert list(perquery.columns) == ["system", "benchmark", "dataset", "qid", "measure", "value"]
        saved = pd.read_csv(os.path.join(out, "perquery.csv"), dtype={"qid": str})
        pd.testing.assert_frame_equal(saved.drop(columns="data"), perquery, check_dtype=False)
        cells = leaderboard.set_index("system")
        for (system, benchmark), part in perquery.groupby(["system", "benchmark"]):
            assert part["dataset"].nunique() == 1  # one dataset each: the leaderboard cell is that dataset's
            table = leaderboard.attrs["tables"][benchmark]
            measure = leaderboard.attrs["measures"][benchmark]
            assert _shown(table, measure, part["value"].mean()) == cells.loc[system, benchmark], (system, benchmark)
            rows.append((benchmark, part["measure"].iloc[0], len(part)))
    # one value per query the measure averages: p-MRR per -og qid, Robustness per group, paired accuracy per pair
    assert sorted(set(rows)) == [("bright", "nDCG@10", 3), ("followir", "p-MRR", 3), ("ifir", "nDCG@20", 6),
                                 ("infosearch", "WISE", 4), ("instructir", "Robustness@10", 2),
                                 ("mair", "nDCG@10", 3), ("mfollowir", "p-MRR", 1), ("nevir", "PairedAccuracy", 4)]


def test_instfol_column_where_a_judge_is_given_and_its_calls_cost(wide, tmp_path):
    out, judge, board, prompts = wide
    rows = board.set_index("system")
    assert list(board.columns)[:5] == ["system", "mfollowir", "infosearch", "ifir", "ifir INSTFOL@20"]
    table = board.attrs["tables"]["ifir"].set_index("Model")
    assert rows["ifir INSTFOL@20"].tolist() == table.loc[["BM25", "pool"], "aila INSTFOL@20"].tolist()
    assert rows["ifir"].tolist() == table.loc[["BM25", "pool"], "aila nDCG@20"].tolist()  # the main column stays
    ds = pti.load_dataset("ifir/aila")
    bm25 = pti.FoldInstruction() >> pti.BM25(ds.get_corpus_iter(verbose=False), verbose=False, k1=1.2, b=0.75)
    own = pti.ifir_report({"BM25": bm25}, {"aila": ds}, judge=judge)  # the same judge: answered from its store
    assert rows.loc["BM25", "ifir INSTFOL@20"] == own["aila INSTFOL@20"].iloc[0]
    assert _judge_answers.prompts == prompts  # nothing judged again
    cost = board.attrs["cost"].set_index(["system", "benchmark"])
    judged = cost.xs("ifir", level="benchmark")
    assert judged["new_calls"].sum() == prompts > 0  # each judgement once: a second system reads the first's back
    assert (judged["calls"] >= judged["new_calls"]).all() and (judged["calls"] > 0).all()
    assert cost.drop(index="ifir", level="benchmark")["calls"].eq(0).all()
    again = pti.suite({"pool": pti.PoolBM25(verbose=False)}, ["ifir/aila"], out=str(tmp_path), judge=judge,
                      verbose=False).attrs["cost"].set_index("system")  # a rerun: the original cost, no new call
    assert again["new_calls"].tolist() == [0, 0] and again["calls"].tolist() == judged["calls"].tolist()
    assert _judge_answers.prompts == prompts


def test_a_judge_whose_backend_has_its_own_store_is_counted_once(tmp_path):
    _judge_answers.prompts = 0
    backend = FunctionBackend(logprobs=_judge_answers, store=str(tmp_path / "backend"))
    judge = IFIRJudge(backend, store=str(tmp_path / "judge"), verbose=False)
    cost = pti.suite({}, ["ifir/aila"], out=str(tmp_path / "a"), judge=judge, verbose=False).attrs["cost"]
    assert cost[["calls", "new_calls"]].values.tolist() == [[_judge_answers.prompts] * 2] and _judge_answers.prompts
    again = pti.suite({}, ["ifir/aila"], out=str(tmp_path / "b"), judge=judge, verbose=False).attrs["cost"]
    assert again[["calls", "new_calls"]].values.tolist() == [[_judge_answers.prompts, 0]]


def test_bm25_runs_once_per_dataset_whatever_the_number_of_systems(tmp_path, monkeypatch):
    calls = Counter()
    transform = pti.BM25.transform

    def counted(self, inp):
        calls[str(self.index.path)] += 1
        return transform(self, inp)
    monkeypatch.setattr(pti.BM25, "transform", counted)
    systems = {"pool": pti.PoolBM25(verbose=False), "pool k1=0.9": pti.PoolBM25(k1=0.9, verbose=False)}
    board = pti.suite(systems, ["mair/dd-15", "mair/dd-16"], out=str(tmp_path), verbose=False)
    assert board["mair"].notna().all()
    assert sorted(calls.values()) == [1, 1] and len(calls) == 2  # one BM25 run per dataset, for 3 rows
    for dataset in ("dd15", "dd16"):
        assert len([f for f in os.listdir(tmp_path / "runs" / dataset / "first-stage") if f.endswith(".parquet")]) == 1
    # the main score averages the datasets' columns (MAIR): those columns are its secondary cells
    secondary = board.attrs["secondary"].set_index("system")
    assert list(secondary.columns) == ["mair:dd15 nDCG@10", "mair:dd16 nDCG@10"]
    table = board.attrs["tables"]["mair"].set_index("Model")
    assert secondary.loc["pool"].tolist() == table.loc["pool", ["dd15 nDCG@10", "dd16 nDCG@10"]].tolist()
    assert "| mair:dd16 nDCG@10 |" in (tmp_path / "secondary.md").read_text(encoding="utf-8")


def test_unknown_benchmark_is_named():
    with pytest.raises(ValueError, match="'followir/nope' is neither a suite"):
        pti.suite({}, ["followir/nope"])


def test_cli_prints_the_labelled_leaderboard(tmp_path, monkeypatch, capsys):
    from pyterrier_instruct.reproduce import cli
    monkeypatch.setenv("PYTERRIER_INSTRUCT_STANDINS", str(tmp_path / "standins"))
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", os.environ["PYTERRIER_INSTRUCT_DATA"])  # restored after --standins
    assert cli.main(["suite", "--systems", "bm25", "--benchmarks", "nevir", "--standins", "--quiet",
                     "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "| BM25 |" in printed and "stand-in miniatures" in printed
    assert "Main measures: nevir: PairedAccuracy" in printed
    board = pd.read_csv(tmp_path / "out" / "leaderboard.csv")  # a cell over stand-in data is found in its report
    assert board["nevir"].notna().all(), board


def test_cli_passes_the_rows_paper_names(tmp_path, monkeypatch, capsys):
    from pyterrier_instruct.reproduce import cli, suite
    from pyterrier_instruct.reproduce.arguments import Row
    monkeypatch.setitem(suite.ROWS, "bm25", Row("BM25", "BM25"))  # a row whose model the papers print
    assert cli.main(["suite", "--systems", "bm25", "--benchmarks", "instructir", "--quiet",
                     "--out", str(tmp_path / "out")]) == 0
    row, = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["published"]
    paper = pti.paper_numbers(paper=row["paper"], model="BM25", benchmark="instructir", measure="Robustness@10")
    assert f"|   paper: BM25 | {paper['value'].iloc[0]} |" in capsys.readouterr().out


# --- cost ---------------------------------------------------------------------------------------------------------

def _with_usage(body):
    from pyterrier_instruct.testing.server import chat_answer
    status, payload = chat_answer(body)
    return status, {**payload, "usage": {"prompt_tokens": 11, "completion_tokens": 3}}


def test_cost_columns_equal_the_calls_the_server_counted(tmp_path):
    from pyterrier_instruct.testing import ChatServer
    with ChatServer(_with_usage) as server:
        store = str(tmp_path / "calls")
        rankgpt = pti.RankGPT("gpt-4o-mini", base_url=server.url, api_key_env=None, backend_options={"store": store},
                              verbose=False)
        prices = {"prompt": 2.0, "completion": 8.0}
        board = pti.suite({"RankGPT": rankgpt}, ["followir/robust04"], out=str(tmp_path / "out"), baseline=None,
                          prices=prices, verbose=False)
        cost = board.attrs["cost"].iloc[0]
        sent = len(server.requests)
        assert sent > 0 and cost["calls"] == sent and cost["new_calls"] == sent
        assert (cost["prompt_tokens"], cost["completion_tokens"]) == (11 * sent, 3 * sent)  # the server's usage
        assert cost["usd"] == pytest.approx((11 * 2.0 + 3 * 8.0) * sent / 1e6)
        # a rerun answered from the call store (its saved runs removed): the original cost, no new call
        board = pti.suite({"RankGPT": rankgpt}, ["followir/robust04"], out=str(tmp_path / "again"), baseline=None,
                          prices=prices, verbose=False)
        again = board.attrs["cost"].iloc[0]
        assert len(server.requests) == sent
        assert again["new_calls"] == 0 and again["calls"] == sent
        figures = ["prompt_tokens", "completion_tokens", "usd"]
        assert again[figures].tolist() == cost[figures].tolist()
        # the same figures as pt.Experiment measures, per query
        ds = pti.load_dataset("followir/robust04")
        topics = ds.get_topics()
        res = pt.Experiment([ds.candidates() >> rankgpt], topics, ds.get_qrels(),
                            [pti.Calls, pti.Tokens, pti.Cost(prices), "mrt"], names=["RankGPT"])
        n = topics["qid"].nunique()
        assert res["Calls"].iloc[0] * n == pytest.approx(sent)
        assert res["Tokens"].iloc[0] * n == pytest.approx(cost["prompt_tokens"] + cost["completion_tokens"])
        assert res[str(pti.Cost(prices))].iloc[0] * n == pytest.approx(cost["usd"])
        assert len(server.requests) == sent


def test_cost_prices_are_checked():
    with pytest.raises(ValueError, match="give 'prompt' and 'completion'"):
        pti.Cost({"input": 1.0})


# --- sensitivity ----------------------------------------------------------------------------------------------------

def _overlap(row):
    words = set(str(row["instruction"]).lower().split())
    return float(len(words & set(str(row["text"]).lower().split())))


def test_an_instruction_ignoring_system_changes_nothing_a_follower_does():
    ds = pti.load_dataset("instruct-mini")
    ignoring = ds.candidates() >> pt.apply.doc_score(lambda row: float(len(str(row["text"]))))
    table = pti.sensitivity(ignoring, ds, name="length")
    assert table["perturbation"].tolist() == ["none", "drop", "swap", "truncate", "shuffle"]
    assert (table["change"] == 0).all() and (table["top10_changed"] == 0).all()
    assert (table["kendall_tau"] == 1).all() and (table["rbo"] == table["rbo"].iloc[0]).all()
    following = ds.candidates() >> pt.apply.doc_score(_overlap)
    table = pti.sensitivity(following, ds, ["drop", "swap"], name="overlap")
    moved = table.set_index("perturbation")
    assert moved.loc["swap", "top10_changed"] > 0 and moved.loc["swap", "rbo"] < moved.loc["none", "rbo"]
    assert moved.loc["drop", "kendall_tau"] < 1 and table.attrs["measure"] == "p-MRR"
    assert (moved["change"] != 0).any()


def test_perturbations_rewrite_the_instruction_only():
    topics = pd.DataFrame({"qid": ["1-og", "1-changed", "2-og", "2-changed"], "query": ["a", "a", "b", "b"],
                           "instruction": ["One two. Three four.", "Five six.", "Seven eight.", "Nine ten eleven."]})
    swapped = pti.Perturb("swap")(topics)
    assert swapped["instruction"].tolist() == ["Seven eight.", "Nine ten eleven.", "One two. Three four.", "Five six."]
    assert pti.Perturb("truncate")(topics)["instruction"].tolist() == ["One two.", "Five", "Seven", "Nine"]
    assert pti.Perturb("drop")(topics)["instruction"].tolist() == [""] * 4
    shuffled = pti.Perturb("shuffle", seed=3)(topics)
    assert sorted(shuffled["instruction"].iloc[0].split(". ")) == sorted("One two. Three four.".split(". "))
    assert shuffled.drop(columns="instruction").equals(topics.drop(columns="instruction"))
    with pytest.raises(ValueError, match="give backend="):
        pti.Perturb("negate")


def _negate(prompt):
    return "NOT " + prompt.rsplit("\n\n", 1)[-1]


def test_llm_perturbation_goes_through_the_call_store(tmp_path):
    from pyterrier_instruct.measures.cost import metered
    backend = pti.FunctionBackend(_negate, store=str(tmp_path / "calls"))
    topics = pd.DataFrame({"qid": ["1", "2", "3"], "query": ["a", "b", "c"], "instruction": ["x y", "z", "x y"]})
    with metered() as first:
        out = pti.Perturb("negate", backend=backend)(topics)
    assert out["instruction"].tolist() == ["NOT x y", "NOT z", "NOT x y"]
    with metered() as second:
        again = pti.Perturb("negate", backend=backend)(topics)
    assert again.equals(out)
    assert (first.usage()["new_calls"], second.usage()["new_calls"]) == (2, 0)
    assert first.usage()["calls"] == second.usage()["calls"] == 2


def test_rbo_equals_pyterrier_alphas():
    pta = pytest.importorskip("pyterrier_alpha")
    from pyterrier_instruct.evaluation.perturbation import _rbo
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(40)]

    def run():
        rows = []
        for q in ("1", "2", "3"):
            chosen = rng.sample(docs, rng.randint(5, 30))
            rows += [(q, d, float(len(chosen) - i)) for i, d in enumerate(chosen)]
        return pd.DataFrame(rows, columns=["qid", "docno", "score"])
    for _ in range(3):
        a, b = run(), run()
        for p in (0.9, 0.99):
            assert dict(_rbo(a, b, p)) == pytest.approx(dict(pta.rbo(a, b, p=p)))


def _markdown_tables(text: str, first: str) -> list:
    """Every Markdown table of ``text`` whose header starts with ``| first |``, as lists of rows of cells."""
    tables, rows = [], None
    for line in text.splitlines() + [""]:
        if line.startswith(f"| {first} |"):
            rows = [line]
        elif rows is not None and line.startswith("|"):
            rows.append(line)
        elif rows is not None:
            tables.append([[c.strip() for c in r.strip().strip("|").split("|")] for r in rows if "---" not in r])
            rows = None
    return tables


def test_the_readme_and_docs_leaderboard_is_what_the_command_prints(tmp_path, monkeypatch, capsys, standin_root):
    """README.md and docs/suite.md show ``pyterrier-instruct suite --systems bm25,monot5 --standins``'s leaderboard:
    the same cells as the command prints now (its stand-ins: the session's root, as testing.install builds it)."""
    from pathlib import Path

    from pyterrier_instruct.reproduce import cli
    monkeypatch.setenv("PYTERRIER_INSTRUCT_STANDINS", str(standin_root))
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", os.environ["PYTERRIER_INSTRUCT_DATA"])  # restored after --standins
    monkeypatch.delenv("PYTERRIER_INSTRUCT_MODELS", raising=False)  # restored after --standins
    assert cli.main(["suite", "--systems", "bm25,monot5", "--standins", "--quiet", "--out", str(tmp_path / "out")]) == 0
    (printed,) = _markdown_tables(capsys.readouterr().out, "system")
    header, rows = printed[0], printed[1:]
    root = Path(__file__).resolve().parents[1]
    for page in ("README.md", "docs/suite.md"):
        (shown,) = _markdown_tables((root / page).read_text(encoding="utf-8"), "system")
        columns = [header.index(c) for c in shown[0]]  # the page may leave columns out (notes), never add one
        assert [[row[i] for i in columns] for row in rows] == shown[1:], page
