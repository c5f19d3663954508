"""The state of the ``pt.Experiment`` in progress, as the compatibility layer (``_pt_compat``) records it and the
measures read it (which system is evaluated, whether runs may come back from ``save_dir``, what was warned): a module
of its own, so that neither imports the other. :func:`warn_user` attributes a warning to the user's line."""
from __future__ import annotations

import contextvars
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import FrozenSet, List, Optional

@dataclass
class _Paired:
    """The experiment in progress (:func:`active`): its measure names in the given order, the qids of its qrels, the
    system being evaluated and what was warned so far."""
    names: List[str]
    qrels_qids: FrozenSet[str]
    #: ``save_dir`` with ``save_mode="reuse"``: runs may be read back from TREC files, which keep no topic columns (so
    #: a run without an ``instruction`` column proves nothing)
    reuses_runs: bool = False
    batch_size: Optional[int] = None
    #: the name of the system being evaluated, set by the routed execution (``plan="linear"``) before it runs
    system: Optional[str] = None
    warned: set = field(default_factory=set)
    #: the qids of its topics (None: not a frame): a measure that finds its variants one-sided reads them to say the
    #: topics were (``ds.get_topics('og')``); PyTerrier keeps the qrels of the topics' qids only
    topic_qids: Optional[FrozenSet[str]] = None
    #: per system name, the calls its run looked up in a call store (``measures.cost``: ``Calls``, ``Tokens``, ``Cost``)
    meters: dict = field(default_factory=dict)

    def first_time(self, message: str) -> bool:
        """False when ``message`` was already warned (PyTerrier may evaluate a system's queries in parts)."""
        new = message not in self.warned
        self.warned.add(message)
        return new


def active() -> Optional[_Paired]:
    """The ``pt.Experiment`` in progress with a package measure, or None."""
    return _ACTIVE.get()


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
