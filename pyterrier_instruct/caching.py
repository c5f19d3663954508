"""pyterrier-caching's caches, keyed on what an instruction-following model reads.

``pyterrier_caching.ScorerCache(path, scorer)`` keys a score on ``(query, docno)`` (``scorer_cache.py``,
``Sqlite3ScorerCache``: ``group='query'``, ``key='docno'``). FollowIR's ``-og`` and ``-changed`` variants share the query
text and differ only in the ``instruction`` column, so a plain ScorerCache hands the og score to the changed query (p-MRR 0
on every pair), and both variants in one frame insert the same key twice (``sqlite3.IntegrityError: UNIQUE constraint
failed``). It does not know the scorer either: another checkpoint, template or score mode behind the same path hits. Its
``RetrieverCache`` keys on every input column by default (the instruction included) but not on the retriever, and keeps
the qid of the query that filled it (``on='query'`` then also ignores the instruction); ``KeyValueCache`` keys on the
columns named in ``key=`` only.

:class:`ScorerCache` and :class:`RetrieverCache` are pyterrier-caching's ``Sqlite3ScorerCache`` and
``DbmRetrieverCache`` fed a frame whose ``qid`` is a key of what the stage reads: the stage's identity (its
:func:`~pyterrier_instruct._fingerprint.fingerprint`: class, checkpoint and revision, template, every setting; or
``identity=``), the query as the model sees it (a query :class:`~pyterrier_instruct.rewrite.FoldInstruction` folded is read
unfolded by this package's models, :func:`~pyterrier_instruct.instructions.query_instructions`) and the instruction (the
stage's default when the row has none). A stage of another package is keyed on the folded ``query`` of a folded row as
well. Rows
that share a key are looked up (and scored or retrieved) once. The output is the input with ``score`` and ``rank``
(:class:`ScorerCache`) or the stage's ranking under the input's qids (:class:`RetrieverCache`; its text columns as
``object``, as pyterrier-caching reads a hit back with pandas' string dtype).
"""
from __future__ import annotations

import hashlib
import logging
from typing import List, Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from ._config import Configured
from ._optional import require

__all__ = ["ScorerCache", "RetrieverCache"]

log = logging.getLogger(__name__)
_SEP = "\x1f"


def plain_caches(system: pt.Transformer) -> List[str]:
    """The pyterrier-caching caches inside ``system`` (not this module's) whose key leaves the instruction out: a score
    cache at its default key (``group='query'``, ``key='docno'``; one keyed on columns the user chose is trusted), a
    retriever cache keyed ``on`` columns without ``instruction``; named by their ``repr``. Empty when the system folds the instruction
    into the query (:class:`~pyterrier_instruct.rewrite.FoldInstruction`: the query column then differs per variant) or
    when pyterrier-caching was never imported (no such cache can be in it)."""
    import sys
    if "pyterrier_caching" not in sys.modules:
        return []
    from .rewrite import FoldInstruction
    found, seen, stack = [], set(), [system]
    while stack:
        node = stack.pop()
        if id(node) in seen or not isinstance(node, pt.Transformer):
            continue
        seen.add(id(node))
        if isinstance(node, FoldInstruction):
            return []
        if not isinstance(node, _Keyed) and type(node).__module__.startswith("pyterrier_caching."):
            if hasattr(node, "group") and hasattr(node, "key"):  # a score cache: flagged at its default key only
                flagged = node.group in (None, "query") and node.key in (None, "docno")
            elif hasattr(node, "on") and hasattr(node, "retriever"):  # a retriever cache: on=None keys every input column
                on = node.on
                flagged = on is not None and "instruction" not in ([on] if isinstance(on, str) else list(on))
            else:
                flagged = False
            if flagged:
                found.append(repr(node))
        try:
            children = pt.inspect.subtransformers(node)
        except Exception:  # a foreign transformer pt.inspect cannot read: nothing more to walk
            continue
        for child in children.values():
            stack.extend(child if isinstance(child, (list, tuple)) else [child])
    return found


