"""The embedded full-collection BM25 first stage (pyterrier-pisa; no Java).

``BM25(corpus_iter)`` indexes ``{docno, text[, title]}`` dicts (title prepended to the text) and wraps
PISA's retriever, so it composes like any PyTerrier retriever: ``BM25(corpus) % 100 >> reranker``.
It reads ``query`` only; use ``FoldInstruction() >> bm25`` for a query+instruction first stage.
PISA tokenises the query text itself, so quotes, operators, unicode and very long instructions
cannot break it (tests/test_retrieval.py); a query with no indexable term returns no rows.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import sys
from typing import Dict, Iterable, Iterator, Optional

import pandas as pd
import pyterrier as pt

from ..base import check_text
from .._atomic import replaced_folder, settled, temporary_folder
from .._config import Configured
from .._corpus import recorded
from .._progress import library_progress
from .._progress import tqdm as progress_bar


@contextlib.contextmanager
def _native_stderr_silenced(silence: bool):
    """PISA's and Anserini's native code log straight to file descriptors 1 and 2: hidden while ``silence``. Yields
    the stream for this package's progress bars, which stay visible (a copy of the terminal's descriptor 2 while it
    is hidden)."""
    if not silence:
        yield sys.stderr
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        on_fd2 = sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # replaced by a capture (pytest) or a notebook stream
        on_fd2 = False
    bars = os.fdopen(os.dup(saved[1]), "w") if on_fd2 else sys.stderr
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            yield bars
    finally:
        if bars is not sys.stderr:
            bars.close()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


def _indexing_bar(docs: Iterable[Dict[str, str]], engine: str, verbose: bool, file) -> Iterable[Dict[str, str]]:
    """The package's bar over the documents an engine indexes."""
    return progress_bar(docs, desc=f"{engine} indexing", unit="doc", disable=not verbose, file=file)


#: a docno PISA keeps: its docno file holds one per line, each cut at ASCII whitespace (``\0`` and any other character
#: come back whole: tests/test_folders.py; Anserini keeps every docno: tests/test_anserini.py)
_PISA_DOCNO = re.compile(r"\S+", re.ASCII)


def _docs(corpus: Iterable[Dict], text_field: str, refused: Optional[list] = None) -> Iterator[Dict[str, str]]:
    """``{docno, text}`` of each document, the title before the text. With ``refused`` (PISA, which reads in a thread
    that only reports errors), a docno PISA cannot keep ends the documents, the reason appended to ``refused``."""
    for i, doc in enumerate(corpus):
        if "docno" not in doc:
            raise KeyError(f"BM25: corpus document #{i} has no 'docno' (keys: {sorted(doc)})")
        if text_field not in doc:
            raise KeyError(f"BM25: corpus document {doc['docno']!r} has no {text_field!r} field (keys: {sorted(doc)})")
        docno = str(doc["docno"])
        if refused is not None and not _PISA_DOCNO.fullmatch(docno):
            refused.append(f"BM25: corpus document #{i} has docno {docno!r}, which PISA cannot keep (it cuts docnos at "
                           "spaces, tabs and line breaks, and skips empty ones: results would name other documents); "
                           "rename it, or index with pti.PyseriniBM25, which keeps any docno")
            return
        text = str(doc[text_field] or "")
        title = doc.get("title")
        if title:
            text = f"{title} {text}"
        yield {"docno": docno, "text": text.strip()}


