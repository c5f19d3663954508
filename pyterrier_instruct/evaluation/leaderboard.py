"""One leaderboard over every instruction-following benchmark the package loads (:func:`suite`).

Each benchmark is scored by its own report (:func:`~.followir.followir_report`, :func:`~.infosearch.infosearch_report`,
:func:`~.ifir.ifir_report`, :func:`~.instructir.instructir_report`, :func:`~.inf_ir.inf_ir_report`; NevIR's
``pt.Experiment`` with ``PairedAccuracy``), one system at a time, so a system that fails is a row saying why and the
others go on. A leaderboard column is the report's main cell for that system, as the report prints it.

First stages are shared: a pooled benchmark (FollowIR, mFollowIR, InfoSearch, NevIR) reranks each query's candidates
(``ds.candidates() >> system``; the ``BM25`` row is FollowIR's pool BM25); any other retrieves with one BM25 per
dataset (query + instruction, PISA), its run saved once under ``<out>/runs/<dataset>/first-stage`` and reranked to
``depth`` by every system: BM25 runs once per dataset, whatever the number of systems. Every system's run is a
:class:`~.runs.SavedRun`, so a second call computes nothing new. (``pt.Experiment(..., precompute_prefix=True)``
shares a common prefix within one experiment; the suite's saved first stage also holds across systems, benchmarks and
calls.)

Beside each row: the published numbers (``published=``, real data only: :func:`~._report.with_paper` in the benchmark's
report, the published main score in ``leaderboard.md``), the secondary measures (``secondary.csv``), the main measure
per query (``perquery.csv``), INSTFOL@20 with ``judge=``; stand-in data and weights are labelled from their markers.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from .._atomic import write_json, write_text
from .._progress import tqdm
from ._report import finish_figure, is_stand_in_row, stand_in_label
from ..datasets import catalog26 as _catalog26
from ..measures.cost import dollars, metered, usage_columns

__all__ = ["suite"]


@dataclass(frozen=True)
class Benchmark:
    """An instruction-following benchmark: its dataset ids, the measure of its leaderboard column (as its report labels
    it), whether systems rerank each query's candidates (``pooled``) or a BM25 over the corpus, BM25's settings."""
    datasets: Tuple[str, ...]
    main: str
    pooled: bool
    bm25: Mapping[str, float] = field(default_factory=dict)
    official: bool = False  # scored by ``ds.official_evaluate`` (the benchmark's own rules and measure names)


_BRIGHT = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
           "pony", "leetcode", "aops", "theoremqa_theorems", "theoremqa_questions")
#: every benchmark :func:`suite` runs: name → :class:`Benchmark` (the main measure as its paper leads with it)
BENCHMARKS = {
    "followir": Benchmark(("followir/robust04", "followir/news21", "followir/core17"), "p-MRR", True),
    "mfollowir": Benchmark(("mfollowir/fas", "mfollowir/rus", "mfollowir/zho"), "p-MRR", True),
    "infosearch": Benchmark(tuple(f"infosearch/{d}" for d in ("audience", "keyword", "format", "language", "length",
                                                              "source")), "WISE", True),
    "ifir": Benchmark(tuple(f"ifir/{s}" for s in ("fiqa", "scifact_open", "nfcorpus", "aila", "fire", "pm", "cds")),
                      "nDCG@20", False, {"k1": 1.2, "b": 0.75}),
    "instructir": Benchmark(("instructir",), "Robustness@10", False),
    "nevir": Benchmark(("nevir",), "PairedAccuracy", True),
    "mair": Benchmark(tuple(f"mair/{t}" for t in ("dd-15", "dd-16", "dd-17", "fr-21", "fr-22")), "nDCG@10", False),
    "bright": Benchmark(tuple(f"bright/{t}" for t in _BRIGHT), "nDCG", False),
    # 2025–26 (datasets/catalog26.py), each scored by its own code's rules: ds.official_evaluate
    "bright-pro": Benchmark(tuple(f"bright-pro/{t}" for t in _catalog26.BRIGHT_PRO), "alpha-nDCG@25", False,
                            official=True),
    "r2med": Benchmark(tuple(f"r2med/{t}" for t in _catalog26.R2MED), "ndcg_at_10", False, official=True),
    "crumb": Benchmark(tuple(f"crumb/{t}" for t in _catalog26.CRUMB_TASKS), "nDCG@10", False, official=True),
    "freshstack": Benchmark(tuple(f"freshstack/{t}" for t in _catalog26.FRESHSTACK), "alpha-nDCG@10", False,
                            official=True),
    "multiconir": Benchmark(tuple(f"multiconir/{d}" for d in _catalog26.MULTICONIR_DOMAINS), "Change Rate", True,
                            official=True),
}
#: named suites: ``instruct`` (the default), ``reasoning``, ``all``
SUITES = {"instruct": ("followir", "mfollowir", "infosearch", "ifir", "instructir", "nevir", "mair"),
          "reasoning": ("bright", "bright-pro", "r2med"),
          "2025-26": ("crumb", "multiconir", "bright-pro", "r2med", "freshstack"), "all": tuple(BENCHMARKS)}
#: the leaderboard's columns after the benchmarks'
SUMMARY = ("mean rank", "mean normalised")


def _selected(benchmarks: Union[str, Sequence[str]]) -> Dict[str, Tuple[str, ...]]:
    """``{benchmark: dataset ids}`` of a suite name, or of benchmark names and dataset ids (a dataset id selects its
    benchmark on that dataset alone)."""
    names = [benchmarks] if isinstance(benchmarks, str) else list(benchmarks)
    out: Dict[str, Tuple[str, ...]] = {}
    for name in names:
        if name in SUITES:
            out.update({b: BENCHMARKS[b].datasets for b in SUITES[name] if b not in out})
        elif name in BENCHMARKS:
            out[name] = BENCHMARKS[name].datasets
        else:
            owner = [b for b, spec in BENCHMARKS.items() if name in spec.datasets]
            if not owner:
                raise ValueError(f"benchmarks: {name!r} is neither a suite ({', '.join(SUITES)}), a benchmark "
                                 f"({', '.join(BENCHMARKS)}) nor one of their dataset ids")
            out[owner[0]] = tuple(d for d in out.get(owner[0], ()) if d != name) + (name,)
    return out


#: a dataset family (``Entry.family``) → its benchmark
FAMILIES = {"bundled": "followir", "followir": "followir", "followir-mteb": "followir", "mfollowir": "mfollowir",
            "infosearch": "infosearch", "ifir": "ifir", "instructir": "instructir",
            "nevir": "nevir", "nevir-mteb": "nevir", "mair": "mair", "bright": "bright", "bright-pro": "bright-pro",
            "r2med": "r2med", "crumb": "crumb", "freshstack": "freshstack", "multiconir": "multiconir"}


def benchmark_of(dataset) -> str:
    """The :data:`BENCHMARKS` name of a loaded dataset (a bundled miniature: the benchmark whose layout it has)."""
    family = dataset.entry.family
    if family not in FAMILIES:
        raise ValueError(f"{getattr(dataset, 'name', dataset)!r} (family {family!r}) belongs to no benchmark of the "
                         f"suite: {', '.join(BENCHMARKS)}")
    return FAMILIES[family]


def _slug(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name).strip("_") or "system"


def _label(dataset_id: str) -> str:
    """A dataset's key in its report, as the paper's column (``mair/dd-15`` → ``dd15``, ``followir/robust04`` →
    ``robust04``), so :func:`~._report.with_paper` finds the published cells."""
    key = dataset_id.split("/", 1)[-1] if "/" in dataset_id else dataset_id
    return key.replace("-", "") if dataset_id.startswith("mair/") else key


def _report(benchmark: str, systems, datasets, judge=None) -> pd.DataFrame:
    """The benchmark's own report of ``systems`` (a :class:`PerDataset` of one system) on ``datasets`` (IFIR with
    INSTFOL@20 when a ``judge`` is given; InfoSearch as its Table 3: WISE and SICR per dimension)."""
    from .followir import followir_report
    from .ifir import ifir_report
    from .inf_ir import inf_ir_report
    from .infosearch import infosearch_report
    from .instructir import instructir_report
    if BENCHMARKS[benchmark].official:  # the benchmark's own scoring of each system's run, its own measure names
        from ._report import build_table
        rows = [(name, key, measure, float(value)) for key, ds in datasets.items()
                for name, system in systems[key].items()
                for measure, value in ds.official_evaluate(system(ds.get_topics())).items()]
        long = pd.DataFrame(rows, columns=["model", "dataset", "measure", "value"])
        main = BENCHMARKS[benchmark].main
        return build_table(long, benchmark, models=list(dict.fromkeys(long["model"])),
                           settings={"scoring": "official_evaluate"}, average={main: main},
                           provenance={k: dict(getattr(d, "provenance", {}) or {}) for k, d in datasets.items()})
    if benchmark in ("followir", "mfollowir"):
        return followir_report(systems, datasets)
    if benchmark == "infosearch":
        return infosearch_report(systems, datasets, table=3)
    if benchmark == "ifir":
        return ifir_report(systems, datasets, judge=judge)
    if benchmark == "instructir":
        (key, ds), = datasets.items()
        return instructir_report(systems[key], ds)
    if benchmark in ("mair", "bright"):
        return inf_ir_report(systems, datasets)
    if benchmark == "nevir":  # pipelines/nevir.py: pt.Experiment with PairedAccuracy
        from ..measures import PairedAccuracy
        from ._report import build_table, experiment_means, system_names
        long = []
        for key, ds in datasets.items():
            found, names = system_names(systems[key], None)
            long.append(experiment_means(found, names, ds.get_topics(), ds.get_qrels(), [PairedAccuracy], key,
                                         {str(PairedAccuracy): "PairedAccuracy"}))
        long = pd.concat(long, ignore_index=True)
        return build_table(long, "nevir", models=list(dict.fromkeys(long["model"])), settings={"ties": "strict"},
                           provenance={k: dict(getattr(d, "provenance", {}) or {}) for k, d in datasets.items()},
                           average={"PairedAccuracy": "PairedAccuracy"})
    raise ValueError(f"no report for benchmark {benchmark!r}")


def main_value(table: pd.DataFrame, measure: str, model: str, paper: bool = False) -> float:
    """The leaderboard cell of ``model`` in a benchmark report: its column of ``measure`` averaged over the datasets
    (``Avg …``) where the report has one, else its one dataset's column, else the mean of the datasets' columns; with
    ``paper``, the same cell of its published row (:func:`~._report.with_paper` puts it right below; NaN: none)."""
    cols = _main_columns(table, measure)
    rows = [i for i, m in enumerate(table["Model"]) if m in (model, stand_in_label(model))]  # stand-in data: labelled
    if not rows:
        raise ValueError(f"the report has no row {model!r}; it has {list(table['Model'])}")
    if paper and model not in table.attrs.get("paper_rows", {}):
        return float("nan")
    row = table.iloc[rows[0] + paper]
    return round(float(row[cols].to_numpy(dtype=float).mean()), table.attrs.get("decimals", 1)) + 0.0


def _main_columns(table: pd.DataFrame, measure: str) -> list:
    """The report's columns :func:`main_value` averages."""
    columns = table.attrs["columns"]
    cols = [c for c, (d, m) in columns.items() if m == measure and d == "average"]
    cols = cols or [c for c, (d, m) in columns.items() if m == measure]
    if not cols:
        raise ValueError(f"the report has no {measure} column; it has {list(columns)}")
    return cols


