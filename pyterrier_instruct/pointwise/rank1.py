"""rank1, a reasoning reranker (Weller et al., 2025, "Rank1: Test-Time Compute for Reranking in Information Retrieval";
orionw/rank1 at 30585c2f3166b3df03e3b8f2d496d6dc5db68a9b, ``rank1.py``): the model thinks greedily after ``<think>``
until ``</think> true``/``</think> false``, and the score is p(true) from the last step's top-20 log-probabilities;
reasoning that is unfinished (the budget ran out, or the answer tokens are not in that top 20) is cut after its last
sentence, closed with ``</think>`` and answered in one step restricted to the two answer tokens.

Generation goes through two backend calls (:meth:`~pyterrier_instruct.backends.HFBackend.generate_until`,
:meth:`~pyterrier_instruct.backends.HFBackend.next_token_logprobs`) shaped after the vLLM ``SamplingParams``
rank1 uses, so any backend that implements them runs rank1.
"""
from __future__ import annotations

import importlib.util
import math
from collections import Counter
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from ..base import InstructReranker
from .._config import preset
from ..backends import Backend, HFBackend, TokenizerBackend
from ..backends.base import REASONING_CALLS
from ..instructions import QuerySlot
from ..listwise.reranker import BackendLike, _family_backend
from ..prompts import RANK1, fill

__all__ = ["Rank1"]

#: The released checkpoints (orionw/rank1 README): name → hub id; the ``-awq`` quantisations exist for AWQ_SIZES.
CHECKPOINTS: Dict[str, str] = {name: f"jhu-clsp/rank1-{name}" for name in
                               ("0.5b", "1.5b", "3b", "7b", "14b", "32b", "mistral-2501-24b", "llama3-8b")}
AWQ_SIZES: Tuple[str, ...] = ("7b", "14b", "32b", "mistral-2501-24b", "llama3-8b")
#: rank1's ``SamplingParams(logprobs=20)``: the answer tokens must be among the last step's 20 most likely.
TOP_LOGPROBS = 20


def close_reasoning(text: str) -> str:
    """rank1's ``_fix_incomplete_responses`` cleaning: ``rstrip()``; unless the text ends in ``.``/``!``/``?``, cut it
    just after the last of them (if any); ``strip()``."""
    text = text.rstrip()
    if not text.endswith((".", "!", "?")):
        last = max(text.rfind("."), text.rfind("!"), text.rfind("?"))
        if last != -1:
            text = text[:last + 1]
    return text.strip()


def p_true(logprobs: Dict[int, float], true_id: int, false_id: int) -> float:
    """``e^lT / (e^lT + e^lF)``, computed stably."""
    t, f = logprobs[true_id], logprobs[false_id]
    return 1.0 / (1.0 + math.exp(f - t))


#: ``backend='vllm'``: rank1's engine (orionw/rank1 ``rank1.py:78-92``: ``LLM(dtype="float16", max_model_len=16000)``)
#: and ``logprobs_mode='processed_logprobs'`` (:meth:`~pyterrier_instruct.backends.VLLMBackend.answer_logits`);
#: ``backend_options`` override each.
VLLM_DEFAULTS = {"dtype": "float16", "max_model_len": 16000, "logprobs_mode": "processed_logprobs"}


