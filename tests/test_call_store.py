"""The LLM call store (``pyterrier_instruct.calls.CallStore``): a pt.Artifact that round-trips a package, exact
responses of every call kind, and the ``store=`` hook of the backends: a second run of an LLM pipeline (listwise on a
function, rank1 on HF, a judge on the loopback OpenAI server, the vLLM stand-in) makes no backend call and returns the
same output; failed calls are not stored; two processes share one store."""
import functools
import http.server
import math
import multiprocessing
import sys
import threading

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._fingerprint import fingerprint
from pyterrier_instruct.backends import Continuation, FunctionBackend, Generation, HFBackend, OpenAIBackend, VLLMBackend
from pyterrier_instruct.calls import Call, CallStore
from pyterrier_instruct.listwise import ListwiseReranker


def test_a_call_store_is_an_artifact_and_its_package_round_trips(tmp_path, monkeypatch):
    store = CallStore(tmp_path / "calls")
    usage = {"prompt_tokens": 7, "completion_tokens": 2, "reasoning_tokens": 0}
    gen = Generation.of('{"score": 2}', ["{", "2"], [{"{": 0.0}, {"2": math.log(0.7), "3": -1 / 3}], "m", usage)
    answers = {"text": "[2] > [1]", "gen": gen, "row": np.array([0.1, -3e-17]),
               "cont": Continuation("a </think>", (5, 6, 7), {6: -0.1, 9: -2.5}, "stop"),
               "dist": {1: -0.6931471805599453, 2: float("-inf")}}
    assert store.put([Call(k, "B", "m", v, 3, 4, None, 0.5) for k, v in answers.items()]) == 5
    assert store.put([Call("text", "B", "m", "another")]) == 0  # the first stands
    loaded = pt.Artifact.load(str(tmp_path / "calls"))
    assert type(loaded) is CallStore and len(loaded) == 5
    got = loaded.get(list(answers))
    assert got["gen"] == answers["gen"] and got["gen"].usage == answers["gen"].usage and got["cont"] == answers["cont"]
    assert got["row"].tobytes() == answers["row"].tobytes() and got["dist"] == answers["dist"]
    assert got["text"] == "[2] > [1]"
    summed = loaded.usage().iloc[0][["calls", "prompt_tokens", "completion_tokens", "seconds"]].tolist()
    assert summed == [5, 15, 20, 2.5]
    monkeypatch.setenv("PYTERRIER_HOME", str(tmp_path / "home"))
    (tmp_path / "pkg").mkdir()
    loaded.build_package(str(tmp_path / "pkg" / "calls.tar.lz4"), verbose=False)
    import lz4.frame
    import tarfile
    with lz4.frame.open(tmp_path / "pkg" / "calls.tar.lz4") as f:
        names = sorted(tarfile.open(fileobj=f, mode="r|").getnames())
    assert names == ["pt_meta.json", "store.sqlite3"]  # checkpointed: no -wal, no -shm
    handler = functools.partial(Quiet, directory=str(tmp_path / "pkg"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        fetched = pt.Artifact.from_url(f"http://127.0.0.1:{server.server_port}/calls.tar.lz4")
    finally:
        server.shutdown()
    assert type(fetched) is CallStore and fetched.get(list(answers))["gen"] == answers["gen"] and len(fetched) == 5


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def grade_ranker(prompts, max_new_tokens):
    """Ranks a listwise window's passages by the number after 'grade' (highest first)."""
    import re
    out = []
    for messages in prompts:
        grades = [int(g) for g in re.findall(r"grade (\d+)", messages[-1]["content"])]
        out.append(" > ".join(f"[{i + 1}]" for i in np.argsort(grades, kind="stable")[::-1]))
    return out


def frame(n_queries=2, n_docs=30):
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"qid": f"q{q}", "query": f"query {q}", "instruction": f"instruction {q}",
                          "docno": f"q{q}d{d}",
                          "text": f"passage {d} grade {rng.integers(100)}", "score": float(-d)}
                         for q in range(n_queries) for d in range(n_docs)])


def test_a_second_listwise_run_makes_no_backend_call(tmp_path):
    first = FunctionBackend(grade_ranker, store=tmp_path / "calls")
    out = ListwiseReranker(first)(frame())
    second = FunctionBackend(grade_ranker, store=tmp_path / "calls")
    again = ListwiseReranker(second)(frame())
    assert (first.calls, second.calls) == (2, 0)  # two window positions for both queries, then nothing
    pd.testing.assert_frame_equal(out, again)
    assert len(first.store) == 4 and first.store.usage()["method"].tolist() == ["generate"]
    # the store is where answers are kept, not what they are: same backend, same fingerprint
    assert first == FunctionBackend(grade_ranker)
    assert fingerprint(HFBackend("m", store=tmp_path / "c")) == fingerprint(HFBackend("m"))
    # another function under another name is another backend: asked anew
    third = FunctionBackend(lambda prompts, n: grade_ranker(prompts, n), name="other", store=tmp_path / "calls")
    ListwiseReranker(third)(frame())
    assert third.calls == 2


