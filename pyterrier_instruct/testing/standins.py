"""Stand-ins for every preset's checkpoint and for the benchmarks: a pipeline written against the real hub and dataset
ids runs unchanged, offline and on CPU, in seconds (docs/testing.md).

Tiny random models of the right architecture at each hub id of :data:`MODELS` under ``$PYTERRIER_INSTRUCT_MODELS``,
and the miniature benchmarks (:mod:`~pyterrier_instruct.testing.layouts`) under ``$PYTERRIER_INSTRUCT_DATA``. Their
scores are meaningless. A model family whose docs name a default checkpoint adds a row to :data:`MODELS`.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Dict, Iterable, Optional, Union

from .._hub import MODELS_ENV, STAND_IN_MARKER
from ..datasets.source import ENV_ROOT
from . import layouts, models

__all__ = ["MODELS", "BUILDERS", "STANDINS_ENV", "install", "install_models", "install_datasets", "default_root"]

#: A folder that keeps the stand-ins between runs (:func:`install`'s default ``root``).
STANDINS_ENV = "PYTERRIER_INSTRUCT_STANDINS"

_RANK1 = ("0.5b", "1.5b", "3b", "7b", "14b", "32b", "mistral-2501-24b", "llama3-8b")
_RANK1_AWQ = ("7b", "14b", "32b", "mistral-2501-24b", "llama3-8b")

#: hub id → the tiny model that stands in for it (a key of :data:`BUILDERS`): every checkpoint a family's constructor,
#: a ``@preset`` or a LoRA adapter's base names, and the checkpoints of the reproduction tables.
MODELS: Dict[str, str] = {
    # pointwise: monoT5 and T5 prompts
    "castorini/monot5-base-msmarco-10k": "t5",
    "castorini/monot5-3b-msmarco-10k": "t5",
    "google/flan-t5-base": "t5",
    "unicamp-dl/mt5-base-mmarco-v2": "t5",
    # pointwise: causal true/false rerankers
    "jhu-clsp/FollowIR-7B": "mistral",
    "mistralai/Mistral-7B-Instruct-v0.2": "mistral",
    "GritLM/GritLM-7B": "mistral",
    "meta-llama/Llama-2-7b-chat-hf": "llama",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama",
    # pointwise: cross-encoders
    "castorini/monobert-large-msmarco": "bert",
    "facebook/tart-full-flan-t5-xl": "bert",
    # pointwise: 2025 families
    "Qwen/Qwen3-Reranker-0.6B": "qwen3-reranker",
    "Qwen/Qwen3-Reranker-4B": "qwen3-reranker",
    "Qwen/Qwen3-Reranker-8B": "qwen3-reranker",
    "mixedbread-ai/mxbai-rerank-base-v2": "qwen2",
    "mixedbread-ai/mxbai-rerank-large-v2": "qwen2",
    **{f"jhu-clsp/rank1-{name}": "rank1" for name in _RANK1},
    **{f"jhu-clsp/rank1-{name}-awq": "rank1" for name in _RANK1_AWQ},
    # listwise
    "castorini/rank_zephyr_7b_v1_full": "zephyr",
    "HuggingFaceH4/zephyr-7b-beta": "zephyr",
    "castorini/rank_vicuna_7b_v1": "vicuna",
    "castorini/first_mistral": "zephyr",
    "liuwenhan/reasonrank-7B": "qwen-chat",
    "liuwenhan/reasonrank-32B": "qwen-chat",
    # setwise: Flan-T5 (Setwise's default) and Rank-R1's LoRA adapters on Qwen2.5-Instruct
    "google/flan-t5-large": "t5",
    **{f"Qwen/Qwen2.5-{size}-Instruct": "qwen-chat" for size in ("3B", "7B", "14B")},
    **{f"ielabgroup/Rank-R1-{size}-v0.1": f"lora-lm:Qwen/Qwen2.5-{size}-Instruct" for size in ("3B", "7B", "14B")},
    # dense: LoRA adapters and their bases
    "meta-llama/Llama-2-7b-hf": "llama",
    "meta-llama/Meta-Llama-3.1-8B": "llama",
    "mistralai/Mistral-7B-v0.1": "mistral",
    "samaya-ai/promptriever-llama2-7b-v1": "lora:meta-llama/Llama-2-7b-hf",
    "samaya-ai/RepLLaMA-reproduced": "lora:meta-llama/Llama-2-7b-hf",
    "castorini/repllama-v1-7b-lora-passage": "lora:meta-llama/Llama-2-7b-hf",
    "samaya-ai/promptriever-llama3.1-8b-v1": "lora:meta-llama/Meta-Llama-3.1-8B",
    "samaya-ai/promptriever-llama3.1-8b-instruct-v1": "lora:meta-llama/Meta-Llama-3.1-8B-Instruct",
    "samaya-ai/promptriever-mistral-v0.1-7b-v1": "lora:mistralai/Mistral-7B-v0.1",
    # dense: single-checkpoint encoders
    "intfloat/e5-mistral-7b-instruct": "mistral",
    "Qwen/Qwen3-Embedding-0.6B": "qwen3-embedding",
    "Qwen/Qwen3-Embedding-4B": "qwen3-embedding",
    "Qwen/Qwen3-Embedding-8B": "qwen3-embedding",
    "sentence-transformers/all-MiniLM-L6-v2": "bert",
    "intfloat/e5-base-v2": "bert",
    "intfloat/e5-large-v2": "bert",
}


#: A stand-in tokenizer's vocabulary: a passage takes about as many tokens as with the real tokenizer (1.5 per word),
#: so prompts, truncation and run time are the real family's.
VOCAB = 4000


def _adapter(kind: str):
    """``(base hub id, causal)`` of a LoRA kind (``lora:<base>``: a dense encoder's; ``lora-lm:<base>``: a causal LM's),
    else None."""
    prefix, _, base = kind.partition(":")
    return (base, prefix == "lora-lm") if prefix in ("lora", "lora-lm") else None


def _lora(kind: str) -> Callable[[Path, Callable[[str], str]], str]:
    base_id, causal = _adapter(kind)
    return lambda folder, built: models.tiny_lora(folder, built(MODELS[base_id]), base_id, causal=causal)


def _chat(base: str, template: Optional[str] = None) -> Callable[[Path, Callable[[str], str]], str]:
    """A generating family's stand-in: a copy of ``base`` that answers EOS at once (``models.stops_at_once``), with the
    chat ``template``."""
    def build(folder, built):
        copy = models.stops_at_once(built(base), Path(folder) / "chat")
        return models.with_chat_template(copy, Path(folder) / "templated", template) if template else copy
    return build


#: kind → builder(folder, built) of a tiny model folder; ``built(kind)`` is the folder of another kind (built once).
BUILDERS: Dict[str, Callable] = {
    "t5": lambda folder, built: models.tiny_t5(folder, vocab_size=VOCAB),
    "mistral": lambda folder, built: models.tiny_mistral(folder, vocab_size=VOCAB, max_position_embeddings=32768),
    "bert": lambda folder, built: models.tiny_bert(folder, vocab_size=VOCAB),
    "llama": lambda folder, built: models.tiny_llama(folder, vocab_size=VOCAB),
    "zephyr": _chat("mistral", models.ZEPHYR_TEMPLATE),
    "vicuna": _chat("llama"),
    "qwen3-reranker": lambda folder, built: models.tiny_qwen(folder, "reranker", vocab_size=VOCAB),
    "qwen3-embedding": lambda folder, built: models.tiny_qwen(folder, "embedding", vocab_size=VOCAB),
    "qwen2": lambda folder, built: models.tiny_qwen(folder, "qwen2", vocab_size=VOCAB, max_position_embeddings=32768),
    "qwen-chat": _chat("qwen2", models.QWEN_CHAT_TEMPLATE),
    "rank1": lambda folder, built: models.tiny_rank1(folder),
    **{kind: _lora(kind) for kind in set(MODELS.values()) if _adapter(kind)},
}


def default_root() -> Path:
    """``$PYTERRIER_INSTRUCT_STANDINS``, else ``<tempdir>/pyterrier-instruct-standins`` (kept between runs)."""
    return Path(os.environ.get(STANDINS_ENV) or Path(tempfile.gettempdir()) / "pyterrier-instruct-standins")


def _lock(root: Path):
    from filelock import FileLock
    root.mkdir(parents=True, exist_ok=True)
    return FileLock(str(root / ".lock"))


def install_models(root: Union[str, Path], ids: Optional[Iterable[str]] = None) -> Dict[str, str]:
    """Installs the stand-in of each hub id in ``ids`` (default: all of :data:`MODELS`) at ``root/<hub id>/`` and
    returns ``{hub id: folder}``; point ``$PYTERRIER_INSTRUCT_MODELS`` at ``root``. A LoRA adapter's base comes with it.
    Each kind is built once (under ``root/.build``); ids already installed are kept, so a second call costs nothing.
    Safe to call from several processes at once (a file lock). Needs the ``[hf]`` extra."""
    root = Path(root)
    ids = list(MODELS) if ids is None else list(ids)
    ids += [_adapter(MODELS[i])[0] for i in ids if _adapter(MODELS.get(i, ""))]  # the base an adapter names
    unknown = [i for i in ids if i not in MODELS]
    if unknown:
        raise ValueError(f"no stand-in for {unknown}: pyterrier_instruct.testing.MODELS has {sorted(MODELS)}")
    kinds: Dict[str, str] = {}

    def built(kind: str) -> str:
        if kind not in kinds:
            home = root / ".build" / re.sub(r"\W", "_", kind)
            done = home / ".done"
            if not done.exists():
                shutil.rmtree(home, ignore_errors=True)
                with models.quiet():
                    folder = BUILDERS[kind](home, built)
                done.write_text(str(Path(folder).relative_to(home)))
            kinds[kind] = str(home / done.read_text())
        return kinds[kind]

    out = {}
    with _lock(root):
        for hub_id in ids:
            target = root / hub_id
            if not (target / ".done").exists():
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(built(MODELS[hub_id]), target, ignore=shutil.ignore_patterns(".done"))
                (target / ".done").write_text(MODELS[hub_id])
            marker = target / STAND_IN_MARKER  # reproduction tables label its rows [stand-in] (_hub.checkpoint_note)
            if not marker.exists():
                marker.write_text(json.dumps({"stand_in": MODELS[hub_id], "hub_id": hub_id}))
            out[hub_id] = str(target)
    return out


def install_datasets(root: Union[str, Path]) -> str:
    """Writes the miniature benchmarks in their released layouts under ``root`` (once; kept afterwards), each dataset
    folder marked as a stand-in (``_hub.STAND_IN_MARKER``: tables label it and print no published numbers beside it),
    and returns it; point ``$PYTERRIER_INSTRUCT_DATA`` at it. The bundled ``instruct-mini`` and ``infosearch-mini``
    need nothing."""
    root = Path(root)
    with _lock(root):
        if not (root / ".done").exists():
            layouts.write(root)
            (root / ".done").write_text("pyterrier_instruct.testing.layouts")
        for folder in (f for owner in layouts.OWNERS if (root / owner).is_dir() for f in (root / owner).iterdir()):
            marker = folder / STAND_IN_MARKER  # the loaders record "stand_in" in provenance; tables label it
            if folder.is_dir() and not marker.exists():
                marker.write_text(json.dumps({"stand_in": "pyterrier_instruct.testing.layouts",
                                              "dataset": folder.name}))
    return str(root)


def install(root: Union[str, Path, None] = None, models: Optional[Iterable[str]] = None,
            datasets: bool = True) -> Dict[str, str]:
    """Installs stand-ins under ``root`` (default :func:`default_root`): the models of ``models`` (hub ids; default
    all of :data:`MODELS`) in ``root/models`` and, with ``datasets``, the miniature benchmarks in ``root/data``; then
    sets ``$PYTERRIER_INSTRUCT_MODELS`` and ``$PYTERRIER_INSTRUCT_DATA`` in this process (and the processes it starts)
    so that the real ids resolve to them, and torch on one thread unless ``$OMP_NUM_THREADS`` says otherwise (tiny
    models run fastest so). Returns those two variables. Call it before the first model loads or dataset
    opens."""
    root = Path(root) if root is not None else default_root()
    env = {MODELS_ENV: str(root / "models")}
    install_models(root / "models", models)
    if datasets:
        env[ENV_ROOT] = install_datasets(root / "data")
    os.environ.update(env)
    _one_thread()
    return env


def _one_thread() -> None:
    """torch on one thread (``$OMP_NUM_THREADS=1`` unless set): the stand-ins' tensors are so small that a second
    thread only waits on the first (Setwise's stand-in run on a busy 2-core machine: 13 s on one thread, 90 s on
    two)."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    import sys
    if "torch" in sys.modules:  # read at import: set it here too
        sys.modules["torch"].set_num_threads(1)
