"""InF-IR Table 2 (InF-Embed, Zhuang et al., 2025): FollowIR (MAP@1000 / nDCG@5 and p-MRR, as FollowIR Table 2), MAIR's
TREC Dynamic Domain and Fair Ranking tasks (nDCG@10 each) and BRIGHT (nDCG@10 averaged over its 12 tasks, standard
documents), one row per system.

Each part is scored as its benchmark's official code does: FollowIR through :func:`~.followir.followir_report`; MAIR and
BRIGHT by ``pt.Experiment`` with nDCG@10 against the dataset's qrels; each BRIGHT system ends with ``ds.exclude()``,
which removes each query's ``excluded_ids`` from its ranking before scoring, as BRIGHT's ``run.py`` does
(:mod:`pyterrier_instruct.datasets.exclusion`).
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence

import pandas as pd
from ir_measures import nDCG

from ._report import as_datasets, build_table, experiment_means, systems_per_dataset
from .followir import followir_report

#: the dataset families of each part of the table
#: the column of BRIGHT's nDCG@10 averaged over its tasks (the paper heads it ``Avg nDCG`` under ``BRIGHT``)
BRIGHT_COLUMN = "BRIGHT avg nDCG@10"
PARTS = {"followir": ("followir", "followir-mteb", "bundled"), "mair": ("mair",), "bright": ("bright",)}


def part_of(dataset) -> str:
    family = dataset.entry.family
    for part, families in PARTS.items():
        if family in families:
            return part
    raise ValueError(f"inf_ir_report: {getattr(dataset, 'name', dataset)!r} (family {family!r}) is not a FollowIR, "
                     "MAIR or BRIGHT dataset")


def inf_ir_report(systems, datasets, names: Optional[Sequence[str]] = None, *, ties: str = "docno") -> pd.DataFrame:
    """``Model | <followir> MAP@1000 / nDCG@5, p-MRR | Avg Score | Avg p-MRR | <mair> nDCG@10 | BRIGHT avg nDCG@10``
    (×100).

    Args:
        systems: per dataset, ``Q → R`` systems: FollowIR ones rerank the candidates (``ds.candidates() >>
            model.scorer()``), MAIR and BRIGHT ones retrieve from the corpus; a :class:`PerDataset` (or the same systems
            for all).
        datasets: ``{key: dataset}``, keys as the paper's columns (``robust04``, ``dd15``, BRIGHT task keys, …).
        ties: p-MRR tie-break (FollowIR).

    ``BRIGHT avg nDCG@10`` (the paper's BRIGHT ``Avg nDCG``) is BRIGHT's nDCG@10 averaged over the BRIGHT datasets given
    (the paper: all 12 tasks); each task's value is
    in ``table.attrs["long"]`` (dataset = the task key, measure ``nDCG@10``).
    """
    datasets = as_datasets(datasets)
    systems, names = systems_per_dataset(systems, names, list(datasets))
    parts: Dict[str, Dict[str, object]] = {p: {} for p in PARTS}
    for key, ds in datasets.items():
        parts[part_of(ds)][key] = ds
    frames, provenance = [], {}
    if parts["followir"]:
        followir = followir_report(_per(systems, names, parts["followir"]), parts["followir"], ties=ties)
        frames.append(followir.attrs["long"])
        provenance.update(followir.attrs["provenance"])
    for part in ("mair", "bright"):
        for key, ds in parts[part].items():
            evaluated = [_excluding(s, ds) for s in systems[key]] if part == "bright" else systems[key]
            frames.append(experiment_means(evaluated, names, ds.get_topics(), ds.get_qrels(), [nDCG @ 10], key, {}))
            provenance[key] = dict(getattr(ds, "provenance", {}) or {})
    long = (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=["model", "dataset", "measure", "value"]))
    shown = long[~long["dataset"].isin(list(parts["bright"]))]
    bright = long[long["dataset"].isin(list(parts["bright"]))]
    if len(bright):
        avg = bright.groupby("model", sort=False)["value"].mean().reset_index()
        shown = pd.concat([shown, avg.assign(dataset="average", measure="nDCG")[shown.columns]], ignore_index=True)
    settings = {"ties": ties, "BRIGHT": f"nDCG@10 over {len(parts['bright'])} task(s), excluded_ids removed",
                "MAIR": "nDCG@10"}
    table = build_table(shown, ["followir", "mair", "bright"], models=names, settings=settings, provenance=provenance)
    if "Avg nDCG" in table.columns:  # the paper's cell (average, nDCG), labelled as what it is: BRIGHT's task mean
        table = table.rename(columns={"Avg nDCG": BRIGHT_COLUMN})
        columns = table.attrs["columns"]
        table.attrs["columns"] = {(BRIGHT_COLUMN if c == "Avg nDCG" else c): key for c, key in columns.items()}
    table.attrs["long"] = long
    return table


def _excluding(system, ds):
    """``system >> ds.exclude()`` (a result frame: filtered the same way); idempotent when the system ends so."""
    if isinstance(system, pd.DataFrame):
        from ..datasets.exclusion import remove
        return remove(system, ds.excluded_ids())
    return system >> ds.exclude()


def _per(systems, names, keys):
    from ._report import PerDataset
    return PerDataset({k: dict(zip(names, systems[k])) for k in keys})
