"""The OpenAI-compatible backend against a chat-completions server started by the test on 127.0.0.1."""
import re

import pandas as pd
import pytest
from stubs import ChatServer, openai_api

from pyterrier_instruct._fingerprint import fingerprint
from pyterrier_instruct.backends import BackendUnavailable, OpenAIBackend
from pyterrier_instruct.backends.openai import is_reasoning_model
from pyterrier_instruct.listwise import ListwiseReranker, RankGPT
from pyterrier_instruct.prompts import LISTWISE


def reverse_ranking(body):
    """Ranks the passages of a RankGPT conversation (one user turn per passage) in reverse."""
    num = sum(1 for m in body["messages"] if m["role"] == "user" and re.match(r"\[\d+\] ", m["content"]))
    return 200, {"choices": [{"message": {"role": "assistant",
                                          "content": " > ".join(f"[{i}]" for i in range(num, 0, -1))}}]}


@pytest.fixture
def server():
    s = ChatServer(reverse_ranking)
    yield s
    s.close()


def frame(n_queries=3, n_docs=30):
    return pd.DataFrame([{"qid": f"q{q}", "query": f"query {q}", "instruction": "only reviews", "docno": f"q{q}d{j}",
                          "text": f"passage [{j}] text", "score": float(-j)} for q in range(n_queries)
                         for j in range(n_docs)])


