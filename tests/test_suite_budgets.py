"""Issue 43, reasoning budgets as an axis: ``--reasoning-effort`` sweeps an API row of the suite (each effort its own
row, request, saved runs and cost), every reasoning family counts a generation the budget cut before its verdict, and
the cost columns equal what the vLLM harness (tests/fake_vllm.py) received and generated."""
import json
import os
import re
import sys
from collections import Counter

import pandas as pd
import pytest
from stubs import openai_api, with_chat_template

import pyterrier_instruct as pti
from pyterrier_instruct._fingerprint import fingerprint
from pyterrier_instruct.backends import Continuation, FunctionBackend
from pyterrier_instruct.setwise.rank_r1 import _AdapterHFBackend
from pyterrier_instruct.testing import ChatServer
from pyterrier_instruct.testing.models import QWEN_CHAT_TEMPLATE, tiny_rank1
from pyterrier_instruct.testing.server import chat_answer

EFFORTS = ("none", "low", "high")


def _cost(out) -> pd.DataFrame:
    return pd.read_csv(os.path.join(out, "cost.csv")).set_index("system")


def test_each_reasoning_effort_is_a_row_with_its_request_runs_and_reasoning_tokens(tmp_path, capsys):
    from pyterrier_instruct.reproduce import cli
    out = str(tmp_path / "out")
    with ChatServer(openai_api(chat_answer, reasoning_cost=64)) as server:
        argv = ["suite", "--systems", "rankgpt", "--rankgpt", "gpt-5.1", "--reasoning-effort", ",".join(EFFORTS),
                "--openai-base-url", server.url, "--openai-key-env", "none", "--benchmarks", "followir/robust04",
                "--quiet", "--out", out]
        assert cli.main(argv) == 0
        rows = [f"RankGPT [gpt-5.1] [effort {e}]" for e in EFFORTS]
        board = pd.read_csv(os.path.join(out, "leaderboard.csv"))
        assert board["system"].tolist() == rows and board["followir"].notna().all()
        sent = Counter(r["body"].get("reasoning_effort") for r in server.requests)
        n = len(server.requests) // 3
        assert n > 0 and sent == {e: n for e in EFFORTS}  # each row's effort in its own requests' bodies
        cost = _cost(out)
        assert cost.loc[rows, "calls"].tolist() == cost.loc[rows, "new_calls"].tolist() == [n, n, n]
        # the reasoning tokens the server reported, per row: none at effort none, 64 a call otherwise
        assert cost.loc[rows, "reasoning_tokens"].tolist() == [0, 64 * n, 64 * n]
        assert (cost.loc[rows[1:], "completion_tokens"] - cost.loc[rows[0], "completion_tokens"] == 64 * n).all()
        runs = json.load(open(os.path.join(out, "leaderboard.json"), encoding="utf-8"))["status"]["followir"]["runs"]
        assert len({tuple(runs[r]) for r in rows}) == 3  # a saved-run folder per effort
        api = [pti.RankGPT("gpt-5.1", base_url=server.url, api_key_env=None,
                           backend_options={"reasoning_effort": e}) for e in EFFORTS]
        assert len({fingerprint(r) for r in api}) == 3
        capsys.readouterr()
        assert cli.main(argv) == 0  # a rerun: nothing computed, nothing asked
        assert len(server.requests) == 3 * n
        again = _cost(out)
        assert set(again["runs"]) == {"reused"} and (again["new_calls"] == 0).all()
        figures = ["calls", "prompt_tokens", "completion_tokens", "reasoning_tokens", "seconds"]
        pd.testing.assert_frame_equal(again.loc[rows, figures], cost.loc[rows, figures])  # the original cost, read back
        assert "| RankGPT [gpt-5.1] [effort low] |" in capsys.readouterr().out


