"""Caches of scores and retrieval results, keyed on what an instruction-following model reads.

pyterrier-caching's ``ScorerCache`` keys a score on ``(query, docno)``, so FollowIR's changed query gets the og score.
:class:`ScorerCache` and :class:`RetrieverCache` key every row on the stage's fingerprint (or ``identity=``), the query
as the model sees it and the instruction (the stage's default when the row has none; :func:`read_keys`);
:func:`plain_caches` finds pyterrier-caching caches keyed without the instruction. Both stand on
:class:`~pyterrier_instruct._store.SqliteStore` (``INSERT OR IGNORE``, one transaction per call), so two processes
filling one cache both finish. :class:`RetrieverCache` stores pickles (protocol 5): open only folders your jobs wrote.
"""
from __future__ import annotations

import hashlib
import logging
import pickle
from typing import Dict, List, Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from ._config import Configured
from ._store import SqliteStore

__all__ = ["ScorerCache", "RetrieverCache"]

log = logging.getLogger(__name__)
_SEP = "\x1f"


class ScoreStore(SqliteStore):
    """The folder of a :class:`ScorerCache`: one score per (key, docno)."""
    ARTIFACT_TYPE = "scorer_cache"
    SCHEMA = "CREATE TABLE IF NOT EXISTS scores (key, docno, score REAL, PRIMARY KEY (key, docno)) WITHOUT ROWID"


class RunStore(SqliteStore):
    """The folder of a :class:`RetrieverCache`: one pickled result frame per key."""
    ARTIFACT_TYPE = "retriever_cache"
    SCHEMA = "CREATE TABLE IF NOT EXISTS runs (key TEXT PRIMARY KEY, frame BLOB NOT NULL) WITHOUT ROWID"


def _nodes(system):
    """Every transformer in ``system`` (``pt.inspect.subtransformers``, depth first), each once."""
    seen, stack = set(), [system]
    while stack:
        node = stack.pop()
        if id(node) in seen or not isinstance(node, pt.Transformer):
            continue
        seen.add(id(node))
        yield node
        try:
            children = pt.inspect.subtransformers(node)
        except Exception:  # a foreign transformer pt.inspect cannot read: nothing more to walk
            continue
        for child in children.values():
            stack.extend(child if isinstance(child, (list, tuple)) else [child])


def plain_caches(system: pt.Transformer, around_ours: bool = False) -> List[str]:
    """The pyterrier-caching caches inside ``system`` (not this module's) whose key leaves the instruction out: a score
    cache at its default key (``group='query'``, ``key='docno'``; one keyed on columns the user chose is trusted), a
    retriever cache keyed ``on`` columns without ``instruction``; named by their ``repr``; with ``around_ours``, only
    those wrapping a stage of this package. Empty when the system folds the instruction into the query
    (:class:`~pyterrier_instruct.rewrite.FoldInstruction`: the query column then differs per variant) or when
    pyterrier-caching was never imported (no such cache can be in it)."""
    import sys
    if "pyterrier_caching" not in sys.modules:
        return []
    from .rewrite import FoldInstruction
    nodes = list(_nodes(system))
    if any(isinstance(node, FoldInstruction) for node in nodes):
        return []
    found = []
    for node in nodes:
        if isinstance(node, _Keyed) or not type(node).__module__.startswith("pyterrier_caching."):
            continue
        score_cache = hasattr(node, "group") and hasattr(node, "key")  # flagged at its default key only
        on = getattr(node, "on", None) if hasattr(node, "retriever") else None  # None: keys every input column
        if not (node.group in (None, "query") and node.key in (None, "docno") if score_cache
                else on is not None and "instruction" not in ([on] if isinstance(on, str) else on)):
            continue
        if not around_ours or any(type(n).__module__.startswith("pyterrier_instruct.") for n in _nodes(node)):
            found.append(repr(node))
    return found


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


