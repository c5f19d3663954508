"""FollowIR-layout datasets: the original ``jhu-clsp/{robust04,news21,core17}-instructions`` jsonl layout.

Files read from a local snapshot folder (HF_LAYOUTS §1):

- ``corpus.jsonl``: ``_id, title, text``
- ``queries.jsonl``: ``_id, text, instruction_og, instruction_changed[, keywords, short_query]``
- ``qrels_og/test.jsonl``, ``qrels_changed/test.jsonl``: ``query-id, corpus-id, score``
- ``top_ranked.jsonl``: ``qid, pid``, one row per candidate, in candidate order

The bundled ``instruct-mini`` benchmark uses exactly this layout and this loader. A hub id is
downloaded with ``huggingface_hub`` (pinned revision) only when no local folder is given and the
hub is reachable; nothing is downloaded when ``HF_HUB_OFFLINE`` is set.
"""
from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pandas as pd
import pyterrier as pt

from ..instructions import paired_qrels, paired_topics, variant_frame

FILES = {
    "corpus": "corpus.jsonl",
    "queries": "queries.jsonl",
    "qrels_og": "qrels_og/test.jsonl",
    "qrels_changed": "qrels_changed/test.jsonl",
    "top_ranked": "top_ranked.jsonl",
}


def _read_jsonl(path: Path, required: List[str]) -> List[dict]:
    if not path.exists():
        raise FileNotFoundError(f"FollowIR layout: missing file {path}")
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            missing = [k for k in required if k not in row]
            if missing:
                raise KeyError(f"{path}:{lineno}: missing field(s) {missing}; found {sorted(row)}")
            rows.append(row)
    return rows


def _qrels(path: Path) -> pd.DataFrame:
    rows = _read_jsonl(path, ["query-id", "corpus-id", "score"])
    df = pd.DataFrame({
        "qid": [str(r["query-id"]) for r in rows],
        "docno": [str(r["corpus-id"]) for r in rows],
        "label": pd.to_numeric(pd.Series([r["score"] for r in rows], dtype=object)).astype("int64"),
    })
    return df


