"""INSTFOL@K (IFIR paper §4.1 and its repository's GEval code): the verbatim judge prompts, the weighted judge score,
the per-query formula and every aggregation level against hand-computed values, the AILA prompt bug switch, judgements
kept in the call store (re-run, second system, interrupted run, an earlier version's judge.jsonl), and INSTFOL in the
IFIR report — all with a scripted judge (FunctionBackend)."""
import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.backends import FunctionBackend, Generation
from pyterrier_instruct.calls import CallStore
from pyterrier_instruct.evaluation import IFIRJudge, doc_texts, ifir_report, instfol, to_markdown, weighted_judge_score
from pyterrier_instruct.evaluation.instfol import no_instruction_topics
from pyterrier_instruct.evaluation.judge import JudgeItem
from pyterrier_instruct.evaluation.scoring import answer_score, parse_judge_answer, weighted_candidates
from pyterrier_instruct.measures import combine_instfol, instfol_query, instfol_summary, instfol_value
from pyterrier_instruct.prompts import (IFIR_JUDGE, IFIR_JUDGE_CODE_BUG, IFIR_JUDGE_SYSTEM, IFIR_MULTI_LEVEL,
                                        IFIR_SINGLE_LEVEL, ifir_judge_prompt, render_ifir_judge)

DATA = Path(__file__).parent / "data"
X = 1.84 / 0.98  # weighted by hand: P(2), P(1), P(3) = 0.70, 0.20, 0.08 (Σ v·P = 1.84, Σ P = 0.98); "Two", "7" dropped


# -- the prompts as data -----------------------------------------------------------------------------------------------
def test_judge_prompts_are_byte_identical_to_the_spec():
    ref = json.loads((DATA / "ifir_judge_prompts.json").read_text())["prompts"]
    assert IFIR_JUDGE == {k: v for k, v in ref.items() if k != "figure8_system"} and len(IFIR_JUDGE) == 15
    assert IFIR_JUDGE_SYSTEM == {"aila": ref["figure8_system"]} == {"aila": "You are an expert in legal domain."}
    for name, text in IFIR_JUDGE.items():
        assert text.startswith("Given") and text.endswith("JSON:\n") and not text.endswith("JSON:\n\n")
        assert text.count("{instruction}") == 1 and text.count("{corpus}") == 1 and text.isascii() and "\t" not in text
    trailing = {(n, i + 1): len(line) - len(line.rstrip(" ")) for n, t in IFIR_JUDGE.items()
                for i, line in enumerate(t.split("\n")) if line.endswith(" ")}
    assert trailing == {("scifact_open3", 8): 1, ("nfcorpus", 8): 1, ("fire", 1): 2, ("fire", 2): 1}
    # verbatim slips
    assert "There is 1 relevant levels" in IFIR_JUDGE["fiqa1"] and "\n4. If the corpus" in IFIR_JUDGE["fiqa1"]
    assert "satisfing" in IFIR_JUDGE["aila2"]


def test_prompt_selection_per_dataset_and_level():
    assert [ifir_judge_prompt(d, lv) for d in IFIR_MULTI_LEVEL for lv in (1, "2", 3)] == \
        ["fiqa1", "fiqa2", "fiqa3", "scifact_open1", "scifact_open2", "scifact_open3", "pm1", "pm2", "pm3", "aila1",
         "aila2", "aila3"]
    assert [ifir_judge_prompt(d, lv) for d in IFIR_SINGLE_LEVEL for lv in (0, "1")] == \
        ["nfcorpus"] * 2 + ["fire"] * 2 + ["cds"] * 2
    assert ifir_judge_prompt("ifir/pm", 2) == "pm2"
    for dataset, level, msg in (("fiqa", 0, "levels 1-3"), ("cds", 2, "one instruction level"),
                                ("robust04", 1, "unknown IFIR subset")):
        with pytest.raises(ValueError, match=msg):
            ifir_judge_prompt(dataset, level)


def test_render_is_one_pass_and_the_aila_code_bug_is_opt_in():
    out = render_ifir_judge("fiqa2", "q {corpus} {instruction}", "doc {instruction}")
    assert out.startswith("Given an instruction: q {corpus} {instruction},\nand an answer to the query: doc "
                          "{instruction},\n")
    assert render_ifir_judge("aila3", "I", "C") == \
        IFIR_JUDGE["aila3"].replace("{instruction}", "I").replace("{corpus}", "C")
    assert IFIR_JUDGE_CODE_BUG == {"aila2": ("corpus",), "aila3": ("instruction", "corpus")}
    # the repository's messages: aila3 is the bare template, aila2 shows the instruction but never the passage
    assert render_ifir_judge("aila3", "I", "C", ifir_code_bug=True) == IFIR_JUDGE["aila3"]
    assert render_ifir_judge("aila2", "I", "C", ifir_code_bug=True) == IFIR_JUDGE["aila2"].replace("{instruction}", "I")
    for name in set(IFIR_JUDGE) - {"aila2", "aila3"}:
        assert render_ifir_judge(name, "I", "C", ifir_code_bug=True) == render_ifir_judge(name, "I", "C")
    with pytest.raises(ValueError, match="unknown IFIR judge prompt"):
        render_ifir_judge("fiqa4", "I", "C")


