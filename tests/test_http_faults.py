"""Fault injection for the OpenAI-compatible backend and the INSTFOL judge over it: a threaded HTTP server on 127.0.0.1
answers each request as the test scripts it (rate limits, server errors, redirects, truncated, dripping, malformed,
oversized answers). Time is bounded by attempt counts and the sleeps the backend asks for (an injected recorder), or
by wall time far below what the fault would take; memory by the size cap; the API key appears in no exception, log
record or warning."""
import email.utils
import json
import logging
import math
import multiprocessing
import pickle
import re
import threading
import time
import tracemalloc
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from pyterrier_instruct.backends import BackendUnavailable, OpenAIBackend, RequestError
from pyterrier_instruct.calls import CallStore
from pyterrier_instruct.evaluation import IFIRJudge, instfol
from pyterrier_instruct.evaluation.judge import JudgeItem

SECRET = "sk-test-5ecret-0123456789abcdef"
KEY_ENV = "PTI_FAULT_TEST_KEY"


class FaultServer:
    """Answers every POST with ``behave(handler, body, n)`` (``n``: the request's number, from 1); records each
    request's path and Authorization header in ``requests``; ``sent`` counts the body bytes :func:`stream` wrote."""

    def __init__(self, behave):
        self.requests, self.behave, self.lock, self.sent = [], behave, threading.Lock(), 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "auth": self.headers.get("Authorization")})
                    n = len(server.requests)
                try:
                    server.behave(self, body, n)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what these tests provoke

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.url = self.origin + "/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(behave):
        servers.append(FaultServer(behave))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


def send(h, status, payload=b"", headers=(), length=None):
    """An answer: ``payload`` (bytes, or JSON), ``Content-Length`` = ``length`` or the payload's, then the payload."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    h.send_response(status)
    for name, value in dict(headers).items():
        h.send_header(name, value)
    h.send_header("Content-Length", str(len(data) if length is None else length))
    h.end_headers()
    h.wfile.write(data)
    h.wfile.flush()


def chat(content="[1]"):
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


def judged(score="2", probs=None, logprob="keep"):
    """A judge answer ``{"score": <score>}`` whose score token carries ``probs`` as top logprobs; ``logprob``
    (unless ``"keep"``) replaces the score candidate's log-probability (``None``: a JSON null)."""
    probs = probs or {score: 0.75, str((int(score) + 1) % 6): 0.25}
    tokens = ['{"', "score", '":', " ", score, "}"]
    entries = []
    for t in tokens:
        tops = [{"token": c, "logprob": math.log(p)} for c, p in probs.items()] if t == score \
            else [{"token": t, "logprob": 0.0}]
        if t == score and logprob != "keep":
            tops[0]["logprob"] = logprob
        entries.append({"token": t, "logprob": 0.0, "top_logprobs": tops})
    answer = chat("".join(tokens))
    answer["choices"][0]["logprobs"] = {"content": entries}
    return answer


def backend(server, monkeypatch, sleeps, **kwargs):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return OpenAIBackend("m", base_url=server.url, api_key_env=KEY_ENV, sleep=sleeps.append, **kwargs)


def ask(b, n=1):
    return b.generate([b.prepare([{"role": "user", "content": "[1] a passage"}])] * n, max_new_tokens=3)


def texts(exc):
    """The text of an exception and of every exception in its chain."""
    out = []
    while exc is not None:
        out += [str(exc), repr(exc)]
        exc = exc.__cause__ or exc.__context__
    return out


