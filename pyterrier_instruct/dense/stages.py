"""The PyTerrier stages of a :class:`~pyterrier_instruct.dense.BiEncoder` (pyterrier_dr's model/stage split):
``query_encoder()`` (Q → Q + ``query_vec``), ``doc_encoder()`` (D → D + ``doc_vec``), ``scorer()`` (R → R, rerank mode)
and ``retriever(index)`` (Q → R, retrieval mode). Each validates its input (modes ``instruct``/``query``), returns a
correctly shaped empty frame without loading the model, keeps every input column and the input row order.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt

from .._base import InstructReranker
from .._config import Configured


class _Stage(Configured, pt.Transformer):
    _method = ""

    def __init__(self, model):
        self.model = model

    def __repr__(self) -> str:
        return f"{self.model!r}.{self._method}()"

class QueryEncoder(_Stage):
    """``Q → Q`` + ``query_vec`` (float32); the vector encodes the composed query+instruction string."""
    _method = "query_encoder"
    schematic = {"label": "QueryEncoder"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with pt.validate.any(inp) as v:
            v.query_frame(extra_columns=["instruction"], mode="instruct")
            v.query_frame(mode="query")
        out = inp.copy()
        vectors = self.model.encode_queries(self.model.query_strings(out)) if len(out) else []
        out["query_vec"] = list(vectors)
        return out


class DocEncoder(_Stage):
    """``D → D`` + ``doc_vec`` (float32), through the model's document cache."""
    _method = "doc_encoder"
    schematic = {"label": "DocEncoder"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.document_frame(inp, [self.model.text_field])
        out = inp.copy()
        vectors = self.model.encode_passages(self.model.passage_strings(out)) if len(out) else []
        out["doc_vec"] = list(vectors)
        return out


class DenseScorer(InstructReranker):
    """``R → R``: the dot product (cosine when normalised) of the query+instruction and passage vectors.

    Distinct composed queries are encoded once per call; passages go through the model's cache, so og/changed
    (or 10 prompts) encode each document once per model."""
    schematic = {"label": "DenseScorer"}

    def __init__(self, model):
        self.model = model
        self.text_field, self.instruction, self.verbose = model.text_field, model.instruction, model.verbose

    def _score(self, df: pd.DataFrame) -> np.ndarray:
        q = self.model.encode_queries(self.model.query_strings(df))
        d = self.model.encode_passages(self.model.passage_strings(df))
        return np.einsum("ij,ij->i", q, d).astype("float64")

    def __repr__(self) -> str:
        return f"{self.model!r}.scorer()"


class DenseRetriever(_Stage):
    """``Q → R``: exact inner-product top-``num_results`` over an :class:`.index.EmbeddingIndex`.

    Output: every input column, then ``docno``, ``score``, ``rank``; queries in input order, documents by decreasing
    score (ties by index order)."""
    _method = "retriever"
    schematic = {"label": "DenseRetriever"}

    def __init__(self, model, index, num_results: int = 1000, corpus=None):
        if int(num_results) < 1:
            raise ValueError(f"num_results must be at least 1, got {num_results!r}")
        super().__init__(model)
        self.index, self.num_results, self.corpus = index, int(num_results), corpus
        self._index_key = index.path or id(index)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with pt.validate.any(inp) as v:
            v.query_frame(extra_columns=["instruction"], mode="instruct")
            v.query_frame(mode="query")
        queries = inp.drop(columns=["docno", "score", "rank", "query_vec"], errors="ignore").reset_index(drop=True)
        if len(queries) == 0:
            return queries.assign(docno=pd.Series(dtype=object), score=pd.Series(dtype="float64"), rank=pd.Series(dtype="int64"))
        if not self.index.built() and self.corpus is not None:
            self.index = self.model.index(self.corpus(), self.index.path)
        self.index.check(self.model)
        vectors = self.model.encode_queries(self.model.query_strings(queries))
        scores, rows = self.index.search(vectors, self.num_results, verbose=self.model.verbose)
        k = rows.shape[1]
        out = queries.iloc[np.repeat(np.arange(len(queries)), k)].reset_index(drop=True)
        out["docno"] = self.index.docnos[rows.reshape(-1)]
        out["score"] = scores.reshape(-1).astype("float64")
        out["rank"] = np.tile(np.arange(k, dtype="int64"), len(queries))
        return out

    def _eq_key(self) -> tuple:
        return (self.model, self._index_key, self.num_results)

    def __repr__(self) -> str:
        return f"{self.model!r}.retriever({self.index!r}, num_results={self.num_results})"