# -- the weighted score and the formula (worked examples computed by hand) ---------------------------------------------
def answer(score_token, table, prefix=('{"', "score", '":', " ")):
    """A judge answer ``{"score": <score_token>, "reason": "ok"}`` whose score position has the candidates ``table``."""
    tokens = list(prefix) + [score_token, ",", ' "', "reason", '":', ' "', "ok", '"}']
    tops = [[(t, 0.0)] for t in tokens]
    tops[len(prefix)] = [(t, math.log(p)) for t, p in table.items()]
    return Generation.of("".join(tokens), tokens, tops)


def test_weighted_score_worked_example():
    g = answer("2", {"2": .70, "1": .20, "3": .08, "Two": .015, "7": .004})
    assert g.text == '{"score": 2, "reason": "ok"}'
    j = weighted_judge_score(g)
    assert j.score == pytest.approx(1.8776, abs=5e-5) and j.score == pytest.approx(X)
    assert (j.status, j.parsed, j.position) == ("ok", "2", 4)
    judged = answer("2", {"2": .70, "1": .20, "3": .08, "Two": .015, "7": .004})
    assert weighted_judge_score(judged, min_prob=0.001).score == \
        pytest.approx(1.84 / 0.98)  # 7 is out of range even above the cut


def test_weighted_score_reference_rules():
    # candidates: leading-space digits rejected, 4 and 5 accepted, equal values summed after the 1 % cut
    assert weighted_candidates([(" 2", math.log(.5)), ("1", math.log(.5))]) == 1.0
    assert weighted_candidates([("5", math.log(.5)), ("4", math.log(.5))]) == 4.5
    assert weighted_candidates([("2", math.log(.006)), ("2", math.log(.006)), ("1", math.log(.3))]) == 1.0
    assert weighted_candidates([("2", math.log(.01)), ("0", math.log(.03))]) == pytest.approx(0.5)  # 1 % itself is kept
    assert math.isnan(weighted_candidates([("7", 0.0), ("x", 0.0)]))
    # parsing as content2json
    assert parse_judge_answer('noise {"score": 3, "reason": "r"} tail') == ({"score": 3, "reason": "r"}, True)
    assert parse_judge_answer('{"score": 1') == ({"score": 1}, True)  # a missing closing brace is appended
    for bad in (None, "no json", '{"score": }', "} {"):
        assert parse_judge_answer(bad) == ({"score": 0, "reason": ""}, False)
    answers = ({"score": 2}, {"score": "3"}, {"score": 2.5}, {"score": -1}, {"score": "two"}, {}, {"score": True})
    assert [answer_score(p) for p in answers] == ["2", "3", "0", "0", "0", "0", "0"]
    # the first token equal to ŝ, anywhere in the answer
    tokens = ["2", '{"', "score", '":', " ", "2", "}"]
    tops = [[("2", 0.0)]] + [[(t, 0.0)] for t in tokens[1:5]]
    tops += [[("1", math.log(.5)), ("2", math.log(.5))], [("}", 0.0)]]
    assert weighted_judge_score(Generation.of('2{"score": 2}', tokens, tops)).score == 2.0  # the stray leading "2" wins
    # ŝ = 2.5 → "0", which no token equals → 0.0 (kept); not JSON → ŝ = 0, still looked up
    j = weighted_judge_score(answer("2.5", {"2": 1.0}))
    assert (j.score, j.status, j.parsed) == (0.0, "no_score_token", "0")
    j = weighted_judge_score(Generation.of("I give 0 or 1", ["I", " give", " ", "0", " or", " 1"],
                                           [[("I", 0.0)], [(" give", 0.0)], [(" ", 0.0)],
                                            [("0", math.log(.6)), ("1", math.log(.4))], [(" or", 0.0)], [(" 1", 0.0)]]))
    assert (j.status, j.score) == ("unparsed", pytest.approx(0.4))
    j = weighted_judge_score(answer("7", {"7": 1.0}))  # no candidate kept: the IFIR code's NaN → dropped
    assert (j.score, j.status) == (None, "no_candidates")


