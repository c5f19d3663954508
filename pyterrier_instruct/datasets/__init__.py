"""Benchmark loaders: FollowIR (original and mteb layouts), mFollowIR, InfoSearch, IFIR, InstructIR and the
bundled ``instruct-mini``, read from the officially released files.

``load(name, path=None)`` returns an :class:`~.dataset.InstructDataset` (the PyTerrier dataset API plus
``candidates()``, ``changed_docs()``, ``partitions()``); the same datasets are served as
``pt.get_dataset('instruct:<name>')`` and registered in ir_datasets as ``instruct/<name>``.
This module imports no pyterrier: ``import pyterrier_instruct`` registers the ir_datasets ids through it.
"""
from __future__ import annotations

from typing import Optional

from ._files import DataError
from .readers import UnknownDatasetError, bundled_path
from .registry import DATASETS, Entry, irds_id


def load(name: str, path: Optional[str] = None, qrels_mapping: str = "as-named", download: bool = True):
    """Opens a benchmark.

    Args:
        name: a dataset id of :data:`DATASETS` (``followir/robust04``, ``infosearch/audience``, ``ifir/fiqa``,
            ``instructir``, …; an ``instruct/`` or ``instruct:`` prefix is accepted), or a local folder in the
            original FollowIR layout.
        path: a local snapshot folder of the dataset's hub repository (checked now); otherwise, on first use,
            ``$PYTERRIER_INSTRUCT_DATA``, the cache, or (online, ``download=True``) the pinned revision downloaded with
            ``huggingface_hub``.
        qrels_mapping: FollowIR: ``'as-named'`` or ``'swapped'`` og/changed qrels configs (mteb 1.7 reads them
            the other way round; the loader checks that og has more relevant documents).

    Raises:
        UnknownDatasetError: (a ``ValueError``) ``name`` is not a dataset id; the message names the closest ids.
    """
    import os

    from .dataset import InstructDataset
    from .readers import entry_of, resolve
    for prefix in ("instruct:", "instruct/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name not in DATASETS and path is None and os.path.isdir(name):
        folder = os.path.normpath(name)
        return InstructDataset(os.path.basename(folder), folder, Entry("followir", None, None, "AP@1000", "local", "unknown"),
                               {"name": os.path.basename(folder), "path": folder}, qrels_mapping=qrels_mapping)
    entry = entry_of(name)  # an unknown id fails now, with the closest known ids
    if path is None and entry.repo_id is not None:  # located on first use, as ir_datasets.load
        return InstructDataset(name, None, entry, qrels_mapping=qrels_mapping, download=download)
    entry, folder, provenance = resolve(name, path, download=download)  # an explicit folder is checked now
    return InstructDataset(name, folder, entry, provenance, qrels_mapping=qrels_mapping)


def __getattr__(name: str):
    if name == "InstructDataset":
        from .dataset import InstructDataset
        return InstructDataset
    raise AttributeError(f"module 'pyterrier_instruct.datasets' has no attribute {name!r}")


__all__ = ["DATASETS", "DataError", "Entry", "InstructDataset", "UnknownDatasetError", "bundled_path", "irds_id", "load"]
