"""The command line every reproduction pipeline shares (:func:`parser`, :func:`parse`: every common option declared
once), the table rows it selects (:class:`Row`), and the datasets it opens (:func:`open_datasets`: folders located
before any work)."""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Dict, Mapping, NamedTuple, Optional, Sequence


class Row(NamedTuple):
    """One system row of a paper table."""
    name: str                       # the row as our table prints it
    paper: Optional[str] = None     # the model as the paper's table prints it (for the published numbers), if reported
    model: Optional[str] = None     # the default checkpoint (a hub id); ``--<key> PATH`` overrides it
    help: str = ""                  # one line for ``--help``
    default: bool = True            # run unless ``--systems`` says otherwise (False: paid APIs and the like)
    hub: bool = True                # ``model`` is a Hugging Face checkpoint (False: e.g. an API model name)


FIRST_STAGES = ("pisa", "pyserini")


def parser(command: str, doc: str, rows: Mapping[str, Row], datasets: Sequence[str]) -> argparse.ArgumentParser:
    """The command line every pipeline shares; ``doc`` (the script's docstring) gives the description (its first
    paragraph) and the examples (the rest)."""
    first, _, rest = (doc or "").strip().partition("\n\n")
    p = argparse.ArgumentParser(prog=f"pyterrier-instruct {command}", description=first,
                                epilog=rest or None, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("data")
    g.add_argument("--dataset", action="append", metavar="NAME",
                   help=f"a dataset id; repeat for several (default: {' '.join(datasets)}). "
                        "`python -c \"import pyterrier_instruct as p; print(sorted(p.datasets.DATASETS))\"` lists them")
    g.add_argument("--path", action="append", metavar="DIR",
                   help="the local folder of the matching --dataset (one per --dataset, in order; '-' for none). "
                        "Without it: --data-root, the cache, or a download of the pinned revision when online")
    g.add_argument("--data-root", metavar="DIR", default=None,
                   help="a folder holding local snapshots as <owner>/<repo> or <repo> (e.g. DIR/robust04-instructions, "
                        "DIR/IFIR), searched like $PYTERRIER_INSTRUCT_DATA")
    g = p.add_argument_group("systems")
    defaults = [k for k, r in rows.items() if r.default]
    g.add_argument("--systems", default=",".join(defaults), metavar="KEY,KEY",
                   help=f"the table rows to run, comma-separated, from: {', '.join(rows)} (default: "
                        f"{'all' if len(defaults) == len(rows) else ','.join(defaults)})")
    for key, row in rows.items():
        if row.model is not None:
            g.add_argument(f"--{key}", dest=f"model_{key}", default=row.model, metavar="MODEL",
                           help=f"{row.name}: hub id or local folder (default: "
                                f"{row.model}){'; ' + row.help if row.help else ''}")
    g = p.add_argument_group("run")
    g.add_argument("--device", default=None,
                   help="torch device for the models (default: cuda when available, else cpu)")
    g.add_argument("--batch-size", type=int, default=None, metavar="N",
                   help="model batch size (default: each model's own)")
    g.add_argument("--out", default=os.path.join("results", command), metavar="DIR",
                   help="output folder: the tables, report.json and runs/ (saved runs; a re-run reuses them)")
    g.add_argument("--quiet", action="store_true", help="no progress bars")
    g.add_argument("--first-stage", choices=FIRST_STAGES, default="pisa",
                   help="the full-collection BM25 engine: pisa (pti.BM25, no Java; default) or pyserini "
                        "(pti.PyseriniBM25, Anserini/Lucene; needs pip install 'pyterrier-instruct[pyserini]'). See "
                        "docs/first_stage.md")
    g = p.add_argument_group("cluster (pip install 'pyterrier-instruct[ray]'; see docs/scaling.md)")
    g.add_argument("--ray", nargs="?", const="auto", default=None, metavar="ADDRESS",
                   help="run the rerankers and dense encoders on a Ray cluster: ADDRESS of its head (host:6379, "
                        "ray://host:10001), or 'auto' (the default when the flag has no value: the cluster this "
                        "machine joined with `ray start`)")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="Ray actors per model, a model copy each (default: one per GPU of the cluster, else per CPU)")
    return p


