"""Rank-R1, setwise reranking with reasoning (Zhuang et al., 2025, "Rank-R1: Enhancing Reasoning in LLM-based Document
Rerankers via Reinforcement Learning"; ielab/llm-rankers at b36517bf17a3956dc56c4c967f972d02390b1cdd,
``llmrankers/setwise.py`` lines 406-553, ``RankR1SetwiseLlmRanker``, and ``Rank-R1/prompts/prompt_setwise-R1.toml``):
the model reasons in ``<think>`` and answers the label of the most relevant of up to 20 documents in
``<answer>[i]</answer>``; heapsort (or bubblesort) over those answers, as :class:`~pyterrier_instruct.setwise.Setwise`.

As the reference: the system and user messages (the toml's ``prompt_system``/``prompt_user``; the documents as ``[i]
text`` joined by newlines, line 483), greedy generation up to 2,048 tokens (lines 445-446), the answer read with the
toml's ``pattern`` from the lower-cased completion and kept only when it is exactly a shown label (lines 513-533), the
documents shuffled before every comparison (``random.sample``, line 469; the labels stay in order), votes over
``num_permutation`` shuffles with random tie-breaks, no usable answer → the first document wins. Ours: the shuffles come
from a ``random.Random(seed)`` created per query (the reference draws from the process's ``random``, seeded once with
929 at import, so its shuffles depend on every query ranked before), which gives the reference's shuffles of a query
ranked first after import."""
from __future__ import annotations

import random
import re
from collections import Counter
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

from .._config import preset
from .._hub import from_pretrained, model_path
from .._optional import require
from ..backends import HFBackend, TokenizerBackend, VLLMBackend
from ..backends.base import REASONING_CALLS
from ..dense.encoder import adapter_base, merge_adapter
from ..prompts import fill
from .base import SetwiseBase
from .sort import check

__all__ = ["RankR1"]

#: ``prompt_setwise-R1.toml`` (the v0.1 checkpoints' prompt): ``prompt_system``, ``prompt_user``, ``pattern``
SYSTEM = ("A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
          "assistant first thinks about the reasoning process in the mind and then provides the user with the answer. "
          "The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, "
          "respectively, i.e., <think> reasoning process here </think> <answer> answer here </answer>.")
USER = ('Given the query: "{query}", which of the following documents is most relevant?\n{docs}\nAfter completing the '
        'reasoning process, please provide only the label of the most relevant document to the query, enclosed in '
        'square brackets, within the answer tags. For example, if the third document is the most relevant, the answer '
        'should be: <think> reasoning process here </think> <answer>[3]</answer>.')
PATTERN = r"<think>.*?</think>\s*<answer>(.*?)</answer>"
#: the labels (line 407): ``[1]`` … ``[20]``
LABELS = tuple(f"[{i + 1}]" for i in range(20))
#: the released checkpoints (Rank-R1 README): LoRA adapters on Qwen2.5-{3,7,14}B-Instruct
CHECKPOINTS: Dict[str, str] = {size: f"ielabgroup/Rank-R1-{size.upper()}-v0.1" for size in ("3b", "7b", "14b")}


def parse_answer(completion: str, labels) -> Optional[str]:
    """The reference's answer: the toml pattern's group on the lower-cased completion, stripped, if it is one of
    ``labels`` (exactly, e.g. ``[3]``), else None."""
    match = re.search(PATTERN, completion.lower(), re.DOTALL)
    answer = match.group(1).strip() if match else None
    return answer if answer in labels else None


