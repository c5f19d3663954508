"""Benchmark loaders. ``load(name_or_path)`` returns a dataset with the PyTerrier dataset API plus
``candidates()`` (the fixed pool as a first stage) and ``changed_docs()``.

Known names (pinned revisions, DATASETS §1.3): ``instruct-mini`` (bundled), ``followir/robust04``,
``followir/news21``, ``followir/core17``. A local folder in the FollowIR layout also works.
"""
from __future__ import annotations

import os
from importlib import resources
from typing import Dict, NamedTuple, Optional

from .followir import FollowIRDataset, snapshot


class _Entry(NamedTuple):
    repo_id: Optional[str]
    revision: Optional[str]
    measure: str


DATASETS: Dict[str, _Entry] = {
    "instruct-mini": _Entry(None, None, "AP@1000"),
    "followir/robust04": _Entry("jhu-clsp/robust04-instructions", "a5a1c4fe2bc528ac12e83f8cdf82178da85d2f1d", "AP@1000"),
    "followir/news21": _Entry("jhu-clsp/news21-instructions", "e0144086b45fe31ac125e9ac1a83b6a409bb6ca6", "nDCG@5"),
    "followir/core17": _Entry("jhu-clsp/core17-instructions", "e39ff896cf3efbbdeeb950e6bd7c79f266995b07", "AP@1000"),
}


def bundled_path(name: str = "instruct-mini") -> str:
    return str(resources.files("pyterrier_instruct").joinpath("datasets", "data", name))


def load(name: str, path: Optional[str] = None, revision: Optional[str] = None,
         measure: Optional[str] = None) -> FollowIRDataset:
    """Loads a FollowIR-layout benchmark.

    Args:
        name: a known name (see ``DATASETS``), a hub dataset id, or a local folder.
        path: a local snapshot folder of ``name`` (nothing is downloaded when given).
        revision: overrides the pinned hub revision.
        measure: overrides the standard measure (``AP@1000``; ``nDCG@5`` for News21).
    """
    entry = DATASETS.get(name)
    if path is None and entry is not None and entry.repo_id is None:
        path = bundled_path(name)
    if path is None and os.path.isdir(name):
        path, name = name, os.path.basename(os.path.normpath(name))
    repo_id = entry.repo_id if entry else name
    rev = revision or (entry.revision if entry else None)
    provenance = {"name": name}
    if path is None:
        if "/" not in repo_id:
            raise ValueError(f"unknown dataset {name!r}: not a known name {sorted(DATASETS)}, a local folder, or a hub id")
        path = snapshot(repo_id, rev)
        provenance.update(repo_id=repo_id, revision=rev or "main")
    else:
        provenance.update(path=str(path))
        if repo_id and "/" in repo_id:
            provenance.update(repo_id=repo_id, revision=rev or "unknown")
    return FollowIRDataset(path, name=name, measure=measure or (entry.measure if entry else "AP@1000"),
                           provenance=provenance)


__all__ = ["DATASETS", "FollowIRDataset", "load", "bundled_path"]
