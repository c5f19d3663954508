"""The judge side of the shared backends (``generate_logprobs``, HF ``score_distribution``): an OpenAI-compatible
server on 127.0.0.1 answering chat completions with logprobs, the tiny random Mistral through HF transformers, and the
vLLM stand-in — each driven by the INSTFOL judge."""
import math
import re
import sys

import pandas as pd
import pytest

from pyterrier_instruct._fingerprint import fingerprint
from stubs import ChatServer, openai_api, with_chat_template

from pyterrier_instruct.backends import (BackendUnavailable, FunctionBackend, Generation, HFBackend, OpenAIBackend,
                                         VLLMBackend)
from pyterrier_instruct.evaluation import IFIRJudge, instfol
from pyterrier_instruct.evaluation.judge import SCORE_VALUES, weighted_candidates
from pyterrier_instruct.prompts import render_ifir_judge

#: what the served judge answers per passage: (score token, {candidate: probability})
ANSWERS = {"alpha": ("3", {"3": .8, "2": .2}), "beta": ("1", {"1": .5, "0": .5}),
           "gamma": ("2", {"2": .6, "3": .3, " 2": .1}), "delta": ("0", {"0": 1.0})}


def judge_answer(body):
    """A JSON judge answer with OpenAI-style ``logprobs.content`` from :data:`ANSWERS` (top ``top_logprobs`` only)."""
    content = body["messages"][-1]["content"]
    word = re.search(r"a corpus: (\w+)", content).group(1)
    if word == "toolong":
        return 400, {"error": {"message": "This model's maximum context length is 128000 tokens",
                               "type": "invalid_request_error"}}
    score, table = ANSWERS[word]
    tokens = ['{"', "score", '":', " ", score, ",", ' "', "reason", '":', ' "', "fine", '"}']
    entries = []
    for t in tokens:
        cands = sorted(table.items(), key=lambda kv: -kv[1]) if t == score else [(t, 1.0)]
        tops = [{"token": c, "logprob": math.log(p), "bytes": list(c.encode())}
                for c, p in cands[:body["top_logprobs"]]]
        entries.append({"token": t, "logprob": tops[0]["logprob"], "bytes": list(t.encode()), "top_logprobs": tops})
    return 200, {"id": "x", "object": "chat.completion", "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(tokens)},
                              "finish_reason": "stop", "logprobs": {"content": entries}}]}


@pytest.fixture
def server():
    s = ChatServer(judge_answer)
    yield s
    s.close()


def test_openai_backend_generate_logprobs_request_and_parsing(server, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "sk-judge")
    sleeps = []
    backend = OpenAIBackend("gpt-4o-mini", base_url=server.url, api_key_env="JUDGE_KEY", sleep=sleeps.append,
                            max_retries=2)
    prompt = backend.prepare([{"role": "user", "content": render_ifir_judge("scifact_open3", "q i", "gamma text")}])
    server.script = [(503, {"error": "busy"})]
    (g,) = backend.generate_logprobs([prompt], max_new_tokens=512, top_logprobs=5, temperature=0.0, top_p=0.7)
    assert len(server.requests) == 2 and sleeps == [1.0]  # retried once
    req = server.requests[-1]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-judge"
    assert req["body"] == \
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt.messages[0]["content"]}],
         "temperature": 0.0, "top_p": 0.7, "max_tokens": 512, "logprobs": True, "top_logprobs": 5}
    assert g.text == '{"score": 2, "reason": "fine"}' and g.tokens[4] == "2"
    assert len(g.tokens) == len(g.top_logprobs) == 12
    # JSON floats round-trip
    assert g.top_logprobs[4] == (("2", math.log(.6)), ("3", math.log(.3)), (" 2", math.log(.1)))
    # a refused request (HTTP 400) is not retried; with return_exceptions it stands in place of its Generation
    bad = backend.prepare([{"role": "user", "content": "and a corpus: toolong text"}])
    out = backend.generate_logprobs([bad, prompt], max_new_tokens=8, top_logprobs=2, return_exceptions=True)
    assert isinstance(out[0], RuntimeError) and "HTTP 400" in str(out[0]) and isinstance(out[1], Generation)
    assert len(server.requests) == 4 and server.requests[-1]["body"]["top_logprobs"] == 2
    with pytest.raises(RuntimeError, match="HTTP 400"):
        backend.generate_logprobs([bad], max_new_tokens=8, top_logprobs=2)
    server.script = [(200, {"choices": [{"message": {"content": "{}"}, "logprobs": None}]})]
    with pytest.raises(RuntimeError, match="does the server support logprobs"):
        backend.generate_logprobs([prompt], max_new_tokens=8, top_logprobs=2)
    with pytest.raises(ValueError, match="top_p must be in"):
        backend.generate_logprobs([prompt], max_new_tokens=8, top_logprobs=2, top_p=0)
    assert "sk-judge" not in repr(backend)