def identity_of(stage: pt.Transformer, identity: Optional[str], who: str) -> str:
    """``identity`` if given, else the stage's fingerprint; a stage without one is a clear error."""
    if identity is not None:
        return str(identity)
    from ._fingerprint import NotFingerprintable, fingerprint
    try:
        return fingerprint(stage)
    except NotFingerprintable as e:
        raise ValueError(f"{who}: the stage has no fingerprint to key the cache on ({e}); pass identity='...' naming "
                         "what decides its output (model, checkpoint, template, settings), and change it whenever "
                         "any of those changes") from None


def read_keys(stage: pt.Transformer, identity: str, inp: pd.DataFrame) -> np.ndarray:
    """One hex key per row of ``inp``: ``identity``, the query and instruction ``stage`` reads (and, for a stage of
    another package, the ``query`` column as given)."""
    from .base import InstructReranker
    from .instructions import folded_rows, query_instructions
    ours = isinstance(stage, InstructReranker)
    view = query_instructions(inp, stage.instruction if ours else "")
    joined = view["query"].astype(str).str.cat(view["instruction"], sep=_SEP)
    if not ours:  # a stage of another package may read the folded query: a folded row keys on it too
        folded = folded_rows(inp)
        joined = joined.where(~folded, joined + _SEP + inp["query"].astype(str))
    joined = joined.to_numpy()
    head = identity + _SEP
    return np.array([hashlib.sha256((head + text).encode("utf-8")).hexdigest() for text in joined], dtype=object)


def _start(cache, stage: pt.Transformer, path, identity: Optional[str], verbose: bool) -> None:
    """The state both caches share: the folder, the stage's key, nothing opened, the counters at 0."""
    who = type(cache).__name__
    require("pyterrier_caching", "caching")
    if not isinstance(stage, pt.Transformer):
        raise TypeError(f"{who} needs a pt.Transformer to cache, got {type(stage).__name__}")
    cache.path, cache.identity, cache.verbose = None if path is None else str(path), identity, verbose
    cache._key = identity_of(stage, identity, who)
    cache._cache = None
    cache.hits = cache.misses = 0


class _Keyed(Configured, pt.Transformer):
    """What the two caches share: the lazily opened pyterrier-caching object and the counters."""
    _lazy = ("_cache",)

    def _count(self, rows: int, missed: int) -> None:
        self.hits += rows - missed
        if self.verbose:
            log.info("%r: %d hit(s), %d miss(es)", self, rows - missed, missed)


def _modes(stage: pt.Transformer, needed: List[str], keep) -> List[List[str]]:
    """``stage``'s input modes (``pt.inspect``) that ``keep`` accepts, each with the ``needed`` columns added; ``[needed]``
    when its inputs cannot be read."""
    modes = pt.inspect.transformer_inputs(stage, strict=False) or []
    out = [list(m) + [c for c in needed if c not in m] for m in modes if keep(m)]
    return out or [list(needed)]


class ScorerCache(_Keyed):
    """pyterrier-caching's ``ScorerCache`` (SQLite) around ``scorer``, keyed on the scorer's identity, the query as the
    model sees it, the instruction and the docno (see the module docstring): og and changed variants of a query never
    share a score, another checkpoint, template or score mode never hits, and a second pass scores no row.

    Args:
        path: the cache's folder (created on first use); ``None``: a temporary one.
        scorer: a pointwise scorer (``R → R``); a listwise reranker's score depends on the other documents and is refused.
        identity: what keys the scorer when it has no fingerprint (``pt.apply`` functions, foreign transformers).
        verbose: log each call's hits and misses (``logging``, INFO; pyterrier-caching's own line is a ``print``).

    ``hits`` and ``misses`` count the rows found and scored so far (rows sharing a key count once).
    """
    schematic = {"label": "ScorerCache"}

    def __init__(self, path: Optional[str] = None, scorer: Optional[pt.Transformer] = None, *,
                 identity: Optional[str] = None, verbose: bool = True):
        from .listwise import ListwiseReranker
        if isinstance(scorer, ListwiseReranker):
            raise TypeError(f"ScorerCache: {scorer!r} is listwise (a document's score depends on the others ranked with "
                            "it), so its scores cannot be cached per document; cache its run with pti.SavedRun")
        self.scorer = scorer
        _start(self, scorer, path, identity, verbose)

    def cache(self):
        """The pyterrier-caching ``Sqlite3ScorerCache`` underneath (opened on first use; its ``qid`` groups are keys)."""
        if self._cache is None:
            from pyterrier_caching import Sqlite3ScorerCache
            self._cache = Sqlite3ScorerCache(self.path, _Counting(self.scorer, self), group="qid", key="docno")
        return self._cache

    def transform_inputs(self) -> List[List[str]]:
        """The scorer's reranking modes (``pt.inspect``), each with ``qid``, ``query`` and ``docno``."""
        return _modes(self.scorer, ["qid", "query", "docno"], lambda m: "qid" in m and "docno" in m)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "docno"])
        if not len(inp):
            return inp.drop(columns=["score", "rank"], errors="ignore").assign(score=pd.Series(dtype=float),
                                                                               rank=pd.Series(dtype=int))
        keys = read_keys(self.scorer, self._key, inp)
        work = inp.assign(qid=keys)
        unique = work.drop_duplicates(["qid", "docno"])
        before = self.misses
        scored = self.cache()(unique)
        self._count(len(unique), self.misses - before)
        score = dict(zip(zip(scored["qid"], scored["docno"]), scored["score"].astype(float)))
        out = inp.drop(columns=["score", "rank"], errors="ignore")
        out = out.assign(score=[score[k] for k in zip(keys, inp["docno"])])
        return pt.model.add_ranks(out)