class _AdapterHFBackend(HFBackend):
    """:class:`~pyterrier_instruct.backends.HFBackend` that also loads a peft LoRA adapter: its base (``base_model`` or
    the adapter's ``base_model_name_or_path``) with the adapter merged, and the base's tokenizer."""
    _identity = HFBackend._identity + ("base_model",)

    def __init__(self, model_name_or_path: str, *, base_model: Optional[str] = None, batch_size: int = 8,
                 device: Optional[str] = None, dtype="auto", chat_template: Optional[str] = None, store=None):
        super().__init__(model_name_or_path, batch_size=batch_size, device=device, dtype=dtype,
                         chat_template=chat_template, store=store)
        self.base_model = base_model
        self._base = False  # not looked up yet

    def _base_of(self) -> Optional[str]:
        if self._base is False:
            found = adapter_base(model_path(self.model_name_or_path))
            self._base = (self.base_model or found) if found else None
        return self._base

    def _tokenizer(self):
        if self._tok is None and self._base_of() is not None:
            transformers = require("transformers", "hf")
            tok = from_pretrained(transformers.AutoTokenizer, self._base_of())
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            self._tok = tok
        return super()._tokenizer()

    def _load(self):
        base = self._base_of()
        if self._model is None and base is not None:
            from .._torch import hf_setup
            transformers, self._device, dtype = hf_setup(self.device, self.dtype)
            model = from_pretrained(transformers.AutoModelForCausalLM, base, dtype=dtype)
            model = merge_adapter(model, self.model_name_or_path)
            self._model = model.to(self._device).eval()
        return super()._load()


