"""The LLM call store: every call a backend makes (or judgement a judge makes), kept once on disk.

A :class:`CallStore` is a :class:`~pyterrier_instruct._store.SqliteStore`, one row per call keyed by the SHA-256 of the
backend's fingerprint, the method, the prompt as sent and the settings that change the answer; a row holds the
response as returned (pickled), the token usage, the latency and the time (:meth:`CallStore.usage` sums them). A
backend given ``store=`` calls through :meth:`CallStore.through`: only misses are computed and stored, failed prompts
are not; ``INSERT OR IGNORE`` keeps the first of two processes' rows.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import time
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Sequence, Union

import numpy as np
import pandas as pd

from ._store import SqliteStore

__all__ = ["CallStore"]

#: methods whose answer is one array for the batch, one row per prompt (stored per row, stacked again when read)
ARRAY_CALLS = ("answer_logits", "classify_logits")


@dataclass(frozen=True)
class Call:
    """One row: ``response`` is whatever the method returned for this prompt."""
    key: str
    backend: str
    method: str
    response: object
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    reasoning_tokens: Optional[int] = None
    latency: Optional[float] = None

    @classmethod
    def of(cls, key: str, backend: str, method: str, answer, response, prompt_tokens: Optional[int], latency: float):
        """A row with the token counts ``answer`` shows (the API's ``usage`` where a Generation carries it)."""
        usage = dict(getattr(answer, "usage", None) or {})
        produced = getattr(answer, "tokens", None) or getattr(answer, "token_ids", None)
        return cls(key, backend, method, response, usage.get("prompt_tokens", prompt_tokens),
                   usage.get("completion_tokens", None if produced is None else len(produced)),
                   usage.get("reasoning_tokens"), latency)


class CallStore(SqliteStore):
    """LLM calls on disk (see the module docstring). ``path``: the store's folder (``None``: a new temporary one)."""
    ARTIFACT_TYPE = "call_store"
    SCHEMA = """
    CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, backend TEXT NOT NULL, method TEXT NOT NULL,
        response BLOB NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER, reasoning_tokens INTEGER,
        latency REAL, created REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS imported (file TEXT PRIMARY KEY, rows INTEGER NOT NULL)
    """
    COLUMNS = (*Call.__dataclass_fields__, "created")

    def get(self, keys: Sequence[str]) -> Dict[str, object]:
        """``{key: response}`` of the stored ones among ``keys``."""
        rows = self.select_in("SELECT key, response FROM calls WHERE key IN {keys}", list(dict.fromkeys(keys)))
        return {k: pickle.loads(r) for k, r in rows}

    def put(self, calls: Sequence[Call]) -> int:
        """Stores ``calls`` in one transaction (a key already stored keeps its first response); returns the new rows."""
        now = time.time()
        return self.insert("calls", self.COLUMNS, [
            (c.key, c.backend, c.method, pickle.dumps(c.response, protocol=4), c.prompt_tokens, c.completion_tokens,
             c.reasoning_tokens, c.latency, now) for c in calls])

    def __len__(self) -> int:
        return self.connection().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def usage(self) -> pd.DataFrame:
        """Per backend (its fingerprint) and method: ``calls``, ``prompt_tokens``, ``completion_tokens``,
        ``reasoning_tokens`` (sums over the calls that report them) and ``seconds`` (summed latency)."""
        rows = self.connection().execute(
            "SELECT backend, method, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(reasoning_tokens), "
            "SUM(latency) FROM calls GROUP BY backend, method ORDER BY backend, method").fetchall()
        return pd.DataFrame(rows, columns=["backend", "method", "calls", "prompt_tokens", "completion_tokens",
                                           "reasoning_tokens", "seconds"])

    def through(self, backend, method: str, compute: Callable[[list], object], prompts: Sequence,
                settings: Dict[str, object]):
        """``compute(prompts)``'s answer, one per prompt, with every stored prompt read from the store and only the
        others computed (deduplicated, one call of ``compute``) and stored (see the module docstring)."""
        from ._fingerprint import fingerprint
        prompts, ident, tail = list(prompts), backend._call_identity(), fingerprint(settings)
        sent = [backend._sent(p) for p in prompts]
        keys = [_sha(json.dumps([ident, method, fingerprint(s), tail])) for s in sent]
        found = self.get(keys)
        todo, rows = list(dict.fromkeys(k for k in keys if k not in found)), []
        if todo:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            start = time.perf_counter()
            answers = compute([prompts[first[k]] for k in todo])
            share = (time.perf_counter() - start) / len(todo)
            rows = [Call.of(k, ident, method, a, str(a) if isinstance(a, str) else a,  # a backends.base.Text: its usage
                            _n_tokens(prompts[first[k]], sent[first[k]]), share)
                    for k, a in zip(todo, answers) if not isinstance(a, Exception)]
            self.put(rows)
            found.update(zip(todo, answers))
            if rows:  # a row another process stored first stands, for this process too
                found.update(self.get([r.key for r in rows]))
        from .measures.cost import observe
        observe(self, keys, len(rows))  # what a run costs (measures/cost.py)
        out = [found[k] for k in keys]
        return np.stack(out) if method in ARRAY_CALLS else out

    def import_judge_jsonl(self, path: Union[str, os.PathLike], rekey: Optional[dict] = None) -> int:
        """Reads the judge cache file of earlier versions (``judge.jsonl``: one judgement record per line) into this
        store, once per file (a torn or unreadable line is skipped); returns the records read. ``rekey`` maps a record's
        old ``judge`` id to the id its judge has now: such a record is stored under the key the judge now computes
        (from the record's prompt, instruction and text digests, docno); others keep their ``key``."""
        path = os.path.abspath(os.fspath(path))
        conn = self.connection()
        if not os.path.isfile(path) or conn.execute("SELECT 1 FROM imported WHERE file = ?", (path,)).fetchone():
            return 0
        calls = []
        with open(path, "rb") as f:
            for line in f:
                with contextlib.suppress(ValueError, KeyError, TypeError):  # a torn or unreadable line
                    record = json.loads(line)
                    judge = (rekey or {}).get(record.get("judge"))
                    if judge is not None:
                        record = {**record, "judge": judge, "key": _sha(json.dumps([
                            judge, record["prompt"], record["instruction_sha256"], str(record["docno"]),
                            record["text_sha256"]]))}
                    calls.append(Call(str(record["key"]), str(record.get("judge")), "judge", record))
        self.put(calls)
        self.insert("imported", ("file", "rows"), [(path, len(calls))])
        return len(calls)

    def _package_files(self):
        """The packaged files (``build_package``): the database checkpointed into ``store.sqlite3``, without SQLite's
        ``-wal``/``-shm`` side files."""
        with self._mutex:
            self.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for name, file in super()._package_files():
            if not name.endswith(("-wal", "-shm")):
                yield name, file


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _n_tokens(prompt, sent) -> Optional[int]:
    """A prompt's tokens: a Prompt's count, or the number of token ids sent."""
    n = getattr(prompt, "n_tokens", None)
    return len(sent) if n is None and sent and all(isinstance(t, int) for t in sent) else n