def test_instfol_against_the_http_judge_with_cache(server, tmp_path):
    topics = pd.DataFrame({"qid": ["s1_0", "s1_1", "s1_2", "s2_0", "s2_3"],
                           "query": ["claim one"] * 3 + ["claim two"] * 2,
                           "instruction": ["", "find support", "find the refuting trial", "", "only meta-analyses"]})
    ranked = {"s1_0": ["beta", "delta"], "s1_1": ["alpha", "beta"], "s1_2": ["gamma", "toolong"], "s2_0": ["delta"],
              "s2_3": ["alpha"]}
    run = pd.DataFrame([(q, d, 1.0 - j) for q, docs in ranked.items() for j, d in enumerate(docs)],
                       columns=["qid", "docno", "score"])
    is0 = run["qid"].str.endswith("_0")
    docs = {d: f"{d} text" for d in ("alpha", "beta", "gamma", "delta", "toolong")}
    opts = {"base_url": server.url, "api_key_env": None, "concurrency": 4}
    judge = IFIRJudge("openai", model="gpt-4o-mini", backend_options=opts, store=tmp_path / "calls")
    res = instfol(run[is0], run[~is0], topics, docs, judge, dataset="scifact_open")
    # weighted scores: alpha 2.8, beta 0.5, gamma 2/3·... (" 2" rejected: (2·.6 + 3·.3)/.9), delta 0
    gamma = (2 * .6 + 3 * .3) / .9
    s1_1 = ((2.8 + 0.5) / 2 - 0.25) / (3 - 0.25)
    s1_2 = (gamma - 0.5) / (3 - 0.5)  # toolong (HTTP 400) at rank 2 is dropped from both lists: delta goes too
    s2_3 = (2.8 - 0.0) / 3
    assert res.per_query.set_index("qid")["instfol"].to_dict() == \
        pytest.approx({"s1_1": s1_1, "s1_2": s1_2, "s2_3": s2_3})
    assert res.per_dataset["scifact_open"] == pytest.approx(100 * (s1_1 + s1_2 + s2_3) / 3)
    assert (res.judge["failed"], res.per_query.set_index("qid").loc["s1_2", "dropped"]) == (1, 1)
    sent = [r["body"] for r in server.requests]
    assert len(sent) == 9 and all(b["messages"][0]["role"] == "user" and len(b["messages"]) == 1 for b in sent)
    # the IFIR code's 10
    assert {(b["top_logprobs"], b["top_p"], b["temperature"], b["max_tokens"]) for b in sent} == {(10, 0.7, 0.0, 512)}
    assert all(r["auth"] is None for r in server.requests)
    # the no-instruction run's passage, judged against the level-2 instruction string
    needle = "Given an instruction: claim one find the refuting trial,\nand a corpus: beta text,"
    assert sum(needle in b["messages"][0]["content"] for b in sent) == 1
    # the same evaluation again: only the failed pair is asked again (and fails again)
    again = instfol(run[is0], run[~is0], topics, docs, IFIRJudge("openai", model="gpt-4o-mini", backend_options=opts,
                                                                 store=tmp_path / "calls"), dataset="scifact_open")
    assert len(server.requests) == 10 and again.judge["hits"] == 9 and again.per_query.equals(res.per_query)


