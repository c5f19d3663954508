"""The Pyserini/Anserini BM25 first stage (Lucene; needs ``pyterrier-instruct[pyserini]``).

``PyseriniBM25(corpus_iter)`` indexes ``{docno, text[, title]}`` with pyterrier-anserini's indexer (Anserini's
defaults) and retrieves with its BM25 retriever; ``PyseriniBM25(path)`` opens an existing Lucene index. It reads
``query`` only (``FoldInstruction() >> bm25`` searches query + instruction). The query is never parsed (Anserini's
bag-of-words generator), so operators, CJK and long instructions cannot break it; Lucene's 1024-clause cap is lifted.
Java: :mod:`pyterrier_instruct.retrieval._java`.
"""
from __future__ import annotations

import glob
import os
import re
from typing import Dict, Iterable, Optional, Union

import pandas as pd
import pyterrier as pt

from ..base import check_text
from .._atomic import replaced_folder, settled
from .._config import Configured
from .._optional import is_available, require
from .. import _corpus
from . import _java
from .._progress import library_progress
from .pisa import _docs, _indexing_bar, _native_stderr_silenced, temporary_folder

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MAX_CLAUSES = 2 ** 31 - 1  # Lucene's cap (1024 by default) on one query's distinct terms


def _check_installed() -> None:
    for module in ("pyserini", "pyterrier_anserini", "jnius"):
        if not is_available(module):
            require(module, "pyserini")  # raises the ImportError naming the extra


def is_lucene_index(path: str) -> bool:
    """A committed Lucene index lives at ``path`` (it has a ``segments_N`` file)."""
    return bool(glob.glob(os.path.join(path, "segments_*")))


def _start_java() -> None:
    _java.start()
    pt.java.autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(_MAX_CLAUSES)


def anserini_index(corpus: Iterable[Dict], path: Optional[str] = None, *, text_field: str = "text",
                   overwrite: bool = False, verbose: bool = True) -> str:
    """Builds (or reuses) a Lucene index of ``corpus`` at ``path`` (if None, a temporary folder removed at exit) with
    pyterrier-anserini's indexer, with a progress bar over the documents unless ``verbose=False`` (Anserini's and
    Lucene's own logs follow :func:`~pyterrier_instruct.library_progress`); returns the path."""
    _check_installed()
    _java.find_java_home()  # fail before reading the corpus when there is no usable Java
    if path is None:
        path = os.path.join(temporary_folder("pti-anserini-"), "index")
    path = settled(path)
    fields = (text_field, "title")
    if is_lucene_index(path) and not overwrite:
        _corpus.check(f"the Lucene index at {path}", _corpus.recorded(path, inside=False), corpus, fields,
                      f"remove {path} and {_corpus.record_path(path, inside=False)} (or pass another path) to index it")
        return path
    if os.path.exists(path) and not (overwrite or is_lucene_index(path) or not os.listdir(path)
                                     or os.path.isfile(os.path.join(path, "pt_meta.json"))):
        raise FileExistsError(f"PyseriniBM25: {path} exists and is not a Lucene index; choose another path")
    _start_java()
    from pyterrier_anserini import AnseriniIndex
    library = library_progress()
    record = _corpus.record_path(path, inside=False)
    # built in a sibling folder that replaces path whole (a failed or killed build leaves the previous index); the
    # old corpus record goes just before the swap, the new one is written after it
    with replaced_folder(path, what=f"the Lucene index at {path}") as tmp:
        os.rmdir(tmp)  # the indexer makes its folder
        with _native_stderr_silenced(not library) as bars:  # Anserini logs its settings, Lucene its JDK warnings
            digest = _corpus.CorpusDigest(corpus, fields)
            docs = _indexing_bar(_docs(digest, text_field), "Anserini", verbose, bars)
            AnseriniIndex(tmp).indexer(fields=["text"], verbose=library).index(docs)
        if os.path.exists(record):
            os.remove(record)
    _corpus.record(path, digest, inside=False)
    return path


