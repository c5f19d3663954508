"""Progress output, two switches.

- ``verbose`` (a constructor or function argument, on by default): this package's progress bars for work that takes
  time (scoring, encoding, indexing, Ray blocks), made by :func:`tqdm` below; ``verbose=False`` silences them.
- :func:`library_progress` (or the environment variable ``PYTERRIER_INSTRUCT_LIBRARY_BARS=1``; off by default): the
  progress bars and chatty logs of the libraries and engines underneath (transformers' model-loading bars, vLLM's
  ``use_tqdm``, Ray Data's bars and logs, PISA's and Anserini's native logs). ``verbose`` does not touch them.

The bars are widgets in a Jupyter notebook, text in a terminal (as ``tqdm.auto`` chooses), unless the user picked a
bar type with ``pt.utils.set_tqdm(...)``, which is then used as it is."""
from __future__ import annotations

import os
from typing import Optional

#: the environment variable read when :func:`library_progress` was never called
LIBRARY_BARS_ENV = "PYTERRIER_INSTRUCT_LIBRARY_BARS"

_library: Optional[bool] = None


def library_progress(enabled: Optional[bool] = None) -> bool:
    """Shows (``True``) or hides (``False``) the progress bars and logs of the libraries and engines this package
    drives (transformers, vLLM, Ray Data, PISA, Anserini); ``None`` only reads the setting. Returns the setting now
    in force: what was set here last, else ``$PYTERRIER_INSTRUCT_LIBRARY_BARS`` (``1``/``true``/``yes``/``on``), else
    off. Independent of ``verbose``, which covers this package's own bars. Takes effect from the next model load or
    run (a transformers model already loaded keeps its bars as they were)."""
    global _library
    if enabled is not None:
        _library = bool(enabled)
    if _library is not None:
        return _library
    return os.environ.get(LIBRARY_BARS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def tqdm(*args, **kwargs):
    """A progress bar with ``tqdm``'s arguments: ``pt.tqdm`` when set to other than the plain text bar, else
    ``tqdm.auto.tqdm`` (a widget when running in a Jupyter kernel with ipywidgets, text otherwise)."""
    import pyterrier as pt
    from tqdm import std
    if getattr(pt, "tqdm", std.tqdm) is not std.tqdm:
        return pt.tqdm(*args, **kwargs)
    from tqdm.auto import tqdm as auto
    return auto(*args, **kwargs)