def test_instfol_formula_worked_example_and_edge_cases():
    r = instfol_query([1.0, 0.5, 2.0], [2.0, 3.0, 1.5])
    assert r["s_q"] == pytest.approx(1.1667, abs=5e-5) and r["s_inst"] == pytest.approx(2.1667, abs=5e-5)
    assert r["instfol"] == pytest.approx(0.5455, abs=5e-5) and round(100 * r["instfol"], 2) == 54.55
    assert instfol_value(1.7, 1.7) == 0.0
    assert instfol_value(3.0, 2.5) == -0.5 and instfol_value(3.0, 3.4) == pytest.approx(0.4)  # S_q = 3: S_inst − S_q
    assert instfol_value(2.5, 0.0) == -5.0  # below −1: the paper's [−1, 1] claim does not hold
    assert instfol_value(1.0, 3.0) == 1.0 and instfol_value(0.0, 1.0) == pytest.approx(1 / 3)  # 3: every level's scale
    # a failed position is dropped from both lists
    r = instfol_query([None, 2.0, 1.0], [3.0, float("nan"), 2.0])
    assert (r["n_q"], r["n_inst"], r["dropped"], r["s_q"], r["s_inst"]) == (1, 1, 2, 1.0, 2.0) and r["instfol"] == 0.5
    r = instfol_query([None], [1.0])
    assert r["skipped"] and math.isnan(r["instfol"]) and r["dropped"] == 1
    assert instfol_query([], [1.0])["skipped"] and instfol_query([1.0], [])["skipped"]
    with pytest.raises(ValueError, match="finite mean scores"):
        instfol_value(float("nan"), 1.0)


def test_dataset_is_the_mean_of_level_means():
    # IFIR Table 3/11, BM25 FiQA: (−3.76 − 2.48 + 9.53)/3 = 1.10, whatever the number of queries per level
    per_query = pd.DataFrame({"dataset": "fiqa", "level": ["1", "1", "2", "3", "3", "3"],
                              "instfol": [-0.0376, -0.0376, -0.0248, 0.0953 - 0.01, 0.0953, 0.0953 + 0.01]})
    res = instfol_summary(per_query)
    assert res.level_means() == pytest.approx({("fiqa", "1"): -3.76, ("fiqa", "2"): -2.48, ("fiqa", "3"): 9.53})
    assert round(res.per_dataset["fiqa"], 2) == 1.10 and res.average == pytest.approx(res.per_dataset["fiqa"])
    assert res.per_query["instfol"].mean() * 100 != pytest.approx(res.per_dataset["fiqa"])  # not micro over queries
    with pytest.raises(ValueError, match="lacks column"):
        instfol_summary(per_query.drop(columns="level"))


# -- a scripted judge over two small subsets ---------------------------------------------------------------------------
#: judge score tables per document text (the emitted token first); weighted scores in the comments
TABLES = {
    "d0": {"0": 1.0}, "d1": {"1": 1.0}, "d2": {"2": 1.0}, "d3": {"3": 1.0},  # 0, 1, 2, 3
    "dh": {"1": .5, "2": .5},  # 1.5
    "dx": {"2": .70, "1": .20, "3": .08, "Two": .015, "7": .004},  # X = 1.8776
}


def subset_fiqa():
    """fiqa: A has levels 1–3, B levels 1–2 (B has only 2 retrieved documents without instruction)."""
    topics = pd.DataFrame([(f"{b}_{lv}", f"query {b}", "" if lv == 0 else f"instruction {b}{lv}")
                           for b, levels in (("A", 4), ("B", 3)) for lv in range(levels)],
                          columns=["qid", "query", "instruction"])
    ranked = {"A_0": ["a1", "a2", "a3"], "A_1": ["a3", "a6", "a1"], "A_2": ["a2", "a1", "a5"],
              "A_3": ["a6", "a7", "a8"], "B_0": ["b4", "b5"], "B_1": ["b4", "b5"], "B_2": ["b7", "b4", "b9"]}
    kind = {"a1": "d1", "a2": "d0", "a3": "d2", "a5": "d0", "a6": "d3", "a7": "d3", "a8": "d3", "b4": "dh", "b5": "d0",
            "b7": "d3", "b9": "dx"}
    return topics, ranked, kind


def subset_nfcorpus():
    """nfcorpus (single level): n1 has S_q = 3; n2's first no-instruction document fails; n3 has no run at all."""
    topics = pd.DataFrame([(f"n{i}_{lv}", f"nq{i}", "" if lv == 0 else f"ni{i}") for i in (1, 2, 3) for lv in (0, 1)],
                          columns=["qid", "query", "instruction"])
    ranked = {"n1_0": ["e1", "e2"], "n1_1": ["e3", "e1"], "n2_0": ["e4", "e5"], "n2_1": ["e6", "e7"]}
    kind = {"e1": "d3", "e2": "d3", "e3": "d2", "e4": "FAIL", "e5": "d2", "e6": "d1", "e7": "d2"}
    return topics, ranked, kind


