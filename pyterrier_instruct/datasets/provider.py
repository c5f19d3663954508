"""``pt.get_dataset('instruct:<name>')``: PyTerrier's dataset provider (entry point ``pyterrier.dataset_provider``)."""
from __future__ import annotations

from typing import Iterable

import pyterrier as pt

from .opening import load
from .registry import DATASETS
from .readers import UnknownDatasetError, unknown_dataset_message


class InstructDatasetProvider(pt.datasets.DatasetProvider):
    """Serves every id of :data:`pyterrier_instruct.datasets.DATASETS` under the ``instruct:`` prefix."""

    def get_dataset(self, name: str) -> pt.datasets.Dataset:
        """The dataset ``name``, its folder located on first use. An unknown id raises ``UnknownDatasetError`` (a
        ``ValueError``: ``pt.get_dataset`` would re-raise a ``KeyError`` as a bare "not found") with the closest ids."""
        if name not in DATASETS:
            raise UnknownDatasetError(unknown_dataset_message(name, "instruct:", given=f"instruct:{name}"))
        return load(name)

    def list_dataset_names(self) -> Iterable[str]:
        return list(DATASETS)
