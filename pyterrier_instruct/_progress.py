"""The package's progress bars: widgets in a Jupyter notebook, text in a terminal (as ``tqdm.auto`` chooses), unless
the user picked a bar type with ``pt.utils.set_tqdm(...)``, which is then used as it is."""
from __future__ import annotations


def tqdm(*args, **kwargs):
    """A progress bar with ``tqdm``'s arguments: ``pt.tqdm`` when set to other than the plain text bar, else
    ``tqdm.auto.tqdm`` (a widget when running in a Jupyter kernel with ipywidgets, text otherwise)."""
    import pyterrier as pt
    from tqdm import std
    if getattr(pt, "tqdm", std.tqdm) is not std.tqdm:
        return pt.tqdm(*args, **kwargs)
    from tqdm.auto import tqdm as auto
    return auto(*args, **kwargs)