# -- retries -----------------------------------------------------------------------------------------------------------
def test_429_honours_retry_after_within_max_wait_and_fails_at_once_beyond(serve, monkeypatch):
    in_a_day = email.utils.formatdate(time.time() + 86400, usegmt=True)
    script = {1: ("0.25",), 2: ("soon",), 4: ("86400",), 5: (in_a_day,)}

    def behave(h, body, n):
        if n in script:
            send(h, 429, {"error": "rate limited"}, {"Retry-After": script[n][0]})
        else:
            send(h, 200, chat("[2] > [1]"))

    server, sleeps = serve(behave), []
    b = backend(server, monkeypatch, sleeps, backoff=0.5)
    assert ask(b) == ["[2] > [1]"]
    # Retry-After is honoured; an unreadable header falls back to the backoff (0.5 · 2¹)
    assert sleeps == [0.25, 1.0] and len(server.requests) == b.requests == 3
    assert all(r["auth"] == f"Bearer {SECRET}" for r in server.requests)
    # a server that will not be ready within max_wait (a day, in seconds or as an HTTP date) fails that request at once
    for _ in range(2):
        sleeps.clear()
        with pytest.raises(RequestError, match=r"HTTP 429.*asks to retry after 86(399|400) s, more than max_wait=60 s: "
                                               r"not retried") as err:
            ask(b)
        assert sleeps == [] and err.value.attempts == 1
    assert len(server.requests) == 5
    sleeps.clear()
    assert ask(backend(server, monkeypatch, sleeps, max_wait=5.0)) == ["[2] > [1]"] and sleeps == []


def test_a_request_spends_at_most_max_retry_time_waiting(serve, monkeypatch):
    server, sleeps = serve(lambda h, body, n: send(h, 503, {"error": "busy"}, {"Retry-After": "50"})), []
    b = backend(server, monkeypatch, sleeps, max_retries=5, max_wait=60.0, max_retry_time=120.0)
    with pytest.raises(RequestError, match=r"HTTP 503.*another wait of 50 s would take this request's retries past "
                                           r"max_retry_time=120 s \(waited 100 s\)") as err:
        ask(b)
    assert sleeps == [50.0, 50.0] and err.value.attempts == 3 and len(server.requests) == 3  # not 5 × 50 s


def test_server_errors_retry_with_capped_backoff_others_do_not(serve, monkeypatch):
    status = {"code": 500}
    server, sleeps = serve(lambda h, body, n: send(h, status["code"], {"error": f"failure {n}"})), []
    b = backend(server, monkeypatch, sleeps, max_retries=4, backoff=1.0, max_wait=3.0, concurrency=1)
    with pytest.raises(RequestError,
                       match=r"answered HTTP 500: \{\"error\": \"failure 5\"\} \(after 5 attempts\)") as err:
        ask(b)
    assert sleeps == [1.0, 2.0, 3.0, 3.0] and (err.value.status, err.value.attempts) == (500, 5)
    assert len(server.requests) == 5
    for code in (502, 503, 504, 408, 409):
        status["code"], sleeps[:] = code, []
        with pytest.raises(RequestError, match=f"HTTP {code}"):
            ask(b)
        assert len(sleeps) == 4
    for code in (400, 413, 422):  # the request itself is wrong: another attempt gives the same answer
        status["code"], sleeps[:], before = code, [], len(server.requests)
        with pytest.raises(RequestError, match=f"HTTP {code}") as err:
            ask(b)
        assert sleeps == [] and err.value.attempts == 1 and len(server.requests) == before + 1
    for code in (401, 403, 404):  # no request can succeed: the batch stops, even a judge's
        status["code"], before = code, len(server.requests)
        with pytest.raises(BackendUnavailable, match=f"HTTP {code}"):
            b.generate_logprobs([b.prepare([{"role": "user", "content": "x"}])] * 3, max_new_tokens=3, top_logprobs=2,
                                return_exceptions=True)
        assert len(server.requests) == before + 1  # concurrency 1: the other prompts are never sent