def _secondary(benchmark: str, table: pd.DataFrame, measure: str, model: str) -> Dict[str, float]:
    """``{"<benchmark>:<column>": cell}``: the row's every other column of the report (the per-level ones stay in the
    report); where the main score is the mean of several columns (MAIR), those columns too."""
    main = _main_columns(table, measure)
    row = table[table["Model"].isin([model, stand_in_label(model)])].iloc[0]
    return {f"{benchmark}:{c}": float(row[c]) for c in table.attrs["columns"]
            if (len(main) > 1 or c not in main) and "/level" not in c}


def _query_measure(benchmark: str):
    """The benchmark's main measure per query as its report computes it (``None``: its scoring gives means only)."""
    import ir_measures

    from ..measures import WISE, IFIR_nDCG, PairedAccuracy, Robustness, pMRR
    return {"followir": pMRR(ties="docno"), "mfollowir": pMRR(ties="docno"), "infosearch": WISE(ties="input"),
            "ifir": IFIR_nDCG(norm="ifir_code", ties="docno") @ 20, "instructir": Robustness @ 10,
            "nevir": PairedAccuracy, "mair": ir_measures.nDCG @ 10, "bright": ir_measures.nDCG @ 10}.get(benchmark)


def _per_query(benchmark: str, name: str, stages: Mapping, datasets: Mapping) -> Optional[pd.DataFrame]:
    """``system, benchmark, dataset, qid, measure, value``: the main measure of ``name``'s saved runs per query (its own
    scale, 0–1), on the topics its report scores (IFIR: levels 1–3; BRIGHT: ``excluded_ids`` removed); ``None``
    for a benchmark scored by ``ds.official_evaluate`` (means only)."""
    import warnings

    import pyterrier as pt

    from .ifir import _level
    measure = _query_measure(benchmark)
    if measure is None or BENCHMARKS[benchmark].official:
        return None
    frames = []
    for key, ds in datasets.items():
        topics, qrels, stage = ds.get_topics(), ds.get_qrels(), stages[key][name]
        if benchmark == "ifir":
            topics, qrels = topics[_level(topics["qid"]) != "0"], qrels[_level(qrels["qid"]) != "0"]
        if benchmark == "bright":
            stage = stage >> ds.exclude()
        with warnings.catch_warnings():  # paired measures have values on the -og qids only
            warnings.filterwarnings("ignore", message=r".*topic\(s\) not found in qrels.*")
            res = pt.Experiment([stage], topics, qrels, [measure], perquery=True, verbose=False)
        frames.append(res.dropna(subset=["value"]).assign(dataset=key)[["dataset", "qid", "value"]])
    label = "nDCG@10" if benchmark == "bright" else BENCHMARKS[benchmark].main
    return pd.concat(frames, ignore_index=True).assign(system=name, benchmark=benchmark, measure=label)[
        ["system", "benchmark", "dataset", "qid", "measure", "value"]]


