"""A plain Python callable as a backend: for tests, scripted answers and custom engines."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Union

from .base import Backend, Generation, Messages, Prompt, as_messages, check_logprob_args


class FunctionBackend(Backend):
    """Wraps ``fn(list_of_message_lists, max_new_tokens) -> list of answers`` (one batch per call).

    ``tokenizer`` (optional, anything with ``.encode(str) -> list``) counts tokens over the concatenated message
    contents so callers can apply their context budget; without it counts are unknown. ``calls`` counts calls.

    ``logprobs`` (optional; LLM judges): ``logprobs(list_of_message_lists, max_new_tokens=, top_logprobs=,
    temperature=, top_p=) -> list``, one entry per prompt: a :class:`~pyterrier_instruct.backends.base.Generation`, a
    ``(text, tokens, top_logprobs)`` triple (each position's candidates a ``{token: logprob}`` dict or pairs), or an
    Exception instance for a request that failed. ``fn`` may be ``None`` when only ``logprobs`` is used.
    """

    def __init__(self, fn: Optional[Callable[[List[List[dict]], int], Sequence[str]]] = None, *, tokenizer=None,
                 name: Optional[str] = None, logprobs: Optional[Callable[..., Sequence]] = None):
        if fn is None and logprobs is None:
            raise TypeError("FunctionBackend needs a callable fn (answers) and/or logprobs= (per-token log-probabilities)")
        for arg, value in (("fn", fn), ("logprobs", logprobs)):
            if value is not None and not callable(value):
                raise TypeError(f"FunctionBackend needs a callable {arg}, got {value!r}")
        source = fn if fn is not None else logprobs
        self.fn, self.logprobs, self.tokenizer = fn, logprobs, tokenizer
        self.name = name or getattr(source, "__name__", type(source).__name__)
        self.calls = 0

    def __repr__(self) -> str:
        return f"FunctionBackend({self.name})"

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
        self.calls += 1
        answers = list(self.fn([[dict(m) for m in p.messages] for p in prompts], max_new_tokens))
        if len(answers) != len(prompts) or not all(isinstance(a, str) for a in answers):
            raise ValueError(f"{self!r} must return one string per prompt ({len(prompts)}), got {answers!r:.200}")
        return answers

    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int, temperature: float = 0.0,
                          top_p: float = 1.0, return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        if self.logprobs is None:
            raise ValueError(f"{self!r} has no logprobs function; pass FunctionBackend(..., logprobs=callable) to use it as a judge")
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        self.calls += 1
        answers = list(self.logprobs([[dict(m) for m in p.messages] for p in prompts], max_new_tokens=int(max_new_tokens),
                                        top_logprobs=int(top_logprobs), temperature=float(temperature), top_p=float(top_p)))
        if len(answers) != len(prompts):
            raise ValueError(f"{self!r}: logprobs returned {len(answers)} entries for {len(prompts)} prompts")
        out: List[Union[Generation, Exception]] = []
        for a in answers:
            if isinstance(a, Exception):
                if not return_exceptions:
                    raise a
                out.append(a)
            elif isinstance(a, Generation):
                out.append(a)
            elif isinstance(a, (tuple, list)) and len(a) == 3:
                out.append(Generation.of(*a))
            else:
                raise ValueError(f"{self!r}: logprobs must return a Generation, a (text, tokens, top_logprobs) triple or an "
                                 f"Exception per prompt, got {a!r:.200}")
        return out
