"""Golden cases checked in bulk (tests/test_pmrr.py, tests/test_infosearch.py): the cases' queries are evaluated
together in one call under case-prefixed qids (``"<n>/<qid>"``; every value these measures give a query depends on
that query's rows only), the results are split back by case, and every value is compared, the mismatches named by
case and gathered into one assertion message."""
import numpy as np
import pytest


def prefix(n: int) -> str:
    return f"{n:03d}/"


def merged(cases, key: str) -> dict:
    """``{qid: value}`` inputs of the cases as one dict, each qid under its case's prefix (case order, then dict
    order)."""
    return {prefix(n) + q: v for n, case in cases for q, v in case["inputs"][key].items()}


def of_case(values: dict, n: int) -> dict:
    """The entries of one case in a ``{prefixed qid: value}`` result, under the case's own qids."""
    p = prefix(n)
    return {q[len(p):]: v for q, v in values.items() if q.startswith(p)}


def split(frame, column: str = "qid") -> dict:
    """``{n: the rows of case n}`` of a result frame (order kept, index reset), under the cases' own qids."""
    qids = frame[column].astype(str)
    parts = {}
    for n, rows in frame.groupby(qids.str[:len(prefix(0))].to_numpy(), sort=False):
        rows = rows.reset_index(drop=True)
        parts[int(n[:-1])] = rows.assign(**{column: rows[column].astype(str).str[len(prefix(0)):]})
    return parts


class Mismatches(list):
    """The failed comparisons of a bulk check, each named by case and value; ``compared`` counts every comparison."""

    def __init__(self, tol: float):
        super().__init__()
        self.tol, self.compared = tol, 0

    def equal(self, where, got, want) -> None:
        self.compared += 1
        if got != want:
            self.append(f"{where}: got {got!r}, want {want!r}")

    def close(self, where, got, want) -> None:
        """``got == pytest.approx(want, abs=tol)`` (a number, or a dict/list of them, compared whole as before)."""
        self.compared += 1
        if not got == pytest.approx(want, abs=self.tol):
            self.append(f"{where}: got {got!r}, want {want!r} (abs tolerance {self.tol})")

    def allclose(self, where, got, want) -> None:
        """``np.testing.assert_allclose(got, want, atol=tol)``, as before."""
        self.compared += 1
        try:
            np.testing.assert_allclose(got, want, atol=self.tol)
        except AssertionError as e:
            self.append(f"{where}: {e}")

    def check(self, what: str) -> None:
        assert self.compared, f"{what}: nothing was compared"
        assert not self, f"{what}: {len(self)} of {self.compared} comparisons failed:\n" + "\n".join(self)
