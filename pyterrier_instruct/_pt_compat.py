"""``pt.Experiment`` with paired measures beside standard ones: a version-guarded compatibility layer for PyTerrier.

PyTerrier averages per-query values over every qid and takes the measure list from the first qid, so a paired measure
(one value per base query) beside ``AP@1000`` raises ``KeyError``. Only while an experiment uses a
:class:`~pyterrier_instruct.measures.PairedMeasure`, this layer means each measure over the qids that have it, pairs
significance tests per measure, refuses a ``batch_size`` that splits a query's variants and keeps saved runs' records
(docs/measures.md). Other experiments run PyTerrier's code untouched (tests/test_pt_inert.py). Active on the
:data:`TESTED` versions (:data:`STATUS`); elsewhere ``pt.Experiment`` only refuses a mixed list before any system runs.
``docs/upstream/pyterrier-mean-of-measures.patch`` is the same change as a patch to PyTerrier 1.1.2.
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import inspect
import math
import os
import re
import sys
import types
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ._experiment_context import _ACTIVE, _Paired, warn_user

#: The PyTerrier versions (inclusive range) whose evaluation code this layer was tested against.
TESTED = ("1.1.0", "1.1.2")
#: ``"active"`` once installed; otherwise why not (``"waiting for pyterrier"``, an untested version, …).
STATUS = "not installed"

_TARGET = "pyterrier._evaluation"
_ORIGINALS: Dict[Tuple[str, str], object] = {}  # (module, attribute) -> PyTerrier's own



def _version_tuple(version: str) -> Tuple[int, ...]:
    """``"1.1.2"`` → ``(1, 1, 2)``; the leading digits of each part (``"1.2.0rc1"`` → ``(1, 2, 0)``)."""
    parts = [int(m.group()) if (m := re.match(r"\d+", piece)) else 0 for piece in version.split(".")[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def install() -> str:
    """Installs the layer now if PyTerrier's evaluation code is loaded, else once it is; returns :data:`STATUS`."""
    global STATUS
    if STATUS == "active":
        return STATUS
    if _TARGET in sys.modules:
        return _patch()
    if not any(isinstance(f, _InstallOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _InstallOnImport())
    STATUS = "waiting for pyterrier"
    return STATUS


def uninstall() -> None:
    """Restores PyTerrier's functions (for tests and comparisons)."""
    global STATUS
    for f in [f for f in sys.meta_path if isinstance(f, _InstallOnImport)]:
        sys.meta_path.remove(f)
    for (module, name), original in _ORIGINALS.items():
        _set(sys.modules[module], name, original)
    _ORIGINALS.clear()
    STATUS = "uninstalled"


class _InstallOnImport(importlib.abc.MetaPathFinder):
    """Finds ``pyterrier._evaluation`` with the other finders and installs the layer right after it executes."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        sys.meta_path.remove(self)  # one shot, and not asked again by the lookup below
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenPatch(spec.loader)
        return spec


class _ThenPatch(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        global STATUS
        self.loader.exec_module(module)
        try:
            _patch()
        except Exception as err:  # never break `import pyterrier`: the layer stays off
            STATUS = f"inactive: installing failed ({type(err).__name__}: {err})"

    def __getattr__(self, name):
        return getattr(self.loader, name)


def _patch() -> str:
    global STATUS
    pyterrier = sys.modules["pyterrier"]
    version = getattr(pyterrier, "__version__", "unknown")
    low, high = (_version_tuple(v) for v in TESTED)
    if not low <= _version_tuple(version) <= high:
        _install_guard(version)
        STATUS = (f"inactive: pyterrier {version} is outside the tested range {TESTED[0]}–{TESTED[1]}; "
                  "pt.Experiment needs measures with different qid sets in separate calls")
        return STATUS
    rendering = sys.modules[f"{_TARGET}._rendering"]
    execution = sys.modules[f"{_TARGET}._execution"]
    tree = sys.modules[f"{_TARGET}._exec_tree"]
    experiment = sys.modules[f"{_TARGET}._experiment"]
    evaluation = sys.modules[_TARGET]
    patched = [(experiment, "Experiment"), (evaluation, "Experiment"), (execution, "_ir_measures_to_dict"),
               (tree, "_ir_measures_to_dict"), (rendering, "RenderFromPerQuery.averages")]
    used = [(rendering, "_mean_of_measures"), (rendering, "_convert_measures"), (rendering, "_color_cols"),
            (rendering, "_bold_cols"), (sys.modules["pyterrier.model"], "split_df"), (experiment, "_validate"),
            (experiment, "linear_execution"), (experiment, "tree_execution")]
    missing = [f"{m.__name__}.{n}" for m, n in patched + used if not _has(m, n)]
    if missing:
        STATUS = f"inactive: pyterrier {version} lacks {missing}"
        return STATUS
    original_experiment = experiment.Experiment
    if getattr(pyterrier, "Experiment", original_experiment) is original_experiment:
        patched.append((pyterrier, "Experiment"))  # absent while pyterrier imports: it then binds the new one
    wrapped = {"Experiment": _experiment(original_experiment),
               "_ir_measures_to_dict": _to_dict(execution._ir_measures_to_dict),
               "RenderFromPerQuery.averages": _averages(rendering.RenderFromPerQuery.averages)}
    _replace(patched, wrapped, original_experiment)
    STATUS = "active"
    return STATUS


def _replace(patched, wrapped, original_experiment) -> None:
    for module, name in patched:
        current = getattr(module, name, original_experiment) if name == "Experiment" else _get(module, name)
        if name == "Experiment" and current is not original_experiment:
            continue  # rebound by someone else: leave it
        _ORIGINALS[(module.__name__, name)] = current
        _set(module, name, wrapped[name])


def _install_guard(version: str) -> None:
    """On an untested PyTerrier: ``pt.Experiment`` refuses a list mixing this package's measures with standard ones."""
    evaluation = sys.modules[_TARGET]
    original = getattr(evaluation, "Experiment", None)
    if original is None:
        return
    pyterrier = sys.modules["pyterrier"]
    patched = [(evaluation, "Experiment")]
    if getattr(pyterrier, "Experiment", original) is original:
        patched.append((pyterrier, "Experiment"))
    experiment = sys.modules.get(f"{_TARGET}._experiment")
    if experiment is not None and getattr(experiment, "Experiment", None) is original:
        patched.append((experiment, "Experiment"))
    _replace(patched, {"Experiment": _guarded(original, version)}, original)


def _guarded(original, version: str):
    signature = inspect.signature(original)

    @functools.wraps(original)
    def Experiment(*args, **kwargs):
        try:
            metrics = signature.bind(*args, **kwargs).arguments.get("eval_metrics")
        except TypeError:
            metrics = None
        ours, others = _split_measures(metrics)
        if ours and others:
            raise RuntimeError(
                f"pt.Experiment with pyterrier_instruct's measures ({', '.join(ours)}) beside standard ones "
                f"({', '.join(others)}) needs pyterrier_instruct's pt.Experiment layer, which was tested on PyTerrier "
                f"{TESTED[0]}–{TESTED[1]} and is off on PyTerrier {version}: PyTerrier alone would run every system "
                "and then fail (its means assume every query has every measure). Evaluate the package's measures and "
                "the standard ones in separate pt.Experiment calls, or install a tested PyTerrier (pip install "
                f"'pyterrier>={TESTED[0]},<={TESTED[1]}').")
        return original(*args, **kwargs)

    return Experiment


def _has(module, name) -> bool:
    return functools.reduce(lambda obj, part: getattr(obj, part, None), name.split("."), module) is not None


def _get(module, name):
    return functools.reduce(getattr, name.split("."), module)


def _set(module, name, value) -> None:
    *path, attr = name.split(".")
    setattr(functools.reduce(getattr, path, module), attr, value)


def _is_package_measure(m) -> bool:
    """A measure of this package (a :class:`~pyterrier_instruct.measures.PairedMeasure`), as an object or a name that
    PyTerrier's trec_eval-style parser does not read and ``ir_measures.parse_measure`` reads as one (``"pMRR"``,
    ``"OG(AP@1000)"``)."""
    from .measures import PairedMeasure
    if isinstance(m, PairedMeasure):
        return True
    if not isinstance(m, str) or m == "mrt":
        return False
    import ir_measures
    try:
        ir_measures.parse_trec_measure(m)
        return False
    except ValueError:
        pass
    try:
        return isinstance(_parse_name(m), PairedMeasure)
    except Exception:  # noqa: BLE001 - not a name of ours: PyTerrier reports it
        return False


def _split_measures(eval_metrics) -> Tuple[List[str], List[str]]:
    """(the package's measures, the others) in ``eval_metrics`` as text; both empty for anything but a list or tuple
    (PyTerrier's to judge; a generator is not consumed)."""
    ours: List[str] = []
    others: List[str] = []
    if not isinstance(eval_metrics, (list, tuple)):
        return ours, others
    for m in eval_metrics:
        if not (isinstance(m, str) and m == "mrt"):
            (ours if _is_package_measure(m) else others).append(str(m))
    return ours, others


def _paired_names(eval_metrics) -> Optional[tuple]:
    """(measures, their column names in the given order) when ``eval_metrics`` holds a paired measure, else None."""
    from .measures import PairedMeasure
    rendering = sys.modules[f"{_TARGET}._rendering"]
    try:
        metrics = [m for m in eval_metrics if not (isinstance(m, str) and m == "mrt")]
        measures, rev_mapping = rendering._convert_measures(metrics)
    except Exception:  # PyTerrier reports it
        return None
    if not any(isinstance(m, PairedMeasure) for m in measures):
        return None
    return measures, [rev_mapping.get(m, str(m)) for m in measures]


def _parse_name(name: str):
    """``ir_measures.parse_measure``, plus this package's variant wrappers written as they print: ``OG(AP@1000)``."""
    import ir_measures
    wrapped = re.fullmatch(r"(OG|Changed|Reversed)\((.+)\)", name.strip())
    if wrapped:
        from . import measures
        return getattr(measures, wrapped.group(1))(wrapped.group(2))
    return ir_measures.parse_measure(name)


def by_name(eval_metrics):
    """``eval_metrics`` with each name PyTerrier's trec_eval-style parser cannot read (``"pMRR"``, ``"nDCG@10"``,
    ``"OG(AP@1000)"``) replaced by the measure ``ir_measures.parse_measure`` (or the variant wrapper) reads from it
    (this package's measures are registered there); names PyTerrier reads (``"map"``, ``"ndcg_cut_10"``, ``"mrt"``) are
    left to it. A name neither reads is a ``ValueError`` naming it and both syntaxes."""
    if isinstance(eval_metrics, (str, bytes)) or not hasattr(eval_metrics, "__iter__"):
        return eval_metrics
    import ir_measures
    out = []
    for m in eval_metrics:
        if isinstance(m, str) and m != "mrt":
            try:
                ir_measures.parse_trec_measure(m)
            except ValueError:
                try:
                    m = _parse_name(m)
                except (ValueError, NameError, SyntaxError, TypeError) as err:
                    raise ValueError(_unknown_measure(m, _did_you_mean(m)[0], err)) from None
        out.append(m)
    return out


def _unknown_measure(name: str, meant: Optional[str], err=None) -> str:
    return (f"unknown measure {name!r}: neither an ir_measures name ('nDCG@10', 'AP@1000', 'pMRR', 'OG(AP@1000)') nor "
            f"a trec_eval name ('map', 'ndcg_cut_10'){f'; did you mean {meant!r}?' if meant else ''}"
            + (f" ({err})" if err else ""))


def _did_you_mean(name: str) -> Tuple[Optional[str], object]:
    """``name`` with its measure name (before any ``@``/``(``) replaced by the closest one registered in ir_measures,
    case ignored (``"pMMR@10"`` → ``"pMRR@10"``), and that measure; ``(None, None)`` when none is close."""
    import difflib
    import ir_measures
    head = re.split(r"[@(]", name.strip(), maxsplit=1)[0]
    known = {}
    for n in ir_measures.measures.registry:  # a name before its aliases (nDCG, then NDCG)
        known.setdefault(n.lower(), n)
    close = difflib.get_close_matches(head.lower(), known, n=1, cutoff=0.7)
    if not close:
        return None, None
    return known[close[0]] + name.strip()[len(head):], ir_measures.measures.registry[known[close[0]]]


def _misspelled_ours(eval_metrics) -> None:
    """A name in ``eval_metrics`` whose closest measure is one of this package's and that neither PyTerrier's
    trec_eval-style parser nor ``ir_measures.parse_measure`` reads (PyTerrier raises on it anyway): :func:`by_name`'s
    ``ValueError`` naming the measure meant (``"pMMR"`` → ``'pMRR'``), before any system runs; other names:
    PyTerrier's."""
    from .measures import PairedMeasure
    for m in eval_metrics if isinstance(eval_metrics, (list, tuple)) else ():
        if isinstance(m, str) and isinstance(_did_you_mean(m)[1], PairedMeasure):
            by_name([m])


def _experiment(original):
    """PyTerrier's ``Experiment``, the same code object (so no call stands between the user and it, and its warnings
    name the user's line), whose calls to ``_validate``, ``linear_execution`` and ``tree_execution`` pass here."""
    names = original.__globals__
    return _rebound(original, _validate=_validation(names["_validate"]),
                    linear_execution=_execution(names["linear_execution"], "linear"),
                    tree_execution=_execution(names["tree_execution"], "tree"), ValueError=_save_dir_hint)


def _save_dir_hint(*args) -> ValueError:
    """What ``raise ValueError(...)`` in PyTerrier's ``Experiment`` builds: the builtin ``ValueError`` as it was, but
    "save_dir runs does not exist" says how to create the folder (PyTerrier writes runs into it, never creates it)."""
    found = re.fullmatch(r"save_dir (.*) does not exist", args[0]) if args and isinstance(args[0], str) else None
    if found and _ours_in_play(sys._getframe(1).f_locals):  # PyTerrier's own message otherwise
        args = (f"{args[0]}: create it first, e.g. os.makedirs({found.group(1)!r}, exist_ok=True) (pt.Experiment "
                "writes each system's run into save_dir but does not create the folder)",)
    return ValueError(*args)


def _ours_in_play(experiment_locals) -> bool:
    """``pt.Experiment``'s call holds a measure or a stage of this package."""
    import pyterrier as pt
    from .caching import _nodes
    if _split_measures(experiment_locals.get("eval_metrics"))[0]:
        return True
    systems = experiment_locals.get("retr_systems") or []
    systems = list(systems.values()) if isinstance(systems, dict) else systems
    return any(type(n).__module__.startswith("pyterrier_instruct.") for s in systems
               if isinstance(s, pt.Transformer) for n in _nodes(s))


def _rebound(function, **names):
    """``function``'s own code reading ``names`` in place of those of its module."""
    rebound = types.FunctionType(function.__code__, {**function.__globals__, **names}, function.__name__,
                                 function.__defaults__, function.__closure__)
    rebound.__kwdefaults__ = function.__kwdefaults__
    return functools.update_wrapper(rebound, function)


def _when_ours(original, then, otherwise=None):
    """``original`` itself unless its ``eval_metrics`` hold a measure of this package; then ``then(original, bound)``
    with the arguments bound (defaults applied) and the names parsed (:func:`by_name`). Before ``original``: a
    misspelled package measure refused (:func:`_misspelled_ours`), and ``otherwise(bound)`` if given."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def hooked(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if not _split_measures(bound.arguments.get("eval_metrics"))[0]:
            _misspelled_ours(bound.arguments.get("eval_metrics"))
            if otherwise is not None:
                otherwise(bound)
            return original(*args, **kwargs)
        bound.apply_defaults()
        bound.arguments["eval_metrics"] = by_name(bound.arguments["eval_metrics"])
        return then(original, bound)

    return hooked


def _validation(original):
    return _when_ours(original, lambda validate, bound: validate(*bound.args, **bound.kwargs))


def _execution(original, plan: str):
    """``linear_execution``/``tree_execution``: PyTerrier's own unless a package measure is in the list; then batches
    and saved runs checked before any system runs, and the experiment's state set for the measures and for
    ``RenderFromPerQuery.averages``."""
    return _when_ours(original, functools.partial(_paired_execution, plan=plan), _refuse_plain_caches_around_ours)


def _paired_execution(original, bound, plan: str):
    arguments = bound.arguments
    measures, names = _paired_names(arguments["eval_metrics"])
    topics, qrels, batch_size = arguments["topics"], arguments["qrels"], arguments.get("batch_size")
    systems = list(arguments["retr_systems"])
    transformers = [s for s in systems if not isinstance(s, pd.DataFrame)]  # a result frame is evaluated whole
    if batch_size is not None and transformers and isinstance(topics, pd.DataFrame):
        _check_batches(measures, topics, int(batch_size), plan)
    _refuse_plain_caches(systems, arguments["names"], topics, measures, names)
    per_system = original.__globals__.get("_run_and_evaluate")  # linear_execution's, called once per system
    if arguments.get("save_dir") is not None and isinstance(topics, pd.DataFrame) and per_system is not None:
        saved = _SavedRuns(arguments["save_dir"], arguments["names"], systems, topics, per_system)
        original = _rebound(original, _run_and_evaluate=saved.run_and_evaluate)
    qids = frozenset(qrels["qid"].astype(str)) if isinstance(qrels, pd.DataFrame) else frozenset()
    reuses = arguments.get("save_dir") is not None and arguments.get("save_mode") == "reuse"
    topic_qids = frozenset(topics["qid"].astype(str)) if isinstance(topics, pd.DataFrame) and "qid" in topics else None
    paired = _Paired(names, qids, reuses, batch_size, topic_qids=topic_qids)
    arguments["renderer"]._pti_paired = paired  # read by RenderFromPerQuery.averages once the systems ran
    if plan == "linear":
        original = _naming_systems(original, paired, [str(n) for n in arguments["names"]])
    token = _ACTIVE.set(paired)
    try:
        return original(*bound.args, **bound.kwargs)
    finally:
        _ACTIVE.reset(token)


def _naming_systems(linear_execution, paired: _Paired, names: List[str]):
    """PyTerrier's ``linear_execution`` that sets ``paired.system`` to the name of each system before it is run and
    evaluated (for the measures' messages): its ``_run_and_evaluate`` is handed the system, found by identity among
    the systems ``_precomputation`` returned (after a shared prefix, their remainders). Unchanged on a PyTerrier
    without those two functions (the system is then unknown)."""
    scope = linear_execution.__globals__
    if not {"_precomputation", "_run_and_evaluate"} <= set(scope):
        return linear_execution
    executed, last = [], [-1]  # last: the place of the system evaluated last (a system listed twice: the next one)

    def _precomputation(*args, **kwargs):
        result = scope["_precomputation"](*args, **kwargs)
        executed[:] = result[2]
        return result

    def _run_and_evaluate(system, *args, **kwargs):
        last[0] = next((i for i in range(last[0] + 1, len(executed)) if executed[i] is system), len(names))
        paired.system = names[last[0]] if last[0] < len(names) else None
        return scope["_run_and_evaluate"](system, *args, **kwargs)

    return _rebound(linear_execution, _precomputation=_precomputation, _run_and_evaluate=_run_and_evaluate)


def _refuse_plain_caches_around_ours(bound) -> None:
    """Without a package measure: :func:`_refuse_plain_caches` for the caches that wrap a stage of this package."""
    arguments = bound.arguments
    _refuse_plain_caches(list(arguments["retr_systems"]), arguments["names"], arguments["topics"], [], [], True)


def _refuse_plain_caches(systems, system_names, topics, measures, names, around_ours: bool = False) -> None:
    """A ``ValueError``, before any system runs, for a pyterrier-caching cache keyed without the instruction
    (:func:`~pyterrier_instruct.caching.plain_caches`) inside a system of an experiment whose topics hold variants that
    share a query text and differ in the instruction (FollowIR's og and changed): the variants scored in one call make
    its SQLite insert fail after all the scoring (``IntegrityError``); a variant cached before gets the other's score,
    and a paired measure would compare the system with itself. ``around_ours`` (no package measure in the list): only
    caches wrapping a stage of this package."""
    if not isinstance(topics, pd.DataFrame) or not {"query", "instruction"} <= set(topics.columns):
        return
    if not (topics.groupby("query")["instruction"].nunique() > 1).any():
        return
    from .caching import plain_caches
    from .measures import PairedMeasure
    paired = ", ".join(n for m, n in zip(measures, names) if isinstance(m, PairedMeasure))
    for name, system in zip(system_names, systems):
        if isinstance(system, pd.DataFrame):
            continue
        for cache in plain_caches(system, around_ours):
            raise ValueError(
                f"pt.Experiment: the system {str(name)!r} holds {cache}, which keys its entries without the "
                "instruction: "
                "the topics' variants that share a query text and differ only in the instruction (og and changed) "
                "would end in sqlite3.IntegrityError after all the scoring when scored together, or get one cached "
                f"score{f', so {paired} would compare the system with itself' if paired else ''}; refused before any "
                "system runs. Use pti.ScorerCache(path, scorer) or pti.RetrieverCache(path, retriever) (keyed on the "
                "stage, the query it reads and the instruction; docs/caching.md), or fold the instruction into the "
                "query first (pti.FoldInstruction()).")


class _SavedRuns:
    """The runs of an experiment with ``save_dir=``, each checked and written as PyTerrier reaches its system (the
    ``_run_and_evaluate`` that ``linear_execution`` calls, one system at a time; ``plan="tree"`` refuses ``save_dir``).

    PyTerrier keys a saved run by the system's name only. Under a lock on the run (a second process waits, then reads
    it back): a run is reused (``save_mode="reuse"``) only when its bytes are those its record names
    (:func:`~pyterrier_instruct.evaluation.runs.read_record`) and its record holds the fingerprint of this system and
    these topics (:func:`~pyterrier_instruct.evaluation.runs.identify`); otherwise PyTerrier computes it, writes it to a
    temporary file, the record is written (fingerprint taken again: a model downloaded or an index built on the way) and
    the file renamed over the run. A system without a fingerprint gets a record marked ``"checkable": false`` and is
    never reused. A run without a record (PyTerrier's own) is reused with a warning, as PyTerrier does."""

    def __init__(self, save_dir: str, names, systems, topics: pd.DataFrame, original):
        self.save_dir, self.topics, self.original = save_dir, topics, original
        self.names = {str(n): s for n, s in zip(names, systems)}

    def run_and_evaluate(self, system, topics, qrels, metrics, pbar=None, save_mode=None, save_file=None,
                         save_format="trec", **kwargs):
        def run(system, save_file, save_mode=save_mode):
            return self.original(system, topics, qrels, metrics, pbar=pbar, save_mode=save_mode, save_file=save_file,
                                 save_format=save_format, **kwargs)
        stem = os.path.relpath(save_file, self.save_dir) if save_file is not None else None
        name = next((n for n in self.names if stem in (f"{n}.res.gz", f"{n}.mod", f"{n}.custom")), None)
        if name is None or isinstance(system, pd.DataFrame):
            return run(system, None)  # a frame is its own run: never replaced by a file of that name
        from ._atomic import fsync_file, lock
        from .evaluation.runs import partial, sweep_partials
        held = lock(save_file + ".lock", None, f"the saved run {save_file}")
        try:
            exists = os.path.exists(save_file)
            if exists and save_mode == "reuse":
                if self._reusable(save_file, name):
                    return run(system, save_file)  # PyTerrier reads it back, still under the lock
            elif exists and save_mode != "overwrite":
                result = run(system, save_file)  # PyTerrier's 'warn' or 'error' on the file itself
                self._record(save_file, save_file, name)
                return result
            sweep_partials(self.save_dir)
            tmp = partial(save_file, keep_ext=True)  # .gz kept: PyTerrier compresses by the name
            try:
                result = run(system, tmp, "overwrite")
                fsync_file(tmp)
                self._record(save_file, tmp, name)  # first: until the rename, the run does not match its record
                os.replace(tmp, save_file)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
            return result
        finally:
            held.release()

    def _identity(self, name: str) -> dict:
        """The record of ``name``'s run now; ``{"checkable": False, "part": …}`` for a system without fingerprint."""
        from ._fingerprint import NotFingerprintable
        from .evaluation.runs import identify
        try:
            return {**identify(self.names[name], self.topics), "checkable": True}
        except NotFingerprintable as e:
            return {"key": None, "system": None, "checkable": False, "part": e.part, "reason": e.reason}

    def _record(self, path: str, written: str, name: str) -> None:
        from .evaluation.runs import write_record
        write_record(path, written, {"name": name, **self._identity(name)})

    def _reusable(self, path: str, name: str) -> bool:
        """Whether the run at ``path`` is this system's (else a warning says why). Under its lock."""
        from ._fingerprint import differing_part
        from .evaluation.runs import FINGERPRINT_SUFFIX, read_record
        where = f"pt.Experiment(save_dir={self.save_dir!r}, save_mode='reuse'): the saved run {path!r}"
        now = self._identity(name)
        if not now["checkable"]:
            warn_user(f"{where} cannot be checked against the system now named {name!r}: {now['part']}: "
                      f"{now['reason']}. It is computed again on every call, never reused unchecked. Give the system a "
                      f"key, pti.SavedRun(system, 'runs/{name}', key='{name}-v1') in the list (change the key "
                      "whenever the system changes), or use stages that have a fingerprint.")
            return False
        stored, problem = read_record(path)
        if stored is None and problem is None:
            warn_user(f"{where} has no fingerprint beside it ({os.path.basename(path) + FINGERPRINT_SUFFIX}: it was "
                      "written by an experiment without pyterrier_instruct's measures), so it cannot be checked "
                      f"against the system now named {name!r}; it is reused as PyTerrier does, by name. Delete it to "
                      "compute it again.")
            return True
        if problem is not None:
            why = f"does not hold the run its record names ({problem}: a write was interrupted, or the file replaced)"
        elif not stored.get("checkable", True):
            why = (f"was written by a system that could not be checked ({stored.get('part')}), and a run that "
                   "cannot be checked is never reused")
        elif stored.get("key") == now["key"]:
            return True
        elif stored.get("system") != now["system"]:
            why = (f"was written by another system under the name {name!r} (the fingerprints differ in "
                   f"{differing_part(str(stored.get('system')), now['system'])})")
        else:
            why = f"was written by the system now named {name!r} for other topics"
        warn_user(f"{where} {why}: it is computed again and replaced (PyTerrier keys saved runs by the system's name "
                  "only)")
        return False


def _to_dict(original):
    @functools.wraps(original)
    def _ir_measures_to_dict(seq, measures, rev_mapping, num_q, perquery=True, backfill_qids=None):
        active = _ACTIVE.get()
        if active is not None and backfill_qids is not None:  # a topic in the qrels is not "not found in qrels"
            backfill_qids = [q for q in backfill_qids if str(q) not in active.qrels_qids]
        return original(seq, measures, rev_mapping, num_q, perquery, backfill_qids)

    return _ir_measures_to_dict


def _averages(original):
    @functools.wraps(original)
    def averages(self, dataframe=True, highlight=None, mrt_needed=False):
        active = getattr(self, "_pti_paired", None)
        if active is None:
            return original(self, dataframe=dataframe, highlight=highlight, mrt_needed=mrt_needed)
        return _paired_averages(self, active.names, dataframe, highlight, mrt_needed)

    return averages


def _paired_p_value(test_fn, s: np.ndarray, b: np.ndarray) -> float:
    """The p-value of ``test_fn(s, b)``; for the t-test (PyTerrier's default, ``scipy.stats.ttest_rel``) on differences
    without variance, the limit scipy would reach through a catastrophic cancellation (its "Precision loss" warning, as
    when every query of a toy benchmark moves by the same amount): 0 when all moved, undefined (NaN) when none did."""
    if not len(s):
        return float("nan")
    from scipy import stats
    d = s - b
    if test_fn is stats.ttest_rel and np.ptp(d) <= 1e-9 * np.abs(d).max():
        return float("nan") if not d.any() else 0.0
    return test_fn(s, b)[1]


def _paired_averages(renderer, given: Sequence[str], dataframe: bool, highlight, mrt_needed: bool):
    """``RenderFromPerQuery.averages`` where a qid may lack a measure: per-measure means and pairings."""
    rendering = sys.modules[f"{_TARGET}._rendering"]
    assert len(renderer.systemEvalDictsPerQ) == len(renderer.systems), "evaluation has not finished"
    per_system = [renderer.systemEvalDictsPerQ[i] for i in range(len(renderer.systems))]
    seen = dict.fromkeys(m for per_q in per_system for values in per_q.values() for m in values if m != "runid")
    measures = [m for m in given if m in seen] + [m for m in seen if m not in given]
    means = []
    for i, per_q in enumerate(per_system):
        row = {}
        for m in measures:
            having = {q: {m: values[m]} for q, values in per_q.items() if m in values}
            row[m] = rendering._mean_of_measures(having, [m])[m] if having else float("nan")
        if mrt_needed:
            row["mrt"] = renderer.precompute_time + renderer.mrts[i]
        means.append(row)
    if not dataframe:
        return dict(zip(renderer.systems, means))
    columns = measures + (["mrt"] if mrt_needed else [])
    rows = [[name] + [renderer._apply_round(m, row[m]) for m in columns] for name, row in zip(renderer.systems, means)]
    highlight_cols = {m: "+" for m in measures}
    if mrt_needed:
        highlight_cols["mrt"] = "-"
    p_columns = []
    if renderer.baseline is not None:
        base = per_system[renderer.baseline]
        for i, per_q in enumerate(per_system):
            for m in measures:
                if i == renderer.baseline:
                    rows[i] += [None, None, None]
                    continue
                qids = [q for q, values in base.items() if m in values and m in per_q.get(q, ())]
                b = np.array([base[q][m] for q in qids], dtype="float64")
                s = np.array([per_q[q][m] for q in qids], dtype="float64")
                p = _paired_p_value(renderer.test_fn, s, b)
                rows[i] += [int((s > b).sum()), int((s < b).sum()), p]
        for m in measures:
            columns += [f"{m} +", f"{m} -", f"{m} p-value"]
            highlight_cols[f"{m} +"], highlight_cols[f"{m} -"] = "+", "-"
            p_columns.append(f"{m} p-value")
    df = pd.DataFrame(rows, columns=["name"] + columns)
    if renderer.baseline is not None and renderer.correction is not None:
        import statsmodels.stats.multitest
        for pcol in p_columns:
            reject, corrected, _, _ = statsmodels.stats.multitest.multipletests(
                df[pcol].drop(df.index[renderer.baseline]), alpha=renderer.correction_alpha, method=renderer.correction)
            at = df.columns.get_loc(pcol)
            df.insert(at + 1, pcol.replace("p-value", "reject"), np.insert(reject, renderer.baseline, False))
            df.insert(at + 2, pcol + " corrected", np.insert(corrected, renderer.baseline, np.nan))
    if highlight in ("color", "colour"):
        return df.style.apply(rendering._color_cols, axis=0, col_type=highlight_cols)
    if highlight == "bold":
        return df.style.apply(rendering._bold_cols, axis=0, col_type=highlight_cols)
    return df


def _batches(topics: pd.DataFrame, batch_size: int, plan: str) -> List[List[str]]:
    """The topic qids of each batch, as PyTerrier forms them (``transform_gen`` for ``plan='linear'``,
    ``pt.model.split_df`` for ``plan='tree'``)."""
    if plan == "tree":
        from pyterrier.model import split_df
        return [list(pd.unique(b["qid"].astype(str))) for b in split_df(topics, batch_size=batch_size)]
    if "docno" in topics.columns or "docid" in topics.columns:
        qids = list(pd.unique(topics["qid"].astype(str)))
    else:
        qids = topics["qid"].astype(str).tolist()
    return [qids[i:i + batch_size] for i in range(0, len(qids), batch_size)]


def _split_units(measures, topics: pd.DataFrame, batch_size: int, plan: str) -> Dict[str, Dict[str, List[int]]]:
    """``{measure name: {unit: [batch numbers]}}`` for the units that would span several batches."""
    batches = _batches(topics, batch_size, plan)
    out = {}
    for m in measures:
        if not hasattr(m, "unit"):
            continue
        where: Dict[str, List[int]] = {}
        for number, qids in enumerate(batches, start=1):
            for qid in qids:
                unit = m.unit(qid)
                if unit is not None and number not in where.setdefault(unit, []):
                    where[unit].append(number)
        split = {u: b for u, b in where.items() if len(b) > 1}
        if split:
            out[str(m)] = split
    return out


def _check_batches(measures, topics: pd.DataFrame, batch_size: int, plan: str) -> None:
    if batch_size <= 0:
        return  # PyTerrier refuses it
    split = _split_units(measures, topics, batch_size, plan)
    if not split:
        return
    names = list(split)
    units = split[names[0]]
    shown = "; ".join(f"{u!r} in batches {b}" for u, b in list(units.items())[:3])
    more = f" and {len(units) - 3} more" if len(units) > 3 else ""
    raise ValueError(
        f"pt.Experiment(batch_size={batch_size}) would evaluate the variants of {len(units)} base queries in different "
        f"batches ({shown}{more}). PyTerrier evaluates each batch on its own, and the measures {', '.join(names)} "
        "compare the variants of a query (its -og and -changed runs; for Robustness every instance of a group), so "
        "they must be evaluated together. Drop batch_size= (paired measures need all topics in one evaluation), or "
        f"keep each query's variants in one batch: {_suggestion(measures, topics, batch_size, plan)}")


def _suggestion(measures, topics: pd.DataFrame, batch_size: int, plan: str) -> str:
    advice = ("order the topics so that each query's variants are adjacent (as pyterrier_instruct.paired_topics and "
              "the datasets' get_topics() do) and use a batch size that is a multiple of the number of variants")
    size = 1
    for m in measures:
        if not hasattr(m, "unit"):
            continue
        counts = pd.Series([m.unit(q) for q in topics["qid"].astype(str)], dtype=object).dropna().value_counts()
        if counts.nunique() > 1:
            return advice  # units of different sizes: no batch size fits them all
        if len(counts):
            size = math.lcm(size, int(counts.iloc[0]))
    for candidate in range(max(size, batch_size - batch_size % size), 0, -size)[:50]:
        if not _split_units(measures, topics, candidate, plan):
            return f"batch_size={candidate} keeps them together with these topics"
    return advice


__all__ = ["install", "uninstall", "TESTED", "STATUS"]