class Rank1(InstructReranker):
    """rank1: greedy reasoning, then p(true), per (query + instruction, passage).

    Args:
        model_name_or_path: the checkpoint (hub id or local folder) the ``'hf'``/``'vllm'`` backend loads; default
            ``jhu-clsp/rank1-7b``. :meth:`released` names the other released checkpoints.
        backend: ``'hf'``, ``'vllm'`` or a TokenizerBackend with ``generate_until`` and ``next_token_logprobs``.
        backend_options: keyword arguments of the backend built; ``'vllm'`` defaults: :data:`VLLM_DEFAULTS` (rank1's).
        max_output_tokens: the reasoning budget in tokens (rank1's ``max_output_tokens``, 8192).
        text_field, title_field: the passage is ``"{title} {text}"`` with a non-empty title (rank1's ``predict``).
        instruction: used when the input has no ``instruction`` column (``f"{query} {instruction}"``).
        verbose: a progress bar over the passages.

    Output: every input column, ``reasoning``, ``score`` = p(true), ``rank``, ``score_0`` (docs/rerankers.md).
    """
    schematic = {"label": "rank1"}
    extra_outputs = ("reasoning",)
    #: rank1's query + instruction rule (:func:`~pyterrier_instruct.instructions.compose_rank1`) in ``{query}``
    query_slot = QuerySlot("rank1")

    def __init__(self, model_name_or_path: str = CHECKPOINTS["7b"], *, backend: BackendLike = "hf",
                 backend_options: Optional[dict] = None, max_output_tokens: int = 8192, text_field: str = "text",
                 title_field: Optional[str] = "title", instruction: str = "", verbose: bool = True):
        if int(max_output_tokens) < 1:
            raise ValueError(f"max_output_tokens must be at least 1, got {max_output_tokens!r}")
        if callable(backend) and not isinstance(backend, Backend):
            raise TypeError("Rank1 needs token ids and log-probabilities: backend must be 'hf', 'vllm' or a "
                            f"TokenizerBackend, not a callable ({backend!r})")
        options = backend_options
        if backend == "vllm":  # rank1's engine; exact answer-step values: log-probabilities after allowed_token_ids
            options = {**VLLM_DEFAULTS, **(backend_options or {})}
        built = _family_backend(type(self), backend, model_name_or_path, CHECKPOINTS["7b"], options)
        missing = [m for m in REASONING_CALLS if not callable(getattr(built, m, None))]
        if not isinstance(built, TokenizerBackend) or missing:
            raise TypeError("Rank1 needs a backend with a tokenizer, log-probabilities and "
                            f"{' and '.join(REASONING_CALLS)} ('hf', 'vllm', HFBackend, VLLMBackend), got "
                            f"{type(built).__name__}")
        self.model_name_or_path, self.backend, self.backend_options = model_name_or_path, built, backend_options
        self.max_output_tokens, self.text_field, self.title_field = int(max_output_tokens), text_field, title_field
        self.instruction, self.verbose = instruction, verbose
        self.stats: Counter = Counter()

    @preset
    def released(cls, name: str = "7b", *, awq: bool = False, **kwargs) -> "Rank1":
        """A released checkpoint: ``name`` is one of ``0.5b``, ``1.5b``, ``3b``, ``7b``, ``14b``, ``32b``,
        ``mistral-2501-24b``, ``llama3-8b`` (``jhu-clsp/rank1-<name>``); ``awq=True`` takes its ``-awq`` quantisation
        (7b, 14b, 32b, mistral-2501-24b, llama3-8b), which the HF backend loads only with ``autoawq`` installed
        (vLLM reads AWQ itself)."""
        if name not in CHECKPOINTS:
            raise ValueError(f"Rank1.released: name must be one of {list(CHECKPOINTS)}, got {name!r}")
        if awq and name not in AWQ_SIZES:
            raise ValueError(f"Rank1.released: no AWQ checkpoint of rank1-{name}; AWQ exists for {list(AWQ_SIZES)}")
        backend = kwargs.get("backend", "hf")
        if awq and (backend == "hf" or isinstance(backend, HFBackend)) and importlib.util.find_spec("awq") is None:
            raise ImportError(f"jhu-clsp/rank1-{name}-awq is AWQ-quantised: the HF backend needs autoawq (pip install "
                              "autoawq, a CUDA GPU); or use backend='vllm', or the unquantised "
                              f"Rank1.released({name!r})")
        return cls(CHECKPOINTS[name] + ("-awq" if awq else ""), **kwargs)

    # -- prompts ---------------------------------------------------------------------------------------------------
    def prompts(self, view: pd.DataFrame) -> List[str]:
        """rank1's raw prompt (no chat template) per row of a prompt view (:meth:`prompt_view`)."""
        queries = self.query_slot.frame(view)
        texts = view[self.text_field].astype(str)
        if self.title_field and self.title_field in view.columns:  # rank1: f"{title} {text}" given a title, unstripped
            titles = view[self.title_field].fillna("").astype(str)
            texts = texts.where(titles == "", titles + " " + texts)
        return [fill(RANK1.template, query=q, text=t) for q, t in zip(queries, texts)]

    def _answer_ids(self, tok) -> Tuple[int, int]:
        """rank1's ``tokenizer(" true", add_special_tokens=False).input_ids[0]`` and the same for ``" false"``."""
        ids = [tok(w, add_special_tokens=False)["input_ids"] for w in (RANK1.true_token, RANK1.false_token)]
        if not all(ids) or ids[0][0] == ids[1][0]:
            raise ValueError(f"{self!r}: the tokenizer does not give distinct first tokens for {RANK1.true_token!r} "
                             f"and {RANK1.false_token!r}")
        return ids[0][0], ids[1][0]

    # -- scoring ---------------------------------------------------------------------------------------------------
    def _score(self, view: pd.DataFrame):
        prompts = self.prompts(view)
        tok = self.backend.tokenizer()
        true_id, false_id = self._answer_ids(tok)
        bar = self._tqdm(None, total=len(prompts), unit="doc")
        try:
            runs = self.backend.generate_until([tok(p)["input_ids"] for p in prompts],
                                               max_new_tokens=self.max_output_tokens, stop=RANK1.stop,
                                               top_logprobs=TOP_LOGPROBS, bar=bar)
        finally:
            bar.close()
        scores = np.empty(len(prompts), dtype="float64")
        reasoning = [r.text for r in runs]
        forced = [i for i, r in enumerate(runs) if true_id not in r.last_logprobs or false_id not in r.last_logprobs]
        for i in sorted(set(range(len(runs))) - set(forced)):
            scores[i] = p_true(runs[i].last_logprobs, true_id, false_id)
        if forced:
            for i in forced:
                reasoning[i] = close_reasoning(reasoning[i])
            closed = [tok(fill(RANK1.forced, prompt=prompts[i], reasoning=reasoning[i]))["input_ids"] for i in forced]
            answers = self.backend.next_token_logprobs(closed, allowed=[true_id, false_id])
            for i, lp in zip(forced, answers):
                scores[i] = p_true(lp, true_id, false_id)
        self.stats.update(complete=len(runs) - len(forced), forced=len(forced))
        return scores, {"reasoning": reasoning}
