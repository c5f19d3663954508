"""The one small interface between prompt builders (listwise reranking, LLM judges) and text generators.

A prompt is a list of chat messages; a backend has ``prepare``, ``count``, ``generate`` (greedy, one answer per prompt)
and ``generate_logprobs`` (LLM judges), and for reasoning rerankers the token-id calls ``generate_until`` and
``next_token_logprobs`` (``REASONING_CALLS``). All prompts of one call are one batch. ``store=`` (a
:class:`~pyterrier_instruct.calls.CallStore`) keeps each call of :data:`STORED_CALLS`. Details: docs/rerankers.md.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .._config import Configured
from .._tokens import encode_rendered

log = logging.getLogger(__name__)

Messages = Sequence[Dict[str, str]]
#: The token-id level calls a reasoning reranker (rank1) needs of its backend (see the module docstring).
REASONING_CALLS = ("generate_until", "next_token_logprobs")
#: The public calls that go through a backend's ``store=`` (each backend implements those it serves).
STORED_CALLS = ("generate", "generate_logprobs", "generate_until", "next_token_logprobs", "score_distribution",
                "answer_logits", "classify_logits")
#: arguments of those calls that do not change the answer (left out of the key)
_NOT_SETTINGS = ("return_exceptions", "bar")
_INSIDE = threading.local()  # set while a store computes misses: nested public calls go straight to the model


@dataclass(frozen=True)
class Prompt:
    """Chat messages and, for backends with a tokenizer, the rendered text and its token ids."""
    messages: tuple
    text: Optional[str] = None
    token_ids: Optional[List[int]] = field(default=None, compare=False)

    @property
    def n_tokens(self) -> Optional[int]:
        return None if self.token_ids is None else len(self.token_ids)


Candidates = Tuple[Tuple[str, float], ...]


@dataclass(frozen=True)
class Generation:
    """One generated answer with its per-token log-probabilities.

    ``tokens[i]`` is the text of the i-th generated token and ``top_logprobs[i]`` the candidates at that position,
    ``(token text, natural-log probability)`` pairs, most likely first, as the engine returned them (OpenAI: exactly
    ``top_logprobs``; vLLM: the top ``k`` plus the sampled token when it is not among them). Pairs, not a dict: two
    token ids may decode to the same text, and judges filter each candidate before summing by value. ``model``: the
    model id the server says answered (HTTP backends), recorded with the judgement.
    """
    text: str
    tokens: Tuple[str, ...]
    top_logprobs: Tuple[Candidates, ...]
    model: Optional[str] = None
    #: the API's token counts (``prompt_tokens``, ``completion_tokens``, ``reasoning_tokens``) where it reports them
    usage: Optional[Mapping[str, int]] = field(default=None, compare=False)

    def __post_init__(self):
        if len(self.tokens) != len(self.top_logprobs):
            raise ValueError(f"Generation: {len(self.tokens)} tokens but {len(self.top_logprobs)} top-logprob "
                             "positions")

    @classmethod
    def of(cls, text: str, tokens: Iterable[str],
           top_logprobs: Iterable[Union[Mapping[str, float], Iterable[Tuple[str, float]]]], model: Optional[str] = None,
           usage: Optional[Mapping[str, int]] = None) -> "Generation":
        """A Generation from plain values: each position's candidates as a ``{token: logprob}`` dict or as pairs."""
        tops = []
        for pos in top_logprobs:
            pairs = pos.items() if isinstance(pos, Mapping) else pos
            tops.append(tuple((str(t), float(lp)) for t, lp in pairs))
        return cls(str(text), tuple(str(t) for t in tokens), tuple(tops), model, usage)


class Text(str):
    """A text ``generate`` returned (a ``str``) with the API's token counts in ``usage`` where it reports them, for the
    call store's row (which stores the plain text)."""
    usage: Optional[Mapping[str, int]] = None

    def __new__(cls, text: str, usage: Optional[Mapping[str, int]] = None):
        out = super().__new__(cls, text)
        out.usage = usage
        return out


