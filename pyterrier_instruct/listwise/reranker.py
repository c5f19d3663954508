"""RankZephyr-style listwise reranking with instructions (MODELS §5): an LLM permutes windows of passages, sliding
from the back of each query's list to the front; the windows of all queries at the same position go to the backend
together, so a frame of Q queries costs one backend batch per window position (9 for 100/20/10), not 9·Q calls."""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from .._config import Configured
from ..backends import Backend, OpenAIBackend, make_backend
from ..instructions import compose_frame
from ..prompts import LISTWISE, Listwise, fill
from .window import Stats, check_window, mask_numbers, parse_permutation, reorder, windows

log = logging.getLogger(__name__)


class ListwiseReranker(Configured, pt.Transformer):
    """Reranks each query's top ``depth`` candidates by asking an LLM for permutations of sliding windows.

    Args:
        backend: a :class:`~pyterrier_instruct.backends.Backend` (HF, vLLM, OpenAI-compatible, a function) or a callable.
        prompt: a preset name of :data:`pyterrier_instruct.prompts.LISTWISE` (``'rank_zephyr'``, ``'rankllm_2025'``,
            ``'rank_vicuna'``, ``'rank_gpt'``) or a :class:`~pyterrier_instruct.prompts.Listwise`.
        window_size, stride, depth: rank_llm's 20 / 10 / 100; documents below ``depth`` keep their first-stage order.
        context_size: the model's token budget; passages are cut to ``max_words`` words, which shrinks until the prompt
            plus the output budget fits (``None``, or a backend that cannot count tokens: no budget loop).
        max_words: the starting word limit per passage (default ``300 × 20 / window length``, as rank_llm).
        system: replaces the preset's system message (e.g. the rank_llm CLI's sentence with a final period).
        text_field, title_field: passage columns; a non-empty title gives ``"Title: {title} Content: {text}"``.
        instruction: used when the input has no ``instruction`` column; ``{query}`` in the prompt is
            ``f"{query} {instruction}".strip()``.
        verbose: tqdm over windows.

    Output: every input row and column, ``score`` = (candidates − final position) — ordinal, so SICR (which compares
    score values across instructions) is not meaningful, while rank-based p-MRR and WISE are — and the first-stage
    score as ``score_0``. ``stats`` counts windows, backend calls, clean answers and each kind of repair.
    """
    schematic = {"label": "Listwise"}

    def __init__(self, backend: Union[Backend, callable], *, prompt: Union[str, Listwise] = "rank_zephyr", window_size: int = 20,
                 stride: int = 10, depth: int = 100, context_size: Optional[int] = 4096, max_words: Optional[float] = None,
                 system: Optional[str] = None, text_field: str = "text", title_field: Optional[str] = "title",
                 instruction: str = "", verbose: bool = False):
        check_window(window_size, stride, depth)
        if isinstance(prompt, str) and prompt not in LISTWISE:
            raise ValueError(f"prompt must be one of {sorted(LISTWISE)} or a Listwise, got {prompt!r}")
        if context_size is not None and int(context_size) < 1:
            raise ValueError(f"context_size must be positive or None, got {context_size!r}")
        if max_words is not None and max_words <= 0:
            raise ValueError(f"max_words must be positive, got {max_words!r}")
        self.backend = make_backend(backend, "")
        self.prompt = prompt
        self.window_size, self.stride, self.depth, self.context_size, self.max_words = window_size, stride, depth, context_size, max_words
        self.system, self.text_field, self.title_field, self.instruction, self.verbose = system, text_field, title_field, instruction, verbose
        self.stats = Stats()
        self._budgets: Dict[int, int] = {}

    # -- presets -------------------------------------------------------------------------------------
    @classmethod
    def rank_zephyr(cls, backend="hf", model: str = "castorini/rank_zephyr_7b_v1_full", **kwargs) -> "ListwiseReranker":
        """RankZephyr (rank_llm 2024 prompt; ``prompt='rankllm_2025'`` for the current one). The same prompt serves
        ``HuggingFaceH4/zephyr-7b-beta`` (InfoSearch's "Zephyr-beta"). ``backend``: ``'hf'``, ``'vllm'`` or a Backend."""
        return cls(make_backend(backend, model), **{"prompt": "rank_zephyr", **kwargs})

    @classmethod
    def rank_vicuna(cls, backend="hf", model: str = "castorini/rank_vicuna_7b_v1", **kwargs) -> "ListwiseReranker":
        """RankVicuna: fastchat's vicuna_v1.1 conversation unless the checkpoint has a chat template."""
        return cls(make_backend(backend, model), **{"prompt": "rank_vicuna", **kwargs})

    @classmethod
    def rank_gpt(cls, model: str = "gpt-4o", *, base_url: str = "https://api.openai.com/v1", api_key_env: str = "OPENAI_API_KEY",
                 backend_options: Optional[dict] = None, **kwargs) -> "ListwiseReranker":
        """RankGPT's multi-turn prompt on an OpenAI-compatible server (InfoSearch's GPT-4o runs)."""
        backend = OpenAIBackend(model, base_url=base_url, api_key_env=api_key_env, **(backend_options or {}))
        return cls(backend, **{"prompt": "rank_gpt", **kwargs})

    # -- identity ------------------------------------------------------------------------------------
    @property
    def preset(self) -> Listwise:
        return LISTWISE[self.prompt] if isinstance(self.prompt, str) else self.prompt

    # -- prompts -------------------------------------------------------------------------------------
    def messages(self, query: str, passages: List[str]) -> List[dict]:
        """The chat messages for one window: ``query`` composed, ``passages`` already cut (numbers masked here)."""
        p, num = self.preset, len(passages)
        q = mask_numbers(query) if p.mask_query else query
        head = fill(p.prefix, num=num, query=q)
        tail = fill(p.suffix, num=num, query=q, example=p.example)
        bodies = [fill(p.body, rank=r, passage=mask_numbers(t)) for r, t in enumerate(passages, 1)]
        system = {"role": "system", "content": self.system if self.system is not None else p.system}
        if not p.multi_turn:
            return [system, {"role": "user", "content": head + "\n" + "".join(bodies) + tail}]
        turns = [system, {"role": "user", "content": head}, {"role": "assistant", "content": p.opening}]
        for r, body in enumerate(bodies, 1):
            turns += [{"role": "user", "content": body}, {"role": "assistant", "content": fill(p.ack, rank=r)}]
        return turns + [{"role": "user", "content": tail}]

    def output_budget(self, num: int) -> int:
        """``len(tokenizer.encode("[1] > … > [num]")) - 1`` (rank_llm), or the string length when tokens can't be counted."""
        if num not in self._budgets:
            target = " > ".join(f"[{i}]" for i in range(1, num + 1))
            n = self.backend.count(target)
            self._budgets[num] = len(target) if n is None else n - 1
        return self._budgets[num]

    def _prompt(self, query: str, words: List[List[str]]):
        """The window's prompt with passages cut to the word budget (rank_llm's loop: shrink until it fits)."""
        num, budget = len(words), self.output_budget(len(words))
        ref = self.preset.budget_window or self.window_size
        max_words = self.max_words if self.max_words is not None else 300 * (ref / num)
        while True:
            prompt = self.backend.prepare(self.messages(query, [" ".join(w[:int(max_words)]) for w in words]), self.preset.chat_template)
            n = prompt.n_tokens
            if n is None or self.context_size is None or n <= self.context_size - budget:
                return prompt
            if int(max_words) <= 0:
                raise ValueError(f"{self!r}: the prompt without passage text needs {n} tokens, more than context_size="
                                 f"{self.context_size} minus the output budget {budget}")
            max_words = max(0, max_words - max(1, (n - self.context_size + budget) // (num * 4)))

    def _words(self, df: pd.DataFrame) -> List[List[str]]:
        import ftfy
        text = df[self.text_field].fillna("").astype(str)
        if self.title_field and self.title_field in df.columns:
            title = df[self.title_field].fillna("").astype(str)
            text = text.where(title.str.strip() == "", "Title: " + title + " Content: " + text)
        return [ftfy.fix_text(t.strip()).split() for t in text]

    # -- transform -----------------------------------------------------------------------------------
    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with pt.validate.any(inp) as v:
            v.result_frame(extra_columns=["query", "instruction", self.text_field], mode="instruct")
            v.result_frame(extra_columns=["query", self.text_field], mode="query")
        out = inp.copy()
        if "score" in out.columns:
            out["score_0"] = out["score"]
        out = out.drop(columns=["score", "rank"], errors="ignore")
        if len(out) == 0:
            out["score"] = pd.Series(dtype="float64")
            out["rank"] = pd.Series(dtype="int64")
            return out
        lists, queries, qids = self._first_stage(inp)
        top = np.concatenate([lst[:self.depth] for lst in lists])
        words = dict(zip(top.tolist(), self._words(inp.iloc[top])))
        plans = [windows(len(lst), self.window_size, self.stride, self.depth) for lst in lists]
        lists = [lst.tolist() for lst in lists]
        repaired = self.stats["repaired"]
        with pt.tqdm(total=sum(map(len, plans)), desc="ListwiseReranker", unit="window", disable=not self.verbose) as bar:
            for step in range(max(map(len, plans))):
                jobs = [(q, plan[step]) for q, plan in enumerate(plans) if step < len(plan)]
                self._run_step(jobs, lists, queries, qids, words)
                bar.update(len(jobs))
        if self.stats["repaired"] > repaired:
            log.warning("%r: %d of %d answers were not a clean permutation and were repaired (see .stats)", self,
                        self.stats["repaired"] - repaired, sum(map(len, plans)))
        scores = np.empty(len(out), dtype="float64")
        for lst in lists:
            scores[lst] = len(lst) - np.arange(len(lst))
        out["score"] = scores
        return pt.model.add_ranks(out)

    def _first_stage(self, inp: pd.DataFrame):
        """Row positions per query in first-stage order (``rank``, else ``score`` descending, else input order) and
        the composed query of each."""
        codes, qids = pd.factorize(inp["qid"])
        if "rank" in inp.columns:
            key = inp["rank"].to_numpy(dtype="float64")
        elif "score" in inp.columns:
            key = -inp["score"].to_numpy(dtype="float64")
        else:
            key = np.zeros(len(inp))
        order = np.lexsort((np.arange(len(inp)), key, codes))
        lists = np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)
        composed = pd.Series(compose_frame(inp, default_instruction=self.instruction), index=inp.index)
        per_qid = composed.groupby(codes).nunique()
        if (per_qid > 1).any():
            bad = qids[per_qid.index[per_qid.to_numpy() > 1][0]]
            raise ValueError(f"qid {bad!r} has rows with different query/instruction text; a listwise prompt needs one per qid")
        return lists, [composed.iloc[lst[0]] for lst in lists], list(qids[codes[[lst[0] for lst in lists]]])

    def _run_step(self, jobs, lists, queries, qids, words) -> None:
        """One window position for every query that has one: one backend call per distinct window length."""
        prompts = {}
        for q, (a, b) in jobs:
            prompts.setdefault(b - a, []).append((q, a, b, self._prompt(queries[q], [words[r] for r in lists[q][a:b]])))
        for num, group in prompts.items():
            budget = self.output_budget(num)
            answers = self.backend.generate([g[3] for g in group], max_new_tokens=budget, min_new_tokens=budget)
            self.stats["backend_calls"] += 1
            for (q, a, b, _), answer in zip(group, answers):
                order, problems = parse_permutation(answer, num)
                self.stats.record(problems)
                if problems:
                    log.info("qid %s, window [%d, %d): repaired answer (%s): %.120r", qids[q], a, b, ", ".join(problems), answer)
                lists[q][a:b] = reorder(lists[q][a:b], order)