class PyseriniBM25(Configured, pt.Transformer):
    """Full-collection BM25 (``Q → R``) with Anserini (Lucene) over a corpus, or over an existing Lucene index.

    Args:
        corpus: iterable of ``{docno, text[, title]}`` dicts (e.g. ``dataset.get_corpus_iter()``); or the path of an
            existing Lucene index (same as ``path=``); None to open the index at ``path``.
        path: where the index lives; without one, a temporary folder removed at exit. An index already there is reused.
        k1, b: BM25 parameters (Anserini/PISA defaults 0.9, 0.4).
        num_results: depth of the ranking (``bm25 % k`` lowers it).
        text_field: the corpus field to index (the title, when present, is prepended).
        verbose: a progress bar over the documents indexed (on by default; ``False`` silences it). Anserini's and
            Lucene's own logs and bars follow :func:`~pyterrier_instruct.library_progress`.

    The output keeps every input column, the input ``query`` unchanged. Java starts on the first indexing or
    non-empty search (an empty frame returns an empty ranking without it).
    """
    schematic = {"label": "BM25 (Anserini)"}
    _lazy = ("_retriever",)  # the Java searcher; reopened on first use

    def __init__(self, corpus: Union[Iterable[Dict], str, os.PathLike, None] = None, path: Optional[str] = None, *,
                 k1: float = 0.9, b: float = 0.4, num_results: int = 1000, text_field: str = "text",
                 verbose: bool = True):
        _check_installed()
        if isinstance(corpus, (str, os.PathLike)):
            if path is not None:
                raise TypeError("PyseriniBM25: give the index path once (as the first argument or as path=)")
            corpus, path = None, os.fspath(corpus)
        if corpus is None:
            if path is None or not is_lucene_index(settled(path)):
                raise FileNotFoundError(f"PyseriniBM25: no corpus given and no Lucene index at path={path!r}")
            _java.find_java_home()
            self.path = os.path.abspath(path)
        else:
            self.path = anserini_index(corpus, path, text_field=text_field, verbose=verbose)
        self.k1, self.b, self.num_results, self.verbose = float(k1), float(b), int(num_results), verbose
        self._retriever = None

    def _ranker(self):
        if self._retriever is None:
            _start_java()
            from pyterrier_anserini import AnseriniIndex
            self._retriever = AnseriniIndex(self.path).bm25(k1=self.k1, b=self.b, num_results=self.num_results)
        return self._retriever

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp, extra_columns=["query"])
        if len(inp) == 0:
            return pd.DataFrame(columns=list(inp.columns) + ["docno", "score", "rank"])
        check_text(inp, ["query"], "PyseriniBM25")
        query = inp["query"].astype(str)
        clean = inp.assign(query=query.str.replace(_CONTROL, " ", regex=True))
        with _native_stderr_silenced(not library_progress()):  # Lucene warns about the JDK on the first search
            res = self._ranker()(clean)
        res["query"] = res["qid"].map(dict(zip(inp["qid"], inp["query"]))) if len(res) else res["query"]
        return res

    def fuse_rank_cutoff(self, k: int) -> Optional["PyseriniBM25"]:
        if k >= self.num_results:
            return None
        clone = object.__new__(PyseriniBM25)
        clone.__dict__.update(self.__getstate__())
        clone.num_results, clone._retriever = k, None
        return clone

    def __repr__(self) -> str:
        return f"PyseriniBM25({self.path!r}, k1={self.k1}, b={self.b}, num_results={self.num_results})"

    def _eq_key(self) -> tuple:  # the identity is the index, not the corpus iterator it was built from
        return (self.path, self.k1, self.b, self.num_results)

    def _fingerprint_parts(self) -> dict:  # the index by content (its corpus digest or Lucene commit), never its folder
        from .._fingerprint import index_revision
        return {"index": index_revision(self.path), "k1": self.k1, "b": self.b, "num_results": self.num_results}
