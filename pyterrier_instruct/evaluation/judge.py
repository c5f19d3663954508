"""IFIR's INSTFOL judge (IFIR paper §4.1 and App. B; the IFIR repository's ``src/utils/llm_metrics/GEval/``): an LLM
scores one (instruction, passage) pair with the dataset- and level-specific prompt, and the document's score is the probability-weighted score token.

One judgement, as the IFIR repository computes it (``GEval/geval.py``), in the default ``mode='answer'``:

1. one chat request with one user message (the rendered prompt; no system message unless ``system_prompt=True``,
   which adds paper Figure 8's line to the AILA prompts), ``temperature=0``, ``top_p=0.7``, ``max_tokens=512``,
   ``logprobs`` with ``top_logprobs=10`` (the IFIR code, which produced the published numbers and whose formula sums
   k = 1..10; the paper's text says 5, available as ``top_logprobs=5`` — it changes about half the per-query values);
2. the answer is parsed as JSON from its first ``{`` to its last ``}`` (a missing ``}`` is appended); an unparseable
   answer reads as score 0 and the document is **kept**;
3. ŝ = the parsed ``score`` written as digits (missing or non-digit, e.g. ``2.5``, → 0);
4. the **first generated token whose text equals ŝ** is the score position (none: the document scores 0.0);
5. of that position's candidates, keep decimal-digit tokens (``" 2"`` with a space is rejected) with value 0–5 and
   probability ≥ 1 %, summing probabilities per value: score = Σ v·P(v) / Σ P(v);
6. no candidate kept (0/0, NaN in the IFIR code) or a failed request: the judgement has no score, and the evaluator
   drops that rank position from both runs' lists (counted).

``mode='direct'`` (HF backends only) skips generation: the answer is prefilled up to the score
(``'{\\n    "score": '``) and the weighted score is taken over the model's full next-token probabilities of
``"0"``–``"5"`` (same filter), one forward pass per document. It is a cheaper local judge, not the reference procedure.

Judgements are cached (:class:`JudgeCache`, an append-only JSONL file) under a key of the judge model, its backend
(class, model, server or dtype) and its settings, the prompt id (with ``+ifir_code_bug``/``+figure8_system`` when
those change the message), the instruction string, the doc id and the SHA-256 of the document text, so a re-run or a
second system retrieving the same passages costs no new calls; the IFIR code judged a document found by both runs
twice, the cache judges it once (identical at temperature 0 up to API nondeterminism). Processes sharing the file read
what the others appended before each batch, under a lock file held only to read and append (never across a backend
call, so a slow or stalled judge does not hold up the others); a pair two processes judge at the same moment is
stored once, the first append winning for everyone.

A failed request, or an answer that is not usable (malformed JSON body, missing or ``null`` logprobs), fails its
judgement only: counted (``stats['failed']``, ``InstfolResult.judge['failed']``), reported in one warning with the
first error, dropped from INSTFOL like any failed position and not cached; a judge whose every request fails raises.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from ..backends.base import Backend, Generation, check_logprob_args
from ..prompts import IFIR_JUDGE_CODE_BUG, IFIR_JUDGE_SYSTEM, render_ifir_judge
from .._progress import tqdm as progress_bar

log = logging.getLogger(__name__)

#: A candidate score token counts when its probability is at least this (the IFIR code's ``np.log(0.01)`` cut).
MIN_PROB = 0.01
#: The score values a candidate token may take (the IFIR code accepts 0–5, whatever the prompt's scale).
SCORE_VALUES = (0, 1, 2, 3, 4, 5)
MODES = ("answer", "direct")
#: The prefilled answer of ``mode='direct'``: the example JSON of the prompts up to the score value.
DIRECT_PREFIX = '{\n    "score": '
#: seconds between looks at a shared cache for the pairs another process is judging
POLL_SECONDS = 0.05


class JudgeItem(NamedTuple):
    """One judgement to make: the prompt name (``fiqa2``), the instruction string, the doc id and the document text."""
    prompt: str
    instruction: str
    docno: str
    text: str


@dataclass(frozen=True)
class Judgement:
    """A judged document. ``score`` is the weighted score, ``None`` when the judgement counts as failed (``status``
    ``'failed'``: the request failed; ``'no_candidates'``: no digit candidate survived the filter). ``status`` is
    ``'ok'``, ``'unparsed'`` (the answer was not JSON: ŝ = 0, kept) or ``'no_score_token'`` (no generated token
    equals ŝ: 0.0, kept) otherwise. ``parsed`` = ŝ, ``position`` = the score token's index in the answer,
    ``candidates`` = that position's ``(token, logprob)`` pairs, ``cached`` = read from the cache, ``model`` = the model
    id the server said answered (HTTP backends)."""
    score: Optional[float]
    status: str
    parsed: Optional[str] = None
    answer: str = ""
    position: Optional[int] = None
    candidates: Tuple[Tuple[str, float], ...] = ()
    cached: bool = False
    model: Optional[str] = None


def parse_judge_answer(text: Optional[str]) -> Tuple[dict, bool]:
    """``(parsed JSON object, parsed?)`` as the IFIR code's ``content2json``: the text from the first ``{`` to the last
    ``}`` (a ``}`` is appended when only ``{`` occurs); ``None``, invalid JSON or a non-object give
    ``({"score": 0, "reason": ""}, False)``."""
    fallback = {"score": 0, "reason": ""}
    if text is None:
        return fallback, False
    start, end = text.find("{"), text.rfind("}") + 1
    if end == 0 and start != -1:
        text, end = text + "}", len(text) + 1
    body = text[start:end] if start != -1 and end != 0 else ""
    try:
        parsed = json.loads(body)
    except ValueError:
        return fallback, False
    return (parsed, True) if isinstance(parsed, dict) else (fallback, False)


def answer_score(parsed: dict) -> str:
    """ŝ as the text the score token must equal: ``str(score)`` when it is all decimal digits, else ``'0'`` (a missing
    score, ``2.5``, ``-1``, ``"two"``, ``true``)."""
    score = parsed.get("score")
    text = str(0 if score is None else score)
    return text if text.isdigit() and text.isdecimal() else "0"


def weighted_candidates(candidates: Iterable[Tuple[str, float]], min_prob: float = MIN_PROB) -> float:
    """Σ v·P(v) / Σ P(v) over the candidates ``(token, logprob)`` whose token is decimal digits of value 0–5 and whose
    logprob is ≥ ln(``min_prob``), probabilities of equal values summed; NaN when none is kept."""
    cut = math.log(min_prob)
    probs: Dict[int, float] = {}
    for token, logprob in candidates:
        if logprob < cut or not token.isdecimal():
            continue
        value = int(token)
        if value in SCORE_VALUES:
            probs[value] = probs.get(value, 0.0) + math.exp(logprob)
    if not probs:
        return math.nan
    return sum(v * p for v, p in probs.items()) / sum(probs.values())


def weighted_judge_score(generation: Generation, min_prob: float = MIN_PROB) -> Judgement:
    """The IFIR code's weighted score of one judge answer (steps 2–6 of the module docstring)."""
    parsed, ok = parse_judge_answer(generation.text)
    target = answer_score(parsed)
    position = next((i for i, t in enumerate(generation.tokens) if t == target), None)
    if position is None:
        return Judgement(0.0, "no_score_token" if ok else "unparsed", target, generation.text, model=generation.model)
    candidates = tuple(generation.top_logprobs[position])
    value = weighted_candidates(candidates, min_prob)
    if math.isnan(value):
        return Judgement(None, "no_candidates", target, generation.text, position, candidates, model=generation.model)
    return Judgement(value, "ok" if ok else "unparsed", target, generation.text, position, candidates, model=generation.model)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _owner() -> str:
    """Who holds a reservation: host, process and a random tag (one per cache object)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# Reservations held by a judge call of this process: owner → keys. A reservation of this process (host and pid) that
# no call holds any more (its call finished, or its judge object was dropped) never blocks another judge.
_HELD: Dict[str, set] = {}
_HELD_LOCK = threading.Lock()


def _stale(owner: str, key: str) -> bool:
    """Whether ``owner``'s reservation of ``key`` can be taken over at once: a process of this host that no longer
    runs (:func:`_gone`), or this very process when no judge call holds the reservation."""
    host, _, rest = owner.partition(":")
    if host == socket.gethostname() and rest.partition(":")[0] == str(os.getpid()):
        with _HELD_LOCK:
            return key not in _HELD.get(owner, ())
    return _gone(owner)


def _gone(owner: str) -> bool:
    """Whether ``owner`` (:func:`_owner`) was a process on this host that no longer runs (killed: its reservations
    lapse at once rather than after the lease). An owner on another host is never known to be gone."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by another user (or signals unsupported): treat as running
        pass
    return False


