"""Resumable runs: :class:`SavedRun` keeps each system's ranking on disk as it completes, and a later call with the same
topics (and the same system) reads it back instead of recomputing.

A run is ``<key>.parquet`` (exact scores), ``<key>.trec`` and its record ``<key>.parquet.fingerprint.json``
(:func:`write_record`, also beside ``pt.Experiment(save_dir=...)`` runs), written before the run is renamed into place,
so a kill between the two leaves a run that is computed again, never reused. ``key`` hashes the system's
:func:`~pyterrier_instruct._fingerprint.fingerprint` and every topic column; a stage whose behaviour cannot be read is
refused unless ``key=`` names it. The record's fields and why not pyterrier-caching: docs/caching.md.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import time
import uuid
from typing import Optional, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from .._atomic import fsync_dir, fsync_file, lock, write_json
from .._config import constructor_signature
from .._fingerprint import NotFingerprintable, fingerprint

RUN_COLUMNS = ["qid", "docno", "score", "rank"]
logger = logging.getLogger(__name__)


def describe(system, key: Optional[str] = None) -> str:
    """What a run of ``system`` is keyed on: ``key=<key>`` when given, else the system's content fingerprint.

    Raises:
        NotFingerprintable: the system has a stage whose settings cannot be read and no ``key`` was given.
    """
    if key is not None:
        return f"key={key}"
    try:
        return fingerprint(system)
    except NotFingerprintable as e:
        raise NotFingerprintable(e.part, f"{e.reason}. SavedRun keys a run on the content of the system so that a "
                                 "change never reuses a stale run, and cannot read this stage's; name the "
                                 "configuration yourself, e.g. SavedRun(system, directory, key='mysystem-v2'), and "
                                 "change the key whenever the system changes") from None


def _cell(value) -> str:
    """A topic value as exact text: an array (``query_vec``) by dtype, shape and SHA-256 of its bytes (``str`` of an
    array over 1,000 elements is abbreviated by numpy, so two vectors differing in the middle would read the same)."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return f"ndarray({data.dtype},{data.shape},{hashlib.sha256(data.tobytes()).hexdigest()})"
    if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
        return "[" + ",".join(_cell(v) for v in value) + "]"
    return str(value)  # as pandas' astype(str): exact for strings and numbers (Python's float repr)


def _topics_text(topics: pd.DataFrame) -> str:
    """The exact value of every topic column (arrays by their bytes), rows sorted."""
    columns = sorted(topics.columns)
    frame = pd.DataFrame({c: [_cell(v) for v in topics[c]] for c in columns}, columns=columns)
    return frame.sort_values(["qid"] + [c for c in columns if c != "qid"]).to_csv(index=False)


def run_key(system, topics: pd.DataFrame, key: Optional[str] = None) -> str:
    """The storage key of ``system``'s run on ``topics`` (16 hex digits): :func:`describe` and the exact value of every
    topic column (arrays by their bytes)."""
    return identify(system, topics, key)["key"]


#: this host in the name of a writer's temporary files, so a sweep only judges the processes it can see
_WRITER = hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]
_PARTIAL = re.compile(r"\.([0-9a-f]{8})-(\d+)-[0-9a-f]{8}\.partial(\.[A-Za-z0-9]+)?$")
#: the record of a saved run ``<run>``: ``<run>.fingerprint.json``
FINGERPRINT_SUFFIX = ".fingerprint.json"


def partial(path: str, keep_ext: bool = False) -> str:
    """A temporary name beside ``path`` for this process (swept by :func:`sweep_partials` once it has died); with
    ``keep_ext``, ending in ``path``'s extension (``.gz``: writers pick the compression from it)."""
    root, ext = os.path.splitext(path) if keep_ext else (path, "")
    return f"{root}.{_WRITER}-{os.getpid()}-{uuid.uuid4().hex[:8]}.partial{ext}"