def test_a_judge_on_a_reasoning_model_refuses_before_any_request_or_turns_reasoning_off():
    server = ChatServer(openai_api(judge_answer))
    try:
        opts = {"base_url": server.url, "api_key_env": None}
        with pytest.raises(ValueError, match=r"IFIRJudge\(mode='answer'\) reads the score token's top logprobs, which "
                                             r"OpenAIBackend\('gpt-5'.*cannot give: 'gpt-5' is a reasoning model \(by "
                                             r"its name, is_reasoning_model\): OpenAI's API refuses "
                                             r"logprobs.*reasoning_effort='none'"):
            IFIRJudge("openai", model="gpt-5", backend_options=opts)
        backend = OpenAIBackend("o3-mini", **opts)
        with pytest.raises(BackendUnavailable, match="'o3-mini' is a reasoning model.*nothing was sent to"):
            backend.generate_logprobs([backend.prepare([{"role": "user", "content": "x"}])], max_new_tokens=8,
                                      top_logprobs=2, return_exceptions=True)
        assert server.requests == []
        # gpt-5.1 with reasoning off takes temperature, top_p and logprobs: the IFIR settings, max_completion_tokens
        judge = IFIRJudge("openai", model="gpt-5.1", backend_options={**opts, "reasoning_effort": "none"},
                          verbose=False)
        (j,) = judge.judge([("scifact_open1", "find support", "d1", "alpha text")])
        body = server.requests[-1]["body"]
        assert j.score == pytest.approx(2.8) and "max_tokens" not in body
        assert (body["max_completion_tokens"], body["temperature"], body["top_p"], body["top_logprobs"],
                body["reasoning_effort"]) == \
            (512, 0.0, 0.7, 10, "none")
        assert "reasoning_effort='none'" in judge.judge_id
        # a chat-model judge's cache key is what it was before reasoning models were known
        assert IFIRJudge("openai", model="gpt-4o-mini", backend_options=opts).judge_id.startswith(
            f"gpt-4o-mini|pyterrier_instruct.backends.openai.OpenAIBackend(model='gpt-4o-mini', "
            f"base_url='{server.url}', " "extra_body={})|answer|")
    finally:
        server.close()


# -- HF transformers ---------------------------------------------------------------------------------------------------
TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


@pytest.fixture(scope="module")
def judge_model(tiny, tmp_path_factory):
    """The tiny random Mistral with a chat template."""
    return with_chat_template(tiny["mistral"], tmp_path_factory.mktemp("judge") / "mistral", TEMPLATE)


def _prompts(backend):
    texts = [render_ifir_judge("fiqa3", "query about dams", "dam river fish study"), "short",
             render_ifir_judge("cds", "q", "a much longer passage " * 5)]
    return [backend.prepare([{"role": "user", "content": t}]) for t in texts]


def test_hf_generate_logprobs_on_a_tiny_model(judge_model):
    import torch
    backend = HFBackend(judge_model, batch_size=3)
    prompts = _prompts(backend)
    gens = backend.generate_logprobs(prompts, max_new_tokens=6, top_logprobs=4)
    assert backend.generate(prompts, max_new_tokens=6) == [g.text for g in gens]  # the same greedy answers
    for g in gens:
        assert 0 < len(g.tokens) <= 6 and all(len(t) == 4 for t in g.top_logprobs)
        for token, top in zip(g.tokens, g.top_logprobs):
            lps = [lp for _, lp in top]
            assert lps == sorted(lps, reverse=True) and max(lps) <= 0 and sum(math.exp(x) for x in lps) <= 1 + 1e-6
            assert top[0][0] == token  # greedy: the emitted token is the most likely candidate
        assert "".join(g.tokens).strip() == g.text.strip()
    # the first position's candidates are the log-softmax of one forward pass over the prompt
    model, tok = backend._load()
    with torch.inference_mode():
        logits = model(torch.tensor([prompts[0].token_ids])).logits[0, -1].float()
    top = torch.log_softmax(logits, -1).topk(4)
    assert [lp for _, lp in gens[0].top_logprobs[0]] == pytest.approx(top.values.tolist(), abs=1e-4)
    # batches of one give the same tokens (left padding is masked)
    single = HFBackend(judge_model, batch_size=1).generate_logprobs(prompts, max_new_tokens=6, top_logprobs=4)
    assert [g.tokens for g in single] == [g.tokens for g in gens]
    assert [lp for _, lp in single[2].top_logprobs[-1]] == \
        pytest.approx([lp for _, lp in gens[2].top_logprobs[-1]], abs=1e-4)