class JudgeCache:
    """Judgements on disk: one JSON object per line, appended (and fsync'ed) after every backend batch, so an
    interrupted evaluation resumes where it stopped. ``path=None`` keeps them in memory only.

    The key hashes (judge id, prompt id, instruction string, doc id, SHA-256 of the document text); a record also
    holds the answer, ŝ, the score position's candidates and the score. A torn last line (the process killed while
    writing) is skipped and counted in ``corrupt``; later records are appended after it. Failed requests are not
    cached (they are retried next time). Counters: ``loaded`` (records read from the file, including those other
    processes appended meanwhile), ``corrupt``, ``written``.

    Processes sharing one file: every read and append happens under a lock file (``<path>.lock``, :mod:`filelock`),
    held only for that (never while judging), so no line is interleaved with another process's; a record whose key
    another process appended meanwhile is not appended again (the first one stands). A judge reserves (:meth:`reserve`) the pairs
    it is about to judge (``<path>.claims``: key, owner, expiry), so the others judge the rest and wait for those; a
    reservation not fulfilled within ``lease`` seconds (a stalled judge) lapses and another process takes the pairs
    over; a reservation ends when its judgement is stored, a judge whose backend raised releases its reservations, and
    those of a process on this host that no longer runs (killed), or of this process when no judge call holds them (a
    finished or interrupted call, a dropped judge object: a notebook judging again), lapse at once. A lock not obtained
    within ``lock_timeout`` seconds is an error naming the lock file.
    """

    def __init__(self, path: Union[str, os.PathLike, None] = None, lock_timeout: float = 60.0, lease: float = 600.0):
        self.path = None if path is None else Path(path)
        self.lock_timeout, self.lease = float(lock_timeout), float(lease)
        self.owner = _owner()
        self._claims: Dict[str, Tuple[str, float]] = {}  # key → (owner, expiry) of reservations read so far
        self._claims_offset = 0
        self._records: Dict[str, dict] = {}
        self.loaded = self.corrupt = self.written = 0
        self._offset = 0  # bytes of the file read so far
        self._lock = None
        if self.path is not None and self.path.exists():
            with self.claim():
                pass

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path) if self.path else None!r}, records={len(self)})"

    def __getstate__(self):
        return {**self.__dict__, "_lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.owner = _owner()  # a copy in another process reserves as itself


    @contextlib.contextmanager
    def claim(self) -> Iterator["JudgeCache"]:
        """Holds the file's lock (re-entrant) and reads the records appended since the last read: inside, what
        ``get`` misses is missing for every process, until this process appends it."""
        if self.path is None:
            yield self
            return
        import filelock
        if self._lock is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = filelock.FileLock(str(self.path) + ".lock")
        try:
            self._lock.acquire(timeout=self.lock_timeout)
        except filelock.Timeout:
            raise TimeoutError(f"{self._lock.lock_file} was not released within lock_timeout={self.lock_timeout:g} s: another "
                               "process holds it (a stalled or killed writer on a network file system); remove the lock file if "
                               "no judge is running") from None
        try:
            self._read()
            self._read_claims()
            yield self
        finally:
            self._lock.release()

    def _claims_path(self) -> Path:
        return Path(str(self.path) + ".claims")

    def _read_claims(self) -> None:
        path = self._claims_path()
        if not path.exists():
            return
        with open(path, "rb") as f:
            f.seek(self._claims_offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a torn last line is read again (and skipped) next time
        for line in data[:end].split(b"\n"):
            try:
                key, owner, expiry = json.loads(line)
                self._claims[str(key)] = (str(owner), float(expiry))
            except (ValueError, TypeError):
                continue
        self._claims_offset += end

    def _write_claims(self, keys: Sequence[str], expiry: float) -> None:
        with open(self._claims_path(), "ab") as f:
            f.write("".join(json.dumps([k, self.owner, expiry]) + "\n" for k in keys).encode("utf-8"))
            f.flush()
        for k in keys:
            self._claims[k] = (self.owner, expiry)
        with _HELD_LOCK:
            held = _HELD.setdefault(self.owner, set())
            if expiry > 0:
                held.update(keys)
            else:
                held.difference_update(keys)
                if not held:
                    del _HELD[self.owner]

    def held(self, keys: Sequence[str]) -> List[str]:
        """Those of ``keys`` this cache object has reserved and not yet stored or released."""
        with _HELD_LOCK:
            held = _HELD.get(self.owner, ())
            return [k for k in keys if k in held]

    def reserve(self, keys: Sequence[str]) -> Tuple[List[str], List[str]]:
        """``(mine, theirs)``: of ``keys`` not in the cache, those this process may judge now (reserved for ``lease``
        seconds) and those another process has reserved and is still judging."""
        with self.claim():
            missing = [k for k in keys if k not in self._records]
            if self.path is None:
                return missing, []
            now = time.time()
            theirs = [k for k in missing if k in self._claims and self._claims[k][0] != self.owner and self._claims[k][1] > now
                      and not _stale(self._claims[k][0], k)]
            mine = [k for k in missing if k not in set(theirs)]
            if mine:
                self._write_claims(mine, now + self.lease)
            return mine, theirs

    def release(self, keys: Sequence[str]) -> None:
        """Ends this process's reservation of ``keys`` (judgements stored, or failed: another process may try them)."""
        if self.path is not None and keys:
            with self.claim():
                self._write_claims(list(keys), 0.0)

    def _read(self) -> None:
        """Parses the file from ``_offset`` (under the lock: a last line without its newline is torn, not in progress)."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        if not data:
            return
        corrupt = 0
        lines = data.split(b"\n")
        if lines[-1]:
            corrupt += 1  # a torn last line: skipped; the next append starts on a new line
        for line in lines[:-1]:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                self._records[str(record["key"])] = record
                self.loaded += 1
            except (ValueError, KeyError, TypeError):
                corrupt += 1
        self._offset += len(data)
        self.corrupt += corrupt
        if corrupt:
            log.warning("%s: skipped %d unreadable line(s) (an interrupted write); those pairs are judged again", self.path, corrupt)

    @staticmethod
    def key(judge: str, prompt: str, instruction: str, docno: str, text: str) -> str:
        return sha256(json.dumps([judge, prompt, sha256(instruction), str(docno), sha256(text)]))

    def get(self, key: str) -> Optional[dict]:
        return self._records.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def add(self, records: Sequence[dict]) -> List[dict]:
        """Stores ``records`` (each with a ``key``) and appends them to the file in one write, under the lock; a key
        another process appended meanwhile keeps its record. Returns the records stored for the keys."""
        if not records:
            return []
        with self.claim():
            fresh = [r for r in records if r["key"] not in self._records]
            self._records.update((r["key"], r) for r in fresh)
            if self.path is not None and fresh:
                self._append(fresh)
        self.written += len(fresh)
        return [self._records[r["key"]] for r in records]

    def _append(self, records: Sequence[dict]) -> None:
        """One write of ``records`` at the end of the file (under the lock, the file read up to its end)."""
        payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
        with open(self.path, "a+b") as f:
            end = f.seek(0, os.SEEK_END)
            if end:
                f.seek(end - 1)
                if f.read(1) != b"\n":  # after a torn line
                    payload = b"\n" + payload
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
            self._offset = f.tell()


def _model_name(backend: Backend) -> str:
    for attr in ("model", "model_name_or_path", "name"):
        value = getattr(backend, attr, None)
        if isinstance(value, str):
            return value
    return type(backend).__name__


class IFIRJudge:
    """The INSTFOL judge over any backend with ``generate_logprobs`` (OpenAI-compatible HTTP, vLLM, HF, a callable).

    Args:
        backend: a :class:`~pyterrier_instruct.backends.base.Backend`, or ``'openai'``/``'hf'``/``'vllm'`` with ``model``
            (and ``backend_options`` for its constructor, e.g. ``base_url``).
        judge_model: the judge's name in cache keys and reports (default: the backend's model name).
        cache: a :class:`JudgeCache`, a path to its JSONL file, or ``None`` (in memory: re-runs with this judge object
            still cost nothing).
        top_logprobs: candidates per token: 10 (default: the IFIR code behind the published numbers, ``GEval/geval.py``)
            or 5 (the number the paper's text gives).
        temperature, top_p, max_new_tokens: 0.0, 0.7, 512 as in the paper/code.
        system_prompt: add paper Figure 8's system line to the AILA prompts (the code sends none; default False).
        ifir_code_bug: reproduce the IFIR repository's AILA level-2/3 prompts, which never show the judge the passage
            (level 2) nor the instruction (level 3) — for parity checks only (the repository's double-brace f-string).
        mode: ``'answer'`` (the reference procedure) or ``'direct'`` (HF only: prefilled score distribution).
        min_prob: the candidate probability cut (1 %).
        batch_size: prompts per backend call; the cache is written after each call.
        verbose: a progress bar over the judged documents.
    """

    def __init__(self, backend, *, model: Optional[str] = None, judge_model: Optional[str] = None, cache=None,
                 top_logprobs: int = 10, temperature: float = 0.0, top_p: float = 0.7, max_new_tokens: int = 512,
                 system_prompt: bool = False, ifir_code_bug: bool = False, mode: str = "answer",
                 direct_prefix: str = DIRECT_PREFIX, min_prob: float = MIN_PROB, batch_size: int = 64, verbose: bool = True,
                 backend_options: Optional[dict] = None):
        self.backend = self._backend(backend, model, backend_options)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if mode == "direct" and not hasattr(self.backend, "score_distribution"):
            raise ValueError(f"mode='direct' needs a backend with score_distribution (HFBackend); {self.backend!r} has none")
        refusal = self.backend.logprobs_refusal() if mode == "answer" else None
        if refusal is not None:
            raise ValueError(f"IFIRJudge(mode='answer') reads the score token's top logprobs, which {self.backend!r} cannot give: {refusal}")
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        if not 0 < float(min_prob) <= 1:
            raise ValueError(f"min_prob must be in (0, 1], got {min_prob!r}")
        self.judge_model = str(judge_model) if judge_model is not None else _model_name(self.backend)
        self.cache = cache if isinstance(cache, JudgeCache) else JudgeCache(cache)
        self.top_logprobs, self.temperature, self.top_p = int(top_logprobs), float(temperature), float(top_p)
        self.max_new_tokens, self.system_prompt, self.ifir_code_bug = int(max_new_tokens), bool(system_prompt), bool(ifir_code_bug)
        self.mode, self.direct_prefix, self.min_prob = mode, str(direct_prefix), float(min_prob)
        self.batch_size, self.verbose = int(batch_size), verbose
        self.stats = dict.fromkeys(("requested", "hits", "duplicates", "judged", "backend_calls", "failed", "dropped"), 0)
        self.last: Dict[str, int] = dict(self.stats)

    @staticmethod
    def _backend(backend, model, options) -> Backend:
        if isinstance(backend, Backend):
            return backend
        if backend in ("openai", "hf", "vllm"):
            if not model:
                raise ValueError(f"IFIRJudge(backend={backend!r}) needs model= (the judge model's name or path)")
            from ..backends import HFBackend, OpenAIBackend, VLLMBackend
            return {"openai": OpenAIBackend, "hf": HFBackend, "vllm": VLLMBackend}[backend](model, **dict(options or {}))
        raise TypeError(f"backend must be a Backend or one of 'openai', 'hf', 'vllm', got {backend!r}")

    def __repr__(self) -> str:
        return (f"IFIRJudge({self.backend!r}, judge_model={self.judge_model!r}, mode={self.mode!r}, top_logprobs={self.top_logprobs}, "
                f"ifir_code_bug={self.ifir_code_bug}, cache={self.cache!r})")

    @property
    def judge_id(self) -> str:
        """The judge model, its backend (class, model, server or dtype: :meth:`~pyterrier_instruct.backends.base.Backend.identity`)
        and every setting that changes a judgement (part of the cache key)."""
        judge = f"{self.judge_model}|{self.backend.identity()}"
        if self.mode == "direct":
            return f"{judge}|direct|prefix={json.dumps(self.direct_prefix)}"
        return (f"{judge}|answer|top_logprobs={self.top_logprobs}|temperature={self.temperature:g}|top_p={self.top_p:g}"
                f"|max_tokens={self.max_new_tokens}")

    def settings(self) -> Dict[str, object]:
        return {"judge": self.judge_model, "mode": self.mode, "top_logprobs": self.top_logprobs, "temperature": self.temperature,
                "top_p": self.top_p, "max_tokens": self.max_new_tokens, "system_prompt": self.system_prompt,
                "ifir_code_bug": self.ifir_code_bug}

    def prompt_id(self, name: str) -> str:
        """The prompt name plus the options that change its message (``aila3+ifir_code_bug``, ``aila1+figure8_system``)."""
        suffix = "+ifir_code_bug" if self.ifir_code_bug and name in IFIR_JUDGE_CODE_BUG else ""
        return name + suffix + ("+figure8_system" if self._system(name) else "")

    def _system(self, name: str) -> Optional[str]:
        return IFIR_JUDGE_SYSTEM.get(name.rstrip("0123456789")) if self.system_prompt else None

    def messages(self, prompt: str, instruction: str, text: str) -> List[Dict[str, str]]:
        """The chat messages of one judgement: the rendered prompt as the one user message (+ the system line)."""
        user = {"role": "user", "content": render_ifir_judge(prompt, instruction, text, ifir_code_bug=self.ifir_code_bug)}
        system = self._system(prompt)
        return ([{"role": "system", "content": system}] if system else []) + [user]

    def key(self, item: JudgeItem) -> str:
        return JudgeCache.key(self.judge_id, self.prompt_id(item.prompt), item.instruction, item.docno, item.text)

    # -- judging ---------------------------------------------------------------------------------------------------
    def judge(self, items: Sequence[JudgeItem]) -> List[Judgement]:
        """One Judgement per item, in order: cached ones from the cache, the others judged in batches of
        ``batch_size`` (one backend call each, the cache appended after each). ``last`` holds this call's counters,
        ``stats`` the judge's totals.

        A failed request, or an answer without usable logprobs, costs its item only: the item's Judgement has status
        ``'failed'`` and no score (INSTFOL drops its rank position), it is not cached, and one warning gives the count
        and the first error. When every request so far has failed and nothing came from the cache (the judge server is
        down or refuses every request), this raises RuntimeError with the count after that backend call, instead of
        going on. Errors that concern the backend as a whole (a missing API key, an unreachable server) are raised
        as they are."""
        items = [JudgeItem(*i) for i in items]
        last = dict.fromkeys(self.stats, 0)
        last["requested"] = len(items)
        out: List[Optional[Judgement]] = [None] * len(items)
        pending: Dict[str, List[int]] = {}
        for n, item in enumerate(items):
            key = self.key(item)
            record = self.cache.get(key)
            if record is not None:
                out[n] = self._from_record(record)
                last["hits"] += 1
            elif key in pending:
                pending[key].append(n)
                last["duplicates"] += 1
            else:
                pending[key] = [n]
        keys = list(pending)
        errors: List[str] = []
        state = {"usable": last["hits"]}  # judgements this call can use so far
        bar = progress_bar(total=len(keys), desc=f"INSTFOL judge ({self.judge_model})", unit="doc", disable=not self.verbose or not keys)
        try:
            waiting: List[str] = []  # reserved by other processes: read from the cache once they are done
            for start in range(0, len(keys), self.batch_size):
                batch = keys[start:start + self.batch_size]
                waiting += self._judge_batch(batch, items, pending, out, last, errors, state)
                bar.update(len(batch))
                self._all_failed(errors, state, len(keys))
            while waiting:  # another process judges these: take them over if its reservation lapses
                time.sleep(POLL_SECONDS)
                waiting = self._judge_batch(waiting, items, pending, out, last, errors, state)
                self._all_failed(errors, state, len(keys))
        finally:
            bar.close()
            self.cache.release(self.cache.held(keys))  # nothing this call reserved stays reserved after it
            last["failed"] = sum(1 for j in out if j is not None and j.status == "failed")
            last["dropped"] = sum(1 for j in out if j is not None and j.score is None)
            for name, value in last.items():
                self.stats[name] += value
            self.last = last
        if errors:
            log.warning("INSTFOL judge %s: %d of %d judge request(s) failed, first: %s; their rank positions are dropped from both "
                        "lists (not cached: judged again next time)", self.judge_model, len(errors), last["judged"], errors[0])
        log.info("INSTFOL judge %s: %d judgements, %d cache hits, %d duplicates, %d judged in %d backend call(s), %d failed",
                 self.judge_model, last["requested"], last["hits"], last["duplicates"], last["judged"], last["backend_calls"], last["failed"])
        return out

    def _all_failed(self, errors: List[str], state: dict, total: int) -> None:
        if errors and not state["usable"]:
            sent = len(errors)
            raise RuntimeError(f"INSTFOL judge {self.judge_model}: all {sent} judge request(s) failed ({total - sent} "
                               f"not sent); first error: {errors[0]}")

    def _judge_batch(self, batch: List[str], items: List[JudgeItem], pending: Dict[str, List[int]], out: list, last: dict,
                     errors: List[str], state: dict) -> List[str]:
        """Judges the keys of ``batch`` not in the cache (read first) nor reserved by another process (returned); the
        lock is not held while the backend answers."""
        todo, theirs = self.cache.reserve(batch)
        for key in batch:
            record = self.cache.get(key)
            if record is not None and out[pending[key][0]] is None:
                j = self._from_record(record)
                for n in pending[key]:
                    out[n] = j
                last["hits"] += 1
                state["usable"] += 1
        if not todo:
            return theirs
        try:
            judged = self._run([items[pending[k][0]] for k in todo])
        except BaseException:  # the backend raised (or the run was interrupted): the next run judges these at once
            self.cache.release(todo)
            raise
        last["backend_calls"] += 1
        last["judged"] += len(todo)
        records = []
        for key, j in zip(todo, judged):
            for n in pending[key]:
                out[n] = j
            if j.status == "failed":
                errors.append(j.answer)
            else:
                records.append(self._record(key, items[pending[key][0]], j))
                state["usable"] += 1
        for ours, stored in zip(records, self.cache.add(records)):
            if stored is not ours:  # another process took a lapsed reservation over and was first: its record stands
                j = self._from_record(stored)
                for n in pending[ours["key"]]:
                    out[n] = j
        self.cache.release(todo)  # stored or failed: no reservation outlives its judgement
        return theirs

    def _run(self, items: List[JudgeItem]) -> List[Judgement]:
        prompts = [self.backend.prepare(self.messages(i.prompt, i.instruction, i.text)) for i in items]
        if self.mode == "direct":
            dists = self.backend.score_distribution(prompts, tuple(str(v) for v in SCORE_VALUES), prefix=self.direct_prefix)
            return [self._direct(d) for d in dists]
        gens = self.backend.generate_logprobs(prompts, max_new_tokens=self.max_new_tokens, top_logprobs=self.top_logprobs,
                                              temperature=self.temperature, top_p=self.top_p, return_exceptions=True)
        if len(gens) != len(prompts):
            raise RuntimeError(f"{self.backend!r} returned {len(gens)} generations for {len(prompts)} prompts")
        out = []
        for g in gens:
            try:
                if isinstance(g, Exception):
                    raise g
                out.append(weighted_judge_score(g, self.min_prob))
            except Exception as err:  # noqa: BLE001 - one bad answer costs its item only
                log.debug("INSTFOL judge %s: a judgement failed: %s: %s", self.judge_model, type(err).__name__, err)
                out.append(Judgement(None, "failed", answer=f"{type(err).__name__}: {err}"))
        return out

    def _direct(self, probs: Dict[str, float]) -> Judgement:
        candidates = tuple((t, math.log(p) if p > 0 else -math.inf) for t, p in probs.items())
        value = weighted_candidates(candidates, self.min_prob)
        return Judgement(None if math.isnan(value) else value, "no_candidates" if math.isnan(value) else "ok", None, "", 0, candidates)

    def _record(self, key: str, item: JudgeItem, j: Judgement) -> dict:
        return {"key": key, "judge": self.judge_id, "prompt": self.prompt_id(item.prompt), "docno": item.docno,
                "text_sha256": sha256(item.text), "instruction_sha256": sha256(item.instruction), "status": j.status,
                "score": j.score, "parsed": j.parsed, "position": j.position, "candidates": [list(c) for c in j.candidates],
                "answer": j.answer, "served_model": j.model}

    def _from_record(self, record: dict) -> Judgement:
        """A cached judgement; the score is recomputed from the stored candidates with this judge's ``min_prob``."""
        candidates = tuple((str(t), float(lp)) for t, lp in record.get("candidates") or ())
        position, status = record.get("position"), record.get("status", "ok")
        if position is None:
            score: Optional[float] = 0.0
        else:
            value = weighted_candidates(candidates, self.min_prob)
            score = None if math.isnan(value) else value
            if score is None:
                status = "no_candidates"
            elif status == "no_candidates":
                status = "ok"
        return Judgement(score, status, record.get("parsed"), record.get("answer", ""), position, candidates, cached=True,
                         model=record.get("served_model"))
