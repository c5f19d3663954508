"""Optional first stages: Terrier (needs Java) and Pyserini (needs pyserini + Java).

Both are plain factory functions that check their requirements when called and raise an error naming
what is missing; importing this module never fails.
"""
from __future__ import annotations

import shutil

from .._optional import is_available, require


def _java_available() -> bool:
    return shutil.which("java") is not None


def TerrierBM25(index_location, num_results: int = 1000, **kwargs):
    """Terrier BM25 (``pt.terrier.Retriever(index, wmodel='BM25')``); needs Java and the Terrier jars."""
    import pyterrier as pt
    if not _java_available():
        raise RuntimeError("TerrierBM25 needs Java (a JDK on PATH) and PyTerrier's Terrier jars; "
                           "use pyterrier_instruct.BM25 (PISA, no Java) instead")
    if not is_available("jnius"):
        raise ImportError("TerrierBM25 needs pyjnius: pip install 'pyterrier[java]'")
    return pt.terrier.Retriever(index_location, wmodel="BM25", num_results=num_results, **kwargs)


def PyseriniBM25(index: str, num_results: int = 1000, **kwargs):
    """Pyserini/Anserini BM25 over a Lucene index; needs ``pyterrier-instruct[pyserini]`` and Java 21."""
    require("pyserini", "pyserini")
    if not _java_available():
        raise RuntimeError("PyseriniBM25 needs Java (JDK 21) on PATH")
    from pyserini.search.lucene import LuceneSearcher
    import pandas as pd
    import pyterrier as pt

    searcher = LuceneSearcher(index)

    def _search(topics: pd.DataFrame) -> pd.DataFrame:
        rows = []
        for qid, query in zip(topics["qid"], topics["query"]):
            for rank, hit in enumerate(searcher.search(str(query), k=num_results)):
                rows.append((qid, hit.docid, float(hit.score), rank))
        res = pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])
        return topics.merge(res, on="qid")

    return pt.apply.generic(_search)
