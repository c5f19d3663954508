"""What the reproduction pipelines (``pyterrier_instruct.reproduce.<module>``, run as ``pyterrier-instruct <command>``) share:
their command line (:func:`parser`: every option the pipelines have in common is declared there, once),
opening the datasets, failing fast on missing weights, saving each system's run, and printing the paper-layout table
next to the published numbers.

A pipeline declares its table rows (:class:`Row`: our name, the paper's name, the default checkpoint), builds the
systems from the package's public API, and hands the report to :func:`finish`::

    ROWS = {"bm25": Row("BM25", paper="BM25"), "monot5-base": Row("MonoT5-base", "MonoT5-base", "castorini/monot5-base-msmarco-10k")}
    args = parse(parser("followir", __doc__, ROWS, DATASETS), argv, ROWS, DATASETS)
    models = selected({"bm25": lambda: pti.PoolBM25(), "monot5-base": lambda: pti.MonoT5(args.models["monot5-base"])}, args)
    datasets = open_datasets(args)
    systems = pti.PerDataset({label: saved({k: ds.candidates() >> m for k, m in models.items()}, args, ROWS, label)
                              for label, ds in datasets.items()})
    finish(pti.followir_report(systems, datasets), args, ROWS, "table2", "FollowIR Table 2")
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence

import pandas as pd

from .._atomic import write_json, write_text

log = logging.getLogger(__name__)


class Row(NamedTuple):
    """One system row of a paper table."""
    name: str                       # the row as our table prints it
    paper: Optional[str] = None     # the model as the paper's table prints it (for the published numbers), if reported
    model: Optional[str] = None     # the default checkpoint (a hub id); ``--<key> PATH`` overrides it
    help: str = ""                  # one line for ``--help``
    default: bool = True            # run unless ``--systems`` says otherwise (False: paid APIs and the like)
    hub: bool = True                # ``model`` is a Hugging Face checkpoint (False: e.g. an API model name)


#: The instruction-aware models of 2025 as rows of the reranking tables (FollowIR, InfoSearch; IFIR: the embedding): not in
#: the papers' tables, so run only when ``--systems`` names them.
ROWS_2025 = {
    "qwen3-reranker": Row("Qwen3-Reranker-0.6B", None, "Qwen/Qwen3-Reranker-0.6B", "2025, not in the paper: instruction in <Instruct>",
                          default=False),
    "mxbai-rerank-v2": Row("mxbai-rerank-base-v2", None, "mixedbread-ai/mxbai-rerank-base-v2",
                           "2025, not in the paper: instruction in its instruction: field", default=False),
    "qwen3-embedding": Row("Qwen3-Embedding-0.6B", None, "Qwen/Qwen3-Embedding-0.6B", "2025, not in the paper: instruction in Instruct:",
                           default=False),
}


def rerankers_2025(models: Mapping[str, str], kw: Mapping[str, object]) -> Dict[str, Callable]:
    """The :data:`ROWS_2025` systems as reranking stages (constructors for :func:`selected`), over ``--<key>`` weights."""
    import pyterrier_instruct as pti
    m = models
    return {
        "qwen3-reranker": lambda: pti.Qwen3Reranker(m["qwen3-reranker"], **kw),
        "mxbai-rerank-v2": lambda: pti.MxbaiRerankV2(m["mxbai-rerank-v2"], **kw),
        "qwen3-embedding": lambda: pti.Qwen3Embedding(m["qwen3-embedding"], **kw).scorer(),
    }


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
                           help=f"{row.name}: hub id or local folder (default: {row.model}){'; ' + row.help if row.help else ''}")
    g = p.add_argument_group("run")
    g.add_argument("--device", default=None, help="torch device for the models (default: cuda when available, else cpu)")
    g.add_argument("--batch-size", type=int, default=None, metavar="N", help="model batch size (default: each model's own)")
    g.add_argument("--out", default=os.path.join("results", command), metavar="DIR",
                   help="output folder: the tables, report.json and runs/ (saved runs; a re-run reuses them)")
    g.add_argument("--quiet", action="store_true", help="no progress bars")
    g.add_argument("--first-stage", choices=FIRST_STAGES, default="pisa",
                   help="the full-collection BM25 engine: pisa (pti.BM25, no Java; default) or pyserini (pti.PyseriniBM25, "
                        "Anserini/Lucene; needs pip install 'pyterrier-instruct[pyserini]'). See docs/first_stage.md")
    g = p.add_argument_group("cluster (pip install 'pyterrier-instruct[ray]'; see docs/scaling.md)")
    g.add_argument("--ray", nargs="?", const="auto", default=None, metavar="ADDRESS",
                   help="run the rerankers and dense encoders on a Ray cluster: ADDRESS of its head (host:6379, ray://host:10001), "
                        "or 'auto' (the default when the flag has no value: the cluster this machine joined with `ray start`)")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="Ray actors per model, one model copy each (default: one per GPU of the cluster, else one per CPU)")
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
        p.error(f"--systems: unknown row(s) {unknown}; choose from {', '.join(rows)}" if unknown else "--systems is empty")
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
    """``pti.load_dataset(name, path=path)`` with its folder located now (a pipeline fails before any work when the data is
    missing), looking under ``--data-root`` (as ``$PYTERRIER_INSTRUCT_DATA``, for this call only) when no path is given."""
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


def listwise_backend(model: str, backend: str, options: Mapping[str, object]):
    """A listwise row's backend: ``pti.HFBackend`` (with :func:`backend_options`) or ``pti.VLLMBackend``."""
    import pyterrier_instruct as pti
    return pti.HFBackend(model, **backend_options(options)) if backend == "hf" else pti.VLLMBackend(model)


