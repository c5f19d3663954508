"""FIRST, single-token listwise reranking (Reddy et al. 2024, "FIRST: Faster Improved Listwise Reranking with Single
Token Decoding"; ``castorini/first_mistral``): the window's prompt is rank_llm's RankZephyr alpha prompt followed by
``[``, and the window is ranked by the next-token log-probabilities of its identifiers ``A``, ``B``, … — one forward
pass per window instead of a generated permutation.

rank_llm 0.26 (``rerank/listwise/rank_listwise_os_llm.py`` ``run_llm_async`` with ``use_logits``, ``_evaluate_logits``)
reads the top 30 raw log-probabilities vLLM returns: identifiers outside them drop out and are appended in their current
order by the permutation repair. Here the values of **every** identifier are read (the logits on transformers; on vLLM
``allowed_token_ids`` with processed log-probabilities), so every window is a full ranking; where all of a window's
identifiers are in the top 30 the two orders are the same (``tests/test_first_reasonrank.py`` counts the rest).

BOS (``bos=``): FIRST's training code (gangiswag/llm-reranker ``scripts/utils/dataset.py``; rank_llm
``training/utils/data_utils.py``, run by ``training/scripts/train_first_mistral.sh``) and rank_llm's inference (vLLM
given the rendered text) both tokenise the rendered chat template with the tokenizer's special tokens, so a template
that writes BOS itself (Mistral-7B-Instruct-v0.3's, the base of ``castorini/first_mistral``) gives two BOS: the
default, ``'rank_llm'``. ``'once'`` adds none in front of the template's own (docs/rerankers.md has the figures)."""
from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from .._tokens import encode_rendered
from ..backends import Backend
from ..backends.base import REASONING_CALLS
from .reranker import BackendLike, ListwiseReranker, _family_backend, identifier

__all__ = ["FIRST"]

#: ``bos=`` values: the tokenizer's special tokens added to the rendered prompt (as FIRST was trained and rank_llm runs
#: it), or no BOS in front of one the chat template wrote.
BOS = ("rank_llm", "once")