class RankR1(SetwiseBase):
    """Rank-R1: setwise reasoning over up to 20 documents per comparison.

    Args:
        model_name_or_path: a released adapter (``ielabgroup/Rank-R1-7B-v0.1``, the default; :meth:`released` names the
            3B and 14B ones) or a checkpoint with the adapter merged.
        backend: ``'hf'`` (merges a LoRA adapter into its base), ``'vllm'`` (a merged checkpoint) or a TokenizerBackend.
        backend_options: keyword arguments of the backend built (``'hf'`` also takes ``base_model``).
        method, num_child, k: as :class:`~pyterrier_instruct.setwise.Setwise`; the reference's 19 children and k = 10.
        num_permutation: shuffles per comparison, the winner by vote (1).
        max_output_tokens: the reasoning budget in generated tokens (2,048, the library's).
        seed: the per-query shuffle seed (929, the reference's).
        query_length, passage_length: tokens kept of the query and of ``"{title} {text}"`` (README runs: 32 and 512).
        text_field, title_field: passage columns.
        instruction: used when the input has no ``instruction`` column (``f"{query} {instruction}"``).
        verbose: a progress bar over the queries.

    Output: as :class:`~pyterrier_instruct.setwise.Setwise`, plus ``reasoning`` (the completion of the last comparison
    the document won). Details: docs/rerankers.md.
    """
    ANSWERS, UNPARSED = "generations", "held no <answer> naming a shown passage"
    UNPARSED_THEN = "such an answer casts no vote; a comparison without votes goes to its first passage"
    schematic = {"label": "Rank-R1"}
    extra_outputs = ("reasoning",)

    def __init__(self, model_name_or_path: str = CHECKPOINTS["7b"], *, backend="hf",
                 backend_options: Optional[dict] = None, method: str = "heapsort", num_child: int = 19, k: int = 10,
                 num_permutation: int = 1, max_output_tokens: int = 2048, seed: int = 929,
                 query_length: Optional[int] = 32, passage_length: Optional[int] = 512, text_field: str = "text",
                 title_field: Optional[str] = "title", instruction: str = "", verbose: bool = True):
        check(method, num_child, k, "RankR1")
        if int(num_child) + 1 > len(LABELS):
            raise ValueError(f"RankR1: at most {len(LABELS)} documents per comparison (num_child <= "
                             f"{len(LABELS) - 1}), got num_child={num_child!r}")
        if int(num_permutation) < 1 or int(max_output_tokens) < 1:
            raise ValueError("RankR1: num_permutation and max_output_tokens must be at least 1, got "
                             f"{num_permutation!r}, {max_output_tokens!r}")
        if isinstance(backend, str):
            if backend not in ("hf", "vllm"):
                raise ValueError(f"RankR1: backend must be 'hf', 'vllm' or a TokenizerBackend, got {backend!r}")
            factory = _AdapterHFBackend if backend == "hf" else VLLMBackend
            built = factory(model_name_or_path, **(backend_options or {}))
        else:
            if model_name_or_path != CHECKPOINTS["7b"] or backend_options:
                raise ValueError(f"RankR1: backend is a ready {type(backend).__name__}; pass the model and its options "
                                 "to that backend")
            built = backend
        missing = [m for m in REASONING_CALLS if not callable(getattr(built, m, None))]
        if not isinstance(built, TokenizerBackend) or missing:
            raise TypeError("RankR1 needs a backend with a tokenizer and generate_until ('hf', 'vllm', HFBackend, "
                            f"VLLMBackend), got {type(built).__name__}")
        self._setup(method, num_child, k, query_length, passage_length)
        self.model_name_or_path, self.backend, self.backend_options = model_name_or_path, built, backend_options
        self.num_permutation, self.max_output_tokens = int(num_permutation), int(max_output_tokens)
        self.seed, self.text_field, self.title_field = int(seed), text_field, title_field
        self.instruction, self.verbose = instruction, verbose
        self._rngs: Dict[int, random.Random] = {}
        self._wins: Dict[int, str] = {}

    @preset
    def released(cls, size: str = "7b", **kwargs) -> "RankR1":
        """``ielabgroup/Rank-R1-{3B,7B,14B}-v0.1``: ``size`` is ``'3b'``, ``'7b'`` or ``'14b'``."""
        if size not in CHECKPOINTS:
            raise ValueError(f"RankR1.released: size must be one of {list(CHECKPOINTS)}, got {size!r}")
        return cls(CHECKPOINTS[size], **kwargs)

    def _tokenizer(self):
        return self.backend.tokenizer()

    # -- prompts ---------------------------------------------------------------------------------------------------
    def messages(self, query: str, passages: List[str]) -> List[dict]:
        """The reference's chat for documents already in their shown order."""
        docs = "\n".join(f"{c} {t}" for c, t in zip(LABELS, passages))
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": fill(USER, query=query, docs=docs)}]

    def input_ids(self, messages: List[dict]) -> List[int]:
        """vLLM ``LLM.chat``'s prompt: the chat template and generation prompt, tokenised without special tokens."""
        tok = self._tokenizer()
        text = tok.apply_chat_template(messages, chat_template=getattr(self.backend, "chat_template", None),
                                       tokenize=False, add_generation_prompt=True)
        return list(tok(text, add_special_tokens=False)["input_ids"])

    # -- comparisons -----------------------------------------------------------------------------------------------
    def _begin(self, work: pd.DataFrame, lists: List[List[int]]) -> None:
        self._rngs = {q: random.Random(self.seed) for q in range(len(lists))}
        self._wins = {}
        self._reasoning = [""] * len(work)

    def _compare(self, items: List[tuple]) -> List[int]:
        jobs, refs = [], []
        for q, query, passages, docs in items:
            rng = self._rngs[q]
            for _ in range(self.num_permutation):
                shown = rng.sample(list(range(len(passages))), len(passages))
                refs.append(shown)
                jobs.append(self.input_ids(self.messages(query, [passages[i] for i in shown])))
        runs = self.backend.generate_until(jobs, max_new_tokens=self.max_output_tokens, stop=(), top_logprobs=1)
        self.stats["generations"] += len(runs)
        self.stats["prompt_tokens"] += sum(map(len, jobs))
        self.stats["completion_tokens"] += sum(len(r.token_ids) for r in runs)
        wins = []
        for n, (q, _, passages, docs) in enumerate(items):
            votes, texts = [], {}
            for p in range(n * self.num_permutation, (n + 1) * self.num_permutation):
                answer = parse_answer(runs[p].text, LABELS[:len(passages)])
                if answer is None:
                    self.stats["invalid"] += 1
                    continue
                win = refs[p][LABELS.index(answer)]
                votes.append(win)
                texts.setdefault(win, runs[p].text)
            if not votes:
                wins.append(0)
                continue
            counts = Counter(votes)
            top = max(counts.values())
            best = [c for c, m in counts.items() if m == top]
            win = best[0] if len(best) == 1 else self._rngs[q].choice(best)
            self._reasoning[docs[win]] = texts[win]
            wins.append(win)
        return wins

    def _skipped(self, q: int, docs: List[int]) -> None:
        for _ in range(self.num_permutation):  # the reference shuffles (and asks) a comparison of one document too
            self._rngs[q].sample(range(len(docs)), len(docs))

    def _finish(self, scores: np.ndarray):
        return scores, {"reasoning": self._reasoning}