def test_settings_are_part_of_the_key_and_duplicates_are_computed_once(tmp_path):
    seen = []
    def echo(prompts, n):
        seen.append(len(prompts))
        return [f"{n}:{p[0]['content']}" for p in prompts]
    backend = FunctionBackend(echo, name="echo", store=tmp_path / "calls")  # named: its closure's log is no part of it
    prompts = [backend.prepare([{"role": "user", "content": c}]) for c in ("a", "b", "a")]
    assert backend.generate(prompts, max_new_tokens=4) == ["4:a", "4:b", "4:a"] and seen == [2]
    assert backend.generate(prompts[:1], max_new_tokens=5) == ["5:a"] and seen == [2, 1]
    assert backend.generate(prompts[::-1], max_new_tokens=4) == ["4:a", "4:b", "4:a"] and seen == [2, 1]


def test_rank1_on_hf_second_run_loads_no_model(tmp_path, mini):
    import tiny_models
    model_path = tiny_models.tiny_rank1(tmp_path / "rank1")
    docs = mini.candidates()(mini.get_topics("og").iloc[:1]).head(3).reset_index(drop=True)
    docs["text"] = docs["text"].str.slice(0, 120)
    first = pti.Rank1(model_path, max_output_tokens=3, backend_options={"store": tmp_path / "calls"}, verbose=False)
    out = first(docs)
    methods = first.backend.store.usage().set_index("method")["calls"].to_dict()
    assert methods["generate_until"] == 3
    second = pti.Rank1(model_path, max_output_tokens=3, backend_options={"store": tmp_path / "calls"}, verbose=False)
    again = second(docs)
    assert second.backend._model is None  # every call answered by the store: the weights were never loaded
    pd.testing.assert_frame_equal(out, again)


def test_the_vllm_stand_in_answer_logits_come_back_as_one_array(tmp_path, monkeypatch, qwen):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    options = {"max_model_len": 256, "logprobs_mode": "processed_logprobs", "store": tmp_path / "calls"}
    backend = VLLMBackend(qwen["qwen2"], **options)
    prompts = [[1, 2, 3], [4, 5], [1, 2, 3]]
    values = backend.answer_logits(prompts, [7, 8])
    assert values.shape == (3, 2) and values.dtype == np.float64 and (values[0] == values[2]).all()
    (llm,) = fake_vllm.instances
    assert [len(c["prompts"]) for c in llm.calls] == [2]
    fresh = VLLMBackend(qwen["qwen2"], **options)
    again = fresh.answer_logits(prompts, [7, 8])
    assert fresh._llm is None and again.tobytes() == values.tobytes()  # no engine was started
    assert fresh.next_token_logprobs(prompts, allowed=[7, 8]) == backend.next_token_logprobs(prompts, allowed=[7, 8])


def test_a_vllm_backend_renders_without_its_engine_the_ids_its_engine_would(tmp_path, monkeypatch, qwen):
    """Until the engine exists, the tokenizer is vLLM's own for the engine's options (here a separate tokenizer
    folder, the only one with a chat template, and tokenizer_mode/trust_remote_code/revision): no engine is built to
    render a prompt or to read the context length, and the engine's tokenizer, once built, is the same object."""
    from pyterrier_instruct.testing.models import QWEN_CHAT_TEMPLATE, with_chat_template
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    options = {"tokenizer": with_chat_template(qwen["qwen2"], tmp_path / "templated", QWEN_CHAT_TEMPLATE),
               "tokenizer_mode": "hf", "trust_remote_code": True, "revision": "main"}
    backend = VLLMBackend(qwen["qwen2"], max_model_len=256, **options)
    messages = [{"role": "system", "content": "Judge relevance."}, {"role": "user", "content": "Is the sky blue?"}]
    before, tok, limit = backend.prepare(messages), backend.tokenizer(), backend.max_prompt_tokens()
    assert fake_vllm.instances == [] and backend._llm is None
    assert limit == 255 and before.text.startswith("<|im_start|>system\nJudge relevance.<|im_end|>")
    engine = backend._engine()
    assert fake_vllm.instances == [engine] and {k: engine.init_args[k] for k in options} == options
    assert engine.get_tokenizer() is tok and backend.tokenizer() is tok
    after = backend.prepare(messages)
    assert (after.text, after.token_ids) == (before.text, before.token_ids) and len(before.token_ids) > 10
    assert backend.max_prompt_tokens() == limit