def test_hf_score_distribution_and_the_direct_judge(judge_model):
    import torch
    backend = HFBackend(judge_model, batch_size=2)
    prompts = _prompts(backend)
    digits = tuple(str(v) for v in SCORE_VALUES)
    dists = backend.score_distribution(prompts, digits, prefix='{\n    "score": ')
    model, tok = backend._load()
    for prompt, dist in zip(prompts, dists):
        assert list(dist) == list(digits) and all(0 < p < 1 for p in dist.values())
        normalised = {d: p / sum(dist.values()) for d, p in dist.items()}
        assert sum(normalised.values()) == pytest.approx(1.0, abs=1e-12)
        # = the full-vocabulary softmax after prompt + prefix, at each digit's token
        ids = tok(prompt.text + '{\n    "score": ')["input_ids"]  # BOS + the rendered prompt + the prefix
        with torch.inference_mode():
            probs = torch.softmax(model(torch.tensor([ids])).logits[0, -1].float(), -1)
        assert [dist[d] for d in digits] == \
            pytest.approx([probs[tok.convert_tokens_to_ids(d)].item() for d in digits], rel=1e-4)
    with pytest.raises(ValueError, match=r"score candidate\(s\) \['10'\] are not one token"):
        backend.score_distribution(prompts[:1], ("1", "10"), prefix='{\n    "score": ')
    # the direct judge: Σ v·P(v)/Σ P(v) over the digits (a random model puts < 1 % on each, so lower the cut)
    judge = IFIRJudge(backend, mode="direct", min_prob=1e-6)
    (j,) = judge.judge([("fiqa3", "query about dams", "d1", "dam river fish study")])
    expected = sum(v * dists[0][str(v)] for v in SCORE_VALUES) / sum(dists[0].values())
    assert j.status == "ok" and j.score == pytest.approx(expected, rel=1e-4) and 0 < j.score < 5
    assert judge.judge_id == f'{judge_model}|{fingerprint(backend)}|direct|prefix="{{\\n    \\"score\\": "'
    assert IFIRJudge(backend, mode="direct").judge([("fiqa3", "query about dams", "d1",
                                                     "dam river fish study")])[0].status == "no_candidates"


def test_hf_answer_mode_judge_runs_and_caches(judge_model):
    backend = HFBackend(judge_model, batch_size=4)
    judge = IFIRJudge(backend, max_new_tokens=8, top_logprobs=10)
    items = [("pm2", "a patient with cancer", f"d{i}", text)
             for i, text in enumerate(["gene therapy trial", "fish study", "gene therapy trial"])]
    first = judge.judge(items)
    assert all(j.status in ("unparsed", "no_score_token", "no_candidates", "ok") for j in first)
    assert judge.last["judged"] == 3
    again = judge.judge(items)
    assert judge.last == {**judge.last, "hits": 3, "judged": 0, "backend_calls": 0}
    assert [j.score for j in again] == [j.score for j in first]