# hand-computed INSTFOL per (query, level)
B2 = ((3 + 1.5 + X) / 3 - 0.75) / 2.25
EXPECTED = {("fiqa", "A_1"): (2 - 1) / 2, ("fiqa", "A_2"): (1 / 3 - 1) / 2, ("fiqa", "A_3"): (3 - 1) / 2,
            ("fiqa", "B_1"): 0.0, ("fiqa", "B_2"): B2, ("nfcorpus", "n1_1"): 2.5 - 3, ("nfcorpus", "n2_1"): 0.0}
FIQA = ((0.5 + 0.0) / 2 + (-1 / 3 + B2) / 2 + 1.0) / 3
NFC = (-0.5 + 0.0) / 2


def run_of(ranked):
    return pd.DataFrame([(q, d, float(10 - j)) for q, docs in ranked.items() for j, d in enumerate(docs)],
                        columns=["qid", "docno", "score"])


class Script:
    """A judge that reads the passage back from the message and answers from its table; records every batch."""

    def __init__(self, kind, fail_at_call=None):
        self.kind, self.fail_at_call, self.batches = kind, fail_at_call, []

    def _fingerprint_(self):  # what decides its answers (the call store keys a backend by its fingerprint)
        return f"Script({sorted(self.kind.items())!r})"

    def __call__(self, message_lists, **kwargs):
        if self.fail_at_call is not None and len(self.batches) + 1 == self.fail_at_call:
            raise RuntimeError("judge killed")
        self.batches.append((message_lists, kwargs))
        out = []
        for messages in message_lists:
            content = messages[-1]["content"]
            found = re.search(r"(?:corpus|query|prior case): (?:Title )?(\w+) text,", content)
            kind = self.kind.get(found.group(1), "d1") if found else "NODOC"
            if kind == "FAIL":
                out.append(RuntimeError("HTTP 400: context too long"))
            elif kind == "NODOC":  # the judge never saw a passage (the AILA bug)
                out.append(answer("1", {"1": 0.6, "2": 0.4}))
            else:
                out.append(answer(next(iter(TABLES[kind])), TABLES[kind]))
        return out

    @property
    def prompts(self):
        return sum(len(m) for m, _ in self.batches)


def docs_for(kind):
    return {d: f"{d} text, about {k}" for d, k in kind.items()}


def evaluate(judge, subset, dataset, ranked=None):
    topics, default_ranked, kind = subset()
    ranked = ranked or default_ranked
    run = run_of(ranked)
    is0 = run["qid"].str.endswith("_0")
    return instfol(run[is0], run[~is0], topics, docs_for(kind), judge, dataset=dataset, k=20)


def test_scripted_judge_every_aggregation_level():
    script = Script({**subset_fiqa()[2], **subset_nfcorpus()[2]})
    judge = IFIRJudge(FunctionBackend(logprobs=script), batch_size=8)
    fiqa, nfc = evaluate(judge, subset_fiqa, "fiqa"), evaluate(judge, subset_nfcorpus, "ifir/nfcorpus")
    both = combine_instfol([fiqa, nfc])
    per_query = both.per_query
    got = {(d, q): v for d, q, v in zip(per_query["dataset"], per_query["qid"], per_query["instfol"])
           if not math.isnan(v)}
    assert got == pytest.approx(EXPECTED)
    assert both.level_means() == \
        pytest.approx({("fiqa", "1"): 100 * 0.25, ("fiqa", "2"): 100 * (-1 / 3 + B2) / 2, ("fiqa", "3"): 100.0,
                       ("nfcorpus", "1"): 100 * NFC})
    assert both.per_dataset.to_dict() == pytest.approx({"fiqa": 100 * FIQA, "nfcorpus": 100 * NFC})
    assert both.average == pytest.approx(100 * (FIQA + NFC) / 2) and round(both.average, 2) == 10.65
    assert fiqa.average == pytest.approx(100 * FIQA) and fiqa.skipped == 0
    # n2: position 1 failed → dropped from both lists; n3 has no run → skipped and counted
    pq = nfc.per_query.set_index("qid")
    assert pq.loc["n2_1", ["n_q", "n_inst", "dropped"]].tolist() == [1, 1, 1] and pq.loc["n3_1", "skipped"]
    assert nfc.skipped == 1
    assert nfc.per_level[["queries", "skipped"]].values.tolist() == [[2, 1]]
    assert pq.loc["n1_1", "prompt"] == "nfcorpus" and fiqa.per_query.set_index("qid").loc["A_2", "prompt"] == "fiqa2"
    # counters: 27 fiqa pairs, 7 repeated in a (query, level) (a document in both lists), 20 judged in 3 calls of ≤ 8
    assert {k: fiqa.judge[k] for k in ("requested", "duplicates", "hits", "judged", "backend_calls", "failed")} == \
        {"requested": 27, "duplicates": 7, "hits": 0, "judged": 20, "backend_calls": 3, "failed": 0}
    assert (nfc.judge["failed"], nfc.judge["dropped"]) == (1, 1)
    # what the judge saw: one user message, the level's prompt, the level's "query instruction" string for both runs
    kwargs = script.batches[0][1]
    assert kwargs == {"max_new_tokens": 512, "top_logprobs": 10, "temperature": 0.0, "top_p": 0.7}  # the IFIR code's 10
    sent = [m for batch, _ in script.batches for m in batch]
    a2 = [m[0]["content"] for m in sent if "query A instruction A2" in m[0]["content"]]
    assert len(a2) == 4 and all(len(m) == 1 and m[0]["role"] == "user" for m in sent)  # a2 a1 a3 (no-instruction) + a5
    assert render_ifir_judge("fiqa2", "query A instruction A2", "a3 text, about d2") in a2
    assert repr(fiqa).startswith("InstfolResult(INSTFOL@20×100: fiqa=")
    # one run over all the topics serves as both runs (level-0 rows: no instruction; level rows: instruction)
    topics, ranked, kind = subset_fiqa()
    again = instfol(run_of(ranked), run_of(ranked), topics, docs_for(kind), judge, dataset="fiqa")
    pd.testing.assert_frame_equal(again.per_query, fiqa.per_query)
    assert judge.last["hits"] == 27 and judge.last["backend_calls"] == 0


