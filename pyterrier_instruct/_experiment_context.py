"""The state of the ``pt.Experiment`` in progress, as the compatibility layer (``_pt_compat``) records it and the
measures read it (which system is evaluated, whether runs may come back from ``save_dir``, what was warned): a module
of its own, so that neither imports the other. :func:`warn_user` attributes a warning to the user's line."""
from __future__ import annotations

import contextvars
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import FrozenSet, List, Optional, Tuple

@dataclass
class _Paired:
    """The experiment in progress: its measure names in the given order, the qids of its qrels, its systems and what
    was evaluated and warned so far."""
    names: List[str]
    qrels_qids: FrozenSet[str]
    #: ``save_dir`` with ``save_mode="reuse"``: runs may be read back from TREC files, which keep no topic columns
    reuses_runs: bool = False
    batch_size: Optional[int] = None
    #: the name of the system being evaluated, set by the routed execution (``plan="linear"``) before it runs
    system: Optional[str] = None
    warned: set = field(default_factory=set)
    topic_qids: Optional[FrozenSet[str]] = None  # the qids of its topics (None: not a frame)


def evaluated_system() -> Tuple[Optional[str], Optional[int]]:
    """(the name of the system being evaluated, when it is known; ``batch_size``) for the experiment in progress,
    (None, None) outside one."""
    active = _ACTIVE.get()
    return (None, None) if active is None else (active.system, active.batch_size)


def topic_qids() -> Optional[FrozenSet[str]]:
    """The qids of the topics given to the experiment in progress (None outside one, or when they are not a frame). A
    measure that finds its variants one-sided reads them to say the topics were (``ds.get_topics('og')``): PyTerrier
    keeps the qrels of the topics' qids only, so the qrels a measure sees cannot tell."""
    active = _ACTIVE.get()
    return None if active is None else active.topic_qids


def first_time(message: str) -> bool:
    """False when ``message`` was already warned in the experiment in progress (PyTerrier may evaluate a system's
    queries in parts); always True outside one."""
    active = _ACTIVE.get()
    if active is None:
        return True
    if message in active.warned:
        return False
    active.warned.add(message)
    return True


def reusing_saved_runs() -> bool:
    """An experiment in progress may evaluate runs read back from ``save_dir`` (``save_mode="reuse"``): such a run has
    no ``instruction`` column whatever the system saw, so its absence proves nothing."""
    active = _ACTIVE.get()
    return bool(active and active.reuses_runs)


def _internal_dirs() -> tuple:
    """The folders whose frames are not the user's: this package, PyTerrier, ir_measures, ir_datasets, pandas, numpy."""
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    for name in ("pyterrier", "ir_measures", "ir_datasets", "pandas", "numpy"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(module.__file__)))
    return tuple(d + os.sep for d in dirs)


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` call in the caller of this function name the first frame
    outside this package and the libraries it runs inside (PyTerrier, ir_measures, pandas …): the user's line that
    called ``pt.Experiment``, ``ir_measures.calc_aggregate`` or a function of this package."""
    internal = _internal_dirs()
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):  # frames warnings.warn skips by itself
            if not os.path.abspath(name).startswith(internal):
                return level
            level += 1
        frame = frame.f_back
    return 1


def warn_user(message: str, category: type = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line (:func:`user_stacklevel`)."""
    warnings.warn(message, category, stacklevel=user_stacklevel())


_ACTIVE: contextvars.ContextVar[Optional[_Paired]] = contextvars.ContextVar("pyterrier_instruct_paired", default=None)
