"""Progress output, two switches.

``verbose`` (on by default): this package's bars (scoring, encoding, indexing, Ray blocks), made by :func:`tqdm` below.
:func:`library_progress` (or ``PYTERRIER_INSTRUCT_LIBRARY_BARS=1``; off by default): the bars and logs of the
libraries underneath (transformers, vLLM, PISA, Anserini). Bars follow ``pt.utils.set_tqdm`` when set, else
``tqdm.auto``; text bars into a file stay on one line each (``position=0``). :func:`silenced` (``--quiet``) turns off
every bar of this package.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, Optional

#: the environment variable read when :func:`library_progress` was never called
LIBRARY_BARS_ENV = "PYTERRIER_INSTRUCT_LIBRARY_BARS"

_library: Optional[bool] = None


def library_progress(enabled: Optional[bool] = None) -> bool:
    """Shows (``True``) or hides (``False``) the progress bars and logs of the libraries and engines this package
    drives (transformers, vLLM, PISA, Anserini); ``None`` only reads the setting. Returns the setting now
    in force: what was set here last, else ``$PYTERRIER_INSTRUCT_LIBRARY_BARS`` (``1``/``true``/``yes``/``on``), else
    off. Independent of ``verbose``, which covers this package's own bars. Takes effect from the next model load or
    run (a transformers model already loaded keeps its bars as they were)."""
    global _library
    if enabled is not None:
        _library = bool(enabled)
    if _library is not None:
        return _library
    return os.environ.get(LIBRARY_BARS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


_silenced = 0


@contextlib.contextmanager
def silenced(enabled: bool = True) -> Iterator[None]:
    """Within the block (when ``enabled``), every bar :func:`tqdm` makes is disabled: the command line's ``--quiet``
    covers the stages it builds and those they build in turn (indexes, corpus streams), not only the ones given
    ``verbose=False``."""
    global _silenced
    _silenced += bool(enabled)
    try:
        yield
    finally:
        _silenced -= bool(enabled)


def _terminal(file) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def tqdm(*args, **kwargs):
    """A progress bar with ``tqdm``'s arguments: ``pt.tqdm`` when set to other than the plain text bar, else
    ``tqdm.auto.tqdm`` (a widget when running in a Jupyter kernel with ipywidgets, text otherwise). Disabled inside
    :func:`silenced`; a text bar whose output is not a terminal keeps to its own line (no cursor movement)."""
    import pyterrier as pt
    from tqdm import std
    if _silenced:
        kwargs["disable"] = True
    if getattr(pt, "tqdm", std.tqdm) is not std.tqdm:
        return pt.tqdm(*args, **kwargs)
    from tqdm.auto import tqdm as auto
    from tqdm.autonotebook import tqdm as chosen  # the notebook widget in a Jupyter kernel, else the text bar
    if chosen is std.tqdm and not _terminal(kwargs.get("file") or sys.stderr):
        kwargs.setdefault("position", 0)  # nested bars in a log: each rewrites its line (\r), never moves the cursor up
    return auto(*args, **kwargs)