# -- vLLM (the stand-in of tests/fake_vllm.py) -------------------------------------------------------------------------
def test_vllm_judge_sampling_params_and_weighted_score(judge_model, monkeypatch):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    backend = VLLMBackend(judge_model, max_model_len=4096)
    judge = IFIRJudge(backend, top_logprobs=5)
    items = [("fiqa3", "query about dams", "d1", "dam river fish study"),
             ("fiqa1", "query about dams", "d1", "dam river fish study")]
    j3, j1 = judge.judge(items)
    (llm,) = fake_vllm.instances
    (call,) = llm.calls
    params = call["params"]
    assert (params.n, params.temperature, params.max_tokens, params.min_tokens, params.seed, params.stop) == \
        (1, 0.0, 512, 0, None, [])
    assert (params.logprobs, params.top_p) == (5, 1.0)  # asked top_p=0.7; greedy: vLLM's SamplingParams resets top_p
    assert call["prompts"][0]["prompt_token_ids"] == \
        backend.prepare(judge.messages(*items[0][:2], items[0][3])).token_ids
    # the stand-in answers {"score": 2} (scale 3) / {"score": 1} (scale 1); the digits after the emitted one follow
    assert (j3.parsed, j1.parsed) == ("2", "1")
    assert j3.score == pytest.approx((2 * .6 + 3 * .2 + 4 * .1 + 5 * .05) / .95)  # 6 (3 %) is out of range
    assert j1.score == pytest.approx((1 * .6 + 2 * .2 + 3 * .1 + 4 * .05 + 5 * .03) / .98)
    assert [t for t, _ in j3.candidates] == ["2", "3", "4", "5", "6"] and len(j3.candidates) == 5
    gens = backend.generate_logprobs([backend.prepare(judge.messages(*items[0][:2], items[0][3]))], max_new_tokens=3,
                                     top_logprobs=2, temperature=0.5, top_p=0.9)
    assert len(gens[0].tokens) == 3 and all(len(t) == 2 for t in gens[0].top_logprobs)
    assert (llm.calls[-1]["params"].top_p, llm.calls[-1]["params"].max_tokens) == (0.9, 3)


# -- the callable backend and the Generation type ----------------------------------------------------------------------
def test_function_backend_logprobs_contract():
    def lp(message_lists, **kwargs):
        return [("ab", ["a", "b"], [{"a": 0.0}, [("b", -0.1), ("c", -2.0)]])] * len(message_lists)

    backend = FunctionBackend(logprobs=lp)
    prompt = backend.prepare([{"role": "user", "content": "x"}])
    (g,) = backend.generate_logprobs([prompt], max_new_tokens=2, top_logprobs=2)
    assert g == Generation("ab", ("a", "b"), ((("a", 0.0),), (("b", -0.1), ("c", -2.0)))) and backend.calls == 1
    with pytest.raises(ValueError, match="built with logprobs= only"):
        backend.generate([prompt], max_new_tokens=2)
    with pytest.raises(TypeError, match="needs a callable fn"):
        FunctionBackend()
    with pytest.raises(ValueError, match="returned 2 entries for 1 prompts"):
        two = FunctionBackend(logprobs=lambda m, **k: [None, None])
        two.generate_logprobs([prompt], max_new_tokens=1, top_logprobs=1)
    with pytest.raises(ValueError, match="must return a Generation"):
        FunctionBackend(logprobs=lambda m, **k: ["text"]).generate_logprobs([prompt], max_new_tokens=1, top_logprobs=1)
    # with return_exceptions an unusable entry (not a Generation, a null logprob) costs its prompt only
    mixed = FunctionBackend(logprobs=lambda m, **k: ["text", ("a", ["a"], [{"a": None}]), ("a", ["a"], [{"a": -0.5}])])
    bad, null, good = mixed.generate_logprobs([prompt] * 3, max_new_tokens=1, top_logprobs=1, return_exceptions=True)
    assert isinstance(bad, ValueError) and "must return a Generation" in str(bad)
    assert good == Generation("a", ("a",), ((("a", -0.5),),))
    assert isinstance(null, ValueError) and "unusable (text, tokens, top_logprobs) triple" in str(null)
    failing = FunctionBackend(logprobs=lambda m, **k: [TimeoutError("slow")])
    with pytest.raises(TimeoutError, match="slow"):
        failing.generate_logprobs([prompt], max_new_tokens=1, top_logprobs=1)
    assert isinstance(failing.generate_logprobs([prompt], max_new_tokens=1, top_logprobs=1, return_exceptions=True)[0],
                      TimeoutError)
    with pytest.raises(ValueError, match="2 tokens but 1 top-logprob positions"):
        Generation("ab", ("a", "b"), ((("a", 0.0),),))
    for kwargs, msg in (({"max_new_tokens": 0}, "max_new_tokens"), ({"top_logprobs": 0}, "top_logprobs"),
                        ({"temperature": -1}, "temperature")):
        with pytest.raises(ValueError, match=msg):
            backend.generate_logprobs([prompt], **{"max_new_tokens": 1, "top_logprobs": 1, **kwargs})
    assert weighted_candidates([("0", 0.0)]) == 0.0
