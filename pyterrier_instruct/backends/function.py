"""A plain Python callable as a backend: for tests, scripted answers and custom engines."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from .base import Backend, Messages, Prompt, as_messages


class FunctionBackend(Backend):
    """Wraps ``fn(list_of_message_lists, max_new_tokens) -> list of answers`` (one batch per call).

    ``tokenizer`` (optional, anything with ``.encode(str) -> list``) counts tokens over the concatenated message
    contents so callers can apply their context budget; without it counts are unknown. ``calls`` counts calls.
    """

    def __init__(self, fn: Callable[[List[List[dict]], int], Sequence[str]], *, tokenizer=None, name: Optional[str] = None):
        if not callable(fn):
            raise TypeError(f"FunctionBackend needs a callable, got {fn!r}")
        self.fn, self.tokenizer, self.name = fn, tokenizer, name or getattr(fn, "__name__", type(fn).__name__)
        self.calls = 0

    def __repr__(self) -> str:
        return f"FunctionBackend({self.name})"

    def _eq_key(self) -> tuple:
        return (id(self.fn),)

    def prepare(self, messages: Messages, fallback_template: Optional[str] = None) -> Prompt:
        messages = as_messages(messages)
        if self.tokenizer is None:
            return Prompt(messages)
        return Prompt(messages, None, list(self.tokenizer.encode("".join(m["content"] for m in messages))))

    def count(self, text: str) -> Optional[int]:
        return None if self.tokenizer is None else len(self.tokenizer.encode(text))

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        self.calls += 1
        answers = list(self.fn([[dict(m) for m in p.messages] for p in prompts], max_new_tokens))
        if len(answers) != len(prompts) or not all(isinstance(a, str) for a in answers):
            raise ValueError(f"{self!r} must return one string per prompt ({len(prompts)}), got {answers!r:.200}")
        return answers