def _normalised(board: pd.DataFrame, benchmarks: Sequence[str]) -> pd.DataFrame:
    """Adds ``mean rank`` (1 = best per benchmark, ties share the mean rank) and ``mean normalised`` (each benchmark
    min–max scaled over the systems, best 1, worst 0, all equal 1), each over the benchmarks the system has a score
    on."""
    scores = board[list(benchmarks)].astype(float)
    ranks = scores.rank(ascending=False, method="average")
    scaled = _scaled(scores)
    return board.assign(**{"mean rank": ranks.mean(axis=1).round(2), "mean normalised": scaled.mean(axis=1).round(3)})


def _scaled(scores: pd.DataFrame) -> pd.DataFrame:
    """Each column min–max scaled over the rows (best 1, worst 0; a column of equal scores: 1), NaN kept."""
    low, high = scores.min(), scores.max()
    scaled = (scores - low) / (high - low).where(high > low)
    scaled.loc[:, ~(high > low)] = 1.0
    return scaled.where(scores.notna())


def suite(systems: Mapping[str, object], benchmarks: Union[str, Sequence[str]] = "instruct", *, out: str = "suite",
          depth: int = 100, baseline: Optional[str] = "BM25", standins: Optional[bool] = None,
          published: Optional[Mapping[str, Union[str, Mapping[str, str]]]] = None, judge=None,
          prices: Optional[Mapping] = None, paths: Optional[Mapping[str, str]] = None,
          verbose: bool = True) -> pd.DataFrame:
    """Every system on every benchmark of ``benchmarks``, one leaderboard.

    Args:
        systems: ``{name: transformer}``: rerankers (``R → R``, reading ``query``, ``instruction``, ``text``), each
            run on every benchmark's shared first stage (module docstring: one BM25 run per dataset for all systems).
        benchmarks: a suite of :data:`SUITES` (``instruct``, ``reasoning``, ``all``), or benchmark names of
            :data:`BENCHMARKS` and dataset ids (``followir/robust04`` runs FollowIR on Robust04 alone).
        out: the folder of the leaderboard (``leaderboard.csv``/``.md``/``.json``, ``leaderboard.png`` with matplotlib),
            the benchmark reports (``<benchmark>.csv``/``.md``), ``secondary.csv``/``.md``, ``perquery.csv``,
            ``cost.csv``, the saved runs (``runs/``) and BM25 indexes (``index/``); a second call reuses every run.
        depth: the BM25 candidates each system reranks on a benchmark that is not pooled.
        baseline: the name of a row holding the first stage alone (pool BM25 / BM25); None: none.
        standins: ``True``: label every row and file stand-in; ``None`` (default) or ``False``: a row is labelled
            stand-in when a dataset read carries the stand-in marker (``_report.stand_in_data``) or its system loads
            stand-in weights (``_report.loads_stand_in``): stand-in numbers are never printed as real.
        published: ``{system: the model as the paper prints it}`` (or ``{system: {benchmark: model}}``, where papers
            name it differently): on real data only, each benchmark's report gets ``paper``/``Δ`` rows below the system
            (:func:`~._report.with_paper`; an average the paper takes over datasets not run is left out) and
            ``leaderboard.md`` a ``paper`` row with the published main scores (``attrs["published"]``).
        judge: an :class:`~.judge.IFIRJudge`: IFIR adds INSTFOL@20 (column ``ifir INSTFOL@20``; its calls go through
            the judge's call store, so ``cost.csv`` counts them in the system's ``ifir`` row).
        prices: a price table for the ``usd`` cost column (:func:`~pyterrier_instruct.measures.cost.dollars`).
        paths: ``{dataset id: local folder}`` for datasets not found where ``pti.load_dataset`` looks.
        verbose: a progress bar across benchmarks and the systems' own bars.

    Returns:
        The leaderboard: ``system``, one column per benchmark (its main score as its report prints it; NaN where it
        has none; ``ifir INSTFOL@20`` after ``ifir`` with a judge), ``mean rank``, ``mean normalised`` (over the
        benchmarks' main scores), ``data`` (``stand-in`` or ``real``), ``notes`` (why a cell is missing). ``attrs``:
        ``tables`` (each benchmark's report), ``secondary`` (system × ``<benchmark>:<report column>``: the reports'
        other cells), ``perquery`` (``system, benchmark, dataset, qid, measure, value``: the main measure per query,
        0–1; none for the benchmarks scored by ``ds.official_evaluate``), ``published`` (``system, benchmark, model,
        paper, value``), ``cost`` (per system and benchmark: runs computed or reused, seconds, queries, queries/s,
        calls, new calls, tokens, dollars, ``stats``: the change in the system's ``stats`` counters (generations without
        a verdict are also named in ``notes``); :mod:`pyterrier_instruct.measures.cost`), ``status`` (per benchmark:
        the datasets read, those absent and why, each system's saved-run folders).
    """
    from ..datasets import load
    from ._report import PerDataset, loads_stand_in, stand_in_data, to_markdown
    selected = _selected(benchmarks)
    names = ([baseline] if baseline is not None else []) + [str(n) for n in systems]
    if len(set(names)) != len(names):
        raise ValueError(f"suite: system names must be distinct (and not the baseline {baseline!r}): {names}")
    published = _checked_published(published, names)
    weights = {n: n in systems and loads_stand_in(systems[n]) for n in names}  # stand-in weights, by their marker
    cells: Dict[str, Dict[str, float]] = {n: {} for n in names}
    notes: Dict[str, list] = {n: [] for n in names}
    secondary: Dict[str, Dict[str, float]] = {n: {} for n in names}
    tables, status, cost, earlier, perquery, paper, stand_ins = {}, {}, [], _earlier_cost(out), [], [], []
    bar = tqdm(list(selected), desc="suite", unit="benchmark", disable=not verbose)
    for benchmark in bar:
        bar.set_postfix_str(benchmark)
        spec = BENCHMARKS[benchmark]
        datasets, absent = {}, []
        for dataset_id in selected[benchmark]:
            try:
                ds = load(dataset_id, path=(paths or {}).get(dataset_id))
                ds.get_topics()  # located and read now: absent or unreadable data is this benchmark's note
                datasets[_label(dataset_id)] = ds
            except Exception as err:  # noqa: BLE001 - an absent dataset is reported in its row, the rest goes on
                absent.append(f"{dataset_id}: {' '.join(str(err).split())[:200]}")
        status[benchmark] = {"datasets": list(datasets), "absent": absent}
        stand_ins += stand_in_data(datasets)
        if not datasets:
            for n in names:
                notes[n].append(f"{benchmark}: no data")
            continue
        pipelines = _pipelines(spec, datasets, systems, baseline, out, depth, verbose)
        status[benchmark]["runs"] = {n: [p[n].directory for p in pipelines.values() if hasattr(p[n], "directory")]
                                     for n in names}  # the per-query results: each system's saved runs
        frames, queries = [], sum(len(ds.get_topics()) for ds in datasets.values())
        for name in names:
            per = PerDataset({key: {name: pipelines[key][name]} for key in datasets})
            before, start, counted = _saved_files(per), time.perf_counter(), _counters(systems.get(name))
            with metered() as meter:
                try:
                    refused = [s for p in per.values() for s in p.values() if isinstance(s, Exception)]
                    if refused:
                        raise refused[0]
                    table = _report(benchmark, per, datasets, judge)
                except Exception as err:  # noqa: BLE001 - a failing system is a row saying why; the others go on
                    notes[name].append(f"{benchmark}: failed: {type(err).__name__}: {' '.join(str(err).split())[:200]}")
                    continue
            cells[name][benchmark] = main_value(table, spec.main, name)
            if judge is not None and benchmark == "ifir":
                cells[name][INSTFOL] = main_value(table, "INSTFOL@20", name)
            secondary[name].update(_secondary(benchmark, table, spec.main, name))
            frames.append(table)
            cost.append(_cost_row(name, benchmark, time.perf_counter() - start, queries, _saved_files(per) - before,
                                  earlier.get((name, benchmark)), meter.usage(), prices))
            counts = {k: v - counted.get(k, 0) for k, v in _counters(systems.get(name)).items()
                      if v > counted.get(k, 0)}
            cost[-1]["stats"] = json.dumps(counts, sort_keys=True) if counts else ""
            unscored = {k: counts[k] for k in NO_VERDICT if counts.get(k)}
            if unscored:  # never silently a score: the generations without a verdict of their own, named in the row
                notes[name].append(f"{benchmark}: " + ", ".join(f"{v} {NO_VERDICT[k]}" for k, v in unscored.items()))
            perquery.append(_per_query(benchmark, name, pipelines, datasets))
        if absent:
            for n in names:
                notes[n].append(f"{benchmark}: {len(datasets)}/{len(selected[benchmark])} datasets")
        if frames:  # one report per system: one table, the systems' raw means together in attrs["long"]
            attrs = dict(frames[0].attrs, long=pd.concat([f.attrs["long"] for f in frames], ignore_index=True))
            table = pd.concat([pd.DataFrame(f.to_dict("list")) for f in frames], ignore_index=True)
            table.attrs.update(attrs)
            real = {n: m for n, m in published.items() if not (standins or weights[n] or stand_in_data(datasets))}
            whole = set(datasets) == {_label(d) for d in spec.datasets}
            tables[benchmark] = _beside_published(table, benchmark, real, whole, paper)
    bar.close()
    labelled = {n: bool(standins or stand_ins or weights[n]) for n in names}
    board = pd.DataFrame({"system": names})
    for benchmark in selected:
        board[benchmark] = [cells[n].get(benchmark, float("nan")) for n in names]
        if benchmark == "ifir" and judge is not None:
            board[INSTFOL] = [cells[n].get(INSTFOL, float("nan")) for n in names]
    board = _normalised(board, list(selected))
    board["data"] = ["stand-in" if labelled[n] else "real" for n in names]
    board["notes"] = ["; ".join(notes[n]) for n in names]
    found = [f for f in perquery if f is not None]
    board.attrs.update(
        tables=tables, status=status, cost=pd.DataFrame(cost, columns=None if cost else COST_KEYS),
        measures={b: BENCHMARKS[b].main for b in selected},
        data="stand-in" if any(labelled.values()) else "real", stand_in_data=bool(standins or stand_ins),
        secondary=pd.DataFrame([{"system": n, **secondary[n]} for n in names]),
        perquery=pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=PERQUERY),
        published=pd.DataFrame(paper, columns=["system", "benchmark", "model", "paper", "value"]))
    _write(board, out, to_markdown)
    return board


