"""The one transform body every reranker shares (pointwise, listwise, dense scoring, pool BM25).

validate (``instruct`` mode with an ``instruction`` column, ``query`` mode with the constructor default) → empty
shortcut → ``_score`` → ``score`` → ``pt.model.add_ranks``; every input column and the row order are kept. An incoming
``score`` is kept as ``score_0`` unless a ``score_0`` is already there. A NaN/None query or text is an error naming the
column (:func:`check_text`); a NaN/None or blank instruction takes the ``instruction=`` default.
"""
from __future__ import annotations

import logging
from typing import Dict

import numpy as np
import pandas as pd
import pyterrier as pt

from ._config import Configured
from ._experiment_context import warn_user
from ._validation import text_hint
from ._progress import tqdm as progress_bar
from .instructions import query_instructions


log = logging.getLogger(__name__)


def warn_unparsed(who, unparsed: int, answers: int, problem: str = "could not be parsed", then: str = "") -> None:
    """The one warning of a generating family (Setwise, Rank-R1, the listwise rerankers, the IFIR judge) whose answers
    could not all be read, once per run (a ``transform`` call): ``"<who>: N of M answers <problem>; <then> (see
    .stats)"``. Nothing when ``unparsed`` is 0."""
    if unparsed:
        log.warning("%s: %d of %d answers %s%s (see .stats)", who if isinstance(who, str) else repr(who), unparsed,
                    answers, problem, f"; {then}" if then else "")


def first_stage_columns(inp: pd.DataFrame) -> pd.DataFrame:
    """``inp`` without ``score``/``rank``, with the first-stage score as ``score_0`` (the one rule, see above)."""
    out = inp.drop(columns=["score", "rank"], errors="ignore")
    if "score" in inp.columns and "score_0" not in inp.columns:
        out = out.assign(score_0=inp["score"].to_numpy())
    return out.copy()


def first_stage_lists(work: pd.DataFrame):
    """Row positions per query in first-stage order (``rank``, else ``score`` descending, else input order): the list
    of position arrays, the query codes and the qids (``pd.factorize`` order); for the rerankers that reorder a query's
    list (listwise, setwise)."""
    codes, qids = pd.factorize(work["qid"])
    if "rank" in work.columns:
        key = work["rank"].to_numpy(dtype="float64")
    elif "score" in work.columns:
        key = -work["score"].to_numpy(dtype="float64")
    else:
        key = np.zeros(len(work))
    order = np.lexsort((np.arange(len(work)), key, codes))
    return np.split(order, np.flatnonzero(np.diff(codes[order])) + 1), codes, qids


HINTS = {"query": "check the topics (a NaN query usually comes from a join or a missing field in the queries file)",
         "text": "check the text loader: ds.text_loader() / pt.text.get_text(...) must find every docno"}


def check_text(df: pd.DataFrame, columns, who: str) -> None:
    """A NaN/None in one of ``columns`` of ``df`` is a ValueError naming the column, the first rows (qid/docno) and the
    fix; ``who`` names the transformer."""
    for col in columns:
        if col not in df.columns:
            continue
        missing = df[col].isna().to_numpy()
        if not missing.any():
            continue
        ids = [c for c in ("qid", "docno") if c in df.columns]
        rows = df.loc[missing, ids].head(3).astype(str)
        examples = "; ".join(", ".join(f"{c}={v!r}" for c, v in zip(ids, row)) for row in rows.itertuples(index=False))
        hint = HINTS.get(col if col in HINTS else "text")
        raise ValueError(f"{who}: {int(missing.sum())} row(s) have no {col!r} "
                         f"(NaN/None){', e.g. ' + examples if examples else ''}; fill them first, e.g. "
                         f"df.fillna({{{col!r}: ''}}), or {hint}")


def empty_result(out: pd.DataFrame, extra_outputs=()) -> pd.DataFrame:
    """A shaped empty result: the input columns, the model's ``extra_outputs`` (text), ``score`` and ``rank``."""
    return out.assign(**{c: pd.Series(dtype=object) for c in extra_outputs},
                      score=pd.Series(dtype="float64"), rank=pd.Series(dtype="int64"))


#: Every public reranking family by class name, registered when the subclass is defined (``family=False`` marks a base
#: class or a stage that is no family); tests/test_contract.py runs on every entry.
FAMILIES: Dict[str, type] = {}


class InstructReranker(Configured, pt.Transformer):
    """Base class: subclasses implement ``_score(view) -> np.ndarray`` (one float per row).

    ``view`` is the prompt view of the input frame (:meth:`prompt_view`, built once per call): the input's columns
    (its first-stage ``score``/``rank`` still there), its ``query`` and text columns free of NaN/None
    (:func:`check_text`), ``query`` the query the model reads (a query ``FoldInstruction`` folded read unfolded) and
    ``instruction`` the row's, or the stage's default ``instruction`` where it is missing or blank. A family fills its
    prompt's ``{query}`` slot from it with its ``query_slot`` (:meth:`QuerySlot.frame
    <pyterrier_instruct.instructions.QuerySlot.frame>`, the one place query and instruction are joined). Subclasses
    store ``text_field``, ``instruction`` (the default instruction) and ``verbose``. A model that writes more than the
    score (rank1's reasoning text) names those columns in ``extra_outputs`` and returns ``(scores, {column: values})``.
    """
    extra_outputs: tuple = ()
    text_field: str = "text"
    instruction: str = ""
    verbose: bool = True
    _family = False  # set per subclass by __init_subclass__

    def __init_subclass__(cls, family: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._family = family
        if family and not cls.__name__.startswith("_") and cls.__module__.startswith(__name__.rpartition(".")[0] + "."):
            FAMILIES[cls.__name__] = cls

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with text_hint(self.text_field), pt.validate.any(inp) as v:
            v.result_frame(extra_columns=["query", "instruction", self.text_field], mode="instruct")
            v.result_frame(extra_columns=["query", self.text_field], mode="query")
        out = first_stage_columns(inp)
        if len(out) == 0:
            return empty_result(out, self.extra_outputs)
        warned = self.__dict__.get("_warned_no_instruction")
        if "instruction" not in inp.columns and not self.instruction and not warned:
            self.__dict__["_warned_no_instruction"] = True  # once per stage: not per batch of a pt.Experiment
            warn_user(f"{type(self).__name__}: the input has no 'instruction' column and the stage no instruction= "
                      "default, so every query is scored without an instruction; pass topics with an 'instruction' "
                      "column (e.g. dataset.get_topics()), or set instruction='...' on the stage")
        scores, extra = self._score(self.prompt_view(inp)), {}
        if self.extra_outputs:
            scores, extra = scores
        scores = np.asarray(scores, dtype="float64")
        if scores.shape != (len(out),):
            raise RuntimeError(f"{self!r} produced {scores.shape} scores for {len(out)} rows")
        for column in self.extra_outputs:
            out[column] = list(extra[column])
        out["score"] = scores
        return pt.model.add_ranks(out)

    def prompt_view(self, df: pd.DataFrame) -> pd.DataFrame:
        """``df`` as this stage reads it (see above): the query and text checked, the query unfolded, the default
        instruction applied (:func:`~pyterrier_instruct.instructions.query_instructions`)."""
        check_text(df, ["query", self.text_field], type(self).__name__)
        return query_instructions(df, self.instruction)

    def _score(self, view: pd.DataFrame) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError  # abstract

    def _tqdm(self, iterable, total=None, desc=None, unit="batch"):
        return progress_bar(iterable, total=total, desc=desc or type(self).__name__, unit=unit,
                            disable=not self.verbose)


__all__ = ["InstructReranker"]
