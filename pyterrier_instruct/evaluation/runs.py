"""Resumable runs: :class:`SavedRun` keeps each system's ranking on disk as it completes, and a later call with the same
topics (and the same system) reads it back instead of recomputing.

A run is stored under ``directory`` as ``<key>.parquet`` (``qid, docno, score, rank``: exact scores, the source a re-run
reads), ``<key>.trec`` (the same run in TREC format, for trec_eval and friends) and ``<key>.json`` (the system's repr,
topic count, seconds, creation time). ``key`` hashes the system's repr and every column of the topics, so a different
model, prompt, instruction or topic set never reuses a stale run.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time

import pandas as pd
import pyterrier as pt

RUN_COLUMNS = ["qid", "docno", "score", "rank"]
logger = logging.getLogger(__name__)


def _stable_repr(system) -> str:
    """``repr(system)`` without memory addresses (``<function f at 0x7f…>``), which change from one process to the next;
    a system run through ``pti.on_ray`` reads as the system itself (the same output, so the same saved run)."""
    from .._config import identity_repr
    return re.sub(r" at 0x[0-9a-fA-F]+", "", identity_repr(system))


def run_key(system, topics: pd.DataFrame) -> str:
    """The storage key of ``system``'s run on ``topics`` (16 hex digits)."""
    frame = topics[sorted(topics.columns)].astype(str).sort_values(["qid"] + sorted(c for c in topics.columns if c != "qid"))
    digest = hashlib.sha256(_stable_repr(system).encode("utf-8"))
    digest.update(frame.to_csv(index=False).encode("utf-8"))
    return digest.hexdigest()[:16]


class SavedRun(pt.Transformer):
    """``Q → R``: ``system`` run once per distinct topic frame, its run kept in ``directory`` and reused afterwards.

    The output is the topics joined with the stored run (``qid, docno, score, rank`` plus every topic column), whether
    the run was just computed or read back, so results do not depend on which happened. Runs are written atomically
    (a crash never leaves a half-written run that a re-run would trust).

    Args:
        system: the transformer to run (``Q → R``).
        directory: where its runs go (created on first write); give each system its own folder.
        verbose: log one line when a stored run is reused.
    """

    def __init__(self, system: pt.Transformer, directory: str, *, verbose: bool = True):
        self.system = system
        self.directory = str(directory)
        self.verbose = verbose

    def __repr__(self) -> str:
        return f"SavedRun({self.system!r}, {self.directory!r})"

    def paths(self, topics: pd.DataFrame) -> dict:
        """The files of the run of ``topics``: ``{'parquet', 'trec', 'json'}`` → path."""
        key = run_key(self.system, topics)
        return {ext: os.path.join(self.directory, f"{key}.{ext}") for ext in ("parquet", "trec", "json")}

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(topics, ["qid"])
        topic_cols = [c for c in topics.columns if c not in RUN_COLUMNS or c == "qid"]
        if topics.empty:
            return pd.DataFrame(columns=topic_cols + RUN_COLUMNS[1:])
        paths = self.paths(topics)
        if os.path.isfile(paths["parquet"]):
            run = pd.read_parquet(paths["parquet"])
            if self.verbose:
                logger.info("reusing the saved run %s (%d rows)", paths["parquet"], len(run))
        else:
            run = self._compute(topics, paths)
        merged = topics[topic_cols].astype({"qid": str}).merge(run, on="qid", how="inner", sort=False)
        order = pd.Categorical(merged["qid"], categories=pd.unique(topics["qid"].astype(str)), ordered=True)
        return merged.assign(_o=order).sort_values(["_o", "rank"], kind="stable").drop(columns="_o").reset_index(drop=True)

    def _compute(self, topics: pd.DataFrame, paths: dict) -> pd.DataFrame:
        t0 = time.time()
        res = self.system(topics)
        missing = [c for c in ("qid", "docno", "score") if c not in res.columns]
        if missing:
            raise ValueError(f"SavedRun: {self.system!r} returned no {missing} column(s); a run needs qid, docno and score")
        if "rank" not in res.columns:
            res = pt.model.add_ranks(res)
        run = res[RUN_COLUMNS].astype({"qid": str, "docno": str, "score": "float64", "rank": "int64"}).reset_index(drop=True)
        os.makedirs(self.directory, exist_ok=True)
        tmp = paths["parquet"] + ".partial"
        run.to_parquet(tmp, index=False)
        pt.io.write_results(run, paths["trec"] + ".partial", format="trec", run_name="pyterrier-instruct")
        meta = {"system": _stable_repr(self.system), "topics": int(len(topics)), "queries": int(topics["qid"].nunique()),
                "rows": int(len(run)), "seconds": round(time.time() - t0, 3), "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        with open(paths["json"] + ".partial", "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
        os.replace(paths["trec"] + ".partial", paths["trec"])
        os.replace(paths["json"] + ".partial", paths["json"])
        os.replace(tmp, paths["parquet"])  # last: the parquet file marks a complete run
        return run
