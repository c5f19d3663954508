"""Stand-ins that let a page of the documentation run as written, offline and on CPU (tests/test_docs.py):

- tiny random models installed where a hub id resolves, ``$PYTERRIER_INSTRUCT_MODELS/<hub id>/`` (``_hub.model_path``),
  so ``pti.MonoT5()`` or ``pti.Promptriever()`` load "their" checkpoint through the public ``from_pretrained`` path;
- the vLLM stand-in (tests/fake_vllm.py) importable as ``vllm``;
- an OpenAI-compatible chat server on 127.0.0.1 (tests/stubs.py) that answers listwise prompts with a permutation and
  IFIR judge prompts with a score and its logprobs, at ``$OPENAI_BASE_URL`` and ``$VLLM_BASE_URL``.

The datasets come from the miniature snapshots in the official layouts at ``$PYTERRIER_INSTRUCT_DATA`` (tests/conftest.py).
A new model family whose docs name a default checkpoint adds one row to :data:`MODELS`.
"""
from __future__ import annotations

import math
import re
import shutil
from pathlib import Path
from typing import Callable, Dict, Iterable

import tiny_models
from stubs import ZEPHYR_TEMPLATE, ChatServer, with_chat_template

#: hub id → the tiny model that stands in for it (a key of :data:`BUILDERS`). Every id a docs block loads, by name or
#: as a preset's default, is here.
MODELS: Dict[str, str] = {
    "castorini/monot5-base-msmarco-10k": "t5",
    "jhu-clsp/FollowIR-7B": "mistral",
    "castorini/rank_zephyr_7b_v1_full": "zephyr",
    "meta-llama/Llama-2-7b-hf": "llama",
    "samaya-ai/promptriever-llama2-7b-v1": "lora:meta-llama/Llama-2-7b-hf",
    "jhu-clsp/rank1-7b": "rank1",
    "jhu-clsp/rank1-14b-awq": "rank1",
    "google/flan-t5-large": "t5",
    "Qwen/Qwen2.5-7B-Instruct": "qwen-chat",
    "ielabgroup/Rank-R1-7B-v0.1": "lora:Qwen/Qwen2.5-7B-Instruct",
}

#: Qwen2.5's ChatML, enough of it for the tiny Qwen models (system/user/assistant turns, the generation prompt)
QWEN_CHAT_TEMPLATE = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
                      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def _lora(base_id: str) -> Callable[[Path, Callable[[str], str]], str]:
    return lambda root, built: tiny_models.tiny_lora(root, built(MODELS[base_id]), base_id)


#: kind → builder(folder, built) of a tiny model folder; ``built(kind)`` is the folder of another kind (built once).
BUILDERS: Dict[str, Callable] = {
    "t5": lambda root, built: tiny_models.tiny_t5(root),
    "mistral": lambda root, built: tiny_models.tiny_mistral(root),
    "bert": lambda root, built: tiny_models.tiny_bert(root),
    "llama": lambda root, built: tiny_models.tiny_llama(root),
    "zephyr": lambda root, built: with_chat_template(built("mistral"), Path(root) / "zephyr", ZEPHYR_TEMPLATE),
    "lora:meta-llama/Llama-2-7b-hf": _lora("meta-llama/Llama-2-7b-hf"),
    "rank1": lambda root, built: tiny_models.tiny_rank1(root),
    "qwen-chat": lambda root, built: with_chat_template(tiny_models.tiny_qwen(Path(root) / "base", "qwen2"), Path(root) / "qwen", QWEN_CHAT_TEMPLATE),
    "lora:Qwen/Qwen2.5-7B-Instruct": _lora("Qwen/Qwen2.5-7B-Instruct"),
}


def install_models(root: Path, ids: Iterable[str] = tuple(MODELS)) -> Dict[str, str]:
    """Builds each kind ``ids`` need once (under ``root/.build``) and copies it to ``root/<hub id>/``; returns
    ``{hub id: folder}``. Point ``$PYTERRIER_INSTRUCT_MODELS`` at ``root``."""
    root = Path(root)
    kinds: Dict[str, str] = {}

    def built(kind: str) -> str:
        if kind not in kinds:
            kinds[kind] = BUILDERS[kind](root / ".build" / re.sub(r"\W", "_", kind), built)
        return kinds[kind]

    out = {}
    for hub_id in ids:
        target = root / hub_id
        if not target.exists():
            shutil.copytree(built(MODELS[hub_id]), target)
        out[hub_id] = str(target)
    return out


def _judge(body: dict) -> tuple:
    """``{"score": 2, "reason": "stand-in"}`` with OpenAI-style logprobs (the score position: 2 → .7, 1 → .2, 3 → .1)."""
    table = {"2": .7, "1": .2, "3": .1}
    tokens = ['{"', "score", '":', " ", "2", ",", ' "', "reason", '":', ' "', "stand-in", '"}']
    entries = []
    for t in tokens:
        cands = sorted(table.items(), key=lambda kv: -kv[1]) if t == "2" else [(t, 1.0)]
        tops = [{"token": c, "logprob": math.log(p), "bytes": list(c.encode())} for c, p in cands[:body.get("top_logprobs") or 1]]
        entries.append({"token": t, "logprob": tops[0]["logprob"], "bytes": list(t.encode()), "top_logprobs": tops})
    return 200, {"id": "stand-in", "object": "chat.completion", "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(tokens)}, "finish_reason": "stop",
                              "logprobs": {"content": entries}}]}


def chat_answer(body: dict) -> tuple:
    """A judge request (``logprobs``) gets :func:`_judge`; a listwise prompt ("… N passages …") the reverse permutation."""
    if body.get("logprobs"):
        return _judge(body)
    text = " ".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    found = re.search(r"(\d+) passages", text)
    n = int(found.group(1)) if found else 1
    return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": " > ".join(f"[{i}]" for i in range(n, 0, -1))},
                              "finish_reason": "stop"}]}


def chat_server() -> ChatServer:
    return ChatServer(chat_answer)