class FIRST(ListwiseReranker):
    """FIRST: each window ranked by the first token's log-probabilities of its passage identifiers.

    Constructors (checkpoint, notes):

    - ``FIRST()``: ``castorini/first_mistral``; the paper checkpoint (Mistral-7B-Instruct-v0.3)

    The prompt is rank_llm 0.26.0's ``rank_zephyr_alpha_template.yaml`` (``style='first'``) then ``[``; the next
    token's log-probabilities over the window's identifiers give its order (details: docs/rerankers.md).

    Args:
        model_name_or_path: the checkpoint the ``'hf'``/``'vllm'`` backend loads.
        backend: ``'hf'``, ``'vllm'``, or a backend with ``next_token_logprobs`` and a tokenizer.
        backend_options: keyword arguments of the backend built from ``'hf'``/``'vllm'``.
        bos: ``'rank_llm'`` (default): the rendered prompt tokenised with the tokenizer's special tokens, as FIRST was
            trained and as rank_llm runs it (two BOS after a chat template that writes one, e.g. Mistral-v0.3's);
            ``'once'``: no BOS added in front of the template's own.
        **kwargs: see :class:`ListwiseReranker`.

    Output: as :class:`ListwiseReranker` (ordinal ``score``); ``stats['forward_passes']`` counts the windows scored.
    """
    schematic = {"label": "FIRST"}
    default_model = "castorini/first_mistral"

    def __init__(self, model_name_or_path: str = "castorini/first_mistral", *, backend: BackendLike = "hf",
                 backend_options: Optional[dict] = None, style: str = "first", bos: str = "rank_llm", **kwargs):
        if bos not in BOS:
            raise ValueError(f"FIRST: bos must be one of {list(BOS)}, got {bos!r}")
        if callable(backend) and not isinstance(backend, Backend):
            raise TypeError("FIRST reads next-token log-probabilities: backend must be 'hf', 'vllm' or a "
                            f"TokenizerBackend, not a callable ({backend!r})")
        options = backend_options
        if backend == "vllm":  # the identifiers' values taken after allowed_token_ids (VLLMBackend.answer_logits)
            options = {"logprobs_mode": "processed_logprobs", **(backend_options or {})}
        built = _family_backend(type(self), backend, model_name_or_path, self.default_model, options)
        missing = [m for m in (REASONING_CALLS[1], "tokenizer") if not callable(getattr(built, m, None))]
        if missing:
            raise TypeError(f"FIRST needs a backend with {missing} (HFBackend, VLLMBackend), got "
                            f"{type(built).__name__}")
        super().__init__(built, style=style, **kwargs)
        self.model_name_or_path, self.backend_options, self.bos = model_name_or_path, backend_options, bos
        if self.listwise.alpha and self.window_size > 26:
            raise ValueError(f"window_size must be at most 26 with letter identifiers, got {self.window_size}")
        self._identifiers: Dict[Tuple[str, int], List[int]] = {}

    def encode(self, text: str) -> List[int]:
        """The token ids of a rendered prompt as :attr:`bos` says (the word budget counts these)."""
        tok = self.backend.tokenizer()
        return list(tok(text)["input_ids"]) if self.bos == "rank_llm" else encode_rendered(tok, text)

    def _prepare(self, messages, fallback):
        prompt = super()._prepare(messages, fallback)
        return prompt if self.bos == "once" else replace(prompt, token_ids=self.encode(prompt.text))

    def identifier_ids(self, text: str, num: int) -> List[int]:
        """The token id of each of ``num`` identifiers as the next token after the rendered prompt ``text`` + ``[``
        (read from the prompt's last 200 characters; a ValueError names an identifier that is not one token there)."""
        tail = text[-200:] + "["
        key = (tail, num)
        if key not in self._identifiers:
            tok = self.backend.tokenizer()
            base = tok(tail, add_special_tokens=False)["input_ids"]
            ids, bad = [], []
            for r in range(1, num + 1):
                full = tok(tail + identifier(r, self.listwise.alpha), add_special_tokens=False)["input_ids"]
                if len(full) != len(base) + 1 or full[:len(base)] != base:
                    bad.append(identifier(r, self.listwise.alpha))
                ids.append(full[-1])
            if bad or len(set(ids)) != num:
                raise ValueError(f"{self!r}: identifier(s) {bad or ids} are not one distinct token each after '[' for "
                                 "this tokenizer; FIRST needs single-token identifiers (smaller window_size, letters)")
            self._identifiers[key] = ids
        return self._identifiers[key]

    def window_logprobs(self, prompts, nums: List[int]) -> List[List[float]]:
        """For each prepared window prompt of ``nums[i]`` passages, the log-probability of each identifier (in window
        order) as the next token after the prompt + ``[``, renormalised over the window's identifiers (which keeps their
        order); one batched forward pass per distinct identifier set."""
        out: List[List[float]] = [[] for _ in prompts]
        groups: Dict[tuple, List[int]] = {}
        for i, (p, num) in enumerate(zip(prompts, nums)):
            groups.setdefault(tuple(self.identifier_ids(p.text, num)), []).append(i)
        for ids, rows in groups.items():
            ids_of = [self.encode(prompts[i].text + "[") for i in rows]
            values = self.backend.next_token_logprobs(ids_of, allowed=list(ids))
            self.stats["backend_calls"] += 1
            for i, v in zip(rows, values):
                out[i] = [v[t] for t in ids]
        return out

    def _run_step(self, jobs, lists, queries, qids, words, notes) -> None:
        """One window position for every query that has one: a batched forward pass per window length, no generation."""
        group = [(q, a, b, self._prompt(queries[q], [words[r] for r in lists[q][a:b]])) for q, (a, b) in jobs]
        values = self.window_logprobs([g[3] for g in group], [b - a for _, a, b, _ in group])
        self.stats["forward_passes"] += len(group)
        for (q, a, b, _), v in zip(group, values):
            order = sorted(range(b - a), key=lambda i: -v[i])  # stable: ties keep the current order
            self.stats.record(())
            lists[q][a:b] = [lists[q][a:b][i] for i in order]
