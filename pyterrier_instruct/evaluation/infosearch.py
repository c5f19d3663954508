"""InfoSearch report (Tables 2 and 3): per dimension nDCG@10, MRR@1 and Robustness@10 per mode, p-MRR,
WISE, SICR and the mean gold ranks, then the unweighted average over dimensions (InfoSearch Tables 2 and 3).

A dataset gives paired topics and qrels (``get_topics()``, ``get_qrels()``) in the project convention:
each instance's qid ``<id>-og`` (core query), ``<id>-changed`` (instructed), ``<id>-reversed``, with
og/changed/reversed qrels; Robustness groups instances by ``<id>`` up to its first ``_``.
"""
from __future__ import annotations

from typing import Optional, Sequence

import ir_measures
import pandas as pd

from ..measures import SICR, WISE, Changed, GoldRank, InfoSearch_pMRR, OG, Reversed, Robustness
from ._report import as_datasets, build_table, experiment_means, systems_per_dataset

MODES = {"og": OG, "changed": Changed, "reversed": Reversed}


def infosearch_measures(version: str = "2024", sicr: str = "code", ties: str = "input"):
    """``{measure: report name}`` for one InfoSearch dimension (names as in ``paper_numbers``)."""
    out = {}
    for mode, on in MODES.items():
        out[on(ir_measures.nDCG @ 10)] = f"nDCG@10/{mode}"
        out[on(ir_measures.RR @ 1)] = f"MRR@1/{mode}"
        out[Robustness(variant=mode) @ 10] = f"Robustness@10/{mode}"
    out[InfoSearch_pMRR(ties=ties)] = "p-MRR"
    out[WISE(version=version, ties=ties)] = "WISE"
    out[SICR(version=sicr, ties=ties)] = "SICR"
    for mode in MODES:
        out[GoldRank(run=mode, ties=ties)] = f"R_{mode}"
    return out


def infosearch_report(systems, datasets, names: Optional[Sequence[str]] = None, *, version: str = "2024",
                      sicr: str = "code", ties: str = "input", table: int = 2) -> pd.DataFrame:
    """InfoSearch Table 2 (``table=2``: every measure, averaged over the dimensions given) or Table 3
    (``table=3``: WISE and SICR per dimension and their average), ×100 to one decimal (gold ranks as is).

    Args:
        systems: a list of transformers (with ``names``) or ``{name: transformer}``; each sees every
            ``-og``/``-changed``/``-reversed`` topic of a dimension once. A :class:`PerDataset` gives each dimension its
            own systems (e.g. ``ds.candidates() >> reranker``).
        datasets: ``{dimension: dataset}`` (audience, keyword, format, language, length, source) or one dataset.
        version, sicr, ties: WISE version, SICR version, tie-break (defaults: the reference code).
    """
    if table not in (2, 3):
        raise ValueError(f"table must be 2 or 3, got {table!r}")
    datasets = as_datasets(datasets)
    systems, names = systems_per_dataset(systems, names, list(datasets))
    measures = infosearch_measures(version, sicr, ties)
    labels = {str(m): name for m, name in measures.items()}
    long = pd.concat([experiment_means(systems[key], names, ds.get_topics(), ds.get_qrels(), list(measures),
                                       key, labels)
                      for key, ds in datasets.items()], ignore_index=True)
    provenance = {key: dict(getattr(ds, "provenance", {}) or {}) for key, ds in datasets.items()}
    settings = {"WISE": version, "SICR": sicr, "ties": ties}
    if table == 3:
        long = long[long["measure"].isin(["WISE", "SICR"])]
        long = pd.concat([long[long["measure"] == "WISE"], long[long["measure"] == "SICR"]], ignore_index=True)
        return build_table(long, "infosearch", models=names, settings=settings, provenance=provenance,
                           average={"WISE": "WISE", "SICR": "SICR"})
    avg = long.groupby(["model", "measure"], sort=False)["value"].mean().reset_index().assign(dataset="average")
    return build_table(avg[long.columns], "infosearch", models=names, settings=settings, provenance=provenance)
