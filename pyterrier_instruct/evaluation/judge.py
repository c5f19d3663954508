"""IFIR's INSTFOL judge (IFIR paper §4.1, App. B): :class:`IFIRJudge` renders each (instruction, passage) pair's prompt,
asks its backend in batches and scores the answers (:mod:`~pyterrier_instruct.evaluation.scoring` spells out how).

Judgements are kept in a :class:`~pyterrier_instruct.calls.CallStore` (``store=``), keyed by the judge model, its
backend and settings, the prompt id (``+ifir_code_bug``/``+figure8_system`` when they change the message), the
instruction, the doc id and the text's SHA-256: a re-run, or another system retrieving the same passages, costs no
call, and a passage both runs retrieve is judged once (the IFIR code judged it twice). Each batch is stored after its
backend call, so an interrupted run resumes; processes sharing a store judge a pair at most once each, the first
stored standing. An earlier version's ``judge.jsonl`` passed as ``store=`` is read into the store once. A failed
request or unusable answer fails its item only (counted, one warning, not stored); a judge whose every request fails
raises.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from typing import Dict, List, NamedTuple, Optional, Sequence

from ..backends.base import Backend, as_store, check_logprob_args
from ..calls import Call, CallStore
from ..prompts import IFIR_JUDGE_CODE_BUG, IFIR_JUDGE_SYSTEM, render_ifir_judge
from .._progress import tqdm as progress_bar
from .scoring import (MIN_PROB, SCORE_VALUES, Judgement, direct_judgement, judgement_of_record,  # noqa: F401
                      weighted_candidates, weighted_judge_score)

log = logging.getLogger(__name__)

MODES = ("answer", "direct")
#: The prefilled answer of ``mode='direct'``: the example JSON of the prompts up to the score value.
DIRECT_PREFIX = '{\n    "score": '


class JudgeItem(NamedTuple):
    """One judgement to make: the prompt name (``fiqa2``), the instruction string, the doc id and the document text."""
    prompt: str
    instruction: str
    docno: str
    text: str


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_key(judge: str, prompt: str, instruction: str, docno: str, text: str) -> str:
    """A judgement's key in the store (the key of the ``judge.jsonl`` records of earlier versions)."""
    return sha256(json.dumps([judge, prompt, sha256(instruction), str(docno), sha256(text)]))


def judge_store(store) -> tuple:
    """``IFIRJudge(store=)``: a CallStore, its folder, ``None`` (a temporary one), or the path of an earlier
    version's ``judge.jsonl``: the store is then the folder beside it without the suffix (``judge/``). Returns the store
    and the legacy file (or None), read in by the judge that knows its old keys."""
    legacy = os.fspath(store) if isinstance(store, (str, os.PathLike)) and os.fspath(store).endswith(".jsonl") else None
    return (CallStore() if store is None else as_store(legacy[:-len(".jsonl")] if legacy else store)), legacy


def _legacy_backend_id(backend: Backend) -> str:
    """How 0.x judge files named a backend (``Class(arg=repr, …, revision=…)``): read only to re-key their records."""
    from .._fingerprint import model_revision
    parts = []
    for name in backend._identity:
        value = repr(getattr(backend, name, None))
        parts.append(f"{name}={'sha256:' + sha256(value)[:16] if len(value) > 100 else value}")
        if name in backend._weights:
            parts.append(f"revision={model_revision(getattr(backend, name))!r}")
    if getattr(backend, "reasons", False):
        parts += [f"reasoning_effort={backend.reasoning_effort!r}", f"reasoning_tokens={backend.reasoning_tokens!r}"]
    return f"{type(backend).__name__}({', '.join(parts)})"


def _model_name(backend: Backend) -> str:
    for attr in ("model", "model_name_or_path", "name"):
        value = getattr(backend, attr, None)
        if isinstance(value, str):
            return value
    return type(backend).__name__


