"""OpenAI-compatible chat completions over HTTP (OpenAI, a ``vllm serve`` server, or any compatible provider).

Standard library only (``urllib`` + a thread pool, :mod:`._http` for the transport): no client package, nothing read
at import time. The API key is read from an environment variable when a batch is sent; it is never stored on the
object, shown in its repr, logged, or included in an error message (server answers that echo it are redacted).
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Callable, Dict, List, Optional, Sequence, Union

from . import _http
from .base import (Backend, BackendUnavailable, Generation, Messages, Prompt, RequestError, Text, as_messages,
                   as_store, check_logprob_args)

log = logging.getLogger(__name__)

#: waits (seconds) between attempts to reach a server that refuses connections: 4 attempts over 3.5 s, then an error
CONNECT_WAITS = (0.5, 1.0, 2.0)
_COUNT = threading.Lock()
#: the ``reasoning_effort`` values of OpenAI's chat-completions API reference (which model takes which: the reference)
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
#: completion tokens a reasoning model may spend reasoning, beyond the caller's output budget: OpenAI's reasoning guide
#: ("Allocating space for reasoning") advises reserving at least 25,000 tokens for reasoning and outputs
REASONING_TOKENS = 25_000
#: OpenAI's reasoning models by name: the o-series (o1, o3, o4-mini, dated snapshots) and the gpt-5 family, but not
#: its ``-chat`` models (``gpt-5-chat-latest`` is a chat model); an ``openai/`` prefix (routers) is ignored
_REASONING_NAME = re.compile(r"^(?:openai/)?(?:o\d+(?:-.*)?|gpt-5(?:\.\d+)?(?!(?:-[a-z]+)*-chat)(?:-.*)?)$")


def is_reasoning_model(model: str) -> bool:
    """Whether OpenAI's API serves ``model`` as a reasoning model, by its name: the o-series (``o1``, ``o3-mini``,
    ``o4-mini-2025-04-16``) and the gpt-5 family (``gpt-5``, ``gpt-5-mini``, ``gpt-5.1``), not ``gpt-5-chat-latest``
    (OpenAI's models page and reasoning guide, platform.openai.com/docs/guides/reasoning). Only the default of
    :class:`OpenAIBackend`'s ``reasoning=``: a deployment or served name says nothing, so pass ``reasoning=`` there."""
    return bool(_REASONING_NAME.match(str(model)))


class _Aborted(Exception):
    """Another request of the batch failed for good; this one stops before its next attempt."""


class OpenAIBackend(Backend):
    """``POST {base_url}/chat/completions`` per prompt, ``temperature=0``, ``max_tokens`` = the output budget;
    ``generate_logprobs`` (LLM judges) adds ``top_p``, ``logprobs``, ``top_logprobs``. Reasoning models get
    ``max_completion_tokens`` and no ``temperature``/``top_p``/logprobs; failures (``RequestError``,
    ``BackendUnavailable``), retries and reasoning models: docs/rerankers.md ("``OpenAIBackend`` failures").

    Args:
        model: the served model name.
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://localhost:8000/v1`` (``vllm serve``).
        api_key_env: the environment variable holding the API key, read when a batch is sent; ``None``: send no key.
        concurrency: requests in flight at once.
        max_retries, backoff, max_wait: retries of HTTP 408/409/429/5xx, resets, cut answers (capped backoff).
        max_retry_time: the most seconds a request's retry waits may take in total.
        timeout: seconds one request may take from connecting to the last byte of the answer; not retried.
        max_response_bytes: the largest answer read (16 MiB); a larger one is a failed request, never read whole.
        min_tokens: also send ``min_tokens`` (a vLLM-server extension; OpenAI rejects it).
        tokenizer: ``.encode(str) -> list`` or a HF tokenizer id/path, to count prompt tokens (else unknown).
        extra_body: more JSON fields for every request (e.g. ``{"seed": 0}``).
        reasoning: whether the model is a reasoning model; ``None``: by name (:func:`is_reasoning_model`).
        reasoning_effort: sent as ``reasoning_effort`` (a reasoning model only); ``None``: not sent.
        reasoning_tokens: added to the output budget in ``max_completion_tokens`` (25,000; a cap, not a cost).
        check_model: refuse an answer from another model than ``model`` (snapshots are the same); counted in
            ``served_models``.
        sleep: the function that waits between attempts (tests pass a recorder).
    """

    _identity = ("model", "base_url", "extra_body")

    def __init__(self, model: str, *, base_url: str = "https://api.openai.com/v1",
                 api_key_env: Optional[str] = "OPENAI_API_KEY", concurrency: int = 8, max_retries: int = 5,
                 backoff: float = 1.0, max_wait: float = 60.0, max_retry_time: float = 120.0, timeout: float = 120.0,
                 max_response_bytes: int = 16 * 2 ** 20, min_tokens: bool = False, tokenizer=None,
                 extra_body: Optional[dict] = None, check_model: bool = True, reasoning: Optional[bool] = None,
                 reasoning_effort: Optional[str] = None, reasoning_tokens: int = REASONING_TOKENS,
                 sleep: Optional[Callable[[float], None]] = None, store=None):
        if int(concurrency) < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
        if int(max_retries) < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        for name, value in (("backoff", backoff), ("max_wait", max_wait), ("max_retry_time", max_retry_time)):
            if not float(value) >= 0:
                raise ValueError(f"{name} must be >= 0 seconds, got {value!r}")
        if timeout is None or not float(timeout) > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if int(max_response_bytes) < 1:
            raise ValueError(f"max_response_bytes must be at least 1, got {max_response_bytes!r}")
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            raise ValueError("api_key_env must name an environment variable, or be None for a server that takes no "
                             f"key; got {api_key_env!r}")
        if reasoning_effort is not None and reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"reasoning_effort must be one of {REASONING_EFFORTS} or None (the model's default), got "
                             f"{reasoning_effort!r}")
        if int(reasoning_tokens) < 0:
            raise ValueError(f"reasoning_tokens must be >= 0, got {reasoning_tokens!r}")
        if reasoning_effort is not None and not (is_reasoning_model(model) if reasoning is None else reasoning):
            how = ("by its name (pyterrier_instruct.backends.openai.is_reasoning_model)" if reasoning is None
                   else "(reasoning=False)")
            raise ValueError(f"reasoning_effort={reasoning_effort!r} applies to reasoning models; {str(model)!r} is "
                             f"not one {how}: pass reasoning=True if it is one, or leave reasoning_effort out")
        self.reasoning, self.reasoning_effort = reasoning, reasoning_effort
        self.reasoning_tokens = int(reasoning_tokens)
        self.model, self.base_url, self.api_key_env = str(model), str(base_url).rstrip("/"), api_key_env
        self.concurrency, self.max_retries, self.backoff = int(concurrency), int(max_retries), float(backoff)
        self.max_wait, self.max_retry_time, self.timeout = float(max_wait), float(max_retry_time), float(timeout)
        self.max_response_bytes = int(max_response_bytes)
        self.min_tokens, self.extra_body, self._sleep = min_tokens, dict(extra_body or {}), sleep
        self.tokenizer, self.check_model, self.store = tokenizer, bool(check_model), as_store(store)
        self._tok = None
        self.requests = 0  # HTTP requests sent, retries included
        self.served_models: Dict[str, int] = {}  # model id of each answer → answers

    _lazy = ("_tok",)
    _fingerprint_exclude = ("sleep", "max_retry_time", "check_model")  # how answers are fetched, not what is generated

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def reasons(self) -> bool:
        """Whether the model is a reasoning model: ``reasoning``, else :func:`is_reasoning_model` of its name."""
        return is_reasoning_model(self.model) if self.reasoning is None else bool(self.reasoning)

    @property
    def _sampling(self) -> bool:
        """Whether the model takes ``temperature``, ``top_p`` and logprobs: a chat model, or reasoning turned off."""
        return not self.reasons or self.reasoning_effort == "none"

    def logprobs_refusal(self) -> Optional[str]:
        if self._sampling:
            return None
        return (f"{self.model!r} is a reasoning model "
                f"({'reasoning=True' if self.reasoning else 'by its name, is_reasoning_model'}): OpenAI's API refuses "
                "logprobs, temperature and top_p from it unless reasoning_effort='none' (gpt-5.1 and later). Pass "
                "reasoning_effort='none' to a model that takes it, use a chat model (e.g. gpt-4o-mini), or "
                "reasoning=False if this server is not OpenAI's and returns logprobs")

    def _limits(self, max_new_tokens: int, temperature: Optional[float] = None, top_p: Optional[float] = None) -> dict:
        """The budget and sampling fields of a request: ``max_tokens`` and ``temperature`` for a chat model;
        ``max_completion_tokens`` (+ ``reasoning_tokens`` while it reasons), ``reasoning_effort`` and no sampling
        fields for a reasoning model."""
        if not self.reasons:
            fields = {"temperature": temperature, "top_p": top_p, "max_tokens": int(max_new_tokens)}
        elif self._sampling:
            fields = {"temperature": temperature, "top_p": top_p, "max_completion_tokens": int(max_new_tokens)}
        else:
            fields = {"max_completion_tokens": int(max_new_tokens) + self.reasoning_tokens}
        if self.reasons and self.reasoning_effort is not None:
            fields["reasoning_effort"] = self.reasoning_effort
        return {k: v for k, v in fields.items() if v is not None}

    def _fingerprint_parts(self) -> Dict[str, object]:
        """The arguments, the reasoning ones only for a reasoning model (a chat model's requests ignore them)."""
        parts = super()._fingerprint_parts()
        for name in ("reasoning", "reasoning_effort", "reasoning_tokens"):
            parts.pop(name, None)
        if self.reasons:
            parts.update(reasoning=True, reasoning_effort=self.reasoning_effort, reasoning_tokens=self.reasoning_tokens)
        return parts

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
        key = self._key()

        def one(p: Prompt, abort: threading.Event) -> str:
            body = {"model": self.model, "messages": list(p.messages), **self._limits(max_new_tokens, 0.0),
                    **self.extra_body}
            if self.min_tokens and min_new_tokens:
                body["min_tokens"] = int(min_new_tokens)
            payload = self._post(body, key, abort)
            return Text(self._answer(payload, key, max_new_tokens), _usage(payload))  # usage: for the call store

        return self._map(one, prompts, return_exceptions=False)

    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int,
                          temperature: float = 0.0, top_p: float = 1.0,
                          return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        """One request per prompt (``concurrency`` in flight): ``temperature``, ``top_p``, ``max_tokens``,
        ``logprobs: true``, ``top_logprobs`` (OpenAI allows at most 20). With ``return_exceptions`` a request that fails
        for good (after the retries, refused with e.g. HTTP 400 for a too-long prompt, or answered without usable
        logprobs) gives its :class:`~pyterrier_instruct.backends.base.RequestError` in place."""
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        refusal = self.logprobs_refusal()
        if refusal is not None:
            raise BackendUnavailable(f"{refusal}; nothing was sent to {self.base_url}")
        if not prompts:
            return []
        key = self._key()

        def one(p: Prompt, abort: threading.Event) -> Generation:
            body = {"model": self.model, "messages": list(p.messages),
                    **self._limits(max_new_tokens, float(temperature), float(top_p)), "logprobs": True,
                    "top_logprobs": int(top_logprobs), **self.extra_body}
            return self._generation(self._post(body, key, abort), key, max_new_tokens)

        return self._map(one, prompts, return_exceptions=return_exceptions)

    def _key(self) -> Optional[str]:
        """The API key from ``api_key_env`` (None when ``api_key_env`` is None); BackendUnavailable when it is unset."""
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise BackendUnavailable(f"{self.api_key_env} is not set: export {self.api_key_env}=<your key>, or pass "
                                     "api_key_env=None for a server that takes no key (e.g. a local vllm serve or "
                                     f"llama.cpp server); nothing was sent to {self.base_url}")
        return key

    def _map(self, one, prompts: Sequence[Prompt], *, return_exceptions: bool) -> list:
        """``one(prompt, abort)`` for every prompt, ``concurrency`` at a time, in order. A RequestError is returned in
        place with ``return_exceptions``; any other failure (or a RequestError without it) sets ``abort``, cancels the
        prompts not started and is raised once the requests in flight have stopped."""
        abort = threading.Event()

        def run(p: Prompt):
            try:
                return one(p, abort)
            except RequestError as err:
                if return_exceptions:
                    return err
                abort.set()
                raise
            except BaseException:
                abort.set()  # before this worker takes the next prompt
                raise

        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts)))
        futures = []
        try:
            futures = [pool.submit(run, p) for p in prompts]
            wait(futures, return_when=FIRST_EXCEPTION)
            if abort.is_set():  # a request failed for good: the others stop at their next attempt
                for f in futures:
                    f.cancel()
                wait(futures)
                errors = (f.exception() for f in futures if not f.cancelled())
                raise next(e for e in errors if e is not None and not isinstance(e, _Aborted))
            return [f.result() for f in futures]
        except BaseException:
            abort.set()
            for f in futures:
                f.cancel()
            raise
        finally:
            pool.shutdown(wait=True)

    def _post(self, body: dict, key: Optional[str], abort: threading.Event) -> dict:
        """POSTs ``body`` to the chat-completions endpoint with the retry policy; the parsed JSON answer."""
        data = json.dumps(body).encode("utf-8")
        attempts = connects = retries = 0
        waited = 0.0
        while True:
            if abort.is_set():
                raise _Aborted()
            attempts += 1
            with _COUNT:
                self.requests += 1
            try:
                raw = _http.post_json(self.url, data, key, timeout=self.timeout, max_bytes=self.max_response_bytes)
                break
            except _http.Failure as failure:
                wait_s = self._retry_wait(failure, attempts, connects, retries, waited)
                waited += wait_s
                if failure.kind == "connect":
                    connects += 1
                else:
                    retries += 1
                log.info("%s: attempt %d failed (%s); retrying in %.2f s", self.url, attempts, failure.message, wait_s)
            if self._sleep is not None:
                self._sleep(wait_s)
            else:
                abort.wait(wait_s)
        try:
            payload = json.loads(raw)
        except ValueError:
            raise RequestError(f"{self.url} answered with invalid JSON: "
                               f"{self._quote(raw.decode('utf-8', 'replace'), key)}",
                               status=200, attempts=attempts) from None
        if not isinstance(payload, dict):
            raise RequestError(f"{self.url} answered with JSON that is not an object: "
                               f"{self._quote(raw.decode('utf-8', 'replace'), key)}", status=200, attempts=attempts)
        return payload

    def _retry_wait(self, failure: "_http.Failure", attempts: int, connects: int, retries: int,
                    waited: float = 0.0) -> float:
        """Seconds to wait before the next attempt, or the exception ending the request."""
        if failure.kind == "fatal":
            wrong_key = failure.status == 401 and self.api_key_env
            hint = f" (is {self.api_key_env} the right key for this server?)" if wrong_key else ""
            raise BackendUnavailable(failure.message + hint) from None
        if failure.kind == "connect":
            if connects >= min(self.max_retries, len(CONNECT_WAITS)):
                raise BackendUnavailable(f"cannot connect to {self.base_url} ({failure.message}) after {attempts} "
                                         f"attempt(s) over {sum(CONNECT_WAITS[:connects]):g} s: is the server running, "
                                         "and is base_url right?") from None
            return CONNECT_WAITS[connects]
        after = f" (after {attempts} attempts)" if attempts > 1 else ""
        if failure.kind == "retry" and retries < self.max_retries:
            if failure.retry_after is not None and failure.retry_after > self.max_wait:
                raise RequestError(f"{failure.message}{after}; the server asks to retry after "
                                   f"{failure.retry_after:.0f} s, more than max_wait={self.max_wait:g} s: not retried "
                                   "(raise max_wait to wait that long)",
                                   status=failure.status, attempts=attempts) from None
            wait_s = min(failure.retry_after if failure.retry_after is not None else self.backoff * 2 ** retries,
                         self.max_wait)
            if waited + wait_s > self.max_retry_time:
                raise RequestError(f"{failure.message}{after}; another wait of {wait_s:g} s would take this request's "
                                   f"retries past max_retry_time={self.max_retry_time:g} s (waited {waited:g} s): not "
                                   "retried", status=failure.status, attempts=attempts) from None
            return wait_s
        raise RequestError(failure.message + after, status=failure.status, attempts=attempts) from None

    @staticmethod
    def _quote(text: str, key: Optional[str]) -> str:
        return _http.redact(text, key)[:300]

    def _served(self, payload: dict) -> Optional[str]:
        """The model id of an answer, counted; another model than ``model`` is refused (``check_model``)."""
        served = payload.get("model")
        if not isinstance(served, str):
            return None
        with _COUNT:
            self.served_models[served] = self.served_models.get(served, 0) + 1
        if self.check_model and served != self.model and not served.startswith(self.model + "-"):
            raise BackendUnavailable(f"{self.url} answered with model {served!r}, not {self.model!r}: the server "
                                     "serves another model than the one asked for (check base_url and model, or pass "
                                     "check_model=False for a provider that answers with its own model names)")
        return served

    def _answer(self, payload: dict, key: Optional[str], budget: int) -> str:
        self._served(payload)
        try:
            content = payload["choices"][0]["message"]["content"]
            if content is not None and not isinstance(content, str):
                raise TypeError(content)
        except (KeyError, IndexError, TypeError):
            raise RequestError(f"{self.url} returned no choices[0].message.content: "
                               f"{self._quote(json.dumps(payload), key)}", status=200) from None
        if not content and self.reasons and payload["choices"][0].get("finish_reason") == "length":
            self._spent_on_reasoning(payload, budget)
        return _http.redact(content, key, bearer=False) if content else ""  # an echoed key never reaches a cache

    def _spent_on_reasoning(self, payload: dict, budget: int) -> None:
        """A reasoning model's empty answer cut at the limit: its reasoning took the whole ``max_completion_tokens``."""
        extra = 0 if self._sampling else self.reasoning_tokens
        spent = (_usage(payload) or {}).get("reasoning_tokens", "them all")
        raise RequestError(f"{self.model} answered nothing within max_completion_tokens={budget + extra} ({extra} for "
                           f"reasoning + {budget} for the answer): it spent {spent} on reasoning; raise "
                           f"reasoning_tokens (now {self.reasoning_tokens}) or lower reasoning_effort", status=200)

    def _generation(self, payload: dict, key: Optional[str], budget: int) -> Generation:
        text = self._answer(payload, key, budget)
        try:
            content = payload["choices"][0]["logprobs"]["content"]
            tokens = [_token(c["token"]) for c in content]
            tops = [[(_token(t["token"]), _logprob(t["logprob"])) for t in c["top_logprobs"]] for c in content]
            served = payload.get("model") if isinstance(payload.get("model"), str) else None
            return Generation.of(text, tokens, tops, served, _usage(payload))
        except (KeyError, IndexError, TypeError, ValueError) as err:
            problem = f"{type(err).__name__}: {err}" if isinstance(err, (TypeError, ValueError)) else f"missing {err}"
            raise RequestError(f"{self.url} returned no usable choices[0].logprobs.content with top_logprobs (does the "
                               f"server support logprobs?) — {self._quote(problem, key)}: "
                               f"{self._quote(json.dumps(payload), key)}", status=200) from None


def _usage(payload: dict) -> Optional[Dict[str, int]]:
    """The answer's ``usage``: prompt, completion and (``completion_tokens_details``) reasoning tokens, where given."""
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    details = usage.get("completion_tokens_details") if isinstance(usage.get("completion_tokens_details"), dict) else {}
    found = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
             "reasoning_tokens": details.get("reasoning_tokens")}
    return {k: v for k, v in found.items() if type(v) is int} or None


def _token(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a token is {type(value).__name__}, not a string")
    return value


def _logprob(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 1e-6:
        raise ValueError(f"a logprob is {value!r}, not a number <= 0")
    return float(value)
