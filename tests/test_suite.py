"""Issue 43: one suite (pti.suite, `pyterrier-instruct suite`), instruction sensitivity (pti.sensitivity) and what a
run costs (measures/cost.py: the suite's cost table, pti.Calls/Tokens/Cost) on the miniature layouts of conftest.py."""
import json
import os
import random
from collections import Counter

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._config import Configured
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