class _Keyed(Configured, pt.Transformer):
    """What the two caches share: the store, the stage's key and the counters."""
    _store_class = SqliteStore

    def _start(self, stage: pt.Transformer, path, identity: Optional[str], verbose: bool) -> None:
        from ._fingerprint import NotFingerprintable, fingerprint
        who = type(self).__name__
        if not isinstance(stage, pt.Transformer):
            raise TypeError(f"{who} needs a pt.Transformer to cache, got {type(stage).__name__}")
        self.path, self.identity, self.verbose = None if path is None else str(path), identity, verbose
        try:
            self._key = fingerprint(stage) if identity is None else str(identity)
        except NotFingerprintable as e:
            raise ValueError(f"{who}: the stage has no fingerprint to key the cache on ({e}); pass identity='...' "
                             "naming what decides its output (model, checkpoint, template, settings), and change it "
                             "whenever any of those changes") from None
        self.store = self._store_class(path)
        self.hits = self.misses = 0

    def _count(self, rows: int, missed: int) -> None:
        self.hits, self.misses = self.hits + rows - missed, self.misses + missed
        if self.verbose:
            log.info("%r: %d hit(s), %d miss(es)", self, rows - missed, missed)


def _modes(stage: pt.Transformer, needed: List[str], keep) -> List[List[str]]:
    """``stage``'s input modes (``pt.inspect``) that ``keep`` accepts, plus ``needed``; ``[needed]`` if unreadable."""
    modes = pt.inspect.transformer_inputs(stage, strict=False) or []
    out = [list(m) + [c for c in needed if c not in m] for m in modes if keep(m)]
    return out or [list(needed)]


class ScorerCache(_Keyed):
    """``scorer``'s scores keyed on its identity, the query and instruction it reads and the docno (module docstring):
    og and changed variants never share a score, another checkpoint or template never hits, a second pass scores none.

    Args:
        path: the cache's folder (created on first use); ``None``: a temporary one.
        scorer: a pointwise scorer (``R → R``); a listwise or setwise reranker or
            :class:`~pyterrier_instruct.PoolBM25`, whose score depends on the other documents, is refused.
        identity: what keys the scorer when it has no fingerprint (``pt.apply`` functions, foreign transformers).
        verbose: log each call's hits and misses (``logging``, INFO).

    ``hits`` and ``misses`` count the rows found and scored so far (rows sharing a key count once).
    """
    schematic = {"label": "ScorerCache"}
    _store_class = ScoreStore

    def __init__(self, path: Optional[str] = None, scorer: Optional[pt.Transformer] = None, *,
                 identity: Optional[str] = None, verbose: bool = True):
        from .listwise import ListwiseReranker
        from .retrieval import PoolBM25
        from .setwise.base import SetwiseBase
        if isinstance(scorer, (ListwiseReranker, SetwiseBase, PoolBM25)):
            raise TypeError(f"ScorerCache: {scorer!r} is listwise, setwise or fitted on the pool (a document's score "
                            "depends on the others ranked with it), so its scores cannot be cached per document; cache "
                            "its run with pti.SavedRun")
        self.scorer = scorer
        self._start(scorer, path, identity, verbose)

    def transform_inputs(self) -> List[List[str]]:
        """The scorer's reranking modes (``pt.inspect``), each with ``qid``, ``query`` and ``docno``."""
        return _modes(self.scorer, ["qid", "query", "docno"], lambda m: "qid" in m and "docno" in m)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        shape = self.scorer(inp.iloc[:0])  # the scorer's own output columns and dtypes; refuses what it refuses
        if not len(inp):
            return shape
        pt.validate.columns(inp, includes=["qid", "query", "docno"])
        from .base import first_stage_columns
        out = first_stage_columns(inp)
        unknown = [c for c in shape.columns if c not in out.columns and c not in ("score", "rank")]
        if unknown:
            raise TypeError(f"ScorerCache keeps only the score, but {self.scorer!r} also outputs {unknown}: cache its "
                            "run with pti.SavedRun instead")
        keys, docnos = read_keys(self.scorer, self._key, inp), inp["docno"].astype(str).to_numpy()
        pairs = list(zip(keys, docnos))
        found = {(k, d): s for k, d, s in
                 self.store.select_in("SELECT key, docno, score FROM scores WHERE key IN {keys}", pd.unique(keys))}
        todo = ~pd.Series(pairs).duplicated().to_numpy() & np.array([p not in found for p in pairs], dtype=bool)
        if todo.any():
            scored = self.scorer(inp[todo])
            got = dict(zip(zip(scored["qid"].astype(str), scored["docno"].astype(str)), scored["score"].astype(float)))
            new = [(k, d, got[(q, d)]) for k, q, d in zip(keys[todo], inp["qid"].astype(str)[todo], docnos[todo])]
            self.store.insert("scores", ("key", "docno", "score"), new)
            found.update(((k, d), s) for k, d, s in new)
        self._count(len(set(pairs)), int(todo.sum()))
        out["score"] = np.array([found[p] for p in pairs], dtype=float).astype(shape["score"].dtype)
        return pt.model.add_ranks(out)[list(shape.columns)]