@dataclass(frozen=True)
class Continuation:
    """A greedy continuation (:meth:`TokenizerBackend.generate_until`), as vLLM's ``CompletionOutput`` reports it.

    ``text``: the decoded output with special tokens kept, without the stop string (and what followed it in the same
    token) or the end-of-sequence token; ``token_ids``: every generated id (the one completing a stop string and the
    end-of-sequence one included); ``last_logprobs``: ``{token id: log-probability}`` of the last generated step's
    ``top_logprobs`` most likely tokens plus the generated one; ``finish_reason``: ``'stop'`` (a stop string or the
    end-of-sequence token) or ``'length'`` (the budget ran out).
    """
    text: str
    token_ids: Tuple[int, ...]
    last_logprobs: Mapping[int, float]
    finish_reason: str


def as_messages(messages: Messages) -> tuple:
    """Validated, immutable chat messages."""
    out = []
    for m in messages:
        if not isinstance(m, dict) or set(m) != {"role", "content"} or m["role"] not in ("system", "user", "assistant"):
            raise ValueError(f"a chat message is a dict with a 'role' (system/user/assistant) and a 'content': {m!r}")
        out.append({"role": m["role"], "content": str(m["content"])})
    return tuple(out)


def as_store(store):
    """A backend's (or judge's) ``store=``: ``None``, a :class:`~pyterrier_instruct.calls.CallStore` or its folder."""
    from ..calls import CallStore
    if store is None or isinstance(store, CallStore):
        return store
    if isinstance(store, (str, os.PathLike)):
        return CallStore(store)
    raise TypeError(f"store= must be a CallStore or the path of its folder, got {type(store).__name__}")


class RequestError(RuntimeError):
    """One request failed for good (after the backend's retries): an HTTP error status, a timeout, a truncated or
    oversized body, an answer that is not what the protocol promises. It costs that prompt only: with
    ``return_exceptions`` it stands in place of the prompt's Generation. ``status`` is the HTTP status (or None) and
    ``attempts`` the requests sent for the prompt."""

    def __init__(self, message: str, *, status: Optional[int] = None, attempts: int = 1):
        super().__init__(message)
        self.status, self.attempts = status, attempts


class BackendUnavailable(RuntimeError):
    """The backend cannot serve any prompt (its API key is not set, the server cannot be reached, redirects to another
    origin or refuses the key or the model): raised at once, even with ``return_exceptions``, and the prompts not yet
    sent are not sent."""


class Backend(Configured):
    """Base of every backend (see the module docstring). Subclasses implement ``generate``.

    Its identity (what LLM judges and the call store key on) is :func:`~pyterrier_instruct._fingerprint.fingerprint`
    of the backend: the class and the arguments in :attr:`_identity` (those that change answers), weights named by
    :attr:`_weights` with their content digest, so weights saved again over a folder never reuse old answers."""
    _eq_exclude = ("verbose", "store")  # where answers are kept, not what they are
    store = None
    #: the constructor arguments that change what the model answers (not how answers are fetched: batch sizes,
    #: concurrency, retries are left out): the backend's fingerprint
    _identity: Tuple[str, ...] = ()
    #: the arguments of :attr:`_identity` naming local weights (a hub id or a folder): their digest joins the identity
    _weights: Tuple[str, ...] = ()

    def _fingerprint_parts(self) -> Dict[str, object]:
        if not self._identity:
            return super()._fingerprint_parts()
        return {name: getattr(self, name, None) for name in self._identity}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in STORED_CALLS:
            if name in cls.__dict__:
                setattr(cls, name, _stored(name, cls.__dict__[name]))

    def _call_identity(self) -> str:
        """The backend's part of a call's key in a store."""
        from .._fingerprint import fingerprint
        return fingerprint(self)

    def _sent(self, prompt) -> object:
        """A prompt as the model is sent it: a Prompt's chat messages, or token ids."""
        return prompt.messages if isinstance(prompt, Prompt) else [int(t) for t in prompt]

    def prepare(self, messages: Messages, fallback_template: Optional[str] = None) -> Prompt:
        return Prompt(as_messages(messages))

    def count(self, text: str) -> Optional[int]:
        return None

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        raise NotImplementedError  # abstract

    def logprobs_refusal(self) -> Optional[str]:
        """Why this backend's model cannot give :meth:`generate_logprobs` (e.g. an OpenAI reasoning model), or None:
        an LLM judge checks it when it is built, before any request."""
        return None

    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int,
                          temperature: float = 0.0, top_p: float = 1.0,
                          return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        """One :class:`Generation` per prompt, in order. ``return_exceptions``: a prompt whose request failed (after the
        backend's retries; :class:`RequestError`) gives its exception in place of a Generation instead of failing the
        whole batch; :class:`BackendUnavailable` is always raised."""
        raise NotImplementedError  # abstract: backends that serve LLM judges implement it