# -- redirects ---------------------------------------------------------------------------------------------------------
def test_redirects_to_another_origin_never_carry_the_key(serve, monkeypatch):
    other = serve(lambda h, body, n: send(h, 200, chat("[1]")))  # another port: another origin
    location = {"Location": other.url + "/chat/completions"}
    for code in (301, 302, 303, 307, 308):
        server, sleeps = serve(lambda h, body, n, code=code: send(h, code, b"", location)), []
        with pytest.raises(BackendUnavailable,
                           match=rf"redirects \(HTTP {code}\) to another origin, {other.origin}; not followed, "
                                 r"so the API key is not sent there") as err:
            ask(backend(server, monkeypatch, sleeps))
        assert SECRET not in " ".join(texts(err.value)) and len(server.requests) == 1 and sleeps == []
    assert other.requests == []

    def same_origin(h, body, n):
        if h.path.startswith("/v1/"):
            send(h, 307, b"", {"Location": "/v2/chat/completions"})
        elif h.path.startswith("/v2/"):
            send(h, 200, chat("[1]"))
    server = serve(same_origin)
    assert ask(backend(server, monkeypatch, [])) == ["[1]"]  # a 307 within the origin is followed, body and key kept
    assert [(r["path"], r["auth"]) for r in server.requests] == [("/v1/chat/completions", f"Bearer {SECRET}"),
                                                                 ("/v2/chat/completions", f"Bearer {SECRET}")]
    moved = serve(lambda h, body, n: send(h, 302, b"", {"Location": "/v2/chat/completions"}))
    with pytest.raises(BackendUnavailable,
                       match=r"redirects \(HTTP 302\) to /v2/chat/completions, which would turn the POST into a GET"):
        ask(backend(moved, monkeypatch, []))
    assert len(moved.requests) == 1


# -- broken answers ----------------------------------------------------------------------------------------------------
def test_a_truncated_body_is_retried(serve, monkeypatch):
    whole = json.dumps(chat("[1]")).encode()

    def truncated(h, body, n):  # Content-Length promises more than comes before the connection closes
        send(h, 200, whole[:10], length=len(whole))

    def chunked(h, body, n):  # a chunked body that stops inside a chunk
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.write(b"%x\r\n%s" % (len(whole), whole[:10]))
        h.wfile.flush()

    behaviours = (truncated, chunked, lambda h, body, n: send(h, 200, whole))
    server, sleeps = serve(lambda h, body, n: behaviours[min(n, 3) - 1](h, body, n)), []
    assert ask(backend(server, monkeypatch, sleeps, backoff=0.5)) == ["[1]"] and sleeps == [0.5, 1.0]
    assert len(server.requests) == 3
    for behave, match in ((truncated, rf"closed the connection after 10 of {len(whole)} bytes \(a truncated answer\)"),
                          (chunked, r"the connection broke \(IncompleteRead")):
        server, sleeps = serve(behave), []
        with pytest.raises(RequestError, match=match + r".* \(after 3 attempts\)"):
            ask(backend(server, monkeypatch, sleeps, max_retries=2))
        assert sleeps == [1.0, 2.0] and len(server.requests) == 3


@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_dripping_server_is_stopped_at_the_deadline(serve, monkeypatch, where):
    whole = json.dumps(chat("[1]")).encode()
    interval = 0.5
    head = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(whole)

    def behave(h, body, n):
        if where == "body":
            h.wfile.write(head)
            h.wfile.flush()
        for byte in (whole if where == "body" else head + whole):
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
            time.sleep(interval)

    drip = interval * len(whole)  # what reading it whole would take, ~30 s
    server, sleeps = serve(behave), []
    b = backend(server, monkeypatch, sleeps, timeout=1.0)  # each byte comes well within the 1 s per-read limit
    start = time.monotonic()
    with pytest.raises(RequestError, match=r"did not finish answering within timeout=1 s") as err:
        ask(b)
    elapsed = time.monotonic() - start
    assert err.value.attempts == 1 and sleeps == [] and len(server.requests) == 1  # a deadline is not retried
    assert elapsed < drip / 4


