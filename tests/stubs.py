"""Shared test doubles: a chat-completions server on 127.0.0.1 and a copy of a tiny model with a chat template."""
from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class ChatServer:
    """An OpenAI-compatible ``/chat/completions`` endpoint. Records every request (path, Authorization header, JSON
    body); answers from ``script`` (a list of (status, payload); payload ``None``: the default answer) first, then
    with ``answer(body) -> (status, payload)``. A 429 carries ``Retry-After: 0.25``. ``url`` is the base URL (``…/v1``); ``close()`` stops it."""

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


def with_chat_template(model: str, folder: Path, template: str) -> str:
    """A copy of the local model folder ``model`` whose tokenizer has ``template`` as its chat template."""
    import transformers
    shutil.copytree(model, folder)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    tok.chat_template = template
    tok.save_pretrained(str(folder))
    return str(folder)


# a Zephyr-style chat template (the form rank_llm's RankZephyr prompts expect: <|system|>\n…</s>\n<|user|>\n…</s>\n<|assistant|>\n)
ZEPHYR_TEMPLATE = ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n"
                   "{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n"
                   "{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
                   "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}")
