"""Resumable runs: :class:`SavedRun` keeps each system's ranking on disk as it completes, and a later call with the same
topics (and the same system) reads it back instead of recomputing.

A run is stored under ``directory`` as ``<key>.parquet`` (``qid, docno, score, rank``: exact scores, the source a re-run
reads), ``<key>.trec`` (the same run in TREC format, for trec_eval and friends) and ``<key>.json`` (the system's
fingerprint and repr, the row count and SHA-256 of the parquet file, topic count, seconds, creation time).

``key`` hashes the system's content fingerprint (:func:`pyterrier_instruct._fingerprint.fingerprint`: its resolved
configuration through every stage of a pipeline, the revisions of the models and indexes it reads, the dataset files
its candidates come from) and every column of the topics, so a different model, checkpoint, prompt, instruction, index
or topic set never reuses a stale run. A stage whose behaviour cannot be read (``pt.apply.*``, a function, a transformer
class of another package) makes :class:`SavedRun` refuse the system unless ``key=`` names it; that name then stands
for the whole configuration, and changing it is the caller's job.

Why not pyterrier-caching: its ``RetrieverCache`` and ``ScorerCache`` key entries on the input rows only (query text,
or query and docno), never on the system, so the caller must pick a new path for every configuration, exactly the
bookkeeping that let stale runs through; ``ScorerCache`` also cannot tell two instructions apart without ``group=``, and
listwise scores depend on the whole candidate list. They cache per query or per pair, which would split the batches a
reranker forms across queries, and they keep no TREC file. A whole run per (system, topics) is what the reports reuse.
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
from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from .._atomic import fsync_dir, fsync_file
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
        raise NotFingerprintable(e.part, f"{e.reason}. SavedRun keys a run on the content of the system so that a change "
                                 "never reuses a stale run, and cannot read this stage's; name the configuration yourself, "
                                 "e.g. SavedRun(system, directory, key='mysystem-v2'), and change the key whenever the "
                                 "system changes") from None


def _cell(value) -> str:
    """A topic value as exact text: an array (``query_vec``) by dtype, shape and SHA-256 of its bytes (``str`` of an
    array over 1,000 elements is abbreviated by numpy, so two vectors differing in the middle would read the same)."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return f"ndarray({data.dtype},{data.shape},{hashlib.sha256(data.tobytes()).hexdigest()})"
    if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
        return "[" + ",".join(_cell(v) for v in value) + "]"
    return str(value)  # as pandas' astype(str): exact for strings and numbers (Python's float repr)


def run_key(system, topics: pd.DataFrame, key: Optional[str] = None) -> str:
    """The storage key of ``system``'s run on ``topics`` (16 hex digits): :func:`describe` and the exact value of every
    topic column (arrays by their bytes)."""
    columns = sorted(topics.columns)
    frame = pd.DataFrame({c: [_cell(v) for v in topics[c]] for c in columns}, columns=columns)
    frame = frame.sort_values(["qid"] + [c for c in columns if c != "qid"])
    digest = hashlib.sha256(describe(system, key).encode("utf-8"))
    digest.update(frame.to_csv(index=False).encode("utf-8"))
    return digest.hexdigest()[:16]


