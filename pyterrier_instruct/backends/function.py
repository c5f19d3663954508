"""A plain Python callable as a backend: for tests, scripted answers and custom engines."""
from __future__ import annotations

import inspect
from typing import Callable, List, Optional, Sequence, Union

from .base import Backend, Generation, Messages, Prompt, as_messages, as_store, check_logprob_args


class FunctionBackend(Backend):
    """A Python callable as the generator. ``fn`` takes one of two forms, told apart by its signature:

    - **per prompt**, ``fn(prompt: str) -> str`` (one required positional parameter): called once per prompt with the
      prompt as text, the contents of its chat messages joined by a blank line (``"\\n\\n"``; a single user message
      is its content exactly; roles are not shown);
    - **batched**, ``fn(list_of_message_lists, max_new_tokens) -> list of str`` (two positional parameters, or
      ``*args``): called once per batch with every prompt's messages (``[{"role": ..., "content": ...}, ...]``).

    Any other signature is a TypeError. ``tokenizer`` (``.encode(str) -> list``) counts tokens; ``calls`` counts calls.

    ``logprobs`` (optional; LLM judges): ``logprobs(list_of_message_lists, max_new_tokens=, top_logprobs=,
    temperature=, top_p=) -> list`` of :class:`~pyterrier_instruct.backends.base.Generation`, ``(text, tokens,
    top_logprobs)`` triples or Exceptions, one per prompt; ``fn`` may be ``None`` when only ``logprobs`` is used.

    Identity: the functions' code and the values they read (:func:`~pyterrier_instruct._fingerprint.fingerprint`);
    ``name=`` given is the key instead (change it whenever the function changes).
    """

    _identity = ("name",)

    def __init__(self, fn: Optional[Callable[..., Union[str, Sequence[str]]]] = None, *, tokenizer=None,
                 name: Optional[str] = None, logprobs: Optional[Callable[..., Sequence]] = None, store=None):
        if fn is None and logprobs is None:
            raise TypeError("FunctionBackend needs a callable fn (answers) and/or logprobs= (per-token logprobs)")
        for arg, value in (("fn", fn), ("logprobs", logprobs)):
            if value is not None and not callable(value):
                raise TypeError(f"FunctionBackend needs a callable {arg}, got {value!r}")
        source = fn if fn is not None else logprobs
        self.fn, self.logprobs, self.tokenizer, self.store = fn, logprobs, tokenizer, as_store(store)
        self.name = name or getattr(source, "__name__", type(source).__name__)
        self._named = name is not None
        self._per_prompt = fn is not None and _per_prompt(fn)
        self.calls = 0

    def __repr__(self) -> str:
        return f"FunctionBackend({self.name})"

    def _fingerprint_parts(self) -> dict:
        """An explicit ``name=`` is what the caller says decides the answers (and changes with the function); without
        one, the functions by their code and the values they read."""
        return {"name": self.name} if self._named else {"fn": self.fn, "logprobs": self.logprobs}

    def _call_identity(self) -> str:
        from .._fingerprint import NotFingerprintable
        try:
            return super()._call_identity()
        except NotFingerprintable as e:
            raise ValueError(f"FunctionBackend({self.name}) in a store: its function cannot be fingerprinted ({e}), so "
                             "stored answers could outlive a change to it; pass name='...' naming what it answers (and "
                             "change it whenever the function changes)") from None

    def prepare(self, messages: Messages, fallback_template: Optional[str] = None) -> Prompt:
        messages = as_messages(messages)
        if self.tokenizer is None:
            return Prompt(messages)
        return Prompt(messages, None, list(self.tokenizer.encode("".join(m["content"] for m in messages))))

    def count(self, text: str) -> Optional[int]:
        return None if self.tokenizer is None else len(self.tokenizer.encode(text))

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        if self.fn is None:
            raise ValueError(f"{self!r} was built with logprobs= only; pass fn= to generate answers")
        if self._per_prompt:
            answers = []
            for p in prompts:
                self.calls += 1
                answer = self.fn(prompt_text(p.messages))
                if not isinstance(answer, str):
                    raise ValueError(f"{self!r}: fn(prompt) must return a string, got {answer!r:.200}")
                answers.append(answer)
            return answers
        self.calls += 1
        answers = list(self.fn([[dict(m) for m in p.messages] for p in prompts], max_new_tokens))
        if len(answers) != len(prompts) or not all(isinstance(a, str) for a in answers):
            raise ValueError(f"{self!r} must return one string per prompt ({len(prompts)}), got {answers!r:.200}")
        return answers

    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int,
                          temperature: float = 0.0, top_p: float = 1.0,
                          return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        if self.logprobs is None:
            raise ValueError(f"{self!r} has no logprobs function; pass FunctionBackend(..., logprobs=callable) to use "
                             "it as a judge")
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        self.calls += 1
        answers = list(self.logprobs([[dict(m) for m in p.messages] for p in prompts],
                                     max_new_tokens=int(max_new_tokens), top_logprobs=int(top_logprobs),
                                     temperature=float(temperature), top_p=float(top_p)))
        if len(answers) != len(prompts):
            raise ValueError(f"{self!r}: logprobs returned {len(answers)} entries for {len(prompts)} prompts")
        out: List[Union[Generation, Exception]] = []
        for a in answers:
            if not isinstance(a, Exception):
                a = self._generation(a)
            if isinstance(a, Exception) and not return_exceptions:
                raise a
            out.append(a)
        return out

    def _generation(self, a) -> Union[Generation, Exception]:
        """One entry of ``logprobs``' answer as a Generation, or the ValueError saying why it is not one."""
        if isinstance(a, Generation):
            return a
        if isinstance(a, (tuple, list)) and len(a) == 3:
            try:
                return Generation.of(*a)
            except (TypeError, ValueError) as err:
                return ValueError(f"{self!r}: logprobs returned an unusable (text, tokens, top_logprobs) triple "
                                  f"({err}): {a!r:.200}")
        return ValueError(f"{self!r}: logprobs must return a Generation, a (text, tokens, top_logprobs) triple or an "
                          f"Exception per prompt, got {a!r:.200}")


def prompt_text(messages) -> str:
    """A prompt as one text for ``fn(prompt: str)``: the messages' contents joined by a blank line."""
    return "\n\n".join(m["content"] for m in messages)


SIGNATURES = ("fn(prompt: str) -> str (one call per prompt) or fn(list_of_message_lists, max_new_tokens) -> list of "
              "str (one call per batch)")


def _per_prompt(fn) -> bool:
    """True for ``fn(prompt)``, False for ``fn(message_lists, max_new_tokens)``; TypeError for anything else. A callable
    whose signature cannot be read (some builtins) is taken as batched."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    params = sig.parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    keyword_only = [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    name = getattr(fn, "__name__", type(fn).__name__)
    if keyword_only:
        raise TypeError(f"FunctionBackend: {name}{sig} has required keyword-only parameter(s) {keyword_only}; fn must "
                        f"be {SIGNATURES}")
    if len(required) == 1 or (not required and len(positional) == 1 and not varargs):
        return False if varargs else True
    if len(required) == 2 or (len(required) < 2 and (varargs or len(positional) >= 2)):
        return False
    raise TypeError(f"FunctionBackend: {name}{sig} takes {len(required)} required positional parameter(s); fn must be "
                    f"{SIGNATURES}")