class FollowIRDataset(pt.datasets.Dataset):
    """A FollowIR-style paired benchmark read from a local folder in the original HF layout.

    Topics and qrels use the paired-qid convention (``<qid>-og`` / ``<qid>-changed``) with
    ``base_qid`` and ``variant`` columns; ``variant='og'`` or ``'changed'`` selects one side.

    Args:
        path: the snapshot folder.
        name: a display name (e.g. ``followir/robust04``).
        measure: the standard measure of the benchmark (``AP@1000`` for Robust04/Core17, ``nDCG@5`` for News21).
        provenance: where the files came from (hub id and revision), recorded with results.
    """

    def __init__(self, path: str, name: Optional[str] = None, measure: str = "AP@1000",
                 provenance: Optional[Dict[str, str]] = None):
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"FollowIR layout: {self.path} is not a folder")
        self.name = name or self.path.name
        self.measure = measure
        self.provenance = dict(provenance or {"path": str(self.path)})

    def __repr__(self) -> str:
        return f"FollowIRDataset({self.name!r}, path={str(self.path)!r})"

    # -- raw files -------------------------------------------------------------------------------
    @cached_property
    def _queries(self) -> pd.DataFrame:
        rows = _read_jsonl(self.path / FILES["queries"], ["_id", "text", "instruction_og", "instruction_changed"])
        df = pd.DataFrame({
            "qid": [str(r["_id"]) for r in rows],
            "query": [r["text"] for r in rows],
            "instruction_og": [r["instruction_og"] or "" for r in rows],
            "instruction_changed": [r["instruction_changed"] or "" for r in rows],
        })
        for extra in ("keywords", "short_query"):
            if rows and all(extra in r for r in rows):
                df[extra] = [r[extra] or "" for r in rows]
        if df["qid"].duplicated().any():
            raise ValueError(f"{self.path / FILES['queries']}: duplicate _id {df['qid'][df['qid'].duplicated()].iloc[0]!r}")
        return df

    @cached_property
    def _qrels(self) -> Dict[str, pd.DataFrame]:
        return {v: _qrels(self.path / FILES[f"qrels_{v}"]) for v in ("og", "changed")}

    @cached_property
    def _candidates(self) -> pd.DataFrame:
        rows = _read_jsonl(self.path / FILES["top_ranked"], ["qid", "pid"])
        return pd.DataFrame({"qid": [str(r["qid"]) for r in rows], "docno": [str(r["pid"]) for r in rows]})

    @cached_property
    def _docs(self) -> Dict[str, Dict[str, str]]:
        docs = {}
        for r in _read_jsonl(self.path / FILES["corpus"], ["_id", "text"]):
            docs[str(r["_id"])] = {"title": r.get("title") or "", "text": r["text"] or ""}
        return docs

    # -- PyTerrier dataset API -------------------------------------------------------------------
    def get_topics(self, variant: Optional[str] = None) -> pd.DataFrame:
        """Paired topics ``qid, query, instruction, base_qid, variant``; ``variant`` selects og/changed;
        ``variant='base'`` gives one row per base query with ``instruction_og``/``instruction_changed``."""
        if variant == "base":
            return self._queries.copy()
        topics = paired_topics(self._queries[["qid", "query", "instruction_og", "instruction_changed"]])
        return self._select(topics, variant)

    def get_qrels(self, variant: Optional[str] = None) -> pd.DataFrame:
        """Paired qrels ``qid, docno, label, base_qid, variant`` (labels int)."""
        return self._select(paired_qrels(self._qrels), variant)

    def get_corpus_iter(self, verbose: bool = False) -> Iterator[Dict[str, str]]:
        for docno, doc in self._docs.items():
            yield {"docno": docno, "title": doc["title"], "text": doc["text"]}

    def get_results(self, variant: Optional[str] = None) -> pd.DataFrame:
        """The fixed candidate pool as a run (``qid, docno, score, rank``) in file order, per paired qid."""
        topics = self.get_topics(variant)[["qid", "base_qid"]]
        run = topics.merge(self._candidates.rename(columns={"qid": "base_qid"}), on="base_qid", how="inner", sort=False)
        run = run.drop(columns="base_qid")
        run["score"] = 0.0
        run["rank"] = run.groupby("qid", sort=False).cumcount()
        return run

    def changed_docs(self) -> pd.DataFrame:
        """The changed-document set C_q (``qid`` = base qid, ``docno``), by the og/changed label diff."""
        from ..measures import changed_docs
        return changed_docs(self._qrels["og"], self._qrels["changed"])

    def text(self, docno: str) -> Dict[str, str]:
        return self._docs[docno]

    def candidates(self, text_field: str = "text"):
        """A transformer ``Q → R``: each query's fixed candidates in file order, with ``title`` and text."""
        from .candidates import Candidates
        return Candidates(self, text_field=text_field)

    def text_loader(self, text_field: str = "text"):
        """A transformer ``R → R`` attaching ``title`` and the text field by docno (after a first stage)."""
        from .candidates import TextLoader
        return TextLoader(self, text_field=text_field)

    @staticmethod
    def _select(df: pd.DataFrame, variant: Optional[str]) -> pd.DataFrame:
        return df if variant is None else variant_frame(df, variant)


def snapshot(repo_id: str, revision: Optional[str] = None) -> str:
    """A local snapshot folder of a hub dataset repository (downloads only when online)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        raise FileNotFoundError(f"{repo_id} is not available locally and HF_HUB_OFFLINE is set; download it once "
                                f"(huggingface-cli download --repo-type dataset {repo_id}) and pass its folder as path")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ImportError("downloading datasets needs huggingface_hub: pip install pyterrier-instruct[hf]") from None
    return snapshot_download(repo_id, repo_type="dataset", revision=revision,
                             allow_patterns=list(FILES.values()) + ["README.md"])