def rank1(model: str, backend: str, options: Mapping[str, object]):
    """The rank1 row: ``pti.Rank1`` on the ``'hf'`` backend (with ``device``/``batch_size`` from :func:`model_options`)
    or on ``'vllm'``."""
    import pyterrier_instruct as pti
    backend_options_ = backend_options(options) if backend == "hf" else None
    return pti.Rank1(model, backend=backend, backend_options=backend_options_, verbose=options["verbose"])


#: The setwise rows (Setwise, SIGIR 2024; Rank-R1, 2025): not in the instruction-following papers' tables, so run only
#: when ``--systems`` names them. FollowIR: both rerank the candidates; BRIGHT (``inf-ir``): Rank-R1 reranks BM25's top 100.
ROWS_SETWISE = {
    "setwise": Row("Setwise (Flan-T5-large)", None, "google/flan-t5-large", "setwise heapsort, top 10 (Zhuang et al., 2024; not in "
                   "the paper)", default=False),
    "rank-r1": Row("Rank-R1-7B", None, "ielabgroup/Rank-R1-7B-v0.1", "setwise reasoning, 20 documents per comparison, up to 2048 "
                   "generated tokens per comparison (a LoRA adapter on Qwen2.5-7B-Instruct; not in the paper)", default=False),
}


def reasoning_budget(args: argparse.Namespace) -> Dict[str, int]:
    """``{"max_output_tokens": --reasoning-budget}`` when given, else ``{}`` (the model's own default)."""
    return {} if args.reasoning_budget is None else {"max_output_tokens": args.reasoning_budget}


def setwise_rerankers(models: Mapping[str, str], backend: str, options: Mapping[str, object], reasoning_budget: Optional[int] = None,
                      **rank_r1) -> Dict[str, Callable]:
    """The :data:`ROWS_SETWISE` systems over ``--<key>`` weights on the ``'hf'`` (with ``device``/``batch_size``) or
    ``'vllm'`` backend; ``reasoning_budget`` (``--reasoning-budget``; None: Rank-R1's own 2,048) and ``rank_r1`` keyword
    arguments go to Rank-R1 (BRIGHT's longer query and passages)."""
    import pyterrier_instruct as pti
    hf = backend_options(options) if backend == "hf" else None
    if reasoning_budget is not None:
        rank_r1["max_output_tokens"] = reasoning_budget
    return {"setwise": lambda: pti.Setwise(models["setwise"], backend=backend, backend_options=hf, verbose=options["verbose"]),
            "rank-r1": lambda: pti.RankR1(models["rank-r1"], backend=backend, backend_options=hf, verbose=options["verbose"], **rank_r1)}


def check_models(args: argparse.Namespace, rows: Mapping[str, Row]) -> None:
    """Fails before any work when a selected row's weights are neither a local folder nor cached and the hub is offline
    (``HF_HUB_OFFLINE``), naming the rows and the ways out."""
    from .._hub import MODELS_ENV, local_model, offline
    if not offline() or getattr(args, "ray", None) is not None:  # on a cluster the workers load the weights (and check)
        return
    missing = [(k, args.models[k]) for k in args.keys if k in args.models and rows[k].hub
               and not os.path.isdir(args.models[k]) and local_model(args.models[k]) is None]
    if missing:
        listed = "; ".join(f"{rows[k].name} ({m})" for k, m in missing)
        raise SystemExit(f"error: HF_HUB_OFFLINE is set and these checkpoints are not available locally: {listed}. "
                         f"Pass a local folder ({', '.join('--' + k + ' DIR' for k, _ in missing)}), put the weights under "
                         f"${MODELS_ENV}/<hub id>, allow downloads (unset HF_HUB_OFFLINE), or leave the rows out with --systems.")


