"""FollowIR-style evaluation: one ``pt.Experiment`` per dataset, and the Table 2 layout.

Per dataset the standard measure is computed on the ``-og`` variant against the og qrels only
(``OG(AP@1000)``, or ``OG(nDCG@5)`` for News21) and p-MRR on og vs changed; both are keyed by the
``-og`` qid, so pt.Experiment's per-query averaging, ``perquery`` output and ``baseline=`` tests are
over base queries. The table reports both ×100 with one decimal, plus the unweighted averages over
datasets when there are several (FollowIR Table 2's "Average" columns).
"""
from __future__ import annotations

import warnings
from typing import Dict, Optional, Sequence, Tuple

import ir_measures
import pandas as pd
import pyterrier as pt

from ..measures import OG, MissingVariantWarning, pMRR
from ._report import as_datasets, build_table, finish_figure, systems_per_dataset


def followir_measures(dataset, ties: str = "docno"):
    """``[OG(<standard measure>), pMRR(ties=...)]`` for a FollowIR-layout dataset."""
    return [OG(ir_measures.parse_measure(dataset.measure)), pMRR(ties=ties)]


def followir_experiment(systems, dataset, names: Optional[Sequence[str]] = None, *, ties: str = "docno",
                        baseline: Optional[int] = None, perquery=False, **kwargs):
    """``pt.Experiment`` over the paired topics and qrels of ``dataset`` with its FollowIR measures.

    Extra keyword arguments go to ``pt.Experiment`` (``test=``, ``correction=``, ``verbose=`` …).
    ``batch_size`` is refused: batches that split a query's variants would corrupt p-MRR.
    """
    if kwargs.get("batch_size") is not None:
        raise ValueError("followir_experiment: batch_size would evaluate the -og and -changed variants of a "
                         "query in different batches; run without batch_size")
    measures = followir_measures(dataset, ties)
    args = (systems, dataset.get_topics(), dataset.get_qrels(), measures)
    if perquery is False:
        with warnings.catch_warnings():  # systems compared on different queries: refused
            warnings.simplefilter("error", MissingVariantWarning)
            try:
                return pt.Experiment(*args, names=names, baseline=baseline, **kwargs)
            except MissingVariantWarning as err:
                raise ValueError(f"followir_experiment: {err}: a system returned no documents for some -og/-changed "
                                 f"topics of {getattr(dataset, 'name', 'the dataset')}; every system must rank the "
                                 "candidates of every paired topic") from None
    if baseline is not None:
        raise ValueError("followir_experiment: baseline= significance tests come with perquery=False; "
                         "call it twice (means with baseline, then perquery=True)")
    # The paired measures have values on the -og qids only; where the pt.Experiment compatibility layer is off
    # (an untested PyTerrier version) pt back-fills NaN rows for the -changed qids: drop them.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*topic\(s\) not found in qrels.*")
        long = pt.Experiment(*args, names=names, perquery=True, **kwargs)
    long = long[long["qid"].astype(str).str.endswith("-og")].reset_index(drop=True)
    if perquery == "both":
        means = long.pivot_table(index="name", columns="measure", values="value", aggfunc="mean")
        means = means.reindex(list(names) if names is not None else [str(s) for s in systems])
        means.columns.name = None
        return means.reset_index(), long
    return long


def followir_table(results: Dict[str, Tuple[object, pd.DataFrame]], ties: str = "docno") -> pd.DataFrame:
    """FollowIR Table 2 layout from ``{dataset key: (dataset, pt.Experiment mean frame)}``.

    Columns: ``<key> MAP@1000`` (or ``nDCG@5``) and ``<key> p-MRR`` per dataset (×100, 1 decimal), then
    ``Avg Score`` and ``Avg p-MRR`` (unweighted means over datasets) when there are several. Keys such as
    ``robust04``/``news21``/``core17`` let :func:`~pyterrier_instruct.evaluation.with_paper` find the paper's cells.
    """
    rows, models, provenance = [], [], {}
    for key, (dataset, res) in results.items():
        std = next(c for c in res.columns if c.startswith("OG("))
        pm = next(c for c in res.columns if c.startswith("pMRR"))
        measure = std[len("OG("):-1].replace("AP@", "MAP@")
        for model, s_val, p_val in zip(res["name"], res[std], res[pm]):
            rows += [(model, key, measure, float(s_val)), (model, key, "p-MRR", float(p_val))]
        models += [m for m in res["name"] if m not in models]
        provenance[key] = dict(getattr(dataset, "provenance", {}) or {})
    long = pd.DataFrame(rows, columns=["model", "dataset", "measure", "value"])
    return build_table(long, "followir", models=models, settings={"ties": ties, "p-MRR": "FollowIR (mteb)"},
                       provenance=provenance, average={"MAP@1000": "Score", "nDCG@5": "Score", "p-MRR": "p-MRR"})