def test_cutoff_and_failed_judgements_are_retried_not_cached(tmp_path):
    script = Script(subset_nfcorpus()[2])
    judge = IFIRJudge(FunctionBackend(logprobs=script), store=tmp_path / "j")
    topics, ranked, kind = subset_nfcorpus()
    run = run_of(ranked)
    is0 = run["qid"].str.endswith("_0")
    res = instfol(run[is0], run[~is0], topics, docs_for(kind), judge, dataset="nfcorpus", k=1)
    # k = 1: n1: S_q 3, S_inst 2 → −1; n2: e4 failed → both lists empty → skipped
    assert res.per_query.set_index("qid")["instfol"].dropna().to_dict() == {"n1_1": -1.0} and res.skipped == 2
    again = IFIRJudge(FunctionBackend(logprobs=Script(kind)), store=tmp_path / "j")
    instfol(run[is0], run[~is0], topics, docs_for(kind), again, dataset="nfcorpus", k=1)
    assert (again.last["hits"], again.last["judged"]) == (3, 1)  # only the failed pair is sent again


# -- the store ---------------------------------------------------------------------------------------------------------
def test_second_run_and_second_system_cost_no_judge_calls(tmp_path):
    path = tmp_path / "calls"
    first = Script(subset_fiqa()[2])
    r1 = evaluate(IFIRJudge(FunctionBackend(logprobs=first), store=path, batch_size=8), subset_fiqa, "fiqa")
    assert first.prompts == 20 and len(first.batches) == 3 and len(CallStore(path)) == 20
    # a fresh judge on the same store: everything from it
    second = Script(subset_fiqa()[2])
    judge = IFIRJudge(FunctionBackend(logprobs=second), store=path, batch_size=8)
    r2 = evaluate(judge, subset_fiqa, "fiqa")
    assert second.batches == [] and judge.last["hits"] == 27 and judge.last["judged"] == 0
    pd.testing.assert_frame_equal(r1.per_query, r2.per_query)
    # another system retrieving the same passages in another order: no new call either
    shuffled = {q: docs[::-1] for q, docs in subset_fiqa()[1].items()}
    r3 = evaluate(judge, subset_fiqa, "fiqa", ranked=shuffled)
    assert second.batches == [] and judge.stats["hits"] == 2 * 27
    assert r3.per_dataset["fiqa"] == pytest.approx(r1.per_dataset["fiqa"])
    # other settings, other keys: top_logprobs=5 (the paper's text) is judged anew
    third = Script(subset_fiqa()[2])
    evaluate(IFIRJudge(FunctionBackend(logprobs=third), store=path, top_logprobs=5), subset_fiqa, "fiqa")
    assert third.prompts == 20 and third.batches[0][1]["top_logprobs"] == 5
    assert len(CallStore(path)) == 40
    usage = CallStore(path).usage()
    assert usage["calls"].tolist() == [20, 20] and set(usage["method"]) == {"judge"}
    assert usage["completion_tokens"].tolist() == [20 * 12] * 2  # twelve answer tokens per judgement


