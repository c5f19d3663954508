"""The fixed candidate lists of a benchmark as a first stage (``Q → R``), and the text loader (``R → R``)."""
from __future__ import annotations

from typing import List, Literal, Union

import pandas as pd
import pyterrier as pt

from .._config import Configured
from ..instructions import split_qids
from ._bench import FIELDS

FieldSpec = Union[List[str], str, Literal["*"]]


def _fields(dataset, fields: FieldSpec) -> List[str]:
    if fields == "*":
        return list(FIELDS)
    fields = [fields] if isinstance(fields, str) else list(fields)
    unknown = [f for f in fields if f not in FIELDS]
    if unknown:
        raise ValueError(f"{dataset.name} documents have no field(s) {unknown}; available: {list(FIELDS)}")
    return fields


def _attach(frame: pd.DataFrame, dataset, fields: List[str]) -> pd.DataFrame:
    docnos = frame["docno"].astype(str)
    docs = dataset.bench.corpus.get_many(pd.unique(docnos))
    for f in fields:
        i = 0 if f == "title" else 1
        frame[f] = [docs[d][i] for d in docnos]
    return frame


class _DatasetStage(Configured, pt.Transformer):
    """A transformer bound to a dataset's corpus: identity is (class, dataset path, fields)."""

    def __init__(self, dataset, fields: FieldSpec = "*"):
        self.dataset = dataset
        self.fields = _fields(dataset, fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dataset.name!r}, fields={self.fields!r})"

    def _eq_key(self) -> tuple:  # compared without locating the files (on disk, results key on fingerprint(dataset))
        d = self.dataset
        return (d.name, None if d._given is None else str(d._given), d.qrels_mapping, tuple(self.fields))


class TextLoader(_DatasetStage):
    """Attaches document fields to a result frame from the dataset's corpus (``R → R``), reading only the
    requested docnos, e.g. ``bm25 % 100 >> pt.text.get_text(ds, 'text') >> reranker``. Rows, order and other
    columns are kept; an unknown docno is an error naming the corpus file."""
    schematic = {"label": "Text"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["docno"])
        out = inp.drop(columns=[f for f in self.fields if f in inp.columns])
        if len(out) == 0:
            return out.assign(**{f: pd.Series(dtype=object) for f in self.fields})
        return _attach(out.copy(), self.dataset, self.fields)

    def fuse_rank_cutoff(self, k: int):
        return pt.RankCutoff(k) >> self


class Candidates(_DatasetStage):
    """Each input query's benchmark candidates in file order (``rank`` = file position, ``score = -rank``).

    Queries are matched on ``qid``; a qid without its own list (e.g. a plain base qid) falls back to its
    ``base_qid`` column or its qid with the ``-og``/``-changed``/``-reversed`` suffix removed. A query
    without candidates is an error (it would otherwise score 0 silently). Every input column is kept and
    the document fields are attached.
    """
    schematic = {"label": "Candidates"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp)
        extra = ["docno", *self.fields, "score", "rank"]
        base = inp.drop(columns=[c for c in extra if c in inp.columns])
        if len(base) == 0:
            return base.assign(**{c: pd.Series(dtype=t) for c, t in
                                  zip(extra, ["object"] * (1 + len(self.fields)) + ["float64", "int64"])})
        b = self.dataset.bench
        if b.candidates is None:
            raise ValueError(f"{self.dataset.name} defines no candidate lists; use a first-stage retriever")
        cands = b.candidates
        own = base["qid"].astype(str).isin(set(cands["qid"]))
        if "base_qid" in base.columns:
            key = base["base_qid"].astype(str)
        else:
            key = split_qids(base["qid"].astype(str))[0]
        key = key.where(~own, base["qid"].astype(str))
        by_base = cands.merge(b.topics[["qid", "base_qid"]], on="qid").drop_duplicates("base_qid")[["base_qid", "qid"]]
        first_qid = dict(zip(by_base["base_qid"], by_base["qid"]))
        key = key.where(own, key.map(first_qid))
        if key.isna().any():
            bad = base["qid"][key.isna()].astype(str).unique().tolist()
            known = (f"candidate lists exist for qids like {cands['qid'].iloc[0]!r}" if len(cands)
                     else "no query has a candidate list")
            raise KeyError(f"query(ies) {bad[:5]} have no candidates in {self.dataset.name} ({len(bad)} in all); "
                           f"{known}")
        out = base.assign(_key=key.to_numpy()).merge(cands.rename(columns={"qid": "_key"}), on="_key", how="inner",
                                                     sort=False).drop(columns="_key")
        out = _attach(out, self.dataset, self.fields)
        out["rank"] = out.groupby("qid", sort=False).cumcount().astype("int64")
        out["score"] = 0.0 - out["rank"].astype("float64")
        return out


class MaxP(pt.Transformer):
    """``R → R``: a CRUMB passage run as a document run, each document (the passage id before its last ``:``) scored by
    its best passage, ranks recomputed (CRUMB's MaxP, :func:`pyterrier_instruct.datasets.crumb.maxp`); built by
    ``ds.maxp()``. Evaluate its output against ``ds.document_qrels()``."""
    schematic = {"label": "MaxP"}

    def __repr__(self) -> str:
        return "MaxP()"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp, extra_columns=["score"])
        from .crumb import maxp
        return maxp(inp)


class Exclude(_DatasetStage):
    """``R → R``: removes each query's excluded documents (BRIGHT's ``excluded_ids``) from that query's ranking, ranks
    recomputed; other queries and every column are kept. Built by ``ds.exclude()``; idempotent, and a no-op for a
    dataset without exclusions. The last stage of a system evaluated on BRIGHT (``system >> ds.exclude()``): the qrels
    hold the released gold ids only, so ``pt.Experiment``, ``pt.Evaluate`` and ``ir_measures`` then give BRIGHT's number
    (:mod:`pyterrier_instruct.datasets.exclusion`)."""
    schematic = {"label": "Exclude"}

    def __init__(self, dataset):
        self.dataset, self.fields = dataset, []

    def __repr__(self) -> str:
        return f"Exclude({self.dataset.name!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "docno"])
        if len(inp) == 0:
            return inp
        from .exclusion import remove
        return remove(inp, self.dataset.excluded_ids())