def test_an_effort_for_a_model_that_does_not_reason_is_refused_before_any_work(tmp_path, capsys):
    from pyterrier_instruct.reproduce import cli
    with pytest.raises(SystemExit):
        cli.main(["suite", "--systems", "rankgpt", "--rankgpt", "gpt-4o", "--reasoning-effort", "low",
                  "--openai-key-env", "none", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert "--systems rankgpt [effort low]" in err and "'gpt-4o' is not one" in err
    with pytest.raises(SystemExit):
        cli.main(["suite", "--systems", "rankgpt", "--reasoning-effort", "lots", "--out", str(tmp_path / "out")])
    assert "--systems rankgpt [effort lots]: reasoning_effort must be one of" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out")


# --- a budget that cuts the answer: counted per family, in the row ------------------------------------------------

@pytest.fixture(scope="module")
def nevir_docs():
    nevir = pti.load_dataset("nevir")
    return len(nevir.candidates()(nevir.get_topics()))


def _suite(system, out):
    """The row's notes and its ``stats`` counters (the cost table's) of ``system`` on NevIR."""
    board = pti.suite({"r": system}, ["nevir"], out=str(out), baseline=None, verbose=False)
    stats = board.attrs["cost"]["stats"].iloc[0] if len(board.attrs["cost"]) else ""
    return board["notes"].iloc[0], json.loads(stats) if stats else {}


def test_rank1_cut_by_its_budget_is_forced_and_counted(tmp_path, nevir_docs):
    model = tiny_rank1(tmp_path / "model")
    note, stats = _suite(pti.Rank1(model, max_output_tokens=1, verbose=False), tmp_path / "one")
    assert stats == {"forced": nevir_docs}
    assert note == f"nevir: {nevir_docs} generations without a verdict within the budget (verdict forced)"
    note, stats = _suite(pti.Rank1(model, max_output_tokens=40, verbose=False), tmp_path / "forty")
    assert stats["complete"] > 0 and stats.get("forced", 0) < nevir_docs


class Words:
    """A tokenizer of whitespace-separated words."""

    def encode(self, text):
        return text.split()


def _reasoner(prompts, max_new_tokens):
    """A ReasonRank stand-in: eight words of reasoning, then the window reversed, cut at ``max_new_tokens`` words."""
    out = []
    for messages in prompts:
        num = len(set(re.findall(r"^\[(\d+)\] ", "\n".join(m["content"] for m in messages), re.M)))
        answer = "<think> " + "hmm " * 8 + "</think> " + " > ".join(f"[{i}]" for i in range(num, 0, -1))
        out.append(" ".join(answer.split()[:max_new_tokens]))
    return out


def test_reasonrank_cut_while_reasoning_is_counted_unfinished(tmp_path, nevir_docs):
    def reasonrank(budget):
        backend = FunctionBackend(_reasoner, tokenizer=Words(), name="reasoner")
        return pti.ReasonRank(backend=backend, max_output_tokens=budget, verbose=False)
    windows = nevir_docs // 2  # NevIR: two passages a query, one window each
    note, stats = _suite(reasonrank(1), tmp_path / "one")
    assert (stats["unfinished"], stats["repaired"], stats["windows"]) == (windows, windows, windows)
    assert note == (f"nevir: {windows} windows whose permutation was repaired, {windows} windows whose reasoning "
                    "never closed within the budget")
    note, stats = _suite(reasonrank(64), tmp_path / "enough")
    assert stats.get("unfinished", 0) == stats.get("repaired", 0) == 0 and stats["clean"] == windows and note == ""


class Thinking(_AdapterHFBackend):
    """Rank-R1's backend answering ``<think>`` + six words + ``</think> <answer>[1]</answer>``, one token a word, cut at
    the budget (``finish_reason`` ``length``)."""

    def generate_until(self, token_ids, *, max_new_tokens, stop=(), top_logprobs=20, bar=None):
        words = ("<think> " + "a " * 6 + "</think> <answer>[1]</answer>").split()
        text = " ".join(words[:max_new_tokens])
        cut = "length" if max_new_tokens < len(words) else "stop"
        return [Continuation(text, tuple(range(min(max_new_tokens, len(words)))), {}, cut) for _ in token_ids]


def test_rank_r1_cut_by_its_budget_is_counted_invalid(tmp_path, qwen, nevir_docs):
    model = with_chat_template(qwen["qwen2"], tmp_path / "qwen", QWEN_CHAT_TEMPLATE)
    note, stats = _suite(pti.RankR1(backend=Thinking(model), max_output_tokens=1, verbose=False), tmp_path / "one")
    assert stats["invalid"] == stats["generations"] > 0
    assert note == f"nevir: {stats['invalid']} generations without a parsable answer"
    note, stats = _suite(pti.RankR1(backend=Thinking(model), max_output_tokens=64, verbose=False), tmp_path / "enough")
    assert stats.get("invalid", 0) == 0 and stats["generations"] > 0 and note == ""


def test_an_api_reasoning_model_cut_by_its_budget_is_counted_or_named(tmp_path, nevir_docs):
    windows = nevir_docs // 2
    with ChatServer(openai_api(chat_answer, reasoning_cost=64)) as server:
        def rankgpt(reasoning_tokens):
            return pti.RankGPT("o4-mini", base_url=server.url, api_key_env=None, verbose=False,
                               backend_options={"reasoning_effort": "low", "reasoning_tokens": reasoning_tokens})
        # 64 tokens of reasoning, then "[2] > [1]" cut after five characters: the ranking repaired, counted
        note, stats = _suite(rankgpt(60), tmp_path / "cut")
        assert stats["repaired"] == stats["windows"] == windows
        assert note == f"nevir: {windows} windows whose permutation was repaired"
        # the whole budget spent on reasoning: nothing to rank, the row says so (never a score of 0)
        board = pti.suite({"r": rankgpt(0)}, ["nevir"], out=str(tmp_path / "spent"), baseline=None, verbose=False)
        assert board["nevir"].isna().all()
        assert board["notes"].iloc[0].startswith("nevir: failed: RequestError: o4-mini answered nothing within "
                                                 "max_completion_tokens=9 (0 for reasoning + 9 for the answer)")
        note, stats = _suite(rankgpt(25_000), tmp_path / "enough")
        assert stats.get("repaired", 0) == 0 and stats["clean"] == windows and note == ""


# --- cost columns against the vLLM harness ------------------------------------------------------------------------

def test_cost_columns_equal_what_the_vllm_harness_received(tmp_path, monkeypatch, qwen):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    generated = []
    original = fake_vllm.LLM.generate

    def recording(self, *args, **kwargs):
        outputs = original(self, *args, **kwargs)
        generated.extend(len(o.outputs[0].token_ids) for o in outputs)
        return outputs
    monkeypatch.setattr(fake_vllm.LLM, "generate", recording)
    model = with_chat_template(qwen["qwen2"], tmp_path / "qwen", QWEN_CHAT_TEMPLATE)

    def reasonrank():
        return pti.ReasonRank(model, backend="vllm", max_output_tokens=4, context_size=None, verbose=False,
                              backend_options={"max_model_len": 4096, "store": str(tmp_path / "calls")})
    pti.suite({"ReasonRank": reasonrank()}, ["followir/robust04"], out=str(tmp_path / "first"), baseline=None,
              verbose=False)
    (llm,) = fake_vllm.instances
    prompts = [p for call in llm.calls for p in call["prompts"]]
    cost = _cost(str(tmp_path / "first")).loc["ReasonRank"]
    assert len(prompts) > 0 and (cost["calls"], cost["new_calls"]) == (len(prompts), len(prompts))
    assert cost["prompt_tokens"] == sum(len(p["prompt_token_ids"]) for p in prompts)
    assert cost["completion_tokens"] == sum(generated) > 0
    # a rerun (its saved runs elsewhere): every call read back from the store, no engine started (the prompts are
    # rendered by vLLM's tokenizer for the engine's options, built without the engine)
    calls = len(llm.calls)
    pti.suite({"ReasonRank": reasonrank()}, ["followir/robust04"], out=str(tmp_path / "again"), baseline=None,
              verbose=False)
    again = _cost(str(tmp_path / "again")).loc["ReasonRank"]
    assert len(llm.calls) == calls and fake_vllm.instances == [llm]
    assert again["new_calls"] == 0
    figures = ["calls", "prompt_tokens", "completion_tokens"]
    assert again[figures].tolist() == cost[figures].tolist()


def test_hf_generate_reports_the_tokens_it_generated_to_the_call_store(tmp_path):
    """Batched, left-padded generation: each answer's completion tokens are those an unbatched greedy run generates
    (up to and including its end of sequence), never the padding after it."""
    import torch
    from pyterrier_instruct.backends import HFBackend, Prompt
    backend = HFBackend(tiny_rank1(tmp_path / "model"), batch_size=4, store=tmp_path / "calls")
    tok = backend.tokenizer()
    texts = ["Query: a b c\n<think> the query passage is", "hello world <think> the query is", "x y <think> is",
             "Passage: river\n<think> passage is", "abc <think> query passage is the query passage is"]
    ids = [tok(t)["input_ids"] for t in texts]  # tiny_rank1's planted path: some end at once (EOS), some run on
    backend.generate([Prompt((), None, i) for i in ids], max_new_tokens=16)
    model, reference = backend._load()[0], []
    for i in ids:
        with torch.inference_mode():
            out = model.generate(torch.tensor([i]), attention_mask=torch.ones(1, len(i), dtype=torch.long),
                                 do_sample=False, max_new_tokens=16, pad_token_id=tok.pad_token_id)
        reference.append(out.shape[1] - len(i))
    usage = backend.store.usage().iloc[0]
    assert min(reference) < 16 == max(reference) and usage["calls"] == len(ids)  # ended early, and cut
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (sum(map(len, ids)), sum(reference))
