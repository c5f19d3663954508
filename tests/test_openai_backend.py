"""The OpenAI-compatible backend against a chat-completions server started by the test on 127.0.0.1."""
import re

import pandas as pd
import pytest
from stubs import ChatServer

from pyterrier_instruct.backends import BackendUnavailable, OpenAIBackend
from pyterrier_instruct.listwise import ListwiseReranker, RankGPT
from pyterrier_instruct.prompts import LISTWISE


def reverse_ranking(body):
    """Ranks the passages of a RankGPT conversation (one user turn per passage) in reverse."""
    num = sum(1 for m in body["messages"] if m["role"] == "user" and re.match(r"\[\d+\] ", m["content"]))
    return 200, {"choices": [{"message": {"role": "assistant", "content": " > ".join(f"[{i}]" for i in range(num, 0, -1))}}]}


@pytest.fixture
def server():
    s = ChatServer(reverse_ranking)
    yield s
    s.close()


def frame(n_queries=3, n_docs=30):
    return pd.DataFrame([{"qid": f"q{q}", "query": f"query {q}", "instruction": "only reviews", "docno": f"q{q}d{j}",
                          "text": f"passage [{j}] text", "score": float(-j)} for q in range(n_queries) for j in range(n_docs)])


def test_rank_gpt_over_http(server, monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", "sk-secret-123")
    sleeps = []
    r = RankGPT("gpt-4o", base_url=server.url, api_key_env="TEST_LLM_KEY",
                backend_options={"concurrency": 3, "sleep": sleeps.append, "extra_body": {"seed": 0}})
    out = r(frame())
    assert len(server.requests) == 6 and r.backend.requests == 6  # 2 windows × 3 queries, 2 batches of 3 concurrent requests
    req = next(q for q in server.requests if "query: query 0" in q["body"]["messages"][1]["content"])  # concurrent: any order
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-secret-123"
    body = req["body"]
    assert (body["model"], body["temperature"], body["seed"]) == ("gpt-4o", 0.0, 0) and "min_tokens" not in body
    assert body["max_tokens"] == len("[1] > [2] > [3] > [4] > [5] > [6] > [7] > [8] > [9] > [10] > [11] > [12] > [13] > "
                                     "[14] > [15] > [16] > [17] > [18] > [19] > [20]")  # no tokenizer: a character bound
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
    assert sleeps == [0.5, 0.25] and len(server.requests) == 3 and server.requests[0]["auth"] is None  # Retry-After wins
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
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=None, sleep=sleeps.append, timeout=5, concurrency=1)
    with pytest.raises(BackendUnavailable, match=rf"cannot connect to http://127.0.0.1:{port}/v1 \(ConnectionRefusedError.*after 4 "
                                                 r"attempt\(s\) over 3.5 s: is the server running"):
        backend.generate([backend.prepare([{"role": "user", "content": "x"}])] * 3, max_new_tokens=3)
    assert sleeps == [0.5, 1.0, 2.0] and backend.requests == 4  # a short bounded retry; the other prompts are never sent
    with pytest.raises(ValueError, match="a chat message is a dict"):
        backend.prepare([{"role": "tool", "content": "x"}])


def test_a_missing_key_fails_before_any_request(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = RankGPT("gpt-4o", base_url=server.url)
    with pytest.raises(BackendUnavailable, match=r"OPENAI_API_KEY is not set: export OPENAI_API_KEY=<your key>, or pass "
                                                 r"api_key_env=None for a server that takes no key"):
        r(frame(1, 5))
    monkeypatch.setenv("OPENAI_API_KEY", "  ")  # blank counts as unset
    with pytest.raises(BackendUnavailable, match="OPENAI_API_KEY is not set"):
        r.backend.generate_logprobs([r.backend.prepare([{"role": "user", "content": "x"}])], max_new_tokens=1, top_logprobs=1,
                                    return_exceptions=True)
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