class _Counting(pt.Transformer):
    """The scorer as pyterrier-caching calls it on the misses: counts the rows it is given."""

    def __init__(self, scorer: pt.Transformer, owner):
        self.scorer, self.owner = scorer, owner

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        self.owner.misses += len(inp)
        return self.scorer(inp)

    def __repr__(self) -> str:
        return repr(self.scorer)


class RetrieverCache(_Keyed):
    """pyterrier-caching's ``RetrieverCache`` (``dbm.dumb``) around ``retriever`` (``Q → R``), keyed on the retriever's
    identity and the query and instruction it reads (see the module docstring); the ranking comes back under the input's
    qids, whichever query filled the cache.

    Args:
        path: the cache's folder; ``None``: a temporary one.
        retriever: a first stage (``Q → R``), e.g. a dense retriever reading the instruction, or BM25 after
            :class:`~pyterrier_instruct.rewrite.FoldInstruction`.
        identity: what keys the retriever when it has no fingerprint.
        verbose: log each call's hits and misses (``logging``, INFO; pyterrier-caching's own line is a ``print``).

    ``hits`` and ``misses`` count the queries found and retrieved so far (queries sharing a key count once).
    """
    schematic = {"label": "RetrieverCache"}

    def __init__(self, path: Optional[str] = None, retriever: Optional[pt.Transformer] = None, *,
                 identity: Optional[str] = None, verbose: bool = True):
        self.retriever = retriever
        _start(self, retriever, path, identity, verbose)

    def cache(self):
        """The pyterrier-caching ``DbmRetrieverCache`` underneath (its ``qid`` keys are keys of what is read)."""
        if self._cache is None:
            from pyterrier_caching import DbmRetrieverCache
            self._cache = DbmRetrieverCache(self.path, _Counting(self.retriever, self), on="qid")
        return self._cache

    def transform_inputs(self) -> List[List[str]]:
        """The retriever's query modes (``pt.inspect``), each with ``qid`` and ``query``."""
        return _modes(self.retriever, ["qid", "query"], lambda m: "docno" not in m)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp, extra_columns=["query"])
        if not len(inp):
            return self.retriever(inp)
        keys = read_keys(self.retriever, self._key, inp)
        unique = inp.assign(qid=keys).drop_duplicates("qid")
        before = self.misses
        found = self.cache()(unique)
        self._count(len(unique), self.misses - before)
        added: List[str] = [c for c in found.columns if c not in inp.columns or c in ("docno", "score", "rank")]
        found = found[["qid"] + [c for c in added if c != "qid"]].rename(columns={"qid": "_pti_key"})
        strings = [c for c in found.columns if isinstance(found[c].dtype, pd.StringDtype)]
        found = found.astype({c: object for c in strings})  # a hit is read back with pandas' string dtype; a miss is not
        out = inp.assign(_pti_key=keys).merge(found, on="_pti_key", how="inner").drop(columns="_pti_key")
        return out
