"""What every benchmark report shares: one long frame of raw means, the paper's wide layout, the
published numbers beside ours, markdown and bar charts.

A report is a DataFrame (one row per system, columns ``<dataset> <measure>``, ``Avg <measure>``) whose
``attrs`` carry ``benchmark``, ``columns`` ({column: (dataset, measure)}), ``settings`` (tie-break,
measure versions) and ``provenance`` (pinned data revisions per dataset), and ``long`` (the raw means).
Measure names are those of :func:`pyterrier_instruct.paper.paper_numbers`, so the paper's value of a
cell is a lookup.
"""
from __future__ import annotations

import os
import re
import textwrap
from typing import Dict, List, Mapping, Optional, Sequence

import pandas as pd

from .._atomic import written

#: Measures reported as printed by the papers without the ×100 (mean gold ranks, IFIR fractions).
UNSCALED_PREFIXES = ("R_",)


def models_of(system) -> List[str]:
    """The model arguments (``model_name_or_path``: hub ids or folders) inside a system — its stages, their models and
    backends — in pipeline order, each once."""
    import pyterrier as pt

    from .._config import Configured
    found: List[str] = []
    seen = set()

    def walk(obj) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        name = getattr(obj, "model_name_or_path", None)
        if isinstance(name, str) and name not in found:
            found.append(name)
        for value in vars(obj).values() if hasattr(obj, "__dict__") else ():
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, (pt.Transformer, Configured)):
                    walk(item)
    if not isinstance(system, pd.DataFrame):
        walk(system)
    return found


#: What a row computed with stand-in weights or data (``pyterrier_instruct.testing``) ends with; no published numbers
#: are printed beside such a row (:func:`with_paper`).
STAND_IN_LABEL = "[stand-in]"


def is_stand_in_row(name) -> bool:
    """``name`` is labelled as a stand-in row (``"MonoT5 [stand-in]"``, ``"MonoT5-base [t5, stand-in]"``)."""
    return str(name).endswith("stand-in]")


def stand_in_label(name: str, stand_in: bool = True) -> str:
    """``name`` ending with :data:`STAND_IN_LABEL` when ``stand_in`` (once)."""
    return f"{name} {STAND_IN_LABEL}" if stand_in and not is_stand_in_row(name) else str(name)


def loads_stand_in(system) -> bool:
    """A model argument inside ``system`` (:func:`models_of`) loads stand-in weights (``_hub.STAND_IN_MARKER``)."""
    from .._hub import checkpoint_note
    return any(checkpoint_note(m) == "stand-in" for m in models_of(system))


def stand_in_data(datasets) -> List[str]:
    """The names of the datasets (objects with ``provenance``, or provenance dicts) read from stand-in files."""
    if isinstance(datasets, Mapping):
        items = list(datasets.values())
    else:
        items = list(datasets) if isinstance(datasets, (list, tuple)) else [datasets]
    found = []
    for ds in items:
        prov = ds if isinstance(ds, Mapping) else getattr(ds, "provenance", None) or {}
        if prov.get("stand_in"):
            found.append(str(prov.get("name") or getattr(ds, "name", "dataset")))
    return found


def label_stand_ins(results: pd.DataFrame, systems: Sequence, datasets=()) -> pd.DataFrame:
    """``results`` of ``pt.Experiment(systems, …)`` (one row per system, in order) with each ``name`` that was computed
    with stand-in weights (a model inside the system) or on stand-in data (one of ``datasets``) ending with
    ``[stand-in]`` (``pyterrier_instruct.testing``: tiny random weights, synthetic benchmark files, numbers that mean
    nothing); recognised from the folders' marker, whatever the command line said. Other rows are left as they are."""
    systems = list(systems)
    if len(systems) != len(results):
        raise ValueError(f"label_stand_ins: {len(systems)} systems for {len(results)} rows; pass the systems of the "
                         "experiment in its order (one row per system: not perquery=True)")
    data = bool(stand_in_data(datasets))
    out = results.copy()
    out["name"] = [stand_in_label(n, data or loads_stand_in(s)) for n, s in zip(out["name"], systems)]
    return out