#: the leaderboard column of IFIR's INSTFOL@20 (``judge=``), beside ``ifir`` (not in the mean rank)
INSTFOL = "ifir INSTFOL@20"
#: the columns of ``perquery.csv``
PERQUERY = ["system", "benchmark", "dataset", "qid", "measure", "value"]


def _checked_published(published, names) -> Dict[str, Union[str, Mapping[str, str]]]:
    """``published`` checked now: its systems are rows, its models ones the papers print (the message lists them)."""
    from ..paper import paper_numbers
    published = dict(published or {})
    unknown = [s for s in published if s not in names]
    if unknown:
        raise ValueError(f"suite: published= names {unknown}, which are not systems of this suite: {names}")
    models = {m for v in published.values() for m in (v.values() if isinstance(v, Mapping) else [v])}
    paper_numbers(model=sorted(models))  # an unknown name: a ValueError listing the models the papers print
    return published


def _beside_published(table: pd.DataFrame, benchmark: str, models: Mapping, whole: bool, found: list) -> pd.DataFrame:
    """The report with the published numbers of ``models`` (``{system: model}``) below their rows; where the run holds
    only some of the benchmark's datasets (not ``whole``), the paper's averages are left out (they average others).
    Appends ``(system, benchmark, model, paper, published main score)`` to ``found``."""
    from ..paper import paper_numbers
    from ._report import with_paper
    of = table.attrs["benchmark"]
    models = {s: m.get(benchmark) if isinstance(m, Mapping) else m for s, m in models.items()}
    models = {s: m for s, m in models.items() if m and s in set(table["Model"])}
    if not models or not set([of] if isinstance(of, str) else of) & set(paper_numbers()["benchmark"]):
        return table
    table = with_paper(table, models, strict=False)
    if not whole:
        average = [c for c, (d, _) in table.attrs["columns"].items() if d == "average"]
        table.loc[table["Model"].str.startswith(("  paper:", "  Δ")), average] = float("nan")
    for system, model in table.attrs["paper_rows"].items():
        at = list(table["Model"]).index(system) + 1
        source = str(table["Model"].iloc[at]).rsplit(" (", 1)[-1].rstrip(")")
        value = main_value(table, BENCHMARKS[benchmark].main, system, paper=True)
        if value == value:  # NaN: the published main cell is an average over datasets this run lacks
            found.append((system, benchmark, model, source, value))
    return table


