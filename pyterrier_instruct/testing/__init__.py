"""Stand-ins for testing pipelines without weights, a GPU, an API key or the benchmark files (docs/testing.md).

:func:`install` puts a tiny random model of the right architecture at every preset's hub id and the miniature
benchmarks at their dataset ids, and points the package at them; a pipeline written against the real ids then runs
as written, offline and on CPU, in seconds. :func:`chat_server` is an OpenAI-compatible server on 127.0.0.1 that answers
listwise prompts and IFIR judge prompts. Nothing here is imported by ``import pyterrier_instruct``, and nothing here
imports torch until a model is built (the ``[hf]`` extra)."""
from .server import ChatServer, chat_answer, chat_server
from .standins import BUILDERS, MODELS, STANDINS_ENV, default_root, install, install_datasets, install_models

__all__ = ["install", "install_models", "install_datasets", "default_root", "MODELS", "BUILDERS", "STANDINS_ENV",
           "chat_server", "chat_answer", "ChatServer"]