def test_an_oversized_answer_is_refused_not_read(serve, monkeypatch):
    big = 300 * 2 ** 20
    cap = 2 ** 20

    def announced(h, body, n):  # Content-Length says 300 MB
        send(h, 200, b"{" + b" " * 1000, length=big)

    def streamed(h, body, n):  # no Content-Length: the body runs until the connection closes
        h.send_response(200)
        h.end_headers()
        block = b" " * 2 ** 16
        for _ in range(big // len(block)):
            h.wfile.write(block)
            with server.lock:
                server.sent += len(block)

    assert OpenAIBackend("m").max_response_bytes == 16 * 2 ** 20
    server = serve(announced)
    with pytest.raises(RequestError,
                       match=rf"answered with {big} bytes, more than max_response_bytes={cap}; not read") as err:
        ask(backend(server, monkeypatch, [], max_response_bytes=cap))
    assert err.value.attempts == 1
    server = serve(streamed)
    tracemalloc.start()
    try:
        with pytest.raises(RequestError,
                           match=rf"answered with more than max_response_bytes={cap} bytes; stopped reading"):
            ask(backend(server, monkeypatch, [], max_response_bytes=cap))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * cap and len(server.requests) == 1  # the client held about the cap, never the 300 MB


def test_malformed_answers_are_request_errors(serve, monkeypatch):
    bodies = {1: b"{not json", 2: b"[1, 2]", 3: json.dumps({"choices": []}).encode(),
              4: json.dumps({"choices": [{"message": {"content": 7}}]}).encode()}
    server = serve(lambda h, body, n: send(h, 200, bodies[n]))
    b = backend(server, monkeypatch, [], concurrency=1)
    for match in ("answered with invalid JSON: {not json", r"answered with JSON that is not an object: \[1, 2\]",
                  r"returned no choices\[0\].message.content", r"returned no choices\[0\].message.content"):
        with pytest.raises(RequestError, match=match) as err:
            ask(b)
        assert err.value.attempts == 1 and err.value.status == 200
    assert len(server.requests) == 4


# -- the key -----------------------------------------------------------------------------------------------------------
def test_the_key_is_in_no_exception_log_or_warning(serve, monkeypatch, caplog):
    """Servers that echo the key (or the whole Authorization header) in every kind of answer."""
    echo = {1: (500, f"upstream rejected Bearer {SECRET}"), 2: (400, json.dumps({"error": f"bad key {SECRET}"})),
            3: (200, f"not json {SECRET}"), 4: (200, json.dumps({"echo": SECRET})), 5: (401, f"invalid key {SECRET}"),
            6: (200, json.dumps({**judged(), "echo": SECRET,
                                 "choices": [{"message": {"content": "{}"}, "logprobs": None}]}))}
    state = {"case": 1}
    server = serve(lambda h, body, n: send(h, echo[state["case"]][0], echo[state["case"]][1].encode()))
    leaked = []
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for case in echo:
            state["case"] = case
            b = backend(server, monkeypatch, [], max_retries=1)
            with pytest.raises((RequestError, BackendUnavailable)) as err:
                b.generate_logprobs([b.prepare([{"role": "user", "content": "x"}])], max_new_tokens=3, top_logprobs=2)
            leaked += [t for t in texts(err.value) if SECRET in t]
            assert "***" in str(err.value) or case in (4, 6)  # the echoed key is shown redacted
        # the judge reports the same failures in its warning
        state["case"] = 2
        judge = IFIRJudge(backend(server, monkeypatch, []), judge_model="j")
        with pytest.raises(RuntimeError, match="all 1 judge request") as err:
            judge.judge([("fiqa1", "q i", "d1", "text")])
        leaked += [t for t in texts(err.value) if SECRET in t]
    leaked += [r.getMessage() for r in caplog.records if SECRET in r.getMessage()]
    leaked += [str(w.message) for w in caught if SECRET in str(w.message)]
    assert caplog.records and not leaked
    assert all(r["auth"] == f"Bearer {SECRET}" for r in server.requests)  # it was sent, to the configured server only


# -- the judge: one bad answer costs one item --------------------------------------------------------------------------
#: what the judge server answers per passage (its text starts with <<word>>)
JUDGE_ANSWERS = {
    "good": lambda: (200, judged("2")),
    "fine": lambda: (200, judged("3", {"3": 1.0})),
    "badjson": lambda: (200, b'{"choices": [{"message": '),
    "nulllogprob": lambda: (200, judged("2", logprob=None)),
    "nologprobs": lambda: (200, chat('{"score": 2}')),
    "nulltop": lambda: (200, {"choices": [{"message": {"content": "{}"},
                                           "logprobs": {"content": [{"token": "{}", "top_logprobs": None}]}}]}),
    "error": lambda: (500, {"error": "overloaded"}),
}


def judge_server(serve, delay=0.0):
    def behave(h, body, n):
        word = re.search(r"<<([\w-]+)>>", body["messages"][-1]["content"]).group(1)
        time.sleep(delay)
        status, payload = JUDGE_ANSWERS[word.split("-")[0]]()
        send(h, status, payload)
    return serve(behave)


def test_bad_judge_answers_cost_their_item_only(serve, tmp_path, caplog):
    server = judge_server(serve)
    topics = pd.DataFrame({"qid": ["q_0", "q_1"], "query": "a claim", "instruction": ["", "only trials"]})
    ranked = {"q_0": ["good", "badjson", "fine", "nulllogprob"], "q_1": ["fine", "nologprobs", "good", "nulltop"]}
    run = pd.DataFrame([(q, d, 10.0 - j) for q, docs in ranked.items() for j, d in enumerate(docs)],
                       columns=["qid", "docno", "score"])
    docs = {d: f"<<{d}>> text" for d in ("good", "fine", "badjson", "nulllogprob", "nologprobs", "nulltop")}
    store = tmp_path / "calls"
    judge = IFIRJudge(OpenAIBackend("j", base_url=server.url, api_key_env=None, max_retries=0), store=store,
                      batch_size=3)
    with caplog.at_level(logging.WARNING, logger="pyterrier_instruct"):
        res = instfol(run[run.qid == "q_0"], run[run.qid == "q_1"], topics, docs, judge, dataset="fiqa")
    # positions 2 and 4 failed (in either list): both dropped from both lists; good = 2.25, fine = 3
    row = res.per_query.iloc[0]
    assert (row["n_q"], row["n_inst"], row["dropped"]) == (2, 2, 2)
    assert row["s_q"] == pytest.approx((2.25 + 3) / 2) and row["s_inst"] == pytest.approx((3 + 2.25) / 2)
    assert row["instfol"] == 0.0
    assert (res.judge["failed"], res.judge["judged"], judge.stats["failed"]) == (4, 6, 4)
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                  and r.name.startswith("pyterrier_instruct")]
    assert warning.startswith("INSTFOL judge j: 4 of 6 judge request(s) failed, first: RequestError: ")
    assert "dropped from both lists" in warning
    stored = CallStore(store).connection().execute("SELECT response FROM calls").fetchall()
    assert sorted(pickle.loads(r)["docno"] for r, in stored) == ["fine", "good"]  # failures not stored
    again = IFIRJudge(OpenAIBackend("j", base_url=server.url, api_key_env=None, max_retries=0), store=store)
    instfol(run[run.qid == "q_0"], run[run.qid == "q_1"], topics, docs, again, dataset="fiqa")
    assert (again.last["hits"], again.last["judged"], again.last["failed"]) == (4, 4, 4)  # only failures asked again


