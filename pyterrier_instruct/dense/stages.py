"""The explicit PyTerrier stages of a :class:`~pyterrier_instruct.dense.BiEncoder` (pyterrier_dr's model/stage split,
``BiQueryEncoder``/``BiDocEncoder``/``BiScorer`` in its ``biencoder.py``): ``query_encoder()`` (Q → Q + ``query_vec``),
``doc_encoder()`` (D → D + ``doc_vec``), ``scorer()`` (R → R) and ``retriever(index)`` (Q → R). Each accepts only its
own kind of frame (the model itself dispatches on the input), returns a correctly shaped empty frame without loading
the model, keeps every input column and the input row order. A stage's ``repr`` is the call that built it
(``Promptriever().scorer()``); two stages are equal when their models are.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt

from ..base import InstructReranker
from .._config import Configured
from .._validation import text_hint


def built_by(stage, model, method: str, *args, **kwargs):
    """Records ``model.method(*args, **kwargs)`` as the call that built ``stage`` (its ``repr``)."""
    stage.__dict__["_call"] = (f"{model!r}.{method}", args, kwargs)
    return stage


class _Stage(Configured, pt.Transformer):
    def __init__(self, model):
        self.model = model


class QueryEncoder(_Stage):
    """``Q → Q`` + ``query_vec`` (float32); the vector encodes the composed query+instruction string."""
    schematic = {"label": "QueryEncoder"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with pt.validate.any(inp) as v:
            v.query_frame(extra_columns=["query", "instruction"], mode="instruct")
            v.query_frame(extra_columns=["query"], mode="query")
        return self.model.encode_query_frame(inp)


class DocEncoder(_Stage):
    """``D → D`` + ``doc_vec`` (float32), through the model's document cache."""
    schematic = {"label": "DocEncoder"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with text_hint(self.model.text_field):
            pt.validate.document_frame(inp, [self.model.text_field])
        return self.model.encode_doc_frame(inp)


class DenseScorer(InstructReranker, family=False):
    """``R → R``: the model's scores (the dot product of the query+instruction and passage vectors).

    Distinct composed queries are encoded once per call; passages go through the model's cache, so og/changed
    (or 10 prompts) encode each document once per model."""
    schematic = {"label": "DenseScorer"}

    def __init__(self, model):
        self.model = model
        self.text_field, self.instruction, self.verbose = model.text_field, model.instruction, model.verbose

    def _score(self, df: pd.DataFrame) -> np.ndarray:
        return self.model._score(df)


class DenseRetriever(_Stage):
    """``Q → R``: exact inner-product top-``num_results`` over an :class:`.index.EmbeddingIndex`.

    Output: every input column, then ``docno``, ``score``, ``rank``; queries in input order, documents by decreasing
    score (ties by index order). Equality: the model, the index (its path; an in-memory index by identity) and
    ``num_results`` (an index object has no value identity of its own)."""
    schematic = {"label": "DenseRetriever"}

    def __init__(self, model, index, num_results: int = 1000, corpus=None):
        if int(num_results) < 1:
            raise ValueError(f"num_results must be at least 1, got {num_results!r}")
        super().__init__(model)
        self.index, self.num_results, self.corpus = index, int(num_results), corpus
        self._index_key = index.path or id(index)
        self._corpus_checked = False

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with pt.validate.any(inp) as v:
            v.query_frame(extra_columns=["query", "instruction"], mode="instruct")
            v.query_frame(extra_columns=["query"], mode="query")
        queries = inp.drop(columns=["docno", "score", "rank", "query_vec"], errors="ignore").reset_index(drop=True)
        if len(queries) == 0:
            return queries.assign(docno=pd.Series(dtype=object), score=pd.Series(dtype="float64"),
                                  rank=pd.Series(dtype="int64"))
        if not self.index.built() and self.corpus is not None:
            try:
                self.index = self.model.index(self.corpus(), self.index.path)
                self._corpus_checked = True
            except FileExistsError:  # another process built it while this one waited for the lock: checked below
                self.index = type(self.index)(self.index.path)
        self.index.check(self.model)
        self._check_corpus()
        vectors = self.model.encode_queries(self.model.query_strings(queries))
        scores, rows = self.index.search(vectors, self.num_results, verbose=self.model.verbose)
        k = rows.shape[1]
        out = queries.iloc[np.repeat(np.arange(len(queries)), k)].reset_index(drop=True)
        out["docno"] = self.index.docnos[rows.reshape(-1)]
        out["score"] = scores.reshape(-1).astype("float64")
        out["rank"] = np.tile(np.arange(k, dtype="int64"), len(queries))
        return out

    def _check_corpus(self) -> None:
        """An index built earlier, given a corpus: refused when built from another (read once per stage)."""
        if self.corpus is not None and not self._corpus_checked and self.index.built():
            self.index.check_corpus(self.model, self.corpus())
            self._corpus_checked = True

    def _eq_key(self) -> tuple:
        return (self.model, self._index_key, self.num_results)

    def _fingerprint_parts(self) -> dict:
        """A built index by its revision (on disk: its ``meta.json``; in memory: its rows); an index still to be built
        by the corpus it will be built from."""
        parts = {"model": self.model, "index": self.index, "num_results": self.num_results}
        if not self.index.built():
            return {**parts, "corpus": self.corpus}
        if self.index.path is not None:
            self._check_corpus()  # a saved run keyed on this index is never read for another corpus
        return parts