#: a reranker's ``stats`` counters that count generations without a verdict of their own (Rank1: no answer within
#: the reasoning budget, its verdict forced after closing the reasoning; Rank-R1: no parsable answer; listwise: a
#: permutation repaired), and how the leaderboard's notes name them
NO_VERDICT = {"forced": "generations without a verdict within the budget (verdict forced)",
              "invalid": "generations without a parsable answer", "repaired": "windows whose permutation was repaired",
              "unfinished": "windows whose reasoning never closed within the budget"}


def _counters(system) -> Dict[str, int]:
    """The integer counters of ``system.stats`` (a reranker's lifetime counts), or ``{}``."""
    stats = getattr(system, "stats", None)
    items = stats.items() if isinstance(stats, Mapping) else ()
    return {str(k): int(v) for k, v in items if isinstance(v, int) and not isinstance(v, bool)}


def _saved_files(per) -> set:
    """The saved runs (parquet files) now in the folders of the :class:`~.runs.SavedRun` stages of ``per``."""
    folders = {s.directory for p in per.values() for s in p.values() if hasattr(s, "directory")}
    return {os.path.join(d, f) for d in folders if os.path.isdir(d) for f in os.listdir(d) if f.endswith(".parquet")}


def _earlier_cost(out: str) -> Dict[Tuple[str, str], dict]:
    """``{(system, benchmark): row}`` of the ``cost.csv`` an earlier call wrote to ``out`` (none: ``{}``)."""
    path = os.path.join(out, "cost.csv")
    if not os.path.isfile(path):
        return {}
    rows = pd.read_csv(path, dtype={"system": str, "benchmark": str}).to_dict(orient="records")
    return {(r["system"], r["benchmark"]): r for r in rows}