def test_a_judge_whose_every_request_fails_raises_with_the_count(serve, monkeypatch):
    server = judge_server(serve)
    items = [("fiqa1", "q i", f"d{i}", f"<<error-{i}>> text") for i in range(6)]
    sleeps = []
    judge = IFIRJudge(OpenAIBackend("j", base_url=server.url, api_key_env=None, max_retries=2, sleep=sleeps.append),
                      batch_size=2)
    with pytest.raises(RuntimeError,
                       match=r"INSTFOL judge j: all 2 judge request\(s\) failed \(4 not sent\); first error: "
                             r"RequestError: .*HTTP 500.*after 3 attempts"):
        judge.judge(items)
    # the first batch only
    assert len(server.requests) == 6 and sorted(sleeps) == [1.0, 1.0, 2.0, 2.0] and judge.stats["failed"] == 2
    # with something judged (or cached), failures are counted and the judgement goes on
    mixed = IFIRJudge(OpenAIBackend("j", base_url=server.url, api_key_env=None, max_retries=0), batch_size=2)
    out = mixed.judge([("fiqa1", "q i", "g", "<<good>> text")] + items)
    assert [j.status for j in out] == ["ok"] + ["failed"] * 6 and mixed.last["failed"] == 6
    # a judge server that is down: one clear error after the short connection retries, not a run of NaNs
    server.close()
    down = IFIRJudge(OpenAIBackend("j", base_url=server.url, api_key_env=None, sleep=sleeps.append, concurrency=1),
                     batch_size=2)
    sleeps.clear()
    with pytest.raises(BackendUnavailable, match=rf"cannot connect to {server.url} .*after 4 attempt"):
        down.judge(items)
    assert sleeps == [0.5, 1.0, 2.0] and down.backend.requests == 4