def system_names(systems, names: Optional[Sequence[str]]):
    """``(list of systems, list of names)`` from a list (+ names) or a ``{name: system}`` dict; the name of a system
    that loads stand-in weights ends with ``[stand-in]`` (:func:`loads_stand_in`)."""
    if isinstance(systems, Mapping):
        if names is not None:
            raise ValueError("give names either as the keys of a systems dict or as names=, not both")
        systems, names = list(systems.values()), [str(k) for k in systems]
    else:
        systems = list(systems)
        names = [str(s) for s in systems] if names is None else [str(n) for n in names]
    if len(names) != len(systems):
        raise ValueError(f"names has {len(names)} entries for {len(systems)} systems")
    return systems, [stand_in_label(n, loads_stand_in(s)) for n, s in zip(names, systems)]


class PerDataset(dict):
    """Systems that differ per dataset, e.g. each reranking its own dataset's candidates: ``{dataset key: systems}``
    (each a list with ``names=``, or ``{name: system}``; the same names for every dataset). Pass it as the ``systems``
    of a report over several datasets."""


def systems_per_dataset(systems, names: Optional[Sequence[str]], keys: Sequence[str]):
    """``({dataset key: [system, …]}, names)``: the same systems for every dataset, or each key's own from a
    :class:`PerDataset`."""
    if not isinstance(systems, PerDataset):
        systems, names = system_names(systems, names)
        return {k: systems for k in keys}, names
    missing = [k for k in keys if k not in systems]
    if missing:
        raise ValueError(f"PerDataset has no systems for dataset(s) {missing}; it has {list(systems)}")
    out, shared = {}, None
    for k in keys:
        out[k], these = system_names(systems[k], names)
        if shared is not None and these != shared:
            raise ValueError(f"PerDataset: the systems of {k!r} are named {these}, those of the first dataset {shared}")
        shared = these
    return out, shared


def experiment_means(systems, names, topics, qrels, measures, dataset: str, labels: Mapping) -> pd.DataFrame:
    """Runs every system once on ``topics``; returns the long frame ``model, dataset, measure, value`` (a measure named
    ``labels[str(m)]``): one ``pt.Experiment`` with every measure where ``_pt_compat`` is active (it means each over
    its own qids: p-MRR's instances, Robustness' groups; one evaluation's caches shared), else one per measure."""
    import pyterrier as pt

    from .. import _pt_compat
    results = [system(topics) if not isinstance(system, pd.DataFrame) else system for system in systems]
    groups = [list(measures)] if _pt_compat.STATUS == "active" else [[m] for m in measures]
    rows = []
    for group in groups:
        res = pt.Experiment(results, topics, qrels, group, names=names, verbose=False)
        rows += [(model, dataset, labels.get(str(m), str(m)), float(value))
                 for m in group for model, value in zip(res["name"], res[str(m)])]
    return pd.DataFrame(rows, columns=["model", "dataset", "measure", "value"])


def build_table(long: pd.DataFrame, benchmark: str, *, models: Sequence[str], settings: Dict, provenance: Dict,
                average: Optional[Mapping[str, str]] = None, scale: float = 100.0, decimals: int = 1,
                unscaled: Sequence[str] = UNSCALED_PREFIXES) -> pd.DataFrame:
    """The paper layout from raw long means.

    ``average`` maps a measure to the name of its unweighted mean over datasets (e.g. FollowIR's
    ``MAP@1000``/``nDCG@5`` → ``Score``); given with more than one dataset, the means are appended as
    dataset ``average``. Values are ×``scale`` (except measures starting with ``unscaled``), rounded. Over stand-in
    data (a ``provenance`` with ``stand_in``) every row is labelled ``[stand-in]``.
    """
    long = long.copy()
    if average is not None and long["dataset"].nunique() > 1:
        avg = long[long["measure"].isin(list(average))].assign(measure=lambda f: f["measure"].map(average))
        avg = avg.groupby(["model", "measure"], sort=False)["value"].mean().reset_index().assign(dataset="average")
        long = pd.concat([long, avg[long.columns]], ignore_index=True)
    factor = [1.0 if str(m).startswith(tuple(unscaled)) else scale for m in long["measure"]]
    long["shown"] = (long["value"] * factor).round(decimals) + 0.0  # + 0.0: a value rounded to -0.0 is 0.0 everywhere
    keys = list(dict.fromkeys(zip(long["dataset"], long["measure"])))
    columns = {(f"Avg {m}" if d == "average" else f"{d} {m}"): (d, m) for d, m in keys}
    table = pd.DataFrame({"Model": list(models)})
    for col, (d, m) in columns.items():
        part = long[(long["dataset"] == d) & (long["measure"] == m)].set_index("model")["shown"]
        table[col] = part.reindex(table["Model"]).to_numpy()
    if stand_in_data(list(provenance.values())):  # every row was computed on stand-in data: each says so
        table["Model"] = [stand_in_label(m) for m in table["Model"]]
    table.attrs.update(benchmark=benchmark, columns=columns, settings=dict(settings), provenance=dict(provenance),
                       long=long.drop(columns="shown"), scale=scale, decimals=decimals, unscaled=tuple(unscaled))
    return table