#: the first columns of ``cost.csv`` (an empty table keeps them: every system failed)
COST_KEYS = ["system", "benchmark", "runs", "seconds", "queries", "queries/s"]


def _cost_row(name, benchmark, seconds, queries, computed, earlier, usage, prices) -> dict:
    """A ``cost.csv`` row: when every run was read back (nothing ``computed``), what an earlier call to the same ``out``
    measured (its row in ``earlier``: seconds, calls, tokens; ``new_calls`` 0) and ``runs`` = ``reused``; else the
    seconds measured now and the calls and tokens of the call store (a rerun answered from the store: the original
    calls, ``new_calls`` 0)."""
    columns = usage_columns(usage, prices)
    if not computed and earlier is not None:
        seconds = float(earlier["seconds"])
        columns.update({k: earlier[k] for k in columns if k not in ("new_calls", "usd") and k in earlier})
        if prices is not None:
            columns["usd"] = round(dollars(columns, prices), 6)
    return {"system": name, "benchmark": benchmark, "runs": "computed" if computed else "reused",
            "seconds": round(seconds, 3), "queries": queries,
            "queries/s": round(queries / seconds, 2) if seconds > 0 else float("nan"), **columns}


def _pipelines(spec: Benchmark, datasets, systems, baseline, out, depth, verbose) -> Dict[str, Dict[str, object]]:
    """``{dataset key: {row: saved pipeline}}``: the shared first stage, then each system (module docstring)."""
    from ..retrieval import BM25, PoolBM25
    from ..rewrite import FoldInstruction
    from .runs import SavedRun
    found: Dict[str, Dict[str, object]] = {}
    for key, ds in datasets.items():
        runs = os.path.join(out, "runs", _slug(key))
        if spec.pooled:
            rows = {baseline: SavedRun(ds.candidates() >> PoolBM25(verbose=verbose), os.path.join(runs, "first-stage"),
                                       verbose=verbose)}
            stages = {name: ds.candidates() >> system for name, system in systems.items()}
        else:
            bm25 = FoldInstruction() >> BM25(ds.get_corpus_iter(verbose=verbose), path=os.path.join(out, "index",
                                             _slug(key), "bm25"), verbose=verbose, **spec.bm25)
            shared = SavedRun(bm25, os.path.join(runs, "first-stage"), verbose=verbose)
            rows = {baseline: shared}
            stages = {name: shared % depth >> ds.text_loader() >> system for name, system in systems.items()}
        found[key] = {baseline: rows[baseline]} if baseline is not None else {}
        for name, stage in stages.items():
            try:
                found[key][name] = SavedRun(stage, os.path.join(runs, _slug(name)), verbose=verbose)
            except TypeError as err:  # NotFingerprintable: its row says so, the others go on
                found[key][name] = err
    return found


