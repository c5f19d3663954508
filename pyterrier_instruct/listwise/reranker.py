"""Listwise reranking with instructions (RankGPT, Sun et al. 2023; RankVicuna/RankZephyr, Pradeep et al. 2023; the
sliding window of rank_llm ``rerank/listwise/listwise_rankllm.py``): an LLM permutes windows of passages, sliding from
the back of each query's list to the front. The windows of all queries at the same position go to the backend
together, so a frame of Q queries costs one backend batch per window position (9 for 100/20/10), not 9·Q calls."""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Union

import numpy as np
import pandas as pd

from ..base import InstructReranker, first_stage_lists, warn_unparsed
from .._config import preset
from ..backends import KINDS, Backend, OpenAIBackend, make_backend
from ..prompts import LISTWISE, VICUNA_CHAT_TEMPLATE, Listwise, fill
from .window import Stats, check_window, mask_numbers, parse_permutation, reorder, windows
from .._progress import tqdm as progress_bar

log = logging.getLogger(__name__)

BackendLike = Union[str, Backend, callable]


class ListwiseReranker(InstructReranker):
    """Reranks each query's top ``depth`` candidates by asking an LLM for permutations of sliding windows.

    The generic class for any checkpoint or server; :class:`RankZephyr`, :class:`RankVicuna` and :class:`RankGPT` are
    the paper families with their checkpoints and default styles.

    Args:
        backend: a :class:`~pyterrier_instruct.backends.Backend` or a callable
            (:class:`~pyterrier_instruct.backends.FunctionBackend`).
        style: the prompt recipe, a key of :data:`pyterrier_instruct.prompts.LISTWISE` (docs/rerankers.md).
        template: a custom :class:`~pyterrier_instruct.prompts.Listwise` (the full prompt); replaces ``style``.
        window_size, stride, depth: rank_llm's 20 / 10 / 100; documents below ``depth`` keep their first-stage order.
        context_size: the model's token budget; ``max_words`` shrinks until the prompt fits (``None``: no budget loop).
        max_words: the starting word limit per passage (default: the style's).
        system: replaces the style's system message.
        text_field, title_field: passage columns; a non-empty title gives ``"Title: {title} Content: {text}"``
            (rank_llm ``_convert_doc_to_prompt_content``: a whitespace-only title counts as a title).
        instruction: used where the input has none; ``{query}`` is ``f"{query} {instruction}".strip()``.
        verbose: a progress bar over the windows (on by default; ``False`` silences it).

    Output: every input row and column, ``score`` = (candidates − final position), ordinal (SICR is not meaningful on
    it), the first-stage score as ``score_0``; ``stats`` counts windows, calls and repairs.
    """
    schematic = {"label": "Listwise"}
    #: style names a family accepts besides the keys of LISTWISE (a family-level name → a LISTWISE key).
    style_aliases: Dict[str, str] = {}
    #: the chat template used when the checkpoint's tokenizer has none and the style names none.
    fallback_chat_template: Optional[str] = None

    def __init__(self, backend: Union[Backend, callable], *, style: str = "rank_zephyr",
                 template: Optional[Listwise] = None, window_size: int = 20, stride: int = 10, depth: int = 100,
                 context_size: Optional[int] = 4096, max_words: Optional[float] = None, system: Optional[str] = None,
                 text_field: str = "text", title_field: Optional[str] = "title", instruction: str = "",
                 verbose: bool = True):
        check_window(window_size, stride, depth)
        known = sorted(set(LISTWISE) | set(self.style_aliases))
        if not isinstance(style, str) or self.style_aliases.get(style, style) not in LISTWISE:
            raise ValueError(f"style must be one of {known}, got {style!r}; a custom prompt: template=Listwise(...)")
        if template is not None and not isinstance(template, Listwise):
            raise TypeError(f"template must be a pyterrier_instruct.prompts.Listwise, got {type(template).__name__}; "
                            "use style= to name a preset")
        if context_size is not None and int(context_size) < 1:
            raise ValueError(f"context_size must be positive or None, got {context_size!r}")
        if max_words is not None and max_words <= 0:
            raise ValueError(f"max_words must be positive, got {max_words!r}")
        if isinstance(backend, str):
            raise TypeError(f"{type(self).__name__} needs a Backend object or a callable, got {backend!r}; write e.g. "
                            f"{type(self).__name__}(HFBackend('org/model')), or RankZephyr(backend={backend!r})")
        self.backend = make_backend(backend, "")
        self.style, self.template = style, template
        self.window_size, self.stride, self.depth, self.context_size = window_size, stride, depth, context_size
        self.max_words, self.system, self.text_field, self.title_field = max_words, system, text_field, title_field
        self.instruction, self.verbose = instruction, verbose
        self.stats = Stats()
        self._budgets: Dict[int, int] = {}

    # -- prompts -------------------------------------------------------------------------------------
    @property
    def listwise(self) -> Listwise:
        """The prompt in use: ``template`` if given, else the style's."""
        return self.template if self.template is not None else LISTWISE[self.style_aliases.get(self.style, self.style)]

    def messages(self, query: str, passages: List[str]) -> List[dict]:
        """The chat messages for one window: ``query`` composed, ``passages`` already cut (numbers masked here)."""
        p, num = self.listwise, len(passages)
        q = mask_numbers(query) if p.mask_query else query
        head = fill(p.prefix, num=num, query=q)
        tail = fill(p.suffix, num=num, query=q, example=p.example)
        bodies = [fill(p.body, rank=identifier(r, p.alpha), passage=mask_numbers(t)) for r, t in enumerate(passages, 1)]
        system = {"role": "system", "content": self.system if self.system is not None else p.system}
        if not p.multi_turn:
            return [system, {"role": "user", "content": head + "\n" + "".join(bodies) + tail}]
        turns = [system, {"role": "user", "content": head}, {"role": "assistant", "content": p.opening}]
        for r, body in enumerate(bodies, 1):
            turns += [{"role": "user", "content": body}, {"role": "assistant", "content": fill(p.ack, rank=r)}]
        return turns + [{"role": "user", "content": tail}]

    def output_budget(self, num: int) -> int:
        """The tokens of ``"[1] > … > [num]"`` (``"[A] > …"`` for letter identifiers) without special tokens (rank_llm
        ``num_output_tokens``: ``encode(..., add_special_tokens=False)``; a BOS-less tokenizer such as Qwen's adds
        none), or the string length when tokens can't be counted."""
        if num not in self._budgets:
            target = " > ".join(f"[{identifier(i, self.listwise.alpha)}]" for i in range(1, num + 1))
            n = self.backend.count(target)
            self._budgets[num] = len(target) if n is None else n - self.backend.count("")
        return self._budgets[num]

    def _start_words(self, num: int) -> float:
        """The first word limit of a window of ``num`` passages (rank_llm ``create_prompt``'s ``max_length``)."""
        p = self.listwise
        if self.max_words is not None:
            return self.max_words
        if p.fixed_words:
            return 300
        return 300 * ((p.budget_window or self.window_size) / num)

    def _prompt(self, query: str, words: List[List[str]]):
        """The window's prompt with passages cut to the word budget (rank_llm's loop: shrink until it fits)."""
        num, budget = len(words), self.output_budget(len(words))
        max_words = self._start_words(num)
        fallback = self.listwise.chat_template or self.fallback_chat_template
        while True:
            prompt = self._prepare(self.messages(query, [" ".join(w[:int(max_words)]) for w in words]), fallback)
            n = prompt.n_tokens
            if n is None or self.context_size is None or n <= self.context_size - budget:
                return prompt
            if int(max_words) <= 0:
                raise ValueError(f"{self!r}: the prompt without passage text needs {n} tokens, more than context_size="
                                 f"{self.context_size} minus the output budget {budget}")
            # stops at 0; rank_llm's limit goes negative and keeps passages minus their last words (docs/rerankers.md)
            max_words = max(0, max_words - max(1, (n - self.context_size + budget) // (num * 4)))

    def _prepare(self, messages: List[dict], fallback: Optional[str]):
        """The backend's prompt for one window's ``messages`` (a family may count its tokens its own way)."""
        return self.backend.prepare(messages, fallback)

    def _words(self, df: pd.DataFrame) -> List[List[str]]:
        import ftfy
        text = df[self.text_field].fillna("").astype(str)
        if self.title_field and self.title_field in df.columns:
            title = df[self.title_field].fillna("").astype(str)
            text = text.where(title == "", "Title: " + title + " Content: " + text)
        return [ftfy.fix_text(t.strip()).split() for t in text]

    # -- scoring (the transform body is InstructReranker's) ------------------------------------------
    def _score(self, work: pd.DataFrame) -> np.ndarray:
        """One ordinal score per row: (candidates − final position) within its query."""
        lists, queries, qids = self._first_stage(work)
        top = np.concatenate([lst[:self.depth] for lst in lists])
        words = dict(zip(top.tolist(), self._words(work.iloc[top])))
        plans = [windows(len(lst), self.window_size, self.stride, self.depth) for lst in lists]
        lists = [lst.tolist() for lst in lists]
        repaired, notes = self.stats["repaired"], {}
        with progress_bar(total=sum(map(len, plans)), desc=type(self).__name__, unit="window",
                          disable=not self.verbose or not plans) as bar:
            for step in range(max(map(len, plans))):
                jobs = [(q, plan[step]) for q, plan in enumerate(plans) if step < len(plan)]
                self._run_step(jobs, lists, queries, qids, words, notes)
                bar.update(len(jobs))
        warn_unparsed(self, self.stats["repaired"] - repaired, sum(map(len, plans)), "were not a clean permutation",
                      "repaired: duplicates and out-of-range labels dropped, missing passages appended in order")
        scores = np.empty(len(work), dtype="float64")
        for lst in lists:
            scores[lst] = len(lst) - np.arange(len(lst))
        if self.extra_outputs:  # a reasoning family: each row's text from the last window it was in ("" below depth)
            return scores, {"reasoning": [notes.get(i, "") for i in range(len(work))]}
        return scores

    def _reasoning_budget(self) -> int:
        """Tokens a window's answer may spend before its ranking (a reasoning family's budget; none here)."""
        return 0

    def _first_stage(self, work: pd.DataFrame):
        """Row positions per query of the prompt view ``work`` in first-stage order (``rank``, else ``score``
        descending, else input order) and the composed query of each."""
        lists, codes, qids = first_stage_lists(work)
        composed = pd.Series(self.listwise.query_slot.frame(work), index=work.index)
        per_qid = composed.groupby(codes).nunique()
        if (per_qid > 1).any():
            bad = qids[per_qid.index[per_qid.to_numpy() > 1][0]]
            raise ValueError(f"qid {bad!r} has rows with different query/instruction text; a listwise prompt needs one")
        return lists, [composed.iloc[lst[0]] for lst in lists], list(qids[codes[[lst[0] for lst in lists]]])

    def _run_step(self, jobs, lists, queries, qids, words, notes) -> None:
        """One window position for every query that has one: one backend call per distinct window length. The answer
        may spend :meth:`_reasoning_budget` tokens more than the ranking's (rank_llm ``is_thinking``: max tokens =
        reasoning budget + ranking tokens, min tokens = ranking tokens); a reasoning family keeps the text before the
        last ``</think>`` in ``notes`` (row → text) and counts an answer without one nor a clean ranking (no verdict of
        its own: the ranking is read from its reasoning, as rank_llm does) in ``stats["unfinished"]``."""
        prompts = {}
        for q, (a, b) in jobs:
            prompts.setdefault(b - a, []).append((q, a, b, self._prompt(queries[q], [words[r] for r in lists[q][a:b]])))
        for num, group in prompts.items():
            budget = self.output_budget(num)
            answers = self.backend.generate([g[3] for g in group], max_new_tokens=budget + self._reasoning_budget(),
                                            min_new_tokens=budget)
            self.stats["backend_calls"] += 1
            for (q, a, b, _), answer in zip(group, answers):
                order, problems = parse_permutation(answer, num, self.listwise.alpha)
                if self.extra_outputs:
                    notes.update(dict.fromkeys(lists[q][a:b], reasoning_of(answer)))
                self.stats.record(problems)
                if problems and self._reasoning_budget() and "</think>" not in answer:  # cut while it reasoned
                    self.stats["unfinished"] += 1
                if problems:
                    log.info("qid %s, window [%d, %d): repaired answer (%s): %.120r", qids[q], a, b,
                             ", ".join(problems), answer)
                lists[q][a:b] = reorder(lists[q][a:b], order)


def reasoning_of(answer: str) -> str:
    """A reasoning model's thoughts: the text before the last ``</think>`` without an opening ``<think>``, stripped;
    the whole answer when it has no ``</think>`` (the budget ran out while reasoning)."""
    head, sep, _ = answer.rpartition("</think>")
    text = head if sep else answer
    text = text.strip()
    return text[len("<think>"):].strip() if text.startswith("<think>") else text


def identifier(rank: int, alpha: bool = False) -> str:
    """A passage's identifier: ``rank`` (1-based), or its letter (rank_llm ``use_alpha``: ``chr(64 + rank)``)."""
    return chr(64 + rank) if alpha else str(rank)


def _family_backend(cls, backend: BackendLike, model: str, default: str, options: Optional[dict], kinds=("hf", "vllm")):
    """The backend of a family class: a kind name builds one for ``model`` (with ``options``); a Backend or callable is
    used as it is, and then neither ``model`` nor ``options`` may be given."""
    if isinstance(backend, str):
        if backend not in kinds:
            raise ValueError(f"backend must be one of {list(kinds)}, a Backend or a callable, got {backend!r}")
        if backend == "openai":
            return OpenAIBackend(model, **(options or {}))
        return KINDS[backend](model, **(options or {}))
    if model != default or options:
        raise ValueError(f"{cls.__name__}: backend is a ready {type(backend).__name__}; pass the model and its options "
                         "to that backend instead of model_name_or_path/backend_options")
    return backend


class RankZephyr(ListwiseReranker):
    """RankZephyr (Pradeep et al. 2023, "RankZephyr: Effective and Robust Zero-Shot Listwise Reranking is a Breeze!").

    Constructors (checkpoint, notes):

    - ``RankZephyr()``: ``castorini/rank_zephyr_7b_v1_full``; the paper checkpoint
    - ``RankZephyr.zephyr_beta()``: ``HuggingFaceH4/zephyr-7b-beta``; InfoSearch's "Zephyr-beta"

    Styles: ``'rank_zephyr'`` (default) is rank_llm <= 0.20's prompt (checked against 0.20.3), the template the
    checkpoint was trained and first evaluated with; ``'rank_llm_0.26'`` is byte-identical to rank_llm 0.26.0's
    ``ZephyrReranker`` (prompt text and token ids, with an empty instruction).

    Args:
        model_name_or_path: the checkpoint (hub id or local folder) the ``'hf'``/``'vllm'`` backend loads.
        backend: ``'hf'``, ``'vllm'``, a :class:`~pyterrier_instruct.backends.Backend` or a callable.
        backend_options: keyword arguments of the backend built from ``'hf'``/``'vllm'`` (e.g. ``batch_size``,
            ``tensor_parallel_size``).
        style: see :class:`ListwiseReranker`.
        **kwargs: see :class:`ListwiseReranker`.
    """
    default_model = "castorini/rank_zephyr_7b_v1_full"

    def __init__(self, model_name_or_path: str = "castorini/rank_zephyr_7b_v1_full", *, backend: BackendLike = "hf",
                 backend_options: Optional[dict] = None, style: str = "rank_zephyr", **kwargs):
        built = _family_backend(type(self), backend, model_name_or_path, self.default_model, backend_options)
        super().__init__(built, style=style, **kwargs)
        self.model_name_or_path, self.backend_options = model_name_or_path, backend_options

    @preset
    def zephyr_beta(cls, **kwargs) -> "RankZephyr":
        """``HuggingFaceH4/zephyr-7b-beta`` with the RankZephyr prompt (InfoSearch's "Zephyr-beta" row)."""
        return cls("HuggingFaceH4/zephyr-7b-beta", **kwargs)


class RankVicuna(ListwiseReranker):
    """RankVicuna (Pradeep et al. 2023, "RankVicuna: Zero-Shot Listwise Document Reranking with Open-Source LLMs").

    Constructors (checkpoint, notes):

    - ``RankVicuna()``: ``castorini/rank_vicuna_7b_v1``; the paper checkpoint

    The conversation is fastchat's ``vicuna_v1.1`` (``USER: … ASSISTANT:``) when the tokenizer has no chat template,
    as rank_llm does. Styles: ``'rank_vicuna'`` (default, rank_llm <= 0.20: fastchat's vicuna system message) and
    ``'rank_llm_0.26'`` (rank_llm 0.26.0's ``VicunaReranker``, which sends the RankZephyr template). Arguments as
    :class:`RankZephyr`.
    """
    default_model = "castorini/rank_vicuna_7b_v1"
    fallback_chat_template = VICUNA_CHAT_TEMPLATE

    def __init__(self, model_name_or_path: str = "castorini/rank_vicuna_7b_v1", *, backend: BackendLike = "hf",
                 backend_options: Optional[dict] = None, style: str = "rank_vicuna", **kwargs):
        built = _family_backend(type(self), backend, model_name_or_path, self.default_model, backend_options)
        super().__init__(built, style=style, **kwargs)
        self.model_name_or_path, self.backend_options = model_name_or_path, backend_options


class RankGPT(ListwiseReranker):
    """RankGPT (Sun et al. 2023, "Is ChatGPT Good at Search?"): the multi-turn permutation prompt on a chat model.

    Constructors (model, notes):

    - ``RankGPT()``: ``gpt-4o``; on an OpenAI-compatible server (InfoSearch's GPT-4o runs)

    Styles: ``'rank_gpt'`` (default: the RankGPT repository's prompt, as rank_llm's SafeOpenai sent it in 2024) and
    ``'rank_llm_0.26'`` (rank_llm 0.26.0's ``rank_gpt_template.yaml``, an alias of ``'rank_gpt_0.26'``).

    Args:
        model: the served model name (``'openai'`` backend) or the checkpoint (``'hf'``/``'vllm'``).
        backend: ``'openai'`` (default), ``'hf'``, ``'vllm'``, a Backend or a callable.
        base_url, api_key_env: the OpenAI-compatible server and the environment variable holding its key
            (``'openai'`` backend only); the first non-empty call raises, before any request, when that variable is
            not set. ``api_key_env=None`` sends no key (a local ``vllm serve`` or llama.cpp server).
        backend_options: more keyword arguments of the backend (e.g. ``concurrency``, ``tokenizer``).
        style: see :class:`ListwiseReranker`.
        **kwargs: see :class:`ListwiseReranker`.
    """
    default_model = "gpt-4o"
    style_aliases = {"rank_llm_0.26": "rank_gpt_0.26"}

    def __init__(self, model: str = "gpt-4o", *, backend: BackendLike = "openai",
                 base_url: str = "https://api.openai.com/v1", api_key_env: Optional[str] = "OPENAI_API_KEY",
                 backend_options: Optional[dict] = None, style: str = "rank_gpt", **kwargs):
        if backend == "openai":
            options = {"base_url": base_url, "api_key_env": api_key_env, **(backend_options or {})}
        elif (base_url, api_key_env) != ("https://api.openai.com/v1", "OPENAI_API_KEY"):
            raise ValueError(f"RankGPT: base_url/api_key_env apply to backend='openai' only, got backend={backend!r}")
        else:
            options = backend_options
        built = _family_backend(type(self), backend, model, self.default_model, options, kinds=("openai", "hf", "vllm"))
        super().__init__(built, style=style, **kwargs)
        self.model, self.base_url = model, base_url
        self.api_key_env, self.backend_options = api_key_env, backend_options