def with_paper(table: pd.DataFrame, models: Mapping[str, str], paper: Optional[str] = None,
               strict: bool = True) -> pd.DataFrame:
    """Places the published numbers beside ours: below each mapped system a ``paper: <model>`` row and a
    ``Δ`` row (ours − paper), on the table's scale. ``attrs["paper_rows"]``: the systems that got them.

    Args:
        table: a report from one of the ``*_report`` functions.
        models: ``{our system name: the model's name as printed in the paper}``.
        paper: restrict to one paper (e.g. ``'Promptriever'``); by default the paper that reports the most of
            the table's cells for the model (the first in the paper list on ties).
        strict: a mapped model without published numbers on this benchmark is an error; with ``strict=False`` a model
            without a published value in any of the table's cells just gets no paper rows.
    """
    from ..paper import paper_numbers
    columns, benchmark = table.attrs["columns"], table.attrs["benchmark"]
    rows_of = set(table["Model"])
    unknown = [m for m in models if m not in rows_of and stand_in_label(m) not in rows_of]
    if unknown:
        raise ValueError(f"with_paper: {unknown} are not systems of this table; systems are {table['Model'].tolist()}")
    # no published numbers beside a stand-in's (tiny random weights, synthetic data): a Δ would mean nothing
    data = stand_in_data(list(table.attrs.get("provenance", {}).values()))
    models = {k: v for k, v in models.items() if k in rows_of and not is_stand_in_row(k) and not data}
    numbers = paper_numbers(benchmark=benchmark, paper=paper)
    if strict:  # names no paper prints are an error listing the valid ones
        paper_numbers(model=sorted(set(models.values())))
    cells = set(columns.values())
    rows, shown = [], {}
    for _, row in table.iterrows():
        rows.append(row.to_dict())
        name = models.get(row["Model"])
        if name is None:
            continue
        published = numbers[numbers["model"] == name]
        if len(published) == 0 and strict:
            raise ValueError(f"with_paper: no published {benchmark} numbers for model {name!r}")
        covered = {p: sum((d, m) in cells for d, m in zip(g["dataset"], g["measure"]))
                   for p, g in published.groupby("paper", sort=False)}
        if not covered or (not strict and max(covered.values()) == 0):
            continue
        published = published[published["paper"] == max(covered, key=covered.get)]  # most cells; the first on ties
        value = {(d, m): v for d, m, v in zip(published["dataset"], published["measure"], published["value"])}
        ref = {"Model": f"  paper: {name} ({published['paper'].iloc[0]})"}
        delta = {"Model": "  Δ ours − paper"}
        for col, key in columns.items():
            ref[col] = value.get(key, float("nan"))
            delta[col] = round(row[col] - ref[col], table.attrs["decimals"]) + 0.0  # never -0.0
        rows += [ref, delta]
        shown[row["Model"]] = name
    out = pd.DataFrame(rows, columns=table.columns)
    out.attrs.update(table.attrs, paper_rows=shown)
    return out


def as_datasets(datasets) -> Dict[str, object]:
    """``{key: dataset}`` as given, or one dataset keyed by its name."""
    return datasets if isinstance(datasets, dict) else {getattr(datasets, "name", None) or "dataset": datasets}


def short_provenance(provenance: Mapping[str, object]) -> str:
    """A dataset's provenance in a few characters: the revision read (a commit's first 7 hex digits, ``bundled`` for a
    dataset shipped with the package), else the first 12 hex digits of the content hash of a local folder whose revision
    is not recorded, else its folder's name; ``stand-in, …`` first for stand-in data. The whole record stays in
    ``attrs["provenance"]`` (and the CLI's report.json)."""
    if provenance.get("stand_in"):
        return "stand-in, " + short_provenance({k: v for k, v in provenance.items() if k != "stand_in"})
    revision = provenance.get("revision")
    if revision:
        revision = str(revision)
        if revision.startswith("bundled"):
            return "bundled"
        return revision[:7] if re.fullmatch(r"[0-9a-f]{40}", revision) else revision
    content = provenance.get("content_sha256")
    if content:
        return "local, sha256:" + str(content).split(":")[-1][:12]
    path = provenance.get("path")
    return f"local {os.path.basename(os.path.normpath(str(path)))}" if path else "unknown revision"