def test_a_killed_run_resumes_without_rejudging(tmp_path):
    path = tmp_path / "calls"
    killed = Script(subset_fiqa()[2], fail_at_call=3)
    with pytest.raises(RuntimeError, match="judge killed"):
        evaluate(IFIRJudge(FunctionBackend(logprobs=killed), store=path, batch_size=4), subset_fiqa, "fiqa")
    assert killed.prompts == 8 and len(CallStore(path)) == 8  # two finished batches are on disk
    resumed = Script(subset_fiqa()[2])
    judge = IFIRJudge(FunctionBackend(logprobs=resumed), store=path, batch_size=4)
    res = evaluate(judge, subset_fiqa, "fiqa")
    assert resumed.prompts == 12 and killed.prompts + resumed.prompts == 20  # nothing judged twice
    assert res.per_dataset["fiqa"] == pytest.approx(100 * FIQA) and len(CallStore(path)) == 20


def test_stored_records_keep_the_evidence_and_rescore_with_min_prob(tmp_path):
    path = tmp_path / "calls"
    kind = {"b9": "dx"}
    topics = pd.DataFrame({"qid": ["B_0", "B_1"], "query": "q", "instruction": ["", "i"]})
    run_q, run_i = run_of({"B_0": ["b9"]}), run_of({"B_1": ["b9"]})
    first = IFIRJudge(FunctionBackend(logprobs=Script(kind)), store=path)
    instfol(run_q, run_i, topics, docs_for(kind), first, dataset="fiqa")
    (record,) = CallStore(path).get([first.key(JudgeItem("fiqa1", "q i", "b9", "b9 text, about dx"))]).values()
    assert record["prompt"] == "fiqa1" and record["docno"] == "b9" and record["parsed"] == "2"
    assert record["score"] == pytest.approx(X)
    assert record["judge"] == \
        ("Script|pyterrier_instruct.backends.function.FunctionBackend(fn=None, logprobs=Script([('b9', "
         "'dx')]))|answer|top_logprobs=10|temperature=0|top_p=0.7|max_tokens=512")
    assert record["answer"] == '{"score": 2, "reason": "ok"}' and len(record["candidates"]) == 5
    judge = IFIRJudge(FunctionBackend(logprobs=Script(kind)), store=path, min_prob=0.1)
    (j,) = judge.judge([("fiqa1", "q i", "b9", "b9 text, about dx")])
    # 3 (8 %) is now below the cut
    assert j.cached and judge.last["judged"] == 0 and j.score == pytest.approx((1.4 + 0.2) / 0.9)


def test_an_earlier_judge_jsonl_is_read_once_into_the_store(tmp_path):
    """The judge cache of earlier versions (one JSON record per line, keyed as today's judge key): passed as store=,
    its records are read into the store beside it (``judge/``) once, and a re-run makes no judge call."""
    first = Script(subset_fiqa()[2])
    judge = IFIRJudge(FunctionBackend(logprobs=first), store=tmp_path / "fresh")
    r1 = evaluate(judge, subset_fiqa, "fiqa")
    from pyterrier_instruct.evaluation.judge import _legacy_backend_id
    old = judge._judge_id(_legacy_backend_id(judge.backend))  # 0.x named the backend otherwise: records re-keyed
    assert old != judge.judge_id
    records = [{**r, "judge": old,
                "key": hashlib.sha256(json.dumps([old, r["prompt"], r["instruction_sha256"], r["docno"],
                                                  r["text_sha256"]]).encode()).hexdigest()}
               for r in judge.store.get([r for r in _keys(judge)]).values()]
    legacy = tmp_path / "old" / "judge.jsonl"
    legacy.parent.mkdir()
    legacy.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"key": "0123", "score": 1.')  # and a torn line
    again = Script(subset_fiqa()[2])
    judge = IFIRJudge(FunctionBackend(logprobs=again), store=legacy)
    r2 = evaluate(judge, subset_fiqa, "fiqa")
    assert again.batches == [] and judge.last["hits"] == 27 and len(judge.store) == 20 == len(records)
    assert str(judge.store.path) == str(tmp_path / "old" / "judge")
    pd.testing.assert_frame_equal(r1.per_query, r2.per_query)
    legacy.write_text(json.dumps({**records[0], "key": "new"}) + "\n")  # read once: a changed file is not read again
    assert IFIRJudge(FunctionBackend(logprobs=again), store=legacy).store.get(["new"]) == {}


def _keys(judge):
    topics, ranked, kind = subset_fiqa()
    return [judge.key(JudgeItem(f"fiqa{q[-1]}", f"query {q[0]} instruction {q[0]}{q[-1]}", d, docs_for(kind)[d]))
            for q in ranked if not q.endswith("_0") for d in ranked[q] + ranked[q[0] + "_0"]]


