"""OpenAI-compatible chat completions over HTTP (OpenAI, a ``vllm serve`` server, or any compatible provider).

Standard library only (``urllib`` + a thread pool): no client package, nothing read at import time, and the API
key is read from an environment variable when a request is sent — it is never stored on the object, shown in its
repr, logged, or included in an error message.
"""
from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Optional, Sequence, Union

from .base import Backend, Generation, Messages, Prompt, as_messages, check_logprob_args

log = logging.getLogger(__name__)

RETRY_STATUS = (408, 409, 429, 500, 502, 503, 504)


class OpenAIBackend(Backend):
    """``POST {base_url}/chat/completions`` per prompt, ``temperature=0``, ``max_tokens`` = the output budget.
    ``generate_logprobs`` (LLM judges) adds ``top_p``, ``logprobs: true`` and ``top_logprobs`` and reads
    ``choices[0].logprobs.content`` (one entry per generated token, each with its ``top_logprobs``).

    Args:
        model: the served model name.
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://localhost:8000/v1`` (``vllm serve``).
        api_key_env: the environment variable holding the API key (unset: no ``Authorization`` header, as local
            servers expect).
        concurrency: requests in flight at once.
        max_retries, backoff: retries on connection errors and HTTP 408/409/429/5xx, sleeping
            ``backoff * 2**attempt`` seconds (or the server's ``Retry-After``).
        timeout: seconds per request.
        min_tokens: also send ``min_tokens`` (a vLLM-server extension; OpenAI rejects it).
        tokenizer: anything with ``.encode(str) -> list`` (e.g. a tiktoken encoding or a HF tokenizer) or a HF
            tokenizer id/path; used to count prompt tokens for the caller's context budget. Without it token counts
            are unknown and callers skip the budget.
        extra_body: more JSON fields for every request (e.g. ``{"seed": 0}``).
    """

    def __init__(self, model: str, *, base_url: str = "https://api.openai.com/v1", api_key_env: str = "OPENAI_API_KEY",
                 concurrency: int = 8, max_retries: int = 5, backoff: float = 1.0, timeout: float = 120.0,
                 min_tokens: bool = False, tokenizer=None, extra_body: Optional[dict] = None,
                 sleep: Callable[[float], None] = time.sleep):
        if int(concurrency) < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
        if int(max_retries) < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        self.model, self.base_url, self.api_key_env = str(model), str(base_url).rstrip("/"), api_key_env
        self.concurrency, self.max_retries, self.backoff, self.timeout = int(concurrency), int(max_retries), float(backoff), timeout
        self.min_tokens, self.extra_body, self._sleep = min_tokens, dict(extra_body or {}), sleep
        self.tokenizer = tokenizer
        self._tok = None
        self.requests = 0  # HTTP requests sent, retries included

    _lazy = ("_tok",)
    _fingerprint_exclude = ("sleep",)  # how retries wait, not what is generated

    # -- token counting (optional) -----------------------------------------------------------------
    def _encoder(self):
        if self._tok is None and self.tokenizer is not None:
            if isinstance(self.tokenizer, str):
                from .._optional import require
                self._tok = require("transformers", "hf").AutoTokenizer.from_pretrained(self.tokenizer)
            else:
                self._tok = self.tokenizer
        return self._tok

    def prepare(self, messages: Messages, fallback_template: Optional[str] = None) -> Prompt:
        messages = as_messages(messages)
        enc = self._encoder()
        if enc is None:
            return Prompt(messages)
        # OpenAI's accounting: 3 tokens per message, 3 to prime the reply
        ids = [t for m in messages for t in [0, 0, 0] + list(enc.encode(m["content"]))] + [0, 0, 0]
        return Prompt(messages, None, ids)

    def count(self, text: str) -> Optional[int]:
        enc = self._encoder()
        return None if enc is None else len(enc.encode(text))

    # -- requests ----------------------------------------------------------------------------------
    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        if not prompts:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(lambda p: self._complete(p.messages, max_new_tokens, min_new_tokens), prompts))

    def _complete(self, messages, max_new_tokens: int, min_new_tokens: int) -> str:
        body = {"model": self.model, "messages": list(messages), "temperature": 0.0, "max_tokens": int(max_new_tokens),
                **self.extra_body}
        if self.min_tokens and min_new_tokens:
            body["min_tokens"] = int(min_new_tokens)
        url = f"{self.base_url}/chat/completions"
        return self._answer(self._post(body), url)

    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int, temperature: float = 0.0,
                          top_p: float = 1.0, return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        """One request per prompt (``concurrency`` in flight): ``temperature``, ``top_p``, ``max_tokens``,
        ``logprobs: true``, ``top_logprobs`` (OpenAI allows at most 20). With ``return_exceptions`` a request that still
        fails after the retries (or is refused, e.g. HTTP 400 for a too-long prompt) gives its RuntimeError in place."""
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        if not prompts:
            return []

        def one(p: Prompt):
            body = {"model": self.model, "messages": list(p.messages), "temperature": float(temperature), "top_p": float(top_p),
                    "max_tokens": int(max_new_tokens), "logprobs": True, "top_logprobs": int(top_logprobs), **self.extra_body}
            try:
                return self._generation(self._post(body), f"{self.base_url}/chat/completions")
            except RuntimeError as err:
                if return_exceptions:
                    return err
                raise

        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(one, prompts))

    def _post(self, body: dict) -> dict:
        """POSTs ``body`` to the chat-completions endpoint with the retry policy; the parsed JSON answer."""
        data = json.dumps(body).encode("utf-8")
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            headers = {"Content-Type": "application/json"}
            key = os.environ.get(self.api_key_env) if self.api_key_env else None
            if key:
                headers["Authorization"] = f"Bearer {key}"
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            self.requests += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read().decode("utf-8", "replace")
                try:
                    return json.loads(raw)
                except json.JSONDecodeError:
                    raise RuntimeError(f"{url} answered with invalid JSON: {raw[:300]}") from None
            except urllib.error.HTTPError as err:
                detail = err.read().decode("utf-8", "replace")[:500]
                if err.code not in RETRY_STATUS or attempt == self.max_retries:
                    raise RuntimeError(f"{url} answered HTTP {err.code}: {detail}") from None
                wait = _retry_after(err) or self.backoff * 2 ** attempt
            except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
                if attempt == self.max_retries:
                    raise RuntimeError(f"could not reach {url} after {attempt + 1} attempts: {err}") from None
                wait = self.backoff * 2 ** attempt
            log.warning("%s: retrying in %.1f s (attempt %d of %d)", url, wait, attempt + 1, self.max_retries)
            self._sleep(wait)
            attempt += 1

    @staticmethod
    def _answer(payload: dict, url: str) -> str:
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise RuntimeError(f"{url} returned no choices[0].message.content: {json.dumps(payload)[:300]}") from None
        return content or ""

    @classmethod
    def _generation(cls, payload: dict, url: str) -> Generation:
        text = cls._answer(payload, url)
        try:
            content = payload["choices"][0]["logprobs"]["content"]
            tokens = [c["token"] for c in content]
            tops = [[(t["token"], t["logprob"]) for t in c["top_logprobs"]] for c in content]
        except (KeyError, IndexError, TypeError):
            raise RuntimeError(f"{url} returned no choices[0].logprobs.content with top_logprobs (does the server support "
                               f"logprobs?): {json.dumps(payload)[:300]}") from None
        return Generation.of(text, tokens, tops)


def _retry_after(err: urllib.error.HTTPError) -> Optional[float]:
    try:
        return float(err.headers.get("Retry-After"))
    except (TypeError, ValueError):
        return None