def _alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill would end it: never judged dead
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def sweep_partials(directory: str) -> int:
    """Removes the temporary files of writers on this host that are no longer running (killed mid-write); the
    number removed. Files of live writers and of other hosts are left alone."""
    removed = 0
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    for name in names:
        m = _PARTIAL.search(name)
        if m and m.group(1) == _WRITER and not _alive(int(m.group(2))):
            try:
                os.remove(os.path.join(directory, name))
                removed += 1
            except FileNotFoundError:  # another sweeper was first
                pass
    if removed:
        logger.info("removed %d temporary file(s) of killed writers in %s", removed, directory)
    return removed


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def identify(system, topics: pd.DataFrame, key: Optional[str] = None) -> dict:
    """What a run of ``system`` on ``topics`` is recorded under: ``{'key': run_key, 'system': describe(system, key),
    'topics': 16 hex digits of the topics}`` (the parts, so that a refused reuse names the one that differed).

    Raises:
        NotFingerprintable: as :func:`describe`.
    """
    system_text, topics_text = describe(system, key), _topics_text(topics)
    digest = hashlib.sha256(system_text.encode("utf-8"))
    digest.update(topics_text.encode("utf-8"))
    return {"key": digest.hexdigest()[:16], "system": system_text,
            "topics": hashlib.sha256(topics_text.encode("utf-8")).hexdigest()[:16]}


def write_record(path: str, written: str, record: dict) -> None:
    """Writes the record of the run ``path`` (``<path>.fingerprint.json``, replaced whole): ``record`` plus the SHA-256
    and size of the bytes at ``written``, the finished temporary file about to be renamed to ``path`` (or ``path``)."""
    write_json(path + FINGERPRINT_SUFFIX, {**record, "sha256": _sha256(written), "size": os.path.getsize(written)})