def test_aila_code_bug_only_on_request():
    topics = pd.DataFrame([(f"L_{lv}", "case", "" if lv == 0 else f"instruction {lv}") for lv in range(4)],
                          columns=["qid", "query", "instruction"])
    ranked = {"L_0": ["c1", "c2"], "L_1": ["c3", "c4"], "L_2": ["c3", "c4"], "L_3": ["c3", "c4"]}
    kind = {"c1": "d0", "c2": "d1", "c3": "d3", "c4": "d2"}
    run = run_of(ranked)
    is0 = run["qid"].str.endswith("_0")
    results = {}
    for bug in (False, True):
        script = Script(kind)
        judge = IFIRJudge(FunctionBackend(logprobs=script), ifir_code_bug=bug)
        res = instfol(run[is0], run[~is0], topics, docs_for(kind), judge, dataset="aila")
        results[bug] = res.per_query.set_index("qid")
        sent = [m[0]["content"] for batch, _ in script.batches for m in batch]
        assert (IFIR_JUDGE["aila3"] in sent) == bug  # the bare aila3 template is what the repository sends
    correct = (2.5 - 0.5) / 2.5
    assert results[False]["instfol"].to_dict() == pytest.approx({"L_1": correct, "L_2": correct, "L_3": correct})
    # with the bug the judge never sees the passage at levels 2 and 3: every score is the same, INSTFOL is 0
    assert results[True]["instfol"].to_dict() == pytest.approx({"L_1": correct, "L_2": 0.0, "L_3": 0.0})
    assert results[True]["prompt"].tolist() == ["aila1", "aila2+ifir_code_bug", "aila3+ifir_code_bug"]


def test_figure8_system_line_for_aila_only():
    judge = IFIRJudge(FunctionBackend(logprobs=Script({})), system_prompt=True)
    assert judge.messages("aila3", "I", "C")[0] == {"role": "system", "content": "You are an expert in legal domain."}
    assert [m["role"] for m in judge.messages("fiqa3", "I", "C")] == ["user"]
    assert judge.prompt_id("aila1") == "aila1+figure8_system" and judge.prompt_id("pm2") == "pm2"


def test_judge_arguments_are_checked():
    backend = FunctionBackend(logprobs=Script({}))
    for kwargs, msg in (({"mode": "guess"}, "mode must be one of"), ({"mode": "direct"}, "score_distribution"),
                        ({"top_logprobs": 0}, "top_logprobs must be"), ({"batch_size": 0}, "batch_size must be"),
                        ({"min_prob": 0}, "min_prob must be")):
        with pytest.raises(ValueError, match=msg):
            IFIRJudge(backend, **kwargs)
    with pytest.raises(TypeError, match="backend must be a Backend"):
        IFIRJudge(lambda m, n: ["x"])
    with pytest.raises(ValueError, match="needs model="):
        IFIRJudge("openai")
    with pytest.raises(ValueError, match="has no logprobs function"):
        IFIRJudge(FunctionBackend(lambda m, n: ["x"] * len(m))).judge([("fiqa1", "i", "d", "t")])
    topics, ranked, kind = subset_fiqa()
    with pytest.raises(ValueError, match=r"have no text in docs, e.g. \['a1'"):
        instfol(run_of({"A_0": ["a1"]}), run_of({"A_1": ["a1"]}), topics, {}, IFIRJudge(backend), dataset="fiqa")
    with pytest.raises(ValueError, match="unknown IFIR subset"):
        instfol(run_of({"A_0": ["a1"]}), run_of({"A_1": ["a1"]}), topics, docs_for(kind), IFIRJudge(backend),
                dataset="msmarco")
    with pytest.raises(TypeError, match="judge must be an IFIRJudge"):
        instfol(run_of({"A_0": ["a1"]}), run_of({"A_1": ["a1"]}), topics, docs_for(kind), backend, dataset="fiqa")


# -- the IFIR report and the bundled IFIR fixtures ---------------------------------------------------------------------
class _Dataset:
    def __init__(self, topics, qrels, name):
        self.topics, self.qrels, self.name, self.provenance = topics, qrels, name, {"repo_id": "test"}

    def get_topics(self):
        return self.topics

    def get_qrels(self):
        return self.qrels