class IFIRJudge:
    """The INSTFOL judge over any backend with ``generate_logprobs`` (OpenAI-compatible HTTP, vLLM, HF, a callable).

    Args:
        backend: a :class:`~pyterrier_instruct.backends.base.Backend`, or ``'openai'``/``'hf'``/``'vllm'`` with
            ``model`` (and ``backend_options`` for its constructor, e.g. ``base_url``).
        judge_model: the judge's name in keys and reports (default: the backend's model name).
        store: a :class:`~pyterrier_instruct.calls.CallStore`, its folder, an earlier version's ``judge.jsonl`` (read
            into the store beside it once, see :func:`judge_store`), or ``None`` (a temporary store: re-runs with this
            judge object still cost nothing).
        top_logprobs: candidates per token: 10 (default: the IFIR code behind the published numbers, ``GEval/geval.py``)
            or 5 (the number the paper's text gives).
        temperature, top_p, max_new_tokens: 0.0, 0.7, 512 as in the paper/code.
        system_prompt: add paper Figure 8's system line to the AILA prompts (the code sends none; default False).
        ifir_code_bug: reproduce the IFIR repository's AILA level-2/3 prompts, which never show the judge the passage
            (level 2) nor the instruction (level 3) — for parity checks only (the repository's double-brace f-string).
        mode: ``'answer'`` (the reference procedure) or ``'direct'`` (HF only: prefilled score distribution).
        min_prob: the candidate probability cut (1 %).
        batch_size: prompts per backend call; the store is written after each call.
        verbose: a progress bar over the judged documents.
    """

    def __init__(self, backend, *, model: Optional[str] = None, judge_model: Optional[str] = None, store=None,
                 top_logprobs: int = 10, temperature: float = 0.0, top_p: float = 0.7, max_new_tokens: int = 512,
                 system_prompt: bool = False, ifir_code_bug: bool = False, mode: str = "answer",
                 direct_prefix: str = DIRECT_PREFIX, min_prob: float = MIN_PROB, batch_size: int = 64,
                 verbose: bool = True, backend_options: Optional[dict] = None):
        self.backend = self._backend(backend, model, backend_options)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if mode == "direct" and not hasattr(self.backend, "score_distribution"):
            raise ValueError(f"mode='direct' needs a backend with score_distribution (HFBackend); {self.backend!r} has "
                             "none")
        refusal = self.backend.logprobs_refusal() if mode == "answer" else None
        if refusal is not None:
            raise ValueError(f"IFIRJudge(mode='answer') reads the score token's top logprobs, which {self.backend!r} "
                             f"cannot give: {refusal}")
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        if not 0 < float(min_prob) <= 1:
            raise ValueError(f"min_prob must be in (0, 1], got {min_prob!r}")
        self.judge_model = str(judge_model) if judge_model is not None else _model_name(self.backend)
        self.store, legacy = judge_store(store)
        self.top_logprobs, self.temperature, self.top_p = int(top_logprobs), float(temperature), float(top_p)
        self.max_new_tokens, self.system_prompt = int(max_new_tokens), bool(system_prompt)
        self.ifir_code_bug = bool(ifir_code_bug)
        self.mode, self.direct_prefix, self.min_prob = mode, str(direct_prefix), float(min_prob)
        self.batch_size, self.verbose = int(batch_size), verbose
        self.stats = dict.fromkeys(("requested", "hits", "duplicates", "judged", "backend_calls", "failed", "dropped",
                                  "unparsed"), 0)
        self.last: Dict[str, int] = dict(self.stats)
        if legacy:  # the records this judge wrote in 0.x, under its keys now
            self.store.import_judge_jsonl(legacy,
                                          rekey={self._judge_id(_legacy_backend_id(self.backend)): self.judge_id})

    @staticmethod
    def _backend(backend, model, options) -> Backend:
        if isinstance(backend, Backend):
            return backend
        if backend in ("openai", "hf", "vllm"):
            if not model:
                raise ValueError(f"IFIRJudge(backend={backend!r}) needs model= (the judge model's name or path)")
            from ..backends import HFBackend, OpenAIBackend, VLLMBackend
            factory = {"openai": OpenAIBackend, "hf": HFBackend, "vllm": VLLMBackend}[backend]
            return factory(model, **dict(options or {}))
        raise TypeError(f"backend must be a Backend or one of 'openai', 'hf', 'vllm', got {backend!r}")

    def __repr__(self) -> str:
        return (f"IFIRJudge({self.backend!r}, judge_model={self.judge_model!r}, mode={self.mode!r}, "
                f"top_logprobs={self.top_logprobs}, ifir_code_bug={self.ifir_code_bug}, store={self.store!r})")

    @property
    def judge_id(self) -> str:
        """The judge model, its backend (its fingerprint: class, model, server, weights digest) and every setting that
        changes a judgement (part of the key)."""
        return self._judge_id(self.backend._call_identity())

    def _judge_id(self, backend_id: str) -> str:
        judge = f"{self.judge_model}|{backend_id}"
        if self.mode == "direct":
            return f"{judge}|direct|prefix={json.dumps(self.direct_prefix)}"
        return (f"{judge}|answer|top_logprobs={self.top_logprobs}|temperature={self.temperature:g}|top_p={self.top_p:g}"
                f"|max_tokens={self.max_new_tokens}")

    def settings(self) -> Dict[str, object]:
        return {"judge": self.judge_model, "mode": self.mode, "top_logprobs": self.top_logprobs,
                "temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_new_tokens,
                "system_prompt": self.system_prompt, "ifir_code_bug": self.ifir_code_bug}

    def prompt_id(self, name: str) -> str:
        """The prompt name plus the options changing its message (``aila3+ifir_code_bug``, ``aila1+figure8_system``)."""
        suffix = "+ifir_code_bug" if self.ifir_code_bug and name in IFIR_JUDGE_CODE_BUG else ""
        return name + suffix + ("+figure8_system" if self._system(name) else "")

    def _system(self, name: str) -> Optional[str]:
        return IFIR_JUDGE_SYSTEM.get(name.rstrip("0123456789")) if self.system_prompt else None

    def messages(self, prompt: str, instruction: str, text: str) -> List[Dict[str, str]]:
        """The chat messages of one judgement: the rendered prompt as the one user message (+ the system line)."""
        user = {"role": "user",
                "content": render_ifir_judge(prompt, instruction, text, ifir_code_bug=self.ifir_code_bug)}
        system = self._system(prompt)
        return ([{"role": "system", "content": system}] if system else []) + [user]

    def key(self, item: JudgeItem) -> str:
        return judge_key(self.judge_id, self.prompt_id(item.prompt), item.instruction, item.docno, item.text)

    # -- judging ---------------------------------------------------------------------------------------------------
    def judge(self, items: Sequence[JudgeItem]) -> List[Judgement]:
        """One Judgement per item, in order: stored ones from the store, the others judged in batches of
        ``batch_size`` (one backend call each, stored after each). ``last`` holds this call's counters, ``stats`` the
        judge's totals.

        A failed request, or an answer without usable logprobs, costs its item only: the item's Judgement has status
        ``'failed'`` and no score (INSTFOL drops its rank position), it is not stored, and one warning gives the count
        and the first error. When every request so far has failed and nothing came from the store (the judge server is
        down or refuses every request), this raises RuntimeError with the count after that backend call, instead of
        going on. Errors that concern the backend as a whole (a missing API key, an unreachable server) are raised
        as they are."""
        items = [JudgeItem(*i) for i in items]
        last = dict.fromkeys(self.stats, 0)
        last["requested"] = len(items)
        keys = [self.key(item) for item in items]
        found = self.store.get(keys)
        out: List[Optional[Judgement]] = [judgement_of_record(found[k], self.min_prob) if k in found else None
                                          for k in keys]
        pending: Dict[str, List[int]] = {}
        for n, key in enumerate(keys):
            if key not in found:
                pending.setdefault(key, []).append(n)
        last["hits"] = len(items) - sum(len(v) for v in pending.values())
        last["duplicates"] = sum(len(v) - 1 for v in pending.values())
        todo, errors, usable, new = list(pending), [], last["hits"], 0
        bar = progress_bar(total=len(todo), desc=f"INSTFOL judge ({self.judge_model})", unit="doc",
                           disable=not self.verbose or not todo)
        try:
            for start in range(0, len(todo), self.batch_size):
                batch = todo[start:start + self.batch_size]
                judged = self._run(batch, [items[pending[k][0]] for k in batch])
                last["backend_calls"] += 1
                last["judged"] += len(batch)
                new += sum(call is not None for _, call in judged)
                stored = self.store.get([c.key for _, c in judged if c is not None])
                for key, (j, call) in zip(batch, judged):
                    if call is None:
                        errors.append(j.answer)
                    elif stored.get(key) != call.response:  # another process stored it first: its record stands
                        j = judgement_of_record(stored[key], self.min_prob)
                    for n in pending[key]:
                        out[n] = j
                usable += len(stored)
                bar.update(len(batch))
                if errors and not usable:
                    raise RuntimeError(f"INSTFOL judge {self.judge_model}: all {len(errors)} judge request(s) failed "
                                       f"({len(todo) - len(errors)} not sent); first error: {errors[0]}")
        finally:
            bar.close()
            last["failed"] = sum(1 for j in out if j is not None and j.status == "failed")
            last["dropped"] = sum(1 for j in out if j is not None and j.score is None)
            last["unparsed"] = sum(1 for j in out if j is not None and j.status in ("unparsed", "no_score_token"))
            for name, value in last.items():
                self.stats[name] += value
            self.last = last
        # what a run costs (measures/cost.py): this store's look-ups, but where the backend has a store of its own,
        # the calls it answered are counted there, so here only those this store answered without it
        from ..measures.cost import observe
        alone = getattr(self.backend, "store", None) is None
        observe(self.store, keys if alone else [k for k in keys if k in found], new if alone else 0)
        if errors:
            log.warning("INSTFOL judge %s: %d of %d judge request(s) failed, first: %s; their rank positions are "
                        "dropped from both lists (not stored: judged again next time)", self.judge_model, len(errors),
                        last["judged"], errors[0])
        from ..base import warn_unparsed
        warn_unparsed(f"INSTFOL judge {self.judge_model}", last["unparsed"], len(out), "held no score", "scored 0")
        counts = (last[k] for k in ("requested", "hits", "duplicates", "judged", "backend_calls", "failed"))
        log.info("INSTFOL judge %s: %d judgements, %d stored, %d duplicates, %d judged in %d backend call(s), "
                 "%d failed", self.judge_model, *counts)
        return out

    def _run(self, keys: List[str], items: List[JudgeItem]) -> List[tuple]:
        """One backend call over ``items``, stored: ``(Judgement, Call)`` per item (the Call ``None`` if it failed)."""
        prompts = [self.backend.prepare(self.messages(i.prompt, i.instruction, i.text)) for i in items]
        start = time.perf_counter()
        if self.mode == "direct":
            answers = self.backend.score_distribution(prompts, tuple(map(str, SCORE_VALUES)), prefix=self.direct_prefix)
        else:
            answers = self.backend.generate_logprobs(prompts, max_new_tokens=self.max_new_tokens, top_p=self.top_p,
                                                     top_logprobs=self.top_logprobs, temperature=self.temperature,
                                                     return_exceptions=True)
        share = (time.perf_counter() - start) / len(items)
        if len(answers) != len(prompts):
            raise RuntimeError(f"{self.backend!r} returned {len(answers)} generations for {len(prompts)} prompts")
        out = []
        for key, item, prompt, answer in zip(keys, items, prompts, answers):
            try:
                if isinstance(answer, Exception):
                    raise answer
                score = direct_judgement if self.mode == "direct" else weighted_judge_score
                j = score(answer, self.min_prob)
            except Exception as err:  # noqa: BLE001 - one bad answer costs its item only
                log.debug("INSTFOL judge %s: a judgement failed: %s: %s", self.judge_model, type(err).__name__, err)
                out.append((Judgement(None, "failed", answer=f"{type(err).__name__}: {err}"), None))
                continue
            record = self._record(key, item, j)
            out.append((j, Call.of(key, self.judge_id, "judge", answer, record, prompt.n_tokens, share)))
        self.store.put([c for _, c in out if c is not None])
        return out

    def _record(self, key: str, item: JudgeItem, j: Judgement) -> dict:
        return {"key": key, "judge": self.judge_id, "prompt": self.prompt_id(item.prompt), "docno": item.docno,
                "text_sha256": sha256(item.text), "instruction_sha256": sha256(item.instruction), "status": j.status,
                "score": j.score, "parsed": j.parsed, "position": j.position,
                "candidates": [list(c) for c in j.candidates], "answer": j.answer, "served_model": j.model}