def read_record(path: str) -> Tuple[Optional[dict], Optional[str]]:
    """``(record, None)`` when the run ``path`` holds the bytes its record names; ``(None, None)`` when it has no
    record; ``(record or None, what is wrong)`` otherwise. Call it under the run's lock (writers hold it)."""
    try:
        with open(path + FINGERPRINT_SUFFIX, encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        return None, f"its record {os.path.basename(path) + FINGERPRINT_SUFFIX} cannot be read ({e})"
    if not isinstance(record, dict) or not {"sha256", "size"} <= set(record):
        return None, f"its record {os.path.basename(path) + FINGERPRINT_SUFFIX} names no SHA-256 and size"
    try:
        size = os.path.getsize(path)
        if size != record["size"] or _sha256(path) != record["sha256"]:
            return record, f"its SHA-256 differs from the one recorded ({size} bytes, {record['size']} recorded)"
    except OSError as e:
        return record, f"it cannot be read ({e})"
    return record, None


class SavedRun(pt.Transformer):
    """``Q → R``: ``system`` run once per distinct topic frame, its run kept in ``directory`` and reused afterwards.

    The output is the topics joined with the stored run, whether just computed or read back. A run is published under a
    lock (a second process waits, then reads it back); a stored run whose bytes differ from its record is recomputed,
    with a warning. The on-disk layout and the publishing order: docs/caching.md.

    Args:
        system: the transformer to run (``Q → R``); fingerprintable unless ``key`` is given.
        directory: where its runs go (created on first use).
        key: a name for the system's configuration, replacing its fingerprint (required for ``pt.apply`` stages,
            functions and transformer classes of other packages); change it whenever the system changes.
        verbose: log one line when a stored run is reused.

    Raises:
        NotFingerprintable: (a ``TypeError``) on construction: ``system`` is not fingerprintable, no ``key``.
    """

    __signature__ = constructor_signature()

    def __init__(self, system: pt.Transformer, directory: str, *, key: Optional[str] = None, verbose: bool = True):
        self.system = system
        self.directory = str(directory)
        self.key = key
        self.verbose = verbose
        describe(system, key)  # refuse an unkeyable system now, not after its first run

    def __repr__(self) -> str:
        key = "" if self.key is None else f", key={self.key!r}"
        return f"SavedRun({self.system!r}, {self.directory!r}{key})"

    def _fingerprint_(self) -> str:
        """Its output is the system's: the system's fingerprint, or ``key=<key>`` (so ``pt.Experiment(save_dir=)``
        can check a run of a system that has no fingerprint of its own once it is wrapped with a key)."""
        return describe(self.system, self.key)

    def paths(self, topics: pd.DataFrame, key: Optional[str] = None) -> dict:
        """The files of the run of ``topics`` (or of the run key ``key``): ``{'parquet', 'trec', 'json'}`` → path
        (``json``: the record)."""
        base = os.path.join(self.directory, key or run_key(self.system, topics, self.key))
        return {"parquet": base + ".parquet", "trec": base + ".trec", "json": base + ".parquet" + FINGERPRINT_SUFFIX}

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(topics, ["qid"])
        topic_cols = [c for c in topics.columns if c not in RUN_COLUMNS or c == "qid"]
        if topics.empty:
            return pd.DataFrame(columns=topic_cols + RUN_COLUMNS[1:])
        paths = self.paths(topics)
        os.makedirs(self.directory, exist_ok=True)
        held = lock(paths["parquet"] + ".lock", None, f"the saved run {paths['parquet']}")
        try:
            run = self._read(paths)
            if run is None:
                run = self._compute(topics, paths)
            elif self.verbose:
                logger.info("reusing the saved run %s (%d rows)", paths["parquet"], len(run))
        finally:
            held.release()
        merged = topics[topic_cols].astype({"qid": str}).merge(run, on="qid", how="inner", sort=False)
        order = pd.Categorical(merged["qid"], categories=pd.unique(topics["qid"].astype(str)), ordered=True)
        merged = merged.assign(_o=order).sort_values(["_o", "rank"], kind="stable")
        return merged.drop(columns="_o").reset_index(drop=True)

    def _read(self, paths: dict) -> Optional[pd.DataFrame]:
        """The stored run, or None when there is none or it does not match its record (a warning). Under its lock."""
        if not os.path.isfile(paths["parquet"]):
            return None
        record, problem = read_record(paths["parquet"])
        run = None
        if problem is None and record is None:
            problem = f"it has no record ({os.path.basename(paths['json'])})"
        elif problem is None and not (os.path.isfile(paths["trec"])
                                      and _sha256(paths["trec"]) == record.get("trec_sha256")):
            problem = f"its TREC file {os.path.basename(paths['trec'])} is not the one recorded"
        elif problem is None:
            try:
                run = pd.read_parquet(paths["parquet"])
            except (OSError, ValueError) as e:
                problem = f"it cannot be read ({e})"
            else:
                if len(run) != record.get("rows") or list(run.columns) != RUN_COLUMNS:
                    problem = f"it holds {len(run)} rows, {record.get('rows')} were recorded"
        if problem is not None:
            logger.warning("SavedRun: ignoring the stored run %s: %s; computing it again", paths["parquet"], problem)
            return None
        return run

    def _compute(self, topics: pd.DataFrame, paths: dict) -> pd.DataFrame:
        t0 = time.time()
        res = self.system(topics)
        missing = [c for c in ("qid", "docno", "score") if c not in res.columns]
        if missing:
            raise ValueError(f"SavedRun: {self.system!r} returned no {missing} column(s); a run needs qid, docno and "
                             "score")
        nan = res["score"].isna()
        if nan.any():
            qids = pd.unique(res.loc[nan, "qid"].astype(str)).tolist()
            raise ValueError(f"SavedRun: {self.system!r} returned NaN scores in {int(nan.sum())} row(s) of {len(qids)} "
                             f"query(ies), e.g. qid(s) {qids[:5]}; a NaN score has no rank, so the run is not saved. "
                             "Check the system (a model overflowing in float16: dtype='fp32'; empty texts) or fill in")
        if "rank" not in res.columns or res["rank"].isna().any():
            res = pt.model.add_ranks(res)
        run = res[RUN_COLUMNS].astype({"qid": str, "docno": str, "score": "float64", "rank": "int64"})
        run = run.reset_index(drop=True)
        record = identify(self.system, topics, self.key)  # keyed again: a model downloaded or an index built on the way
        held = None
        if self.paths(topics, record["key"]) != paths:
            paths = self.paths(topics, record["key"])
            held = lock(paths["parquet"] + ".lock", None, f"the saved run {paths['parquet']}")
        sweep_partials(self.directory)
        tmp = {ext: partial(paths[ext]) for ext in ("parquet", "trec")}
        try:
            run.to_parquet(tmp["parquet"], index=False)
            pt.io.write_results(run, tmp["trec"], format="trec", run_name="pyterrier-instruct")
            for p in tmp.values():
                fsync_file(p)  # on disk before the renames publish them
            record.update(repr=repr(self.system), topics_count=int(len(topics)), queries=int(topics["qid"].nunique()),
                          rows=int(len(run)), trec_sha256=_sha256(tmp["trec"]), seconds=round(time.time() - t0, 3),
                          created=time.strftime("%Y-%m-%dT%H:%M:%S"))
            write_record(paths["parquet"], tmp["parquet"], record)  # first: until the renames the files do not match it
            os.replace(tmp["trec"], paths["trec"])
            os.replace(tmp["parquet"], paths["parquet"])
            fsync_dir(self.directory)
        finally:
            for p in tmp.values():
                if os.path.exists(p):
                    os.remove(p)
            if held is not None:
                held.release()
        return run