def bm25_index(corpus: Iterable[Dict], path: Optional[str] = None, *, text_field: str = "text",
               stemmer: str = "porter2", stops: str = "terrier", overwrite: bool = False,
               verbose: bool = True, threads: int = 1):
    """Builds (or reuses) a PISA index of ``corpus`` at ``path`` (if None, a temporary folder removed at exit), with a
    progress bar over the documents unless ``verbose=False`` (PISA's own log follows
    :func:`~pyterrier_instruct.library_progress`). A build replaces ``path`` whole
    (:func:`~pyterrier_instruct._atomic.replaced_folder`: a sibling folder swapped in, under ``<path>.lock``), so a
    failed or killed build leaves the previous index. A
    reused index is checked against ``corpus`` (:mod:`pyterrier_instruct._corpus`): built from another corpus, it is
    refused (:class:`~pyterrier_instruct._corpus.CorpusChanged`)."""
    from pyterrier_pisa import PisaIndex

    from .. import _corpus
    if path is None:
        path = temporary_folder("pti-pisa-")
        overwrite = True
    settled(path)
    settings = dict(text_field="text", stemmer=stemmer, stops=stops, threads=threads)
    index = PisaIndex(path, **settings)
    fields = (text_field, "title")
    if not index.built() or overwrite:  # built in a sibling folder that replaces path whole, its corpus record inside
        with replaced_folder(path, what=f"the PISA index at {path}") as tmp:
            digest, refused = _corpus.CorpusDigest(corpus, fields), []
            with _native_stderr_silenced(not library_progress()) as bars:
                docs = iter(_indexing_bar(_docs(digest, text_field, refused), "PISA", verbose, bars))
                first = next(docs, None)  # PISA peeks at it (a StopIteration where there is none)
                if first is not None:
                    PisaIndex(tmp, **settings, overwrite=True).index(itertools.chain([first], docs))
            if refused or digest.done and not digest.count:
                raise ValueError(refused[0] if refused else "BM25: the corpus holds no documents; nothing to index")
            if not digest.done:  # PISA reads the corpus in a thread whose error it only reports: no index from a part
                kept = f"the previous index at {path} is kept" if index.built() else "no index was built"
                raise RuntimeError(f"PISA: reading the corpus stopped after {digest.count} documents (the error is in "
                                   f"the warning above); {kept}")
            _corpus.record(tmp, digest)
        index = PisaIndex(path, **settings)
    else:
        _corpus.check(f"the PISA index at {path}", _corpus.recorded(path), corpus, fields,
                      f"remove {path} (or pass another path) to index the corpus given")
    return index


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class BM25(Configured, pt.Transformer):
    """Full-collection BM25 (``Q → R``) over a corpus indexed with PISA, or over an existing PISA index.

    Args:
        corpus: iterable of ``{docno, text[, title]}`` dicts; None to open the index at ``path``.
        path: where the index lives; without one, a temporary folder removed when the Python process exits.
        k1, b: BM25 parameters (PISA/Anserini defaults 0.9, 0.4).
        num_results: depth of the ranking (``bm25 % k`` lowers it).
        stemmer, stops: PISA analysis (``porter2``/``krovetz``/``none``; ``terrier``/``lucene``/``none``).
        verbose: a progress bar over the documents indexed (on by default; ``False`` silences it). PISA's own log
            follows :func:`~pyterrier_instruct.library_progress`.

    Control characters in the query (which PISA's parser rejects) are read as spaces; the output keeps
    the input ``query`` unchanged. It pickles by its index path (the searcher, a native PISA context, is opened again
    on first use), so ``.parallel()`` and other processes can run it.
    """
    schematic = {"label": "BM25"}
    _lazy = ("_retriever",)

    def __init__(self, corpus: Optional[Iterable[Dict]] = None, path: Optional[str] = None, *, k1: float = 0.9,
                 b: float = 0.4, num_results: int = 1000, text_field: str = "text", stemmer: str = "porter2",
                 stops: str = "terrier", verbose: bool = True, threads: int = 1):
        if corpus is None:
            if path is None or not os.path.exists(settled(path)):
                raise FileNotFoundError(f"BM25: no corpus given and no PISA index at path={path!r}")
            from pyterrier_pisa import PisaIndex
            self.index = PisaIndex(path, threads=threads)
        else:
            self.index = bm25_index(corpus, path, text_field=text_field, stemmer=stemmer, stops=stops,
                                    verbose=verbose, threads=threads)
        #: what the index was built from, for provenance: the corpus's ``source`` (e.g.
        #: ``pti.load_dataset('instruct-mini')`` for a dataset's ``get_corpus_iter()``), its digest
        #: (``<documents>:<hash>``) and whether the folder is temporary
        self.built_from = {"corpus": getattr(corpus, "source", None), "digest": recorded(str(self.index.path)),
                           "temporary": path is None and corpus is not None}
        self.k1, self.b, self.num_results, self.verbose = k1, b, num_results, verbose
        self._retriever = None

    def _searcher(self):
        if self._retriever is None:
            with _native_stderr_silenced(not library_progress()):
                self._retriever = self.index.bm25(k1=self.k1, b=self.b, num_results=self.num_results, verbose=False)
        return self._retriever

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp, extra_columns=["query"])
        check_text(inp, ["query"], "BM25")
        clean = inp.assign(query=inp["query"].astype(str).str.replace(_CONTROL, " ", regex=True))
        with _native_stderr_silenced(not library_progress()):  # the first search compresses the index, loudly
            res = self._searcher()(clean)
        if len(res) and (clean["query"].to_numpy() != inp["query"].to_numpy()).any():
            res["query"] = res["qid"].map(dict(zip(inp["qid"], inp["query"])))
        return res

    def fuse_rank_cutoff(self, k: int) -> Optional["BM25"]:
        if k >= self.num_results:
            return None
        clone = object.__new__(BM25)
        clone.__dict__.update(self.__dict__)
        clone.num_results, clone._retriever = k, None
        return clone

    def __repr__(self) -> str:
        """The call that opens the index (``BM25('/path', ...)``); an index in a temporary folder (gone when the process
        ends) by what it was built from: ``BM25(pti.load_dataset('instruct-mini').get_corpus_iter(), ...)``, or the
        corpus's digest when its source is unknown."""
        params = f"k1={self.k1}, b={self.b}, num_results={self.num_results}"
        built = getattr(self, "built_from", {})
        if built.get("temporary"):
            corpus = built.get("corpus")
            corpus = f"{corpus}.get_corpus_iter()" if corpus else f"<corpus {built.get('digest')}>"
            return f"BM25({corpus}, {params})"
        return f"BM25({str(self.index.path)!r}, {params})"

    def _eq_key(self) -> tuple:
        return (repr(self),)

    def _fingerprint_parts(self) -> dict:
        """The index by content (the digest of the corpus it was built from and its analysis, never its folder, which is
        a new temporary one in every process), the query's stopwords and the BM25 settings."""
        return {"index": self.index, "stops": self.index.stops, "k1": self.k1, "b": self.b,
                "num_results": self.num_results}
