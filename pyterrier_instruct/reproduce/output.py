"""What a reproduction pipeline writes: the paper-layout table beside the published numbers (:func:`finish`: csv,
markdown, ``report.json``), with the provenance it records (:func:`environment`, :func:`models_of`,
:func:`model_provenance`)."""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from typing import Dict, List, Mapping, Optional, Sequence

import pandas as pd

from .._atomic import write_json, write_text
from ..evaluation._report import models_of  # noqa: F401 - re-exported: the demo and the tests use it here
from .arguments import Row
from .systems import row_name

log = logging.getLogger(__name__)


#: Distributions whose versions every result records (import name → distribution), installed or not (None).
PACKAGES = {"pyterrier": "pyterrier", "pyterrier_pisa": "pyterrier-pisa", "ir_measures": "ir-measures",
            "ir_datasets": "ir-datasets", "pandas": "pandas", "numpy": "numpy", "torch": "torch",
            "transformers": "transformers", "peft": "peft", "huggingface_hub": "huggingface-hub"}


#: Recorded only when the run imported them.
LOADED_PACKAGES = {"sentence_transformers": "sentence-transformers", "vllm": "vllm", "pyterrier_dr": "pyterrier-dr",
                   "pyserini": "pyserini", "pyterrier_anserini": "pyterrier-anserini", "openai": "openai"}


def environment() -> Dict[str, Optional[str]]:
    """The versions a result depends on: python, pyterrier_instruct, every :data:`PACKAGES` distribution (None when not
    installed; read from the installed metadata, nothing imported) and the :data:`LOADED_PACKAGES` this run imported."""
    from importlib import metadata

    from .._version import __version__

    def version(dist: str) -> Optional[str]:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None
    out: Dict[str, Optional[str]] = {"python": platform.python_version(), "pyterrier_instruct": __version__}
    out.update({name: version(dist) for name, dist in PACKAGES.items()})
    out.update({name: version(dist) for name, dist in LOADED_PACKAGES.items() if name in sys.modules})
    return out


def model_provenance(names: Sequence[str]) -> List[Dict[str, Optional[str]]]:
    """Per model argument: its hub id, the folder it loads from and the commit of that snapshot when recorded locally
    (:func:`pyterrier_instruct._hub.revision`; never downloads)."""
    from .._hub import revision
    return [revision(n) for n in names]


def miniatures(names: Sequence[str]) -> List[str]:
    """The dataset ids among ``names`` that are the package's bundled miniatures (``instruct-mini``,
    ``infosearch-mini``): toy benchmarks in a paper's layout, whose numbers no paper reports."""
    from ..datasets.registry import DATASETS
    found = []
    for name in names:
        key = name.split(":", 1)[-1] if name.startswith("instruct:") else name
        key = key[len("instruct/"):] if key.startswith("instruct/") else key
        if key in DATASETS and DATASETS[key].repo_id is None:
            found.append(name)
    return found


def read_report(path: str) -> dict:
    """The ``report.json`` of earlier runs, or ``{}``; an unreadable one (truncated by a kill or a full disk before
    reports were replaced whole) is kept as ``report.json.damaged`` with a warning, so this run's work is not lost."""
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        if not isinstance(report, dict):
            raise ValueError(f"a JSON {type(report).__name__}, not an object")
        return report
    except (OSError, ValueError) as e:
        os.replace(path, path + ".damaged")
        log.warning("%s is unreadable (%s): moved to %s.damaged; a new report is started", path, e, path)
        return {}


def finish(table: pd.DataFrame, args: argparse.Namespace, rows: Mapping[str, Row], name: str,
           title: str) -> pd.DataFrame:
    """Prints ``table`` with the published numbers and the difference below each reported row (none on a bundled
    miniature: :func:`miniatures`; none beside rows labelled ``[stand-in]``, whose weights or data are stand-ins), and
    writes ``<out>/<name>.csv`` (ours), ``<name>.paper.csv`` (with the paper rows),
    ``<name>.md`` and ``report.json`` (the full provenance the printed footer abbreviates)."""
    from .._version import __version__
    from ..evaluation import to_markdown, with_paper
    from ..evaluation._report import is_stand_in_row, stand_in_data
    toys = miniatures(args.dataset)
    if toys:  # a toy in a paper's layout: the paper's numbers are for the full benchmark, a Δ would mean nothing
        both = table.copy()
        both.attrs.update(table.attrs, paper_rows={})
    else:  # with_paper leaves out stand-in rows and stand-in data
        papers = {row_name(rows, k, args): rows[k].paper for k in args.keys if rows[k].paper}
        both = with_paper(table, papers, strict=False)
    paper = both.attrs["paper_rows"]
    os.makedirs(args.out, exist_ok=True)
    md = to_markdown(both)  # each file replaced whole (a kill leaves the previous one), report.json last
    if toys:
        md += (f"\nNo published numbers beside {', '.join(toys)}: a miniature bundled with the package, not the "
               "paper's benchmark.")

    md += f"\nFull provenance of the data and the models: {os.path.join(args.out, 'report.json')}."
    write_text(os.path.join(args.out, f"{name}.csv"), table.to_csv(index=False))
    write_text(os.path.join(args.out, f"{name}.paper.csv"), both.to_csv(index=False))
    write_text(os.path.join(args.out, f"{name}.md"), f"{title}\n\n{md}\n")
    report_path = os.path.join(args.out, "report.json")
    report = read_report(report_path)
    report.update({"command": args.command, "pyterrier_instruct": __version__, "python": platform.python_version(),
                   "versions": environment(), "datasets": dict(zip(args.dataset, [p or "" for p in args.paths])),
                   "systems": {row_name(rows, k, args): args.models.get(k, "") for k in args.keys},
                   "models": {row_name(rows, k, args): model_provenance([args.models[k]])[0] for k in args.keys
                              if k in args.models and rows[k].hub},
                   "device": args.device, "seconds": round(time.time() - args.started, 1),
                   "stand_ins": {"datasets": stand_in_data(list(table.attrs.get("provenance", {}).values())),
                                 "rows": [m for m in table["Model"] if is_stand_in_row(m)]}})
    settings = {k: str(v) for k, v in table.attrs.get("settings", {}).items()}
    report.setdefault("tables", {})[name] = {"title": title, "settings": settings,
                                            "provenance": table.attrs.get("provenance", {}), "paper_rows": paper}
    write_json(report_path, report, indent=2)  # replaced whole: a kill or a full disk leaves the previous report
    print(f"{title}\n")
    print(md)
    print(f"\nwritten to {args.out}/: {name}.csv, {name}.paper.csv, {name}.md, report.json, runs/ "
          f"({report['seconds']} s)")
    return both