class TokenizerBackend(Backend):
    """A backend that owns a Hugging Face tokenizer (HF transformers, vLLM): renders with the chat template and
    counts tokens exactly. Subclasses implement ``_tokenizer()`` (loading lazily) and ``generate``.

    ``chat_template``: a Jinja template that replaces the checkpoint's own; otherwise the tokenizer's template is
    used, and a prompt preset's ``fallback_template`` only when the tokenizer has none.
    """
    chat_template: Optional[str] = None

    def _tokenizer(self):  # pragma: no cover - abstract
        raise NotImplementedError  # abstract: the loaded tokenizer

    def prepare(self, messages: Messages, fallback_template: Optional[str] = None) -> Prompt:
        import ftfy
        messages = as_messages(messages)
        tok = self._tokenizer()
        template = self.chat_template or (None if getattr(tok, "chat_template", None) else fallback_template)
        if template is None and not getattr(tok, "chat_template", None):
            raise ValueError(f"{self!r}: the tokenizer has no chat template; pass chat_template= (a Jinja string) to "
                             "the backend")
        text = ftfy.fix_text(self._render(tok, list(messages), template))
        return Prompt(messages, text, encode_rendered(tok, text))

    def _render(self, tok, messages: list, template: Optional[str]) -> str:
        try:
            return tok.apply_chat_template(messages, chat_template=template, tokenize=False, add_generation_prompt=True)
        except Exception as err:  # noqa: BLE001 - only the "no system role" case is recovered
            if messages[0]["role"] != "system" or "system" not in str(err).lower():
                raise
            log.warning("%r: the chat template rejects a system message; prepending it to the first user message", self)
            first = {"role": "user", "content": messages[0]["content"] + "\n\n" + messages[1]["content"]}
            merged = [first] + messages[2:]
            return tok.apply_chat_template(merged, chat_template=template, tokenize=False, add_generation_prompt=True)

    def count(self, text: str) -> int:
        return len(self._tokenizer().encode(text))

    def tokenizer(self):
        """The backend's tokenizer (loaded on first use): callers that build raw prompts tokenise with it."""
        return self._tokenizer()

    def _ids(self, prompt: Prompt) -> List[int]:
        """The prompt's token ids (rendering it here if another backend prepared it)."""
        return list(prompt.token_ids if prompt.token_ids is not None else self.prepare(prompt.messages).token_ids)

    def _sent(self, prompt) -> List[int]:
        return [int(t) for t in (self._ids(prompt) if isinstance(prompt, Prompt) else prompt)]


def _stored(name: str, method):
    """``method`` going through the backend's store when it has one (see the module docstring)."""
    signature = inspect.signature(method)
    first = list(signature.parameters)[1]

    @functools.wraps(method)
    def call(self, prompts, *args, **kwargs):
        if self.store is None or getattr(_INSIDE, "on", False) or not len(prompts):
            return method(self, prompts, *args, **kwargs)
        bound = signature.bind(self, prompts, *args, **kwargs)
        bound.apply_defaults()
        settings = {k: v for k, v in bound.arguments.items() if k not in ("self", first, *_NOT_SETTINGS)}

        def compute(todo: list):
            _INSIDE.on = True
            try:
                return method(self, todo, *args, **kwargs)
            finally:
                _INSIDE.on = False
        return self.store.through(self, name, compute, prompts, settings)
    return call


def check_logprob_args(max_new_tokens: int, top_logprobs: int, temperature: float, top_p: float) -> None:
    """Validates the arguments of :meth:`Backend.generate_logprobs` (names the offending parameter)."""
    if int(max_new_tokens) < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens!r}")
    if int(top_logprobs) < 1:
        raise ValueError(f"top_logprobs must be at least 1, got {top_logprobs!r}")
    if float(temperature) < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if not 0 < float(top_p) <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
