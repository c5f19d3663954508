"""Text-generation backends behind one interface (:class:`~pyterrier_instruct.backends.base.Backend`): HF transformers,
vLLM, OpenAI-compatible HTTP servers and plain callables. Each imports its library only when it first runs. Judges use
``generate_logprobs`` (per-token top log-probabilities, :class:`Generation`)."""
from __future__ import annotations

from .base import Backend, BackendUnavailable, Continuation, Generation, Prompt, RequestError, TokenizerBackend
from .function import FunctionBackend
from .hf import HFBackend
from .openai import OpenAIBackend
from .vllm import VLLMBackend

KINDS = {"hf": HFBackend, "vllm": VLLMBackend}


def make_backend(backend, model: str) -> Backend:
    """A :class:`Backend` from ``'hf'``/``'vllm'`` + a model id, a Backend (returned as it is) or a callable."""
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, str):
        if backend not in KINDS:
            raise ValueError(f"backend must be one of {sorted(KINDS)}, a Backend or a callable, got {backend!r}")
        return KINDS[backend](model)
    if callable(backend):
        return FunctionBackend(backend)
    raise TypeError(f"backend must be one of {sorted(KINDS)}, a Backend or a callable, got {backend!r}")


__all__ = ["Backend", "BackendUnavailable", "RequestError", "Generation", "Prompt", "TokenizerBackend",
           "FunctionBackend", "HFBackend", "OpenAIBackend", "VLLMBackend", "make_backend", "Continuation"]