#: Distributions whose versions every result records (import name → distribution), installed or not (None).
PACKAGES = {"pyterrier": "pyterrier", "pyterrier_pisa": "pyterrier-pisa", "ir_measures": "ir-measures",
            "ir_datasets": "ir-datasets", "pandas": "pandas", "numpy": "numpy", "torch": "torch",
            "transformers": "transformers", "peft": "peft", "huggingface_hub": "huggingface-hub"}
#: Recorded only when the run imported them.
LOADED_PACKAGES = {"sentence_transformers": "sentence-transformers", "vllm": "vllm", "pyterrier_dr": "pyterrier-dr",
                   "pyserini": "pyserini", "pyterrier_anserini": "pyterrier-anserini", "openai": "openai"}


def environment() -> Dict[str, Optional[str]]:
    """The versions a result depends on: python, pyterrier_instruct, every :data:`PACKAGES` distribution (None when not
    installed; read from the installed metadata, nothing is imported) and the :data:`LOADED_PACKAGES` this run imported."""
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
    walk(system)
    return found


def model_provenance(names: Sequence[str]) -> List[Dict[str, Optional[str]]]:
    """Per model argument: its hub id, the folder it loads from and the commit of that snapshot when recorded locally
    (:func:`pyterrier_instruct._hub.revision`; never downloads)."""
    from .._hub import revision
    return [revision(n) for n in names]


def saved(systems: Mapping[str, object], args: argparse.Namespace, rows: Mapping[str, Row], label: str) -> Dict[str, object]:
    """``{row name: SavedRun(system)}``: each row's runs on dataset ``label`` go to ``<out>/runs/<label>/<key>/``."""
    from ..evaluation.runs import SavedRun
    return {row_name(rows, k, args): SavedRun(s, os.path.join(args.out, "runs", label, k), verbose=not args.quiet)
            for k, s in systems.items()}


def row_name(rows: Mapping[str, Row], key: str, args: argparse.Namespace) -> str:
    """The table row of ``key`` labelled by the checkpoint used: the row's name for its default checkpoint, else
    ``"<name> [<checkpoint>]"`` (a folder by its name, a hub id as it is), so a user's own checkpoint is never printed
    as the paper's model; weights that are a stand-in or record no revision say so in the row too
    (``"MonoT5-base [stand-in]"``, ``"MonoT5-base [t5, unrevisioned]"``: :func:`pyterrier_instruct._hub.checkpoint_note`)."""
    row, model = rows[key], getattr(args, "models", {}).get(key)
    if row.model is None or model is None:
        return row.name
    from .._hub import checkpoint_note, is_path
    notes = []
    if model != row.model:
        notes.append(os.path.basename(os.path.normpath(model)) if os.path.isdir(model) or is_path(model) else model)
    note = checkpoint_note(model) if row.hub else None
    if note:
        notes.append(note)
    return f"{row.name} [{', '.join(notes)}]" if notes else row.name


def miniatures(names: Sequence[str]) -> List[str]:
    """The dataset ids among ``names`` that are the package's bundled miniatures (``instruct-mini``, ``infosearch-mini``):
    toy benchmarks in a paper's layout, whose numbers no paper reports."""
    from ..datasets.registry import DATASETS
    found = []
    for name in names:
        key = name.split(":", 1)[-1] if name.startswith("instruct:") else name
        key = key[len("instruct/"):] if key.startswith("instruct/") else key
        if key in DATASETS and DATASETS[key].repo_id is None:
            found.append(name)
    return found


def on_cluster(systems: Mapping[str, object], args: argparse.Namespace, local: Sequence[str] = ("bm25",)) -> Dict[str, object]:
    """``systems`` with each one (but the cheap ``local`` rows) wrapped in ``pti.on_ray`` when ``--ray`` is given; the
    saved runs keep their keys (a system on Ray gives the same run)."""
    if getattr(args, "ray", None) is None:
        return dict(systems)
    from ..scale import on_ray
    return {k: s if k in local else on_ray(s, workers=args.workers, address=args.ray, verbose=not args.quiet)
            for k, s in systems.items()}


def read_report(path: str) -> dict:
    """The ``report.json`` of earlier runs, or ``{}``; an unreadable one (truncated by a kill or a full disk before
    reports were replaced whole) is kept aside as ``report.json.damaged`` with a warning, so this run's work is not lost."""
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


