"""Opens a registered dataset: locate its folder (:mod:`.source`), pick the layout reader, record provenance.

Shared by the PyTerrier dataset (:mod:`.dataset`) and the ir_datasets registration (:mod:`.irds`); no
pyterrier import.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Dict, Optional

from ._bench import LAYOUTS, Benchmark
from ._files import DataError
from .registry import DATASETS, Entry, qrels_repo


def bundled_path(name: str = "instruct-mini") -> str:
    from importlib import resources
    return str(resources.files("pyterrier_instruct").joinpath("datasets", "data", name))


class UnknownDatasetError(ValueError):
    """A dataset id that is not registered; the message names the closest known ids and how to list them all."""


def close_ids(name: str, given: Optional[str] = None, n: int = 3):
    """The known dataset ids closest to ``name`` (``difflib``, also against the ids' last part: ``robust4`` →
    ``followir/robust04``), after the id that ``given`` (the name as written, prefix included) spells with its ``:`` or
    ``/`` read as ``-`` (``instruct:mini`` → ``instruct-mini``)."""
    ids = list(DATASETS)
    by_tail: Dict[str, list] = {}
    for i in ids:
        by_tail.setdefault(i.rsplit("/", 1)[-1], []).append(i)
    found = [i for i in (given.replace(":", "-"), given.replace("/", "-")) if i in DATASETS] if given else []
    found += difflib.get_close_matches(name, ids, n=n, cutoff=0.75)
    for tail in difflib.get_close_matches(name, list(by_tail), n=n, cutoff=0.75):
        found += by_tail[tail]
    return list(dict.fromkeys(found))[:n]


def unknown_dataset_message(name: str, prefix: str = "", given: Optional[str] = None) -> str:
    """``'<prefix><name>' is not a known dataset id``, the closest known ids (:func:`close_ids`, also of ``given``, the
    name as the user wrote it before a prefix was taken off) and how to list them."""
    close = close_ids(name, given)
    guess = f"; did you mean {' or '.join(repr(prefix + c) for c in close)}?" if close else "."
    shown = given if given is not None else prefix + name
    return (f"{shown!r} is not a known dataset id{guess} List the {len(DATASETS)} ids"
            f"{f' (after {prefix!r})' if prefix else ''} with sorted(pyterrier_instruct.datasets.DATASETS)")


def entry_of(name: str, given: Optional[str] = None) -> Entry:
    """The registry entry of ``name``; an unknown id raises :class:`UnknownDatasetError` with a did-you-mean (of
    ``given`` too, the name as written before a prefix was taken off)."""
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownDatasetError(unknown_dataset_message(name, given=given)) from None


def read_benchmark(entry: Entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    """Reads ``folder`` with the layout reader of ``entry.family``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"data folder {folder} does not exist")
    reader = _layouts().get(entry.family)
    if reader is None:
        raise ValueError(f"unknown dataset family {entry.family!r}; layouts: {sorted(_layouts())}")
    return reader(entry, folder, qrels_mapping)


def _layouts():
    """:data:`~._bench.LAYOUTS`, after importing every module of this package that declares a ``@layout`` reader
    (found in their source, so a new layout is one module)."""
    import importlib
    here = Path(__file__).parent
    for f in sorted(here.glob("*.py")):
        if f.stem not in _SCANNED and "\n@layout(" in f.read_text(encoding="utf-8"):
            importlib.import_module(f".{f.stem}", __package__)
        _SCANNED.add(f.stem)
    return LAYOUTS


_SCANNED: set = set()


def resolve(name: str, path: Optional[str] = None, download: bool = True):
    """``(entry, folder, provenance)`` for a registered name; the folder is located, nothing is read yet."""
    from .source import locate
    entry = entry_of(name)
    if entry.repo_id is None and path is None:
        folder = Path(bundled_path(name))
    else:
        folder = locate(name, entry, path, download=download)
    provenance: Dict[str, object] = {"name": name, "path": str(folder)}
    from .._hub import is_stand_in  # here: _hub's errors import pyterrier, which `import pyterrier_instruct` must not
    if is_stand_in(folder):  # synthetic files from pyterrier_instruct.testing: tables label them
        provenance["stand_in"] = True
    if entry.repo_id is None and path is None:
        from .._version import __version__
        provenance["revision"] = f"bundled with pyterrier-instruct {__version__}"
    if entry.repo_id:
        from .source import read_revision
        # the revision actually read: the pinned one only for the package's own download (or a recorded
        # `hf download --local-dir` commit); a folder put together by hand gets its content hash instead (provenance)
        provenance.update(repo_id=entry.repo_id, pinned_revision=entry.revision or "main (unpinned)",
                          revision=read_revision(folder, entry))
        if entry.subdir:
            provenance["subdir"] = entry.subdir
        if qrels_repo(entry):
            provenance.update(qrels_repo_id=qrels_repo(entry), split=entry.split or "test")
    return entry, folder, provenance