def footer(table: pd.DataFrame, width: int = 110) -> str:
    """The settings and the datasets' revisions in short (:func:`short_provenance`), wrapped at ``width`` columns;
    the full provenance (paths, hub repositories, pinned revisions, hashes) is ``table.attrs["provenance"]``."""
    settings = ", ".join(f"{k}={v}" for k, v in table.attrs.get("settings", {}).items())
    groups: Dict[str, list] = {}  # datasets of the same revision (the miniature snapshots, one release) said once
    for d, p in table.attrs.get("provenance", {}).items():
        groups.setdefault(short_provenance(p), []).append(str(d))
    prov = "; ".join(f"{', '.join(names)} ({short})" for short, names in groups.items())
    text = f"{settings}. Data: {prov}." if prov else settings
    if any(map(is_stand_in_row, table["Model"])):
        text += (f" Rows labelled {STAND_IN_LABEL} were computed with stand-ins (pyterrier_instruct.testing: tiny "
                 "random weights or synthetic data): their numbers mean nothing, and no published number is shown "
                 "beside them.")
    return textwrap.fill(text, width=width, break_long_words=False, break_on_hyphens=False)


def to_markdown(table: pd.DataFrame) -> str:
    """GitHub markdown (signed p-MRR/WISE, the table's decimals) plus the settings/provenance footer."""
    cols = list(table.columns)
    decimals = table.attrs.get("decimals", 1)
    signed = ("p-MRR", "pMRR", "WISE", "INSTFOL", "Δ")

    def fmt(col, v, model):
        if isinstance(v, float):
            if v != v:
                return "–"
            v = 0.0 if round(v, decimals) == 0 else v  # no "-0.0"
            sign = "+" if any(s in col for s in signed) or "Δ" in str(model) else ""
            return f"{v:{sign}.{decimals}f}"
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if c == "Model" else "---:" for c in cols) + "|"]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(fmt(c, row[c], row["Model"]) for c in cols) + " |")
    if table.attrs.get("settings") or table.attrs.get("provenance") or any(map(is_stand_in_row, table["Model"])):
        lines += ["", footer(table)]
    return "\n".join(lines)


def finish_figure(fig, path: Optional[str], dpi: int = 120):
    """``fig`` laid out, written to ``path`` (replaced whole) when given, and closed; returns it."""
    fig.tight_layout()
    if path is not None:
        with written(path) as tmp:
            fig.savefig(tmp, dpi=dpi)  # the format of the extension (written keeps it)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return fig


def plot_report(table: pd.DataFrame, path: str, measures: Optional[Sequence[str]] = None) -> None:
    """Saves one bar chart per measure (a subplot each; bars = systems, groups = datasets), with the
    paper's numbers as hatched bars when the table came through :func:`with_paper`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    columns = table.attrs["columns"]
    wanted = list(dict.fromkeys(m for _, m in columns.values())) if measures is None else list(measures)
    fig, axes = plt.subplots(len(wanted), 1, figsize=(max(6.0, 1.2 * len(table) + 3), 3.2 * len(wanted)), squeeze=False)
    for ax, measure in zip(axes[:, 0], wanted):
        cols = [c for c, (_, m) in columns.items() if m == measure]
        rows = table[~table["Model"].str.startswith("  Δ")]
        x = np.arange(len(cols))
        width = 0.8 / max(1, len(rows))
        for j, (_, row) in enumerate(rows.iterrows()):
            paper = str(row["Model"]).startswith("  paper:")
            ax.bar(x + j * width - 0.4 + width / 2, row[cols].to_numpy(dtype=float), width,
                   label=str(row["Model"]).strip(), hatch="//" if paper else None, alpha=0.6 if paper else 1.0)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x)
        ax.set_xticklabels([c.rsplit(" ", 1)[0] if " " in c else c for c in cols], rotation=30, ha="right")
        ax.set_title(measure)
    axes[0, 0].legend(fontsize="small", ncol=2)
    finish_figure(fig, path)