def test_rank_gpt_over_http(server, monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", "sk-secret-123")
    sleeps = []
    r = RankGPT("gpt-4o", base_url=server.url, api_key_env="TEST_LLM_KEY",
                backend_options={"concurrency": 3, "sleep": sleeps.append, "extra_body": {"seed": 0}})
    out = r(frame())
    assert len(server.requests) == 6 and r.backend.requests == 6  # 2 windows × 3 queries: 2 batches of 3 concurrent
    req = next(q for q in server.requests if "query: query 0" in q["body"]["messages"][1]["content"])  # any order
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-secret-123"
    body = req["body"]
    assert (body["model"], body["temperature"], body["seed"]) == ("gpt-4o", 0.0, 0) and "min_tokens" not in body
    bound = ("[1] > [2] > [3] > [4] > [5] > [6] > [7] > [8] > [9] > [10] > [11] > [12] > [13] > [14] > [15] > [16] > "
             "[17] > [18] > [19] > [20]")
    assert body["max_tokens"] == len(bound)  # no tokenizer: a character bound
    g = LISTWISE["rank_gpt"]
    assert body["messages"][0] == {"role": "system", "content": g.system}
    assert body["messages"][3] == {"role": "user", "content": "[1] passage (10) text"}  # masked passage
    assert body["messages"][-1]["content"].startswith("Search Query: query 0 only reviews. \nRank the 20 passages")
    order = out[out.qid == "q1"].sort_values("rank").docno.str.slice(3).astype(int).tolist()
    lst = list(range(30))
    for a, b in [(10, 30), (0, 20)]:
        lst[a:b] = lst[a:b][::-1]
    assert order == lst and r.stats["clean"] == 6 and not sleeps
    assert "sk-secret" not in repr(r) and "TEST_LLM_KEY" in repr(r.backend)


def test_retries_with_backoff_then_fails_with_the_server_message(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sleeps = []
    backend = OpenAIBackend("m", base_url=server.url, api_key_env=None, max_retries=3, backoff=0.5, sleep=sleeps.append)
    server.script = [(503, {"error": "busy"}), (429, {"error": "slow down"}), (200, None)]
    prompt = backend.prepare([{"role": "user", "content": "[1] a"}])
    assert backend.generate([prompt], max_new_tokens=5) == ["[1]"]
    assert sleeps == [0.5, 0.25] and len(server.requests) == 3 and server.requests[0]["auth"] is None  # Retry-After won
    server.script = [(400, {"error": {"message": "max_tokens is too large"}})]
    with pytest.raises(RuntimeError, match="HTTP 400: .*max_tokens is too large"):
        backend.generate([prompt], max_new_tokens=5)
    server.script = [(500, {"error": "x"})] * 4
    with pytest.raises(RuntimeError, match="HTTP 500"):
        backend.generate([prompt], max_new_tokens=5)
    assert sleeps[2:] == [0.5, 1.0, 2.0]
    server.script = [(200, {"choices": []})]
    with pytest.raises(RuntimeError, match=r"returned no choices\[0\].message.content"):
        backend.generate([prompt], max_new_tokens=5)


def test_unreachable_server_fails_fast_naming_the_base_url(monkeypatch):
    import socket
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = []
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=None, sleep=sleeps.append,
                            timeout=5, concurrency=1)
    with pytest.raises(BackendUnavailable,
                       match=rf"cannot connect to http://127.0.0.1:{port}/v1 \(ConnectionRefusedError.*after 4 "
                             r"attempt\(s\) over 3.5 s: is the server running"):
        backend.generate([backend.prepare([{"role": "user", "content": "x"}])] * 3, max_new_tokens=3)
    assert sleeps == [0.5, 1.0, 2.0] and backend.requests == 4  # a short bounded retry; other prompts never sent
    with pytest.raises(ValueError, match="a chat message is a dict"):
        backend.prepare([{"role": "tool", "content": "x"}])


def test_a_missing_key_fails_before_any_request(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = RankGPT("gpt-4o", base_url=server.url)
    with pytest.raises(BackendUnavailable,
                       match=r"OPENAI_API_KEY is not set: export OPENAI_API_KEY=<your key>, or pass "
                             r"api_key_env=None for a server that takes no key"):
        r(frame(1, 5))
    monkeypatch.setenv("OPENAI_API_KEY", "  ")  # blank counts as unset
    with pytest.raises(BackendUnavailable, match="OPENAI_API_KEY is not set"):
        r.backend.generate_logprobs([r.backend.prepare([{"role": "user", "content": "x"}])], max_new_tokens=1,
                                    top_logprobs=1, return_exceptions=True)
    assert server.requests == [] and r.backend.requests == 0
    keyless = RankGPT("gpt-4o", base_url=server.url, api_key_env=None)  # a local server started without --api-key
    assert len(keyless(frame(1, 5))) == 5 and server.requests[0]["auth"] is None and "api_key_env=None" in repr(keyless)
    with pytest.raises(ValueError, match="api_key_env must name an environment variable, or be None"):
        OpenAIBackend("m", api_key_env="")


def test_vllm_server_options_and_token_counting(server):
    class Words:
        def encode(self, text):
            return text.split()
    backend = OpenAIBackend("rank_zephyr", base_url=server.url, api_key_env=None, min_tokens=True, tokenizer=Words())
    r = ListwiseReranker(backend, context_size=4096)
    r(frame(1, 20))
    body = server.requests[0]["body"]
    assert body["min_tokens"] == body["max_tokens"] == r.output_budget(20) == 39  # every token of "[1] > … > [20]"
    prompt = backend.prepare(body["messages"])
    assert prompt.n_tokens == sum(3 + len(m["content"].split()) for m in body["messages"]) + 3


# -- reasoning models (o-series, gpt-5): what OpenAI's chat-completions API accepts from them --------------------------
@pytest.fixture
def api():
    s = ChatServer(openai_api(reverse_ranking))
    yield s
    s.close()


def test_rank_gpt_on_a_reasoning_model_sends_what_the_api_accepts(api):
    r = RankGPT("gpt-5", base_url=api.url, api_key_env=None)
    out = r(frame(1, 20))
    body = api.requests[0]["body"]
    budget = r.output_budget(20)
    assert body["max_completion_tokens"] == budget + 25_000
    assert not {"max_tokens", "temperature", "reasoning_effort"} & set(body)
    assert out.sort_values("rank").docno.tolist() == [f"q0d{j}" for j in range(19, -1, -1)] and r.stats["clean"] == 1
    low = RankGPT("gpt-5", base_url=api.url, api_key_env=None, backend_options={"reasoning_effort": "low"})
    low(frame(1, 20))
    assert api.requests[-1]["body"]["reasoning_effort"] == "low" and "temperature" not in api.requests[-1]["body"]
    chat = RankGPT("gpt-4o", base_url=api.url, api_key_env=None)  # a chat model: as before
    chat(frame(1, 20))
    assert (api.requests[-1]["body"]["max_tokens"], api.requests[-1]["body"]["temperature"]) == (budget, 0.0)
    # gpt-5.1 at reasoning_effort='none' reasons not at all: temperature 0 again, no reasoning allowance
    none = RankGPT("gpt-5.1", base_url=api.url, api_key_env=None, backend_options={"reasoning_effort": "none"})
    none(frame(1, 20))
    body = api.requests[-1]["body"]
    assert (body["max_completion_tokens"], body["temperature"], body["reasoning_effort"]) == (budget, 0.0, "none")


def test_a_reasoning_budget_spent_on_reasoning_is_a_clear_error(api):
    backend = OpenAIBackend("o4-mini", base_url=api.url, api_key_env=None, reasoning_tokens=10)
    prompt = backend.prepare([{"role": "user", "content": "[1] a"}])
    with pytest.raises(RuntimeError,
                       match=r"o4-mini answered nothing within max_completion_tokens=15 \(10 for reasoning \+ 5 "
                             r"for the answer\): it spent 15 on reasoning; raise reasoning_tokens \(now "
                             r"10\) or lower reasoning_effort"):
        backend.generate([prompt], max_new_tokens=5)
    o4 = OpenAIBackend("o4-mini", base_url=api.url, api_key_env=None, reasoning_tokens=64)
    assert o4.generate([prompt], max_new_tokens=5) == ["[1]"]


def test_which_models_are_reasoning_models_and_the_override(api):
    names = {"o1": True, "o1-mini": True, "o3": True, "o3-pro": True, "o4-mini-2025-04-16": True, "gpt-5": True,
             "gpt-5-mini": True, "gpt-5.1": True, "gpt-5.2-pro": True, "openai/gpt-5-nano": True,
             "gpt-5-chat-latest": False, "gpt-5.1-chat-latest": False, "gpt-4o": False, "gpt-4.1-mini": False,
             "omni-moderation-latest": False, "Qwen/Qwen3-8B": False, "castorini/rank_zephyr_7b_v1_full": False}
    assert {n: is_reasoning_model(n) for n in names} == names
    assert OpenAIBackend("gpt-5").reasons and not OpenAIBackend("gpt-5", reasoning=False).reasons
    assert OpenAIBackend("my-deployment", reasoning=True).reasons  # an Azure deployment name says nothing: say it
    local = OpenAIBackend("o1-tuned", base_url=api.url, api_key_env=None, reasoning=False)  # a name the rule gets wrong
    assert local.generate([local.prepare([{"role": "user", "content": "[1] a"}])], max_new_tokens=5) == ["[1]"]
    assert (api.requests[-1]["body"]["max_tokens"], api.requests[-1]["body"]["temperature"]) == (5, 0.0)
    with pytest.raises(ValueError,
                       match=r"reasoning_effort='low' applies to reasoning models; 'gpt-4o' is not one by its name "
                             r"\(pyterrier_instruct.backends.openai.is_reasoning_model\): pass "
                             r"reasoning=True"):
        OpenAIBackend("gpt-4o", reasoning_effort="low")
    with pytest.raises(ValueError, match="reasoning_effort must be one of"):
        OpenAIBackend("gpt-5", reasoning_effort="max")
    # the fingerprint (the judge's identity too) of a chat model is what it was; a reasoning model's names its effort
    assert "reasoning" not in fingerprint(OpenAIBackend("gpt-4o"))
    assert fingerprint(OpenAIBackend("gpt-4o")) == fingerprint(OpenAIBackend("gpt-4o", reasoning=False))
    assert "reasoning_effort='low'" in fingerprint(OpenAIBackend("gpt-5", reasoning_effort="low"))
    assert fingerprint(OpenAIBackend("gpt-5", reasoning_effort="low")) != fingerprint(OpenAIBackend("gpt-5"))
