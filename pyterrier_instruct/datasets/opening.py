"""``load``: opens a benchmark by id or folder (as ``pyterrier_instruct.datasets.load`` and ``pti.load_dataset``)."""
from __future__ import annotations

from typing import Optional

from .registry import DATASETS, Entry


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
    given = name
    for prefix in ("instruct:", "instruct/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name not in DATASETS and path is None and os.path.isdir(name):
        from .._hub import is_stand_in
        folder = os.path.normpath(name)
        provenance = {"name": os.path.basename(folder), "path": folder}
        if is_stand_in(folder):
            provenance["stand_in"] = True
        entry = Entry("followir", None, None, "AP@1000", "local", "unknown")
        return InstructDataset(os.path.basename(folder), folder, entry, provenance, qrels_mapping=qrels_mapping)
    entry = entry_of(name, given)  # an unknown id fails now, with the closest known ids
    if path is None and entry.repo_id is not None:  # located on first use, as ir_datasets.load
        return InstructDataset(name, None, entry, qrels_mapping=qrels_mapping, download=download)
    entry, folder, provenance = resolve(name, path, download=download)  # an explicit folder is checked now
    return InstructDataset(name, folder, entry, provenance, qrels_mapping=qrels_mapping)
