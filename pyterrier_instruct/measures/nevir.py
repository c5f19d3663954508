"""NevIR's paired accuracy (Weller et al., 2024, "NevIR: Negation in Neural Information Retrieval").

Official rule (orionw/NevIR ``src/negations/evaluate.py``, the ``calc_preferred_*`` functions): a query is right iff
its own document scores strictly higher than the other (a tie is wrong, an absent document scores below every
retrieved one); a pair counts iff both queries are right. ``ties='mteb'``: mteb's recall@1 over the whole run, ties
broken by docno descending, so a tied ``q2`` is right there.
"""
from __future__ import annotations

from typing import Dict, Iterator, Tuple

import pandas as pd
from ir_measures import measures

from ._provider import PairedMeasure, register_measure

TIES = ("strict", "mteb")


def pair_of(qid: str) -> str:
    """``<pair>_q1`` → ``<pair>``."""
    return str(qid).rsplit("_", 1)[0]


def _right(scores: Dict[str, float], own: str, other: str, ties: str) -> bool:
    if ties == "mteb":  # pytrec_eval's recall@1: the top of the whole run, ties by docno descending
        return bool(scores) and max(scores.items(), key=lambda item: (item[1], item[0]))[0] == own
    mine, theirs = scores.get(own, float("-inf")), scores.get(other, float("-inf"))
    return mine > theirs


def paired_accuracy_per_pair(run: pd.DataFrame, qrels: pd.DataFrame,
                             ties: str = "strict") -> Iterator[Tuple[str, float]]:
    """``(pair's first qid, 1.0 or 0.0)`` for every pair of the qrels whose two queries each have one relevant document.

    Args:
        run: ``qid, docno, score``.
        qrels: ``qid, docno, label`` with qids ``<pair>_<q>``; a query's own document is its relevant one.
        ties: ``'strict'`` (official: own document strictly above the other) or ``'mteb'`` (own document first in the
            whole run, ties by docno descending).
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    relevant = qrels[qrels["label"] > 0]
    own = relevant.groupby("qid", sort=False)["docno"].agg(list)
    several = own[own.map(len) != 1]
    if len(several):
        raise ValueError(f"PairedAccuracy: query {several.index[0]!r} has {len(several.iloc[0])} relevant documents; "
                         "each NevIR query has exactly one (its own document of the pair)")
    scores: Dict[str, Dict[str, float]] = {}
    for qid, docno, score in zip(run["qid"].astype(str), run["docno"].astype(str), run["score"].astype(float)):
        scores.setdefault(qid, {})[docno] = score
    pairs: Dict[str, list] = {}
    for qid in own.index:
        pairs.setdefault(pair_of(qid), []).append(str(qid))
    for pair, qids in pairs.items():
        if len(qids) != 2:
            raise ValueError(f"PairedAccuracy: pair {pair!r} has {len(qids)} judged queries ({qids}); expected two, "
                             "<pair>_q1 and <pair>_q2")
        qids = sorted(qids)
        a, b = own[qids[0]][0], own[qids[1]][0]
        right = _right(scores.get(qids[0], {}), a, b, ties) and _right(scores.get(qids[1], {}), b, a, ties)
        yield qids[0], 1.0 if right else 0.0


def paired_accuracy(run: pd.DataFrame, qrels: pd.DataFrame, ties: str = "strict") -> float:
    """The mean of :func:`paired_accuracy_per_pair` (NevIR's headline number, as a fraction)."""
    values = [v for _, v in paired_accuracy_per_pair(run, qrels, ties)]
    if not values:
        raise ValueError("PairedAccuracy: the qrels hold no query pair")
    return sum(values) / len(values)


class _PairedAccuracy(PairedMeasure):
    """NevIR paired accuracy: the share of query pairs in which each query scores its own document strictly above the
    other one (the official rule: a tie is wrong; ``ties='mteb'``: its own document first in its whole run, mteb's docno
    tie-break). One value per pair, keyed by
    its ``<pair>_q1`` qid. See :mod:`.nevir`.

    .. cite.dblp:: conf/eacl/WellerLD24
    """
    __name__ = "PairedAccuracy"
    PRETTY_NAME = "NevIR paired accuracy"
    SHORT_DESC = "Pairs of queries that each rank their own document above the other one."
    SUPPORTED_PARAMS = {
        "ties": measures.ParamInfo(dtype=str, choices=list(TIES), default="strict",
                                   desc="own document strictly above the other (official NevIR code) or first in the "
                                        "whole run, ties by docno descending (mteb's recall@1)"),
    }

    def unit(self, qid):
        return pair_of(qid)

    def paired_impl(self, qrels, run, cache):
        return paired_accuracy_per_pair(run, qrels, self.params.get("ties", "strict"))


PairedAccuracy = register_measure(_PairedAccuracy())
