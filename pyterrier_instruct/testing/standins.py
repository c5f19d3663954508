"""Stand-ins for every preset's checkpoint and for the benchmarks, so that a pipeline written against the real hub ids
and dataset ids runs unchanged, offline and on CPU, in seconds:

- a tiny random model of the right architecture (:mod:`~pyterrier_instruct.testing.models`) installed at each hub id of
  :data:`MODELS` under ``<root>/<hub id>/``, where ``$PYTERRIER_INSTRUCT_MODELS`` makes every loader find it
  (``pti.MonoT5()``, ``pti.Rank1()``, ``pti.Qwen3Embedding.four_b()`` … load "their" checkpoint through the same
  ``from_pretrained`` path as the real one);
- the miniature benchmarks in the released layouts (:mod:`~pyterrier_instruct.testing.layouts`) under a data root,
  where ``$PYTERRIER_INSTRUCT_DATA`` makes ``pti.load_dataset("followir/robust04")`` and the other ids read them.

Scores and rankings from stand-ins are meaningless; they test that a pipeline runs, not what it measures. A new model
family whose docs name a default checkpoint adds one row to :data:`MODELS` (tests/test_testing.py checks that every
preset's id is here).
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
    "castorini/rank_vicuna_7b_v1": "llama",
    "castorini/first_mistral": "zephyr",
    "liuwenhan/reasonrank-7B": "qwen-chat",
    "liuwenhan/reasonrank-32B": "qwen-chat",
    # setwise: Flan-T5 (Setwise's default) and Rank-R1's LoRA adapters on Qwen2.5-Instruct
    "google/flan-t5-large": "t5",
    **{f"Qwen/Qwen2.5-{size}-Instruct": "qwen-chat" for size in ("3B", "7B", "14B")},
    **{f"ielabgroup/Rank-R1-{size}-v0.1": f"lora:Qwen/Qwen2.5-{size}-Instruct" for size in ("3B", "7B", "14B")},
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


def _lora(base_id: str) -> Callable[[Path, Callable[[str], str]], str]:
    return lambda folder, built: models.tiny_lora(folder, built(MODELS[base_id]), base_id)


#: kind → builder(folder, built) of a tiny model folder; ``built(kind)`` is the folder of another kind (built once).
BUILDERS: Dict[str, Callable] = {
    "t5": lambda folder, built: models.tiny_t5(folder),
    "mistral": lambda folder, built: models.tiny_mistral(folder),
    "bert": lambda folder, built: models.tiny_bert(folder),
    "llama": lambda folder, built: models.tiny_llama(folder),
    "zephyr": lambda folder, built: models.with_chat_template(built("mistral"), Path(folder) / "zephyr",
                                                              models.ZEPHYR_TEMPLATE),
    "qwen3-reranker": lambda folder, built: models.tiny_qwen(folder, "reranker"),
    "qwen3-embedding": lambda folder, built: models.tiny_qwen(folder, "embedding"),
    "qwen2": lambda folder, built: models.tiny_qwen(folder, "qwen2"),
    "qwen-chat": lambda folder, built: models.with_chat_template(built("qwen2"), Path(folder) / "qwen-chat",
                                                                 models.QWEN_CHAT_TEMPLATE),
    "rank1": lambda folder, built: models.tiny_rank1(folder),
    **{kind: _lora(kind.split(":", 1)[1]) for kind in set(MODELS.values()) if kind.startswith("lora:")},
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
    ids += [MODELS[i].split(":", 1)[1] for i in ids if MODELS.get(i, "").startswith("lora:")]  # an adapter's base
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
    """Writes the miniature benchmarks in their released layouts under ``root`` (once; kept afterwards) and returns it;
    point ``$PYTERRIER_INSTRUCT_DATA`` at it. The bundled ``instruct-mini`` and ``infosearch-mini`` need nothing."""
    root = Path(root)
    with _lock(root):
        if not (root / ".done").exists():
            layouts.write(root)
            (root / ".done").write_text("pyterrier_instruct.testing.layouts")
    return str(root)


def install(root: Union[str, Path, None] = None, models: Optional[Iterable[str]] = None,
            datasets: bool = True) -> Dict[str, str]:
    """Installs stand-ins under ``root`` (default :func:`default_root`): the models of ``models`` (hub ids; default
    all of :data:`MODELS`) in ``root/models`` and, with ``datasets``, the miniature benchmarks in ``root/data``; then
    sets ``$PYTERRIER_INSTRUCT_MODELS`` and ``$PYTERRIER_INSTRUCT_DATA`` in this process (and the processes it starts)
    so that the real ids resolve to them. Returns those variables. Call it before the first model loads or dataset
    opens."""
    root = Path(root) if root is not None else default_root()
    env = {MODELS_ENV: str(root / "models")}
    install_models(root / "models", models)
    if datasets:
        env[ENV_ROOT] = install_datasets(root / "data")
    os.environ.update(env)
    return env
