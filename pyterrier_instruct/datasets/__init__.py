"""Benchmark loaders: FollowIR (original and mteb layouts), mFollowIR, InfoSearch, IFIR, InstructIR and the
bundled ``instruct-mini``, read from the officially released files.

``load(name, path=None)`` returns an :class:`~.dataset.InstructDataset` (the PyTerrier dataset API plus
``candidates()``, ``changed_docs()``, ``partitions()``); the same datasets are served as
``pt.get_dataset('instruct:<name>')`` and registered in ir_datasets as ``instruct/<name>``.
This module imports no pyterrier: ``import pyterrier_instruct`` registers the ir_datasets ids through it.
"""
from __future__ import annotations

from ._files import DataError
from .opening import load
from .readers import UnknownDatasetError, bundled_path
from .registry import DATASETS, Entry, irds_id


def __getattr__(name: str):
    if name == "InstructDataset":
        from .dataset import InstructDataset
        return InstructDataset
    raise AttributeError(f"module 'pyterrier_instruct.datasets' has no attribute {name!r}")


__all__ = ["DATASETS", "DataError", "Entry", "InstructDataset", "UnknownDatasetError", "bundled_path", "irds_id",
           "load"]