def _write(board: pd.DataFrame, out: str, to_markdown: Callable) -> None:
    """``leaderboard.csv``/``.md``/``.json`` (+ ``leaderboard.png`` when matplotlib is installed), each benchmark's
    report (``<benchmark>.csv``/``.md``), ``secondary.csv``/``.md``, ``perquery.csv`` and ``cost.csv``, each replaced
    whole; every row of every file says ``stand-in`` or ``real`` (``data``)."""
    os.makedirs(out, exist_ok=True)
    data, kind = board.attrs["data"], "stand-in" if board.attrs["stand_in_data"] else "real"
    label = ("Data: stand-in miniatures (pyterrier_instruct.testing), not the benchmarks: the numbers test the "
             "pipeline, not the systems." if kind == "stand-in" else "Data: the benchmarks' released files."
             + (" Rows whose data column says stand-in load stand-in weights (pyterrier_instruct.testing): their "
                "numbers mean nothing." if data == "stand-in" else ""))
    of = dict(zip(board["system"], board["data"]))
    write_text(os.path.join(out, "leaderboard.csv"), board.to_csv(index=False))
    measures = ", ".join(f"{b}: {m}" for b, m in board.attrs["measures"].items())
    published = board.attrs["published"]
    md = []
    for row in board.itertuples(index=False):
        md.append(list(row))
        mine = published[published["system"] == row.system]
        if len(mine):  # the published main scores right below the system, in its benchmarks' columns
            value = dict(zip(mine["benchmark"], mine["value"]))
            md.append([f"  paper: {' / '.join(dict.fromkeys(mine['model']))}"]
                      + [value.get(c, float("nan")) for c in board.columns[1:]])
    sources = "; ".join(f"{r.system} on {r.benchmark}: {r.model} ({r.paper})" for r in published.itertuples())
    write_text(os.path.join(out, "leaderboard.md"), _markdown(board.columns, md)
               + f"\n\nMain measures: {measures}.\n{label}\n"
               + (f"Published main scores (paper rows; real data only): {sources}.\n" if sources else ""))
    cost = board.attrs["cost"]
    write_text(os.path.join(out, "cost.csv"), cost.assign(data=cost["system"].map(of)).to_csv(index=False))
    for benchmark, table in board.attrs["tables"].items():
        rows = [of.get(m, "stand-in" if is_stand_in_row(m) or board.attrs["stand_in_data"] else "real")
                for m in table["Model"]]  # paper and Δ rows: published numbers, on real data only
        write_text(os.path.join(out, f"{benchmark}.csv"), table.assign(data=rows).to_csv(index=False))
        write_text(os.path.join(out, f"{benchmark}.md"), f"{benchmark} ({kind} data)\n\n{to_markdown(table)}\n")
    secondary, perquery = board.attrs["secondary"], board.attrs["perquery"]
    write_text(os.path.join(out, "secondary.csv"), secondary.assign(data=board["data"].tolist()).to_csv(index=False))
    wide = secondary.set_index("system").T  # a row per measure: the systems side by side
    write_text(os.path.join(out, "secondary.md"), f"Secondary measures ({kind} data), as each benchmark's report "
               f"prints them\n\n{_markdown(['measure', *wide.columns], wide.reset_index().to_numpy())}\n\n{label}\n")
    write_text(os.path.join(out, "perquery.csv"), perquery.assign(data=perquery["system"].map(of)).to_csv(index=False))
    write_json(os.path.join(out, "leaderboard.json"), {
        "data": data, "note": label, "measures": board.attrs["measures"], "status": board.attrs["status"],
        "leaderboard": _records(board), "cost": _records(cost), "published": _records(published)}, indent=2)
    from .._optional import is_available
    if is_available("matplotlib"):
        heatmap(board, os.path.join(out, "leaderboard.png"))