#: this host in the name of a writer's temporary files, so a sweep only judges the processes it can see
_WRITER = hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]
_PARTIAL = re.compile(r"\.([0-9a-f]{8})-(\d+)-[0-9a-f]{8}\.partial$")


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
        logger.info("SavedRun: removed %d temporary file(s) of killed writers in %s", removed, directory)
    return removed


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class SavedRun(pt.Transformer):
    """``Q → R``: ``system`` run once per distinct topic frame, its run kept in ``directory`` and reused afterwards.

    The output is the topics joined with the stored run (``qid, docno, score, rank`` plus every topic column), whether
    the run was just computed or read back, so results do not depend on which happened. Runs are written atomically
    (temporary files renamed into place under a file lock, the parquet file last) and checked when read: a stored run whose row count or
    SHA-256 differs from its ``.json`` record is recomputed, with a warning. A run is keyed again after it is computed,
    so a model downloaded or an index built on the way is part of the key a re-run looks up.

    Args:
        system: the transformer to run (``Q → R``); it must be fingerprintable (see the module docstring) unless
            ``key`` is given.
        directory: where its runs go (created on first write).
        key: a name for the system's configuration, replacing its fingerprint (required for ``pt.apply`` stages,
            functions and transformer classes of other packages); change it whenever the system changes.
        verbose: log one line when a stored run is reused.

    Raises:
        NotFingerprintable: (a ``TypeError``) on construction, when ``system`` cannot be fingerprinted and no ``key``
            was given.
    """

    def __init__(self, system: pt.Transformer, directory: str, *, key: Optional[str] = None, verbose: bool = True):
        self.system = system
        self.directory = str(directory)
        self.key = key
        self.verbose = verbose
        describe(system, key)  # refuse an unkeyable system now, not after its first run

    def __repr__(self) -> str:
        key = "" if self.key is None else f", key={self.key!r}"
        return f"SavedRun({self.system!r}, {self.directory!r}{key})"

    def paths(self, topics: pd.DataFrame) -> dict:
        """The files of the run of ``topics``: ``{'parquet', 'trec', 'json'}`` → path."""
        key = run_key(self.system, topics, self.key)
        return {ext: os.path.join(self.directory, f"{key}.{ext}") for ext in ("parquet", "trec", "json")}

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(topics, ["qid"])
        topic_cols = [c for c in topics.columns if c not in RUN_COLUMNS or c == "qid"]
        if topics.empty:
            return pd.DataFrame(columns=topic_cols + RUN_COLUMNS[1:])
        paths = self.paths(topics)
        run = self._read(paths)
        if run is None:
            run = self._compute(topics, paths)
        elif self.verbose:
            logger.info("reusing the saved run %s (%d rows)", paths["parquet"], len(run))
        merged = topics[topic_cols].astype({"qid": str}).merge(run, on="qid", how="inner", sort=False)
        order = pd.Categorical(merged["qid"], categories=pd.unique(topics["qid"].astype(str)), ordered=True)
        return merged.assign(_o=order).sort_values(["_o", "rank"], kind="stable").drop(columns="_o").reset_index(drop=True)

    def _read(self, paths: dict) -> Optional[pd.DataFrame]:
        """The stored run, or None when there is none or it does not match its record (then a warning)."""
        if not os.path.isfile(paths["parquet"]):
            return None
        from filelock import FileLock
        problem = None
        try:
            with FileLock(paths["parquet"] + ".lock"):  # a writer replaces the record and the run together
                with open(paths["json"], encoding="utf-8") as f:
                    meta = json.load(f)
                if meta.get("parquet_sha256") != _sha256(paths["parquet"]):
                    problem = "its SHA-256 differs from the one recorded"
                else:
                    run = pd.read_parquet(paths["parquet"])
                    if len(run) != meta.get("rows") or list(run.columns) != RUN_COLUMNS:
                        problem = f"it holds {len(run)} rows, {meta.get('rows')} were recorded"
        except (OSError, ValueError) as e:
            problem = f"it or its record cannot be read ({e})"
        if problem is not None:
            logger.warning("SavedRun: ignoring the stored run %s: %s; computing it again", paths["parquet"], problem)
            return None
        return run

    def _compute(self, topics: pd.DataFrame, paths: dict) -> pd.DataFrame:
        t0 = time.time()
        res = self.system(topics)
        missing = [c for c in ("qid", "docno", "score") if c not in res.columns]
        if missing:
            raise ValueError(f"SavedRun: {self.system!r} returned no {missing} column(s); a run needs qid, docno and score")
        nan = res["score"].isna()
        if nan.any():
            qids = pd.unique(res.loc[nan, "qid"].astype(str)).tolist()
            raise ValueError(f"SavedRun: {self.system!r} returned NaN scores in {int(nan.sum())} row(s) of {len(qids)} "
                             f"query(ies), e.g. qid(s) {qids[:5]}; a NaN score has no rank, so the run is not saved. Check the "
                             "system (a model overflowing in float16: dtype='fp32'; empty texts) or fill the scores first")
        if "rank" not in res.columns or res["rank"].isna().any():
            res = pt.model.add_ranks(res)
        run = res[RUN_COLUMNS].astype({"qid": str, "docno": str, "score": "float64", "rank": "int64"}).reset_index(drop=True)
        paths = self.paths(topics)  # keyed again: a model downloaded or an index built during the run is now part of it
        os.makedirs(self.directory, exist_ok=True)
        sweep_partials(self.directory)
        tmp = {ext: f"{p}.{_WRITER}-{os.getpid()}-{uuid.uuid4().hex[:8]}.partial" for ext, p in paths.items()}
        try:
            run.to_parquet(tmp["parquet"], index=False)
            pt.io.write_results(run, tmp["trec"], format="trec", run_name="pyterrier-instruct")
            meta = {"system": describe(self.system, self.key), "repr": repr(self.system), "topics": int(len(topics)),
                    "queries": int(topics["qid"].nunique()), "rows": int(len(run)), "parquet_sha256": _sha256(tmp["parquet"]),
                    "seconds": round(time.time() - t0, 3), "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
            with open(tmp["json"], "w", encoding="utf-8") as f:
                json.dump(meta, f, indent=1)
            from filelock import FileLock
            for p in tmp.values():
                fsync_file(p)  # on disk before the renames publish them
            with FileLock(paths["parquet"] + ".lock"):
                for ext in ("trec", "json", "parquet"):  # the parquet file last: it marks a complete run
                    os.replace(tmp[ext], paths[ext])
            fsync_dir(self.directory)
        finally:
            for p in tmp.values():
                if os.path.exists(p):
                    os.remove(p)
        return run