# -- the judge store shared by processes -------------------------------------------------------------------------------
def test_the_cache_key_covers_the_judge_configuration():
    def judge(**kwargs):
        backend = kwargs.pop("backend", {})
        return IFIRJudge(OpenAIBackend(backend.pop("model", "j"), base_url=backend.pop("base_url", "http://a/v1"),
                                       **backend), **kwargs)
    item = JudgeItem("fiqa1", "q i", "d1", "text")
    base = judge().key(item)
    variants = [judge(backend={"model": "k"}), judge(backend={"base_url": "http://b/v1"}),
                judge(backend={"extra_body": {"seed": 1}}), judge(judge_model="other"), judge(top_logprobs=5),
                judge(top_p=0.9), judge(temperature=0.5), judge(max_new_tokens=64)]
    keys = {base} | {j.key(item) for j in variants}
    keys |= {judge().key(item._replace(**change))
             for change in [{"prompt": "fiqa2"}, {"instruction": "q j"}, {"docno": "d2"}, {"text": "text!"}]}
    assert len(keys) == 1 + len(variants) + 4
    # how requests are made is not part of the key
    assert judge(backend={"concurrency": 1, "timeout": 5, "max_retries": 0}).key(item) == base


def _judge_in_a_process(url, store, items, barrier, results):
    judge = IFIRJudge(OpenAIBackend("j", base_url=url, api_key_env=None, concurrency=2), store=store, batch_size=4)
    barrier.wait()
    out = judge.judge(items)
    results.put(([j.score for j in out], judge.last["judged"], judge.last["hits"]))


def test_two_processes_sharing_a_store_judge_each_item_at_most_once_each(serve, tmp_path):
    server = judge_server(serve, delay=0.01)
    items = [("fiqa1", "q i", f"d{i}", f"<<{'good' if i % 2 else 'fine'}-{i}>> text") for i in range(24)]
    store = tmp_path / "shared"
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_judge_in_a_process, args=(server.url, str(store), items, barrier, results))
             for _ in range(2)]
    for p in procs:
        p.start()
    got = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0]
    (a_scores, a_judged, a_hits), (b_scores, b_judged, b_hits) = got
    assert a_scores == b_scores and None not in a_scores and (a_judged + a_hits, b_judged + b_hits) == (24, 24)
    assert len(server.requests) == a_judged + b_judged  # each item judged at most once per process
    assert len(CallStore(store)) == 24  # every judgement once, the first standing


# -- issue 30: nothing secret on disk, late headers, another model, a stalled judge ------------------------------------
def test_a_key_echoed_in_an_answer_never_reaches_the_judge_store(serve, monkeypatch, tmp_path):
    def behave(h, body, n):
        answer = judged("2")
        answer["choices"][0]["message"]["content"] = '{"score": 2, "reason": "you sent ' + SECRET + '"}'
        send(h, 200, answer)
    server = serve(behave)
    monkeypatch.setenv(KEY_ENV, SECRET)
    store = tmp_path / "calls"
    judge = IFIRJudge(OpenAIBackend("m", base_url=server.url, api_key_env=KEY_ENV), store=store, verbose=False)
    (j,) = judge.judge([JudgeItem("fiqa1", "i", "d", "text")])
    assert j.score == pytest.approx(2.25) and SECRET not in j.answer and "***" in j.answer
    assert SECRET.encode() not in (store / "store.sqlite3").read_bytes() + (store / "store.sqlite3-wal").read_bytes()
    assert "***" in CallStore(store).get([judge.key(JudgeItem("fiqa1", "i", "d", "text"))]).popitem()[1]["answer"]


