"""Promptriever's prompt selection (Promptriever §4.3 and Table 10).

Each candidate prompt is applied to every query exactly like an instruction (the ``instruction`` column). The
*selected* prompt is the argmax of ``measure`` on a sample of dev queries (ties: the lowest prompt index); the *best*
prompt is the oracle argmax on the test queries (test-set leakage, reported separately); the no-prompt setting is not a
candidate (``no_prompt=True`` only reports it). With a dense model the system reuses its document side: a retriever its
index, a scorer the model's document cache, so 10 prompts cost 10 encodings of the sampled queries, not 10 corpora.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt

from ..prompts import BEIR_PROMPTS
from .._progress import tqdm as progress_bar


@dataclasses.dataclass
class PromptSelection:
    """``scores``: one row per prompt (``prompt``, ``dev``, and ``test`` when test topics were given), in prompt order;
    ``selected``/``best``: positions in that order; ``none``: the no-prompt ``dev``/``test`` values when asked for."""
    scores: pd.DataFrame
    selected: int
    best: Optional[int]
    measure: str
    dev_qids: Sequence[str]
    none: Optional[dict] = None

    @property
    def selected_prompt(self) -> str:
        return self.scores["prompt"].iloc[self.selected]

    def summary(self) -> dict:
        """Selected vs best (and none): prompt numbers (1-based, as in Promptriever Table 10) and test values."""
        out = {"measure": self.measure, "selected": self.selected + 1,
               "selected dev": float(self.scores["dev"].iloc[self.selected])}
        if self.best is not None:
            out.update({"selected test": float(self.scores["test"].iloc[self.selected]), "best": self.best + 1,
                        "best test": float(self.scores["test"].iloc[self.best])})
        if self.none is not None:
            out.update({f"none {k}": v for k, v in self.none.items()})
        return out


def evaluate(run: pd.DataFrame, qrels: pd.DataFrame, measure, qids: Optional[Sequence[str]] = None) -> float:
    """The mean of one ir_measures measure over the judged queries among ``qids`` (default: all judged queries); a
    judged query without results counts as 0."""
    m = ir_measures.parse_measure(measure) if isinstance(measure, str) else measure
    if qids is not None:
        qrels = qrels[qrels["qid"].astype(str).isin(set(map(str, qids)))]
    q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    q = q[["query_id", "doc_id", "relevance"]]
    r = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    q, r = q.astype({"query_id": str, "doc_id": str}), r.astype({"query_id": str, "doc_id": str})
    return float(ir_measures.calc_aggregate([m], q, r).get(m, 0.0))


def dev_sample(topics: pd.DataFrame, qrels: pd.DataFrame, sample: Optional[int] = 10, seed: int = 0) -> pd.DataFrame:
    """``sample`` judged queries of ``topics`` drawn with ``seed`` (all when fewer), in topic order."""
    judged = topics[topics["qid"].astype(str).isin(set(qrels["qid"].astype(str)))].reset_index(drop=True)
    if sample is None or len(judged) <= sample:
        return judged
    keep = np.sort(np.random.default_rng(seed).choice(len(judged), size=int(sample), replace=False))
    return judged.iloc[keep].reset_index(drop=True)


def select_prompt(system: pt.Transformer, dev_topics: pd.DataFrame, dev_qrels: pd.DataFrame,
                  prompts: Sequence[str] = BEIR_PROMPTS, *, measure="nDCG@10", sample: Optional[int] = 10,
                  seed: int = 0, test_topics: Optional[pd.DataFrame] = None, test_qrels: Optional[pd.DataFrame] = None,
                  no_prompt: bool = False, verbose: bool = True) -> PromptSelection:
    """Runs ``system`` (``Q → R``, reading ``instruction``) once per prompt on a dev sample and, if given, on the test
    topics; returns the per-prompt values, the selected (dev argmax, lowest index on ties) and the best (test argmax).
    A progress bar over the prompts unless ``verbose=False``."""
    prompts = list(prompts)
    if not prompts:
        raise ValueError("select_prompt needs at least one prompt")
    if (test_topics is None) != (test_qrels is None):
        raise ValueError("give both test_topics and test_qrels, or neither")
    dev = dev_sample(dev_topics, dev_qrels, sample, seed)
    if dev.empty:
        raise ValueError("no dev topic has relevance judgements")
    sets = {"dev": (dev, dev_qrels)}
    if test_topics is not None:
        sets["test"] = (test_topics, test_qrels)

    def value(topics, qrels, prompt):
        return evaluate(system(topics.assign(instruction=prompt)), qrels, measure, topics["qid"])

    rows = [{"prompt": p, **{name: value(t, q, p) for name, (t, q) in sets.items()}}
            for p in progress_bar(prompts, desc="select_prompt", unit="prompt", disable=not verbose)]
    scores = pd.DataFrame(rows)
    selected = int(np.argmax(scores["dev"].to_numpy()))  # first maximum: the lowest prompt index on ties
    best = int(np.argmax(scores["test"].to_numpy())) if "test" in scores else None
    none = {name: value(t, q, "") for name, (t, q) in sets.items()} if no_prompt else None
    return PromptSelection(scores, selected, best, str(measure), dev["qid"].astype(str).tolist(), none)