class RetrieverCache(_Keyed):
    """``retriever``'s results (``Q → R``) keyed on its identity and the query and instruction it reads (module
    docstring); a stored ranking comes back under the input's qids, whichever query filled the cache.

    Args:
        path: the cache's folder; ``None``: a temporary one.
        retriever: a first stage (``Q → R``), e.g. a dense retriever reading the instruction, or BM25 after
            :class:`~pyterrier_instruct.rewrite.FoldInstruction`.
        identity: what keys the retriever when it has no fingerprint.
        verbose: log each call's hits and misses (``logging``, INFO).

    ``hits`` and ``misses`` count the queries found and retrieved so far (queries sharing a key count once).
    """
    schematic = {"label": "RetrieverCache"}
    _store_class = RunStore

    def __init__(self, path: Optional[str] = None, retriever: Optional[pt.Transformer] = None, *,
                 identity: Optional[str] = None, verbose: bool = True):
        self.retriever = retriever
        self._start(retriever, path, identity, verbose)

    def transform_inputs(self) -> List[List[str]]:
        """The retriever's query modes (``pt.inspect``), each with ``qid`` and ``query``."""
        return _modes(self.retriever, ["qid", "query"], lambda m: "docno" not in m)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp, extra_columns=["query"])
        if not len(inp):
            return self.retriever(inp)
        keys = read_keys(self.retriever, self._key, inp)
        frames = dict(self.store.select_in("SELECT key, frame FROM runs WHERE key IN {keys}", pd.unique(keys)))
        frames = {k: pickle.loads(blob) for k, blob in frames.items()}
        todo = ~pd.Series(keys).duplicated().to_numpy() & ~np.isin(keys, list(frames))
        if todo.any():
            new = self._retrieve(inp[todo], keys[todo])
            self.store.insert("runs", ("key", "frame"), [(k, pickle.dumps(f, protocol=5)) for k, f in new.items()])
            frames.update(new)
        self._count(len(set(keys)), int(todo.sum()))
        rows = inp.reset_index(drop=True)
        return pd.concat([_ranking(frames[k], rows.iloc[i]) for i, k in enumerate(keys)], ignore_index=True)

    def _retrieve(self, queries: pd.DataFrame, keys: np.ndarray) -> Dict[str, tuple]:
        """The retriever's result for each of ``queries`` (one per key), by qid, as stored (:func:`_stored_ranking`)."""
        qids = queries["qid"].astype(str)
        if qids.duplicated().any():
            raise ValueError(f"RetrieverCache: qid {qids[qids.duplicated()].iloc[0]!r} stands for two different "
                             "queries in one input frame; give each query its own qid")
        run = self.retriever(queries)
        by_qid = run.groupby(run["qid"].astype(str), sort=False).indices
        return {k: _stored_ranking(run.iloc[by_qid.get(q, [])].reset_index(drop=True), row)
                for (_, row), q, k in zip(queries.iterrows(), qids, keys)}


def _stored_ranking(ranking: pd.DataFrame, query: pd.Series) -> tuple:
    """What is stored of a query's ranking: its columns in order, the names of the input columns the retriever passed
    through unchanged (``qid`` among them), and the ranking without those, which a hit takes from its own input row
    (so a query sharing the key, e.g. under another ``base_qid``, keeps its own columns)."""
    same = [c for c in ranking.columns if c in query.index and
            (c == "qid" or (ranking[c].astype(object) == query[c]).all())]
    return list(ranking.columns), {c: ranking[c].dtype for c in same}, ranking.drop(columns=same)


def _ranking(stored: tuple, query: pd.Series) -> pd.DataFrame:
    """A stored ranking under ``query``'s own values of the passed-through columns."""
    columns, same, ranking = stored
    own = {c: pd.Series([query[c]] * len(ranking), dtype=object, index=ranking.index).astype(t)
           for c, t in same.items()}
    return ranking.assign(**own)[columns]