def judge_server():
    from pyterrier_instruct.testing import ChatServer

    def answer(body):
        content = body["messages"][-1]["content"]
        if "toolong" in content:
            return 400, {"error": {"message": "maximum context length", "type": "invalid_request_error"}}
        tokens = ['{"', "score", '":', " ", "2", "}"]
        entries = [{"token": t, "logprob": 0.0, "top_logprobs": [{"token": t, "logprob": 0.0}]} for t in tokens]
        entries[4]["top_logprobs"] = [{"token": t, "logprob": math.log(p)} for t, p in (("2", 0.6), ("3", 0.4))]
        return 200, {"model": body["model"], "usage": {"prompt_tokens": 40, "completion_tokens": 6,
                                                       "completion_tokens_details": {"reasoning_tokens": 0}},
                     "choices": [{"message": {"content": "".join(tokens)}, "finish_reason": "stop",
                                  "logprobs": {"content": entries}}]}
    return ChatServer(answer)


def test_a_judge_on_the_loopback_server_asks_again_only_what_failed(tmp_path):
    server = judge_server()
    try:
        items = [("fiqa1", "q i", f"d{i}", f"passage {i}") for i in range(4)]
        items.append(("fiqa1", "q i", "d9", "toolong passage"))

        def judge():
            backend = OpenAIBackend("j", base_url=server.url, api_key_env=None, max_retries=0, store=tmp_path / "calls")
            return pti.IFIRJudge(backend, verbose=False)
        first = judge()
        scores = [j.score for j in first.judge(items)]
        assert scores == pytest.approx([2.4] * 4 + [None]) and len(server.requests) == 5
        again = judge()
        assert [j.score for j in again.judge(items)] == scores and len(server.requests) == 6  # the failed one, again
        usage = first.backend.store.usage()
        assert usage[["method", "calls", "prompt_tokens", "completion_tokens", "reasoning_tokens"]].values.tolist() == \
            [["generate_logprobs", 4, 160, 24, 0]]
    finally:
        server.close()


def _fill(path, n, queue):
    calls = []

    def answer(prompts, budget):
        calls.extend(p[0]["content"] for p in prompts)
        return [p[0]["content"].upper() for p in prompts]
    backend = FunctionBackend(answer, name="upper", store=path)
    out = []
    for start in range(0, n, 5):
        prompts = [backend.prepare([{"role": "user", "content": f"prompt {i}"}]) for i in range(start, start + 5)]
        out += backend.generate(prompts, max_new_tokens=4)
    queue.put((out, calls))


def test_two_processes_sharing_a_store(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_fill, args=(str(tmp_path / "calls"), 40, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0]
    expected = [f"PROMPT {i}" for i in range(40)]
    assert all(out == expected for out, _ in got)
    assert all(len(calls) == len(set(calls)) for _, calls in got)  # each call at most once per process
    assert len(CallStore(tmp_path / "calls")) == 40  # every row once


def _killed_midway(path):
    import os
    import signal
    batches = []

    def answer(prompts, budget):
        if len(batches) == 2:  # the third batch: killed while the backend answers
            os.kill(os.getpid(), signal.SIGKILL)
        batches.append(len(prompts))
        return [p[0]["content"].upper() for p in prompts]
    backend = FunctionBackend(answer, name="upper", store=path)
    for start in range(0, 20, 5):
        backend.generate([backend.prepare([{"role": "user", "content": f"p{i}"}]) for i in range(start, start + 5)],
                         max_new_tokens=4)


def test_a_sigkill_loses_only_the_calls_in_flight(tmp_path):
    proc = multiprocessing.get_context("spawn").Process(target=_killed_midway, args=(str(tmp_path / "calls"),))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == -9
    store = CallStore(tmp_path / "calls")
    assert len(store) == 10  # the two finished batches
    asked = []
    backend = FunctionBackend(lambda prompts, n: asked.extend(p[0]["content"] for p in prompts) or
                              [p[0]["content"].upper() for p in prompts], name="upper", store=store)
    out = backend.generate([backend.prepare([{"role": "user", "content": f"p{i}"}]) for i in range(20)],
                           max_new_tokens=4)
    assert out == [f"P{i}" for i in range(20)] and asked == [f"p{i}" for i in range(10, 20)]