def _markdown(columns, rows) -> str:
    """A markdown table (NaN: ``–``)."""
    lines = [list(map(str, columns)), ["---"] * len(columns)]
    lines += [["–" if isinstance(v, float) and v != v else str(v) for v in row] for row in rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def _records(frame: pd.DataFrame) -> list:
    return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")


def heatmap(board: pd.DataFrame, path: Optional[str] = None):
    """The leaderboard as a heatmap: systems × benchmarks, coloured by the normalised score, annotated with the score;
    saved to ``path`` when given; returns the (closed) figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    benchmarks = list(board.attrs["measures"])
    scores = board[benchmarks].astype(float)
    scaled = _scaled(scores)
    fig, ax = plt.subplots(figsize=(1.3 * len(benchmarks) + 3, 0.5 * len(board) + 1.5))
    ax.imshow(np.ma.masked_invalid(scaled.to_numpy(dtype=float)), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for i in range(len(board)):
        for j, b in enumerate(benchmarks):
            value = scores.iloc[i][b]
            ax.text(j, i, "–" if value != value else f"{value:g}", ha="center", va="center", fontsize="small",
                    color="white" if (scaled.iloc[i][b] or 0) < 0.5 else "black")
    ax.set_xticks(range(len(benchmarks)), [f"{b}\n{board.attrs['measures'][b]}" for b in benchmarks], fontsize="small")
    ax.set_yticks(range(len(board)), list(board["system"]))
    ax.set_title(f"pyterrier-instruct suite ({board.attrs['data']} data)")
    return finish_figure(fig, path, dpi=110)