def parse(p: argparse.ArgumentParser, argv: Optional[Sequence[str]], rows: Mapping[str, Row],
          datasets: Sequence[str]) -> argparse.Namespace:
    """Parses ``argv`` and checks it: known ``--systems`` keys, one ``--path`` per ``--dataset``. Adds ``args.keys``
    (the selected rows, in table order), ``args.models`` (``{key: checkpoint}``) and ``args.paths``."""
    args = p.parse_args(argv)
    args.command = " ".join([p.prog] + list(sys.argv[1:] if argv is None else argv))
    wanted = [k.strip() for k in args.systems.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in rows]
    if unknown or not wanted:
        p.error(f"--systems: unknown row(s) {unknown}; choose from {', '.join(rows)}" if unknown
                else "--systems is empty")
    args.keys = [k for k in rows if k in wanted]
    args.models = {k: getattr(args, f"model_{k}") for k, row in rows.items() if row.model is not None}
    args.dataset = args.dataset or list(datasets)
    paths = args.path or ["-"] * len(args.dataset)
    if len(paths) != len(args.dataset):
        p.error(f"--path: give one per --dataset ({len(args.dataset)} datasets, {len(paths)} paths; '-' for none)")
    args.paths = [None if x in ("", "-") else x for x in paths]
    if args.data_root is not None and not os.path.isdir(args.data_root):
        p.error(f"--data-root: {args.data_root} is not a folder")
    if args.workers is not None and (args.workers < 1 or args.ray is None):
        p.error("--workers: give a positive number, with --ray" if args.ray is not None else "--workers needs --ray")
    args.started = time.time()
    return args


def dataset_label(name: str) -> str:
    """The table key of a dataset id, as the papers name their columns: ``followir/robust04`` → ``robust04``."""
    parts = name.split("/")
    return parts[1] if len(parts) > 1 else parts[0]


def open_dataset(args: argparse.Namespace, name: str, path: Optional[str] = None):
    """``pti.load_dataset(name, path=path)`` with its folder located now (a pipeline fails before any work when the data
    is missing), under ``--data-root`` (as ``$PYTERRIER_INSTRUCT_DATA``, for this call only) when no path is given."""
    from ..datasets import load
    from ..datasets.source import ENV_ROOT
    before = os.environ.get(ENV_ROOT)
    if path is None and args.data_root is not None:
        os.environ[ENV_ROOT] = args.data_root
    try:
        dataset = load(name, path=path)
        dataset.locate()  # while the variable names --data-root; nothing later reads it
        return dataset
    finally:
        if before is None:
            os.environ.pop(ENV_ROOT, None)
        else:
            os.environ[ENV_ROOT] = before


def open_datasets(args: argparse.Namespace) -> Dict[str, object]:
    """``{label: dataset}`` for ``--dataset``/``--path``/``--data-root`` (folders located, nothing read until used)."""
    out = {}
    for name, path in zip(args.dataset, args.paths):
        label = dataset_label(name)
        if label in out:
            raise ValueError(f"--dataset {name!r} repeats the table column {label!r}")
        out[label] = open_dataset(args, name, path)
    return out


def model_options(args: argparse.Namespace) -> Dict[str, object]:
    """``device=``, ``batch_size=`` (when given) and ``verbose=`` for the model constructors."""
    out: Dict[str, object] = {"device": args.device, "verbose": not args.quiet}
    if args.batch_size is not None:
        out["batch_size"] = args.batch_size
    return out


def backend_options(options: Mapping[str, object]) -> Dict[str, object]:
    """:func:`model_options` for a transformers backend: ``device``/``batch_size``, not ``verbose`` (the stage that
    drives the backend shows the bar)."""
    return {k: v for k, v in options.items() if k != "verbose"}


def reasoning_budget(args: argparse.Namespace) -> Dict[str, int]:
    """``{"max_output_tokens": --reasoning-budget}`` when given, else ``{}`` (the model's own default)."""
    return {} if args.reasoning_budget is None else {"max_output_tokens": args.reasoning_budget}

