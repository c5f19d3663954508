"""Optional first stage: Terrier (needs Java and PyTerrier's Terrier jars).

A plain factory function that checks its requirements when called and raises an error naming what is missing; importing
this module never fails. The Pyserini/Anserini first stage is
:class:`~pyterrier_instruct.retrieval.anserini.PyseriniBM25`.
"""
from __future__ import annotations

import shutil

from .._optional import is_available


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