def finish(table: pd.DataFrame, args: argparse.Namespace, rows: Mapping[str, Row], name: str, title: str) -> pd.DataFrame:
    """Prints ``table`` with the published numbers and the difference below each reported row (none on a bundled
    miniature: :func:`miniatures`), and writes ``<out>/<name>.csv`` (ours), ``<name>.paper.csv`` (with the paper rows),
    ``<name>.md`` and ``report.json`` (the full provenance the printed footer abbreviates)."""
    from .._version import __version__
    from ..evaluation import to_markdown, with_paper
    toys = miniatures(args.dataset)
    if toys:  # a toy in a paper's layout: the paper's numbers are for the full benchmark, a Δ would mean nothing
        both = table.copy()
        both.attrs.update(table.attrs, paper_rows={})
    else:
        both = with_paper(table, {row_name(rows, k, args): rows[k].paper for k in args.keys if rows[k].paper}, strict=False)
    paper = both.attrs["paper_rows"]
    os.makedirs(args.out, exist_ok=True)
    md = to_markdown(both)  # each file replaced whole (a kill leaves the previous one), report.json last
    if toys:
        md += (f"\nNo published numbers beside {', '.join(toys)}: a miniature bundled with the package, not the paper's "
               "benchmark.")
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
                   "device": args.device, "seconds": round(time.time() - args.started, 1)})
    report.setdefault("tables", {})[name] = {"title": title, "settings": {k: str(v) for k, v in table.attrs.get("settings", {}).items()},
                                            "provenance": table.attrs.get("provenance", {}), "paper_rows": paper}
    write_json(report_path, report, indent=2)  # replaced whole: a kill or a full disk leaves the previous report
    print(f"{title}\n")
    print(md)
    print(f"\nwritten to {args.out}/: {name}.csv, {name}.paper.csv, {name}.md, report.json, runs/ "
          f"({report['seconds']} s)")
    return both


def selected(builders: Mapping[str, Callable[[], object]], args: argparse.Namespace) -> Dict[str, object]:
    """``{row key: builder()}`` for the rows of ``builders`` that ``--systems`` selected, in table order (rows that were
    not asked for are never constructed)."""
    return {k: builders[k]() for k in args.keys if k in builders}


FIRST_STAGES = ("pisa", "pyserini")


def first_stage_bm25(first_stage: str, corpus, index: str, **bm25):
    """The BM25 that ``--first-stage`` names over ``corpus`` (an iterable of documents), its index kept at ``index``
    (PISA) or ``index-pyserini`` (Lucene) and reused; ``bm25`` keyword arguments such as ``k1``/``b``/``verbose`` go to it."""
    from .. import BM25, PyseriniBM25
    if first_stage == "pyserini":
        return PyseriniBM25(corpus, path=f"{index}-pyserini", **bm25)
    if first_stage == "pisa":
        return BM25(corpus, path=index, **bm25)
    raise ValueError(f"first stage {first_stage!r}: choose from {', '.join(FIRST_STAGES)}")


def full_retrieval(args: argparse.Namespace, rows: Mapping[str, Row], label: str, ds, dense: Mapping[str, object],
                   **bm25) -> Dict[str, object]:
    """The saved full-retrieval rows on one dataset: ``bm25`` (when selected; the ``--first-stage`` BM25, PISA by default,
    over the dataset's corpus on query + instruction, ``bm25`` keyword arguments such as ``k1``/``b``) and each dense
    model's exact retriever over the corpus. Indexes are kept under ``<out>/index/<label>/<key>`` and reused."""
    from .. import FoldInstruction
    index = os.path.join(args.out, "index", label)
    systems = {}
    if "bm25" in args.keys:
        bm25_model = first_stage_bm25(getattr(args, "first_stage", "pisa"), ds.get_corpus_iter(verbose=not args.quiet),
                                      os.path.join(index, "bm25"), verbose=not args.quiet, **bm25)
        systems["bm25"] = FoldInstruction() >> bm25_model
    for key, model in dense.items():
        systems[key] = model.retriever(os.path.join(index, key), num_results=1000, corpus=ds.get_corpus_iter)
    return saved(on_cluster(systems, args), args, rows, label)


__all__: List[str] = ["Row", "parser", "parse", "dataset_label", "open_dataset", "open_datasets", "model_options", "check_models", "saved",
                      "row_name", "miniatures",
                      "finish", "environment", "models_of", "model_provenance", "selected", "on_cluster",
                      "full_retrieval", "FIRST_STAGES", "first_stage_bm25"]