def test_a_key_split_across_lines_in_an_error_body_is_redacted(serve, monkeypatch):
    wrapped = SECRET[:10] + "\n  " + SECRET[10:20] + "\\n" + SECRET[20:]  # wrapped, and a JSON-escaped line break
    server, sleeps = serve(lambda h, body, n: send(h, 400, ("bad request from key " + wrapped).encode())), []
    with pytest.raises(RequestError) as err:
        ask(backend(server, monkeypatch, sleeps))
    assert "HTTP 400" in str(err.value)
    for text in texts(err.value):
        assert SECRET[:10] not in text and SECRET[10:20] not in text and SECRET[20:] not in text


@pytest.mark.parametrize("late_timer", [False, True])
def test_a_deadline_in_the_headers_is_a_timeout_not_invalid_json(serve, monkeypatch, late_timer):
    def behave(h, body, n):
        h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")  # ... and no more headers in time
        h.wfile.flush()
        time.sleep(2.0)
    if late_timer:  # a busy machine: the socket's own timeout ends the read before the deadline's timer thread runs
        from pyterrier_instruct.backends import _http
        watchdog = _http._Watchdog.__init__
        monkeypatch.setattr(_http._Watchdog, "__init__", lambda self, seconds: watchdog(self, seconds + 5.0))
    server, sleeps = serve(behave), []
    with pytest.raises(RequestError, match=r"did not finish answering within timeout=0.5 s") as err:
        ask(backend(server, monkeypatch, sleeps, timeout=0.5))
    assert "invalid JSON" not in str(err.value)


def test_an_answer_from_another_model_is_refused_and_the_served_model_recorded(serve, monkeypatch, tmp_path):
    served = {"model": "other-model"}

    def behave(h, body, n):
        answer = judged("2")
        answer["model"] = served["model"]
        send(h, 200, answer)
    server, sleeps = serve(behave), []
    with pytest.raises(BackendUnavailable,
                       match=r"answered with model 'other-model', not 'm': the server serves another model"):
        ask(backend(server, monkeypatch, sleeps))
    served["model"] = "m-2024-07-18"  # a dated snapshot of the model asked for
    b = backend(server, monkeypatch, sleeps)
    judge = IFIRJudge(b, store=tmp_path / "calls", verbose=False)
    (j,) = judge.judge([JudgeItem("fiqa1", "i", "d", "text")])
    assert j.model == "m-2024-07-18" and b.served_models == {"m-2024-07-18": 1}
    assert judge.store.get([judge.key(JudgeItem("fiqa1", "i", "d", "text"))]).popitem()[1]["served_model"] == \
        "m-2024-07-18"
    served["model"] = "deployment-7"
    lenient = backend(server, monkeypatch, sleeps, check_model=False)
    ask(lenient)
    assert lenient.served_models == {"deployment-7": 1}


def test_a_stalled_judge_does_not_hold_up_the_others(serve, tmp_path):
    release = threading.Event()

    def behave(h, body, n):
        if n <= 4:  # the first judge's batch: its server stalls
            release.wait(30)
        send(h, 200, judged("2"))
    server = serve(behave)
    store = tmp_path / "shared"
    mine = [("fiqa1", "q i", f"a{i}", f"a{i}") for i in range(3)]
    theirs = [("fiqa1", "q i", f"b{i}", f"b{i}") for i in range(3)]
    slow = IFIRJudge(OpenAIBackend("j", base_url=server.url, api_key_env=None), store=store, verbose=False)
    worker = threading.Thread(target=slow.judge, args=(mine + theirs[:1],), daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while len(server.requests) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        other = IFIRJudge(OpenAIBackend("j", base_url=server.url, api_key_env=None), store=store, verbose=False)
        done = threading.Thread(target=lambda: other.judge(theirs), daemon=True)
        done.start()
        done.join(20)  # no lock is held across a backend call: the other judge goes on
        assert not done.is_alive()
        assert other.last["judged"] == 3 and other.last["hits"] == 0
    finally:
        release.set()
        worker.join(30)
    assert slow.last["judged"] == 4 and len(CallStore(store)) == 6  # theirs[0]: stored once, the first standing

