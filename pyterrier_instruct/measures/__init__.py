"""Instruction-following measures, registered in ir_measures on import.

- :data:`pMRR` — FollowIR p-MRR on paired runs (``<qid>-og`` / ``<qid>-changed``), one value per
  base query keyed by its ``-og`` qid. ``pMRR(ties='input')`` keeps the run's row order for ties.
- :data:`OG` — ``OG(AP@1000)`` evaluates a standard measure on the ``-og`` variant with the og qrels
  only (the FollowIR report convention), keyed the same way, so that
  ``pt.Experiment(systems, paired_topics, paired_qrels, [pMRR, OG(AP@1000)], baseline=0)`` puts both
  on the same qids.
- :func:`pmrr` / :func:`changed_docs` — the same computation as plain functions over two runs.
"""
from __future__ import annotations

import warnings

import ir_measures
import pandas as pd
from ir_measures import measures

from ..instructions import by_variant, paired_qid, variant_frame
from ._provider import PairedMeasure, install
from .pmrr import changed_docs, pmrr, pmrr_per_doc

__all__ = ["pMRR", "OG", "pmrr", "pmrr_per_doc", "changed_docs", "PairedMeasure"]


class _pMRR(PairedMeasure):
    """p-MRR (FollowIR): mean over base queries of the pairwise reciprocal-rank change of the
    documents whose label changed between the og and the changed qrels. Raw value in (-1, 1).

    .. cite.dblp:: journals/corr/abs-2403-15246
    """
    __name__ = "pMRR"
    NAME = __name__
    PRETTY_NAME = "pairwise Mean Reciprocal Rank"
    SHORT_DESC = "Change in reciprocal rank of the documents whose relevance changed with the instruction."
    SUPPORTED_PARAMS = {
        "ties": measures.ParamInfo(dtype=str, choices=["docno", "input"], default="docno",
                                   desc="tie-break: docno descending (current mteb) or run row order (mteb 1.7)"),
    }

    def paired_impl(self, qrels: pd.DataFrame, run: pd.DataFrame):
        q = by_variant(qrels)
        if "og" not in q or "changed" not in q:
            raise ValueError("pMRR needs paired qrels with '<qid>-og' and '<qid>-changed' query ids "
                             f"(see pyterrier_instruct.paired_qrels); found variants {sorted(q)}")
        diff = changed_docs(q["og"], q["changed"])
        r = by_variant(run)
        empty = pd.DataFrame({"qid": [], "docno": [], "score": []})
        og_run, ch_run = r.get("og", empty), r.get("changed", empty)
        with_docs = set(diff["qid"])
        missing = sorted(with_docs - (set(og_run["qid"]) & set(ch_run["qid"])))
        if missing:
            warnings.warn(f"pMRR: {len(missing)} base queries lack their -og or -changed run and are skipped "
                          f"({missing[:5]}{'...' if len(missing) > 5 else ''}); with pt.Experiment(batch_size=...) "
                          "batches must keep the variants of a query together", stacklevel=2)
        without = sorted(set(q["og"]["qid"]) - with_docs)
        if without:
            warnings.warn(f"pMRR: {len(without)} queries have no changed documents and are excluded "
                          f"({without[:5]}{'...' if len(without) > 5 else ''})", stacklevel=2)
        docs = pmrr_per_doc(og_run, ch_run, diff, ties=self.params.get("ties", "docno"), warn=False)
        if len(docs) == 0:
            raise ValueError("pMRR is undefined: no query has a changed document with both its -og and -changed run")
        for base, value in docs.groupby("qid", sort=False)["pmrr"].mean().items():
            yield paired_qid(base, "og"), float(value)


class _OG(PairedMeasure):
    """A standard measure evaluated on the ``-og`` variant against the og qrels only."""
    __name__ = "OG"
    NAME = __name__
    SUPPORTED_PARAMS = {
        "measure": measures.ParamInfo(dtype=measures.Measure, required=True, desc="the measure to evaluate on -og"),
    }

    def __call__(self, measure=None, **kwargs):
        if measure is not None:
            kwargs["measure"] = ir_measures.parse_measure(measure) if isinstance(measure, str) else measure
        return super().__call__(**kwargs)

    def paired_impl(self, qrels: pd.DataFrame, run: pd.DataFrame):
        inner = self.params["measure"]
        og_qrels = variant_frame(qrels, "og").rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        og_run = variant_frame(run, "og").rename(columns={"qid": "query_id", "docno": "doc_id"})
        if len(og_qrels) == 0:
            raise ValueError(f"{self!r} needs paired qrels with '<qid>-og' query ids")
        for metric in ir_measures.iter_calc([inner], og_qrels, og_run):
            yield metric.query_id, metric.value


pMRR = _pMRR()
OG = _OG()
install()
measures.register(pMRR)
measures.register(OG)