def followir_report(systems, datasets, names: Optional[Sequence[str]] = None, *, ties: str = "docno") -> pd.DataFrame:
    """FollowIR Table 2 for ``systems`` on ``datasets`` (``{key: dataset}``, e.g. robust04/news21/core17, or one
    dataset); a :class:`PerDataset` gives each dataset its own systems (e.g. ``ds.candidates() >> reranker``).

    Per dataset one ``pt.Experiment`` (:func:`followir_experiment`): the standard measure on the og run
    against the og qrels, p-MRR on og vs changed; then :func:`followir_table`.
    """
    datasets = as_datasets(datasets)
    systems, names = systems_per_dataset(systems, names, list(datasets))
    results = {key: (ds, followir_experiment(systems[key], ds, names, ties=ties)) for key, ds in datasets.items()}
    return followir_table(results, ties=ties)


def plot_per_query_pmrr(perquery: pd.DataFrame, path: Optional[str] = None, title: str = "p-MRR per query",
                        names: Optional[Sequence[str]] = None):
    """A grouped bar chart of per-query p-MRR (×100), one series per system; ``perquery`` is pt.Experiment's long
    per-query frame (``name, qid, measure, value``). Saved to ``path`` when given; returns the (closed) figure.

    Series follow ``names`` (default: the order in which ``perquery`` lists the systems, i.e. the table's), in the bars
    and in the legend. A last group, ``mean``, has one diamond per system at its mean over queries, with the value. A
    series that is 0 for every query draws no visible bars: it gets hollow circles on the zero line and ``(all 0)`` in
    its legend entry. Markers carry ``gid`` ``"mean:<system>"`` and ``"all 0:<system>"``.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    pm = perquery[perquery["measure"].astype(str).str.startswith("pMRR")]
    order = list(names) if names is not None else list(dict.fromkeys(pm["name"]))
    wide = pm.pivot_table(index="qid", columns="name", values="value", sort=False).reindex(columns=order) * 100
    wide.index = [str(q).removesuffix("-og") for q in wide.index]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * (len(wide) + 1) + 2), 4))
    width = 0.8 / max(1, len(order))
    x = np.arange(len(wide))
    for i, name in enumerate(order):
        values = wide[name].to_numpy(dtype=float)
        offset = i * width - 0.4 + width / 2
        zero = len(values) > 0 and bool((values == 0).all())
        bars = ax.bar(x + offset, values, width, label=f"{name} (all 0)" if zero else name)
        color = bars.patches[0].get_facecolor() if len(bars.patches) else None
        if zero:
            ax.plot(x + offset, np.zeros(len(x)), linestyle="none", marker="o", markersize=4, markerfacecolor="none",
                    markeredgecolor=color, gid=f"all 0:{name}")
        mean = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
        ax.plot([len(wide) + offset], [mean], linestyle="none", marker="D", color=color, markeredgecolor="black",
                gid=f"mean:{name}")
        if mean == mean:
            ax.annotate(f"{round(mean, 1) + 0.0:+.1f}", (len(wide) + offset, mean), textcoords="offset points",
                        xytext=(0, 6 + 9 * (i % 2)), ha="center", fontsize="x-small")  # staggered: equal neighbours
    ax.axhline(0, color="black", linewidth=0.8)
    ax.axvline(len(wide) - 0.5, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xticks(np.arange(len(wide) + 1))
    ax.set_xticklabels(list(wide.index) + ["mean"], rotation=45, ha="right")
    ax.set_ylabel("p-MRR ×100 (>0: follows the change)")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return finish_figure(fig, path)
