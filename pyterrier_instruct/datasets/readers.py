"""Opens a registered dataset: locate its folder (:mod:`.source`), pick the layout reader, record provenance.

Shared by the PyTerrier dataset (:mod:`.dataset`) and the ir_datasets registration (:mod:`.irds`); no
pyterrier import.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Dict, Optional

from ._bench import Benchmark
from ._files import DataError
from .registry import DATASETS, Entry, qrels_repo


def bundled_path(name: str = "instruct-mini") -> str:
    from importlib import resources
    return str(resources.files("pyterrier_instruct").joinpath("datasets", "data", name))


class UnknownDatasetError(ValueError):
    """A dataset id that is not registered; the message names the closest known ids and how to list them all."""


def unknown_dataset_message(name: str, prefix: str = "") -> str:
    """``'<prefix><name>' is not a known dataset id``, the closest known ids (``difflib``) and how to list them."""
    close = difflib.get_close_matches(name, list(DATASETS), n=3, cutoff=0.75)
    guess = f"; did you mean {' or '.join(repr(prefix + c) for c in close)}?" if close else "."
    return (f"{prefix + name!r} is not a known dataset id{guess} List the {len(DATASETS)} ids"
            f"{f' (after {prefix!r})' if prefix else ''} with sorted(pyterrier_instruct.datasets.DATASETS)")


def entry_of(name: str) -> Entry:
    """The registry entry of ``name``; an unknown id raises :class:`UnknownDatasetError` with a did-you-mean."""
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownDatasetError(unknown_dataset_message(name)) from None


def read_benchmark(entry: Entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    """Reads ``folder`` with the layout reader of ``entry.family``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"data folder {folder} does not exist")
    if entry.family in ("bundled", "followir", "followir-mteb", "mfollowir"):
        from . import followir
        if entry.family in ("followir-mteb", "mfollowir"):
            return followir.read_mteb(folder, entry.lang, qrels_mapping)
        return followir.read(folder, qrels_mapping=qrels_mapping)
    if entry.family == "infosearch":
        from . import infosearch
        return infosearch.read(folder)
    if entry.family == "ifir":
        from . import ifir
        return ifir.read(folder, entry.subdir)
    if entry.family == "instructir":
        from . import instructir
        return instructir.read(folder)
    if entry.family in ("bright", "mair", "nevir", "nevir-mteb"):  # BRIGHT, MAIR, NevIR (datasets/catalog.py)
        from .catalog import read
        return read(entry, folder)
    if entry.family == "beir":
        from . import beir
        return beir.read(folder, entry.split or "test")
    raise ValueError(f"unknown dataset family {entry.family!r}")


def resolve(name: str, path: Optional[str] = None, download: bool = True):
    """``(entry, folder, provenance)`` for a registered name; the folder is located, nothing is read yet."""
    from .source import locate
    entry = entry_of(name)
    if entry.repo_id is None and path is None:
        folder = Path(bundled_path(name))
    else:
        folder = locate(name, entry, path, download=download)
    provenance: Dict[str, str] = {"name": name, "path": str(folder)}
    if entry.repo_id is None and path is None:
        from .. import __version__
        provenance["revision"] = f"bundled with pyterrier-instruct {__version__}"
    if entry.repo_id:
        provenance.update(repo_id=entry.repo_id, revision=entry.revision or "main (unpinned)")
        if entry.subdir:
            provenance["subdir"] = entry.subdir
        if qrels_repo(entry):
            provenance.update(qrels_repo_id=qrels_repo(entry), split=entry.split or "test")
    return entry, folder, provenance
