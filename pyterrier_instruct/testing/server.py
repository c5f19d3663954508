"""An OpenAI-compatible chat-completions server on 127.0.0.1 (standard library only) that stands in for an API or a vLLM
server: :func:`chat_server` answers a listwise prompt with a permutation and an IFIR judge prompt with a score and its
logprobs, so that ``RankGPT``, ``OpenAIBackend`` pipelines and ``IFIRJudge`` run without a key, a GPU or a network."""
from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["ChatServer", "chat_server", "chat_answer"]


class ChatServer:
    """An OpenAI-compatible ``/chat/completions`` endpoint. Records every request (path, Authorization header, JSON
    body); answers from ``script`` (a list of (status, payload); payload ``None``: the default answer) first, then
    with ``answer(body) -> (status, payload)``. A 429 carries ``Retry-After: 0.25``. ``url`` is the base URL (``…/v1``);
    ``close()`` stops it (also as a context manager)."""

    def __init__(self, answer):
        self.requests, self.script, self.lock, self.answer = [], [], threading.Lock(), answer
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                    scripted = server.script.pop(0) if server.script else None
                status, payload = scripted if scripted and scripted[1] is not None else server.answer(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status == 429:
                    self.send_header("Retry-After", "0.25")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()  # the listening socket too (else a ResourceWarning lands in a later test)

    def __enter__(self) -> "ChatServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _judge(body: dict) -> tuple:
    """``{"score": 2, "reason": "stand-in"}``, OpenAI-style logprobs (the score position: 2 → .7, 1 → .2, 3 → .1)."""
    table = {"2": .7, "1": .2, "3": .1}
    tokens = ['{"', "score", '":', " ", "2", ",", ' "', "reason", '":', ' "', "stand-in", '"}']
    entries = []
    for t in tokens:
        cands = sorted(table.items(), key=lambda kv: -kv[1]) if t == "2" else [(t, 1.0)]
        tops = [{"token": c, "logprob": math.log(p), "bytes": list(c.encode())}
                for c, p in cands[:body.get("top_logprobs") or 1]]
        entries.append({"token": t, "logprob": tops[0]["logprob"], "bytes": list(t.encode()), "top_logprobs": tops})
    return 200, {"id": "stand-in", "object": "chat.completion", "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(tokens)},
                              "finish_reason": "stop", "logprobs": {"content": entries}}]}


def chat_answer(body: dict) -> tuple:
    """A judge request (``logprobs``) gets a score of 2 with its logprobs (2 → .7, 1 → .2, 3 → .1); a listwise prompt
    ("… N passages …") the reverse permutation ``[N] > … > [1]``."""
    if body.get("logprobs"):
        return _judge(body)
    text = " ".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    found = re.search(r"(\d+) passages", text)
    n = int(found.group(1)) if found else 1
    return 200, {"choices": [{"index": 0,
                              "message": {"role": "assistant",
                                          "content": " > ".join(f"[{i}]" for i in range(n, 0, -1))},
                              "finish_reason": "stop"}]}


def chat_server() -> ChatServer:
    """A :class:`ChatServer` answering with :func:`chat_answer`; its ``url`` is the ``base_url`` to pass."""
    return ChatServer(chat_answer)