def test_ifir_report_with_a_judge():
    datasets, docs, runs = {}, {}, []
    for key, subset in (("fiqa", subset_fiqa), ("nfcorpus", subset_nfcorpus)):
        topics, ranked, kind = subset()
        qrels = pd.DataFrame([(q, d[0], 1) for q, d in ranked.items() if not q.endswith("_0")],
                             columns=["qid", "docno", "label"])
        datasets[key], docs[key] = _Dataset(topics, qrels, key), docs_for(kind)
        runs.append(run_of(ranked))
    system = pt.Transformer.from_df(pd.concat(runs, ignore_index=True))
    script = Script({**subset_fiqa()[2], **subset_nfcorpus()[2]})
    judge = IFIRJudge(FunctionBackend(logprobs=script))
    table = ifir_report({"sys": system}, datasets, judge=judge, docs=docs, origin=True)
    plain = ifir_report({"sys": system}, datasets, origin=True)
    row = table.set_index("Model").loc["sys"]
    assert row["fiqa INSTFOL@20"] == round(100 * FIQA, 2) and row["nfcorpus INSTFOL@20"] == round(100 * NFC, 2)
    assert row["Avg INSTFOL@20"] == round(100 * (FIQA + NFC) / 2, 2) == 10.65
    assert row["fiqa INSTFOL@20/level3"] == 100.0 and row["fiqa INSTFOL@20/level1"] == 25.0
    assert np.isnan(table.set_index("Model").loc["sys (origin)", "fiqa INSTFOL@20"])  # INSTFOL is the system row's
    pd.testing.assert_frame_equal(table[plain.columns], plain)  # nDCG/MRR columns are unchanged, still fractions
    assert row["fiqa nDCG@20"] == 1.0 and table.attrs["settings"]["INSTFOL top_logprobs"] == 10
    assert set(table.attrs["instfol"]["model"]) == {"sys"} and len(table.attrs["instfol"]) == 5 + 3
    assert table.attrs["instfol_judge"]["judged"] == 20 + 7 and "| +10.65 |" in to_markdown(table)
    with pytest.raises(ValueError, match="INSTFOL of 'sys' on 'robust': unknown IFIR subset"):
        ifir_report({"sys": system}, {"robust": datasets["fiqa"]}, judge=judge, docs=docs["fiqa"])


def test_on_the_bundled_ifir_fixture():
    ds = pti.load_dataset("ifir/aila")
    topics = ds.get_topics()
    zero = no_instruction_topics(topics)
    assert set(zero["variant"]) == {"0"} and len(zero) == topics["base_qid"].nunique()
    assert doc_texts(ds, ["aila-DAM-0_0"]) == {"aila-DAM-0_0": "Dam report 0 dam river fish study number 0 of dams."}
    assert doc_texts({"x": ("", "only text"), "y": {"title": "T", "text": "body"}}, ["x", "y"]) == \
        {"x": "only text", "y": "T body"}
    frame = pd.DataFrame({"docno": ["x"], "text": ["t"]})
    assert doc_texts(frame, ["x"]) == {"x": "t"}
    # the mteb layout has no level-0 rows: one no-instruction topic per base query is made
    mteb_like = topics[topics["variant"] != "0"]
    made = no_instruction_topics(mteb_like)
    assert made["qid"].tolist() == [f"{b}_0" for b in dict.fromkeys(mteb_like["base_qid"])]
    assert (made["instruction"] == "").all()
    # runs: the corpus order without instruction, the level's gold first with it
    qrels = ds.get_qrels()
    run_inst = qrels.assign(score=1.0)[["qid", "docno", "score"]]
    run_q = pd.DataFrame([(f"{b}_0", d, -j) for b in zero["base_qid"] for j, d in
                          enumerate(sorted(set(qrels.loc[qrels.base_qid == b, "docno"])))],
                         columns=["qid", "docno", "score"])
    script = Script({})
    res = instfol(run_q, run_inst, topics, ds, IFIRJudge(FunctionBackend(logprobs=script)), dataset="aila")
    assert len(res.per_query) == (topics["variant"] != "0").sum() and res.skipped == 0
    assert set(res.per_query["prompt"]) == {"aila1", "aila2", "aila3"}
    # one answer for every doc (the titled passages don't match Script's regex)
    assert res.per_query["instfol"].abs().max() < 1e-12
    first = script.batches[0][0][0][0]["content"]
    assert "and a prior case: " in first and re.search(r"report \d+ ", first)  # the title is part of the passage


def test_top_logprobs_defaults_to_the_ifir_code_and_five_changes_the_score():
    """The IFIR code requests 10 candidates (its formula sums k = 1..10); the paper's text says 5. An engine returns
    exactly ``top_logprobs`` candidates, most likely first: a score digit ranked 6th-10th counts only with 10."""
    ranked = [("2", .60), ("Two", .12), ("two", .08), (" 2", .05), ("**", .04), ("3", .03), ("1", .02), ("0", .015)]

    def engine(prompts, max_new_tokens, top_logprobs, temperature, top_p):
        g = answer("2", dict(ranked))
        tops = [pos if i != 4 else pos[:top_logprobs] for i, pos in enumerate(g.top_logprobs)]
        return [Generation(g.text, g.tokens, tuple(tops)) for _ in prompts]

    assert IFIRJudge(FunctionBackend(logprobs=engine)).top_logprobs == 10

    def judged(**kw):
        (j,) = IFIRJudge(FunctionBackend(logprobs=engine), **kw).judge([JudgeItem("fiqa1", "I", "d", "T")])
        return j.score
    assert judged() == pytest.approx((2 * .60 + 3 * .03 + 1 * .02 + 0) / (.60 + .03 + .02 + .015))
    assert judged(top_logprobs=5) == 2.0  # "3", "1", "0" are ranked 6th-8th
