"""Published ("paper") numbers of the seed papers, for placing beside reproduced ones.

FollowIR, Promptriever, InfoSearch, IFIR and InF-IR headline tables, transcribed into ``data/paper_numbers.csv`` (one
row per printed cell: ``paper, table, benchmark, group, model, dataset, measure, value, note``), as printed and on the
printed scale (x100, except IFIR nDCG@20 as a fraction and InfoSearch's mean gold ranks); "-" cells have no row.
Errata applied where the source says which value to use, each noted in ``note``; model names as each table prints them.
"""
from __future__ import annotations

import functools
import io
from collections.abc import Iterable
from importlib import resources

import pandas as pd

__all__ = ["paper_numbers"]

COLUMNS = ("paper", "table", "benchmark", "group", "model", "dataset", "measure", "value", "note")
_FILTERS = ("paper", "benchmark", "model", "dataset", "measure")

Selector = str | Iterable[str] | None


@functools.lru_cache(maxsize=1)
def _load() -> pd.DataFrame:
    text = (resources.files("pyterrier_instruct") / "data" / "paper_numbers.csv").read_text(encoding="utf-8")
    dtypes = {c: str for c in COLUMNS}
    dtypes["value"] = "float64"
    frame = pd.read_csv(io.StringIO(text), dtype=dtypes, keep_default_na=False, na_values={"value": [""]})
    frame = frame[list(COLUMNS)]
    frame["note"] = frame["note"].fillna("").astype(str)
    return frame


def paper_numbers(paper: Selector = None, benchmark: Selector = None, model: Selector = None,
                  dataset: Selector = None, measure: Selector = None) -> pd.DataFrame:
    """The published numbers as a long frame, optionally filtered.

    Each argument, when given, is an exact value or a list of accepted values of the column of the
    same name (e.g. ``paper_numbers(paper="FollowIR", measure=["p-MRR", "Score"])``). ``value`` is
    float64 on the printed scale; ``note`` is a string, empty unless the cell has an erratum.

    Raises:
        ValueError: a filter value that does not occur in its column; the message names the argument
            and lists the valid values.
    """
    frame = _load()
    args = {"paper": paper, "benchmark": benchmark, "model": model, "dataset": dataset, "measure": measure}
    mask = pd.Series(True, index=frame.index)
    for name in _FILTERS:
        wanted = args[name]
        if wanted is None:
            continue
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        valid = sorted(frame[name].unique())
        unknown = [w for w in wanted if w not in set(valid)]
        if unknown:
            shown = unknown[0] if len(unknown) == 1 else unknown
            raise ValueError(f"unknown {name}={shown!r} for paper_numbers(); valid values of {name!r}: "
                             f"{', '.join(repr(v) for v in valid)}")
        mask &= frame[name].isin(wanted)
    return frame[mask].reset_index(drop=True).copy()
