"""PoolBM25: the FollowIR / InfoSearch "BM25" baseline, a BM25 fitted on each query's candidate pool.

Reproduces FollowIR ``models/bm25/evaluate_bm25.py`` (and InfoSearch's identical copy):

- a ``rank_bm25.BM25Okapi`` (k1 1.5, b 0.75, ε 0.25) per query, over that query's candidates only;
- ``clean(s)``: lowercase → split on ``" "`` → drop NLTK English stopwords (raw token, punctuation
  attached) → Porter-stem → join → delete ``string.punctuation`` → strip; tokens are the non-empty
  pieces of ``split(" ")``;
- document ``(title + " " + text).strip()``; query ``(clean(query) + " " + clean(instruction.strip())).strip()``.

This is not a full-collection BM25 (FollowIR App. F): use :func:`~pyterrier_instruct.retrieval.pisa.BM25`
for a first stage.
"""
from __future__ import annotations

import string
from functools import lru_cache
from importlib import resources
from typing import FrozenSet, Iterable, List, Optional

import numpy as np
import pandas as pd

from ..base import InstructReranker

_PUNCT = str.maketrans("", "", string.punctuation)


def nltk_english_stopwords() -> FrozenSet[str]:
    """NLTK's English stopword list as shipped 2016–mid 2024 (179 words), bundled: nothing is downloaded."""
    text = resources.files("pyterrier_instruct").joinpath("data/nltk_english_stopwords.txt").read_text("utf-8")
    return frozenset(w for w in text.split("\n") if w)


class FollowIRCleaner:
    """The ``clean()`` preprocessing of the FollowIR BM25 baseline, with a memoised Porter stemmer."""

    def __init__(self, stopwords: Optional[Iterable[str]] = None):
        from nltk.stem import PorterStemmer  # the stemmer is code, not nltk_data: nothing to download
        self.stopwords = frozenset(stopwords) if stopwords is not None else nltk_english_stopwords()
        self._stem = lru_cache(maxsize=1 << 20)(PorterStemmer().stem)

    def clean(self, s: str) -> str:
        s = s.lower()
        s = " ".join(self._stem(w) for w in s.split(" ") if w not in self.stopwords)
        return s.translate(_PUNCT).strip()

    def tokens(self, s: str) -> List[str]:
        return [t for t in self.clean(s).split(" ") if t]


class PoolBM25(InstructReranker):
    """Reranks each query's candidates with a BM25 fitted on those candidates (FollowIR Table 2 "BM25").

    Args:
        k1, b, epsilon: BM25Okapi parameters (rank_bm25 defaults, as in the reference).
        text_field: the document text column; a ``title`` column, if present, is prepended.
        instruction: the instruction used when the input has no ``instruction`` column.
        stopwords: override the bundled NLTK English list.
        verbose: a progress bar over the queries (on by default; ``False`` silences it).
    """
    schematic = {"label": "PoolBM25"}
    _lazy = ("_cleaner",)  # nltk's stemmer does not pickle; rebuilt on first use

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, text_field: str = "text",
                 instruction: str = "", stopwords: Optional[Iterable[str]] = None, verbose: bool = True):
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.text_field = text_field
        self.instruction = instruction
        self.stopwords = stopwords
        self.verbose = verbose
        self._cleaner: Optional[FollowIRCleaner] = None

    def _score(self, df: pd.DataFrame) -> np.ndarray:
        from rank_bm25 import BM25Okapi
        if self._cleaner is None:
            self._cleaner = FollowIRCleaner(self.stopwords)
        cleaner = self._cleaner
        text = df[self.text_field].fillna("").astype(str)
        if "title" in df.columns:
            text = df["title"].fillna("").astype(str) + " " + text
        docs = text.str.strip()
        doc_tokens = {}  # per call: og/changed variants share a pool, so tokenise each docno once
        scores = np.zeros(len(df), dtype="float64")
        groups = df.groupby("qid", sort=False).indices
        for qid, idx in self._tqdm(groups.items(), total=len(groups), desc="PoolBM25", unit="query"):
            corpus = []
            for i in idx:
                key = (df["docno"].iat[i], docs.iat[i])
                if key not in doc_tokens:
                    doc_tokens[key] = cleaner.tokens(docs.iat[i])
                corpus.append(doc_tokens[key])
            query, instruction = df["query"].iat[idx[0]], df["instruction"].iat[idx[0]]
            q = (cleaner.clean(str(query)) + " " + cleaner.clean(str(instruction).strip())).strip()
            bm25 = BM25Okapi(corpus, k1=self.k1, b=self.b, epsilon=self.epsilon)
            scores[idx] = bm25.get_scores([t for t in q.split(" ") if t])
        return scores

