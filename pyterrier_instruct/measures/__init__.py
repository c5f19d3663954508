"""Instruction-following measures, registered in ir_measures on import (so ``pt.Experiment``,
``ir_measures.calc_aggregate`` and ``ir_measures.parse_measure`` know them).

Paired-qid convention: every instruction variant of an instance has its own qid ``<base>-og`` /
``<base>-changed`` / ``<base>-reversed`` in topics, runs and qrels; the paired measures report one
value per instance keyed by its ``-og`` qid, so they share a qid space in ``pt.Experiment``.

- FollowIR: :data:`pMRR` (``ties='docno'`` default, ``'input'`` = mteb 1.7).
- InfoSearch: :data:`WISE` (``version='2024'|'2025'|'paper'``), :data:`IdealWISE`, :data:`SICR`
  (``version='code'|'mean'|'paper'``), :data:`InfoSearch_pMRR`, :data:`GoldRank` (``run=...``);
  ties default to ``'input'`` (the reference's stable sort on run order).
- Standard measures on one variant: :data:`OG`, :data:`Changed`, :data:`Reversed`, e.g.
  ``OG(AP@1000)``, ``Changed(nDCG@10)`` (evaluated by ir_measures against that variant's qrels).
- InstructIR/InfoSearch: :data:`Robustness` (``Robustness@10``, ``variant=`` to pick one mode);
  one value per group (the qid up to its first ``_``), keyed by the group.
- NevIR: :data:`PairedAccuracy` (``ties='strict'`` official, ``'mteb'``); :func:`paired_accuracy` as a function.
- IFIR: :data:`IFIR_nDCG` (``IFIR_nDCG@20``; ``norm='ifir_code'|'standard'``); MRR@20 is ``RR@20``. INSTFOL@20 needs
  an LLM judge, so it is no ir_measures measure: :func:`instfol_query` / :func:`instfol_summary` here (the arithmetic),
  :func:`pyterrier_instruct.evaluation.instfol` over runs.
- The same computations as plain functions: :func:`pmrr`, :func:`infosearch_eval`, :func:`wise`,
  :func:`sicr`, :func:`infosearch_pmrr`, :func:`robustness`, :func:`ifir_ndcg`.
"""
from __future__ import annotations

import warnings

import ir_measures
import pandas as pd
from ir_measures import measures

from .._experiment_context import user_stacklevel
from ..instructions import VARIANTS, by_variant, paired_qid, split_qid
from ._provider import MissingVariantWarning, PairedMeasure, install
from .ifir import ifir_ndcg, ifir_ndcg_per_query
from .instfol import InstfolResult, combine_instfol, instfol_query, instfol_summary, instfol_value
from .infosearch import (SICR_VERSIONS, WISE_VERSIONS, RankTable, ideal_wise_values, infosearch_eval,
                         infosearch_partition, infosearch_pmrr, sicr, sicr_per_query, wise, wise_values)
from .pmrr import changed_docs, pmrr, pmrr_per_doc, pmrr_values
from .nevir import TIES as NEVIR_TIES
from .nevir import pair_of, paired_accuracy, paired_accuracy_per_pair
from .robustness import group_of, robustness, robustness_eval

__all__ = ["pMRR", "OG", "Changed", "Reversed", "WISE", "IdealWISE", "SICR", "InfoSearch_pMRR", "GoldRank",
           "Robustness", "IFIR_nDCG", "PairedAccuracy", "paired_accuracy",
           "pmrr", "pmrr_per_doc", "changed_docs", "infosearch_eval", "infosearch_partition",
           "wise", "sicr", "infosearch_pmrr", "robustness", "robustness_eval", "group_of", "ifir_ndcg",
           "PairedMeasure", "MissingVariantWarning", "instfol_value", "instfol_query", "instfol_summary", "combine_instfol", "InstfolResult"]


install()  # the provider first: every measure below registers with ir_measures where it is defined


def unpaired(measure: str, needed, found) -> ValueError:
    """The error of a measure whose qrels lack variants it ``needed`` (``found``: the variants they have), naming what is
    one-sided: the topics given to ``pt.Experiment`` when they lack a variant (e.g. ``ds.get_topics('og')``; PyTerrier
    evaluates the qrels of the topics' qids only), else the qrels."""
    from .._experiment_context import topic_qids
    qids = topic_qids()
    if qids is not None:
        in_topics = {split_qid(q)[1] for q in qids} - {None}
        lacking = [v for v in needed if v not in in_topics]
        if lacking:  # PyTerrier keeps the qrels of the topics' qids only (filter_by_topics), so the topics are what lacks them
            return ValueError(f"{measure} needs the topics of every variant it compares ({', '.join(needed)}): the topics given "
                              f"to pt.Experiment have variants {sorted(in_topics)} only, no '<qid>-{lacking[0]}' query; pass all "
                              f"the variants' topics, e.g. ds.get_topics() rather than ds.get_topics('og')")
    wanted = " and ".join(f"'<qid>-{v}'" for v in needed)
    return ValueError(f"{measure} needs paired qrels with {wanted} query ids (see pyterrier_instruct.paired_qrels); "
                      f"found variants {sorted(found)}")


def register_measure(instance: PairedMeasure) -> PairedMeasure:
    """Registers a measure with ir_measures (so it parses by name) where it is defined: ``pMRR = register_measure(_pMRR())``."""
    measures.register(instance)
    return instance


class _pMRR(PairedMeasure):
    """p-MRR (FollowIR): mean over base queries of the pairwise reciprocal-rank change of the
    documents whose label changed between the og and the changed qrels. Raw value in (-1, 1).

    .. cite.dblp:: journals/corr/abs-2403-15246
    """
    __name__ = "pMRR"
    NAME = __name__
    COMPARES_VARIANTS = True
    PRETTY_NAME = "pairwise Mean Reciprocal Rank"
    SHORT_DESC = "Change in reciprocal rank of the documents whose relevance changed with the instruction."
    SUPPORTED_PARAMS = {
        "ties": measures.ParamInfo(dtype=str, choices=["docno", "input"], default="docno",
                                   desc="tie-break: docno descending (current mteb) or run row order (mteb 1.7)"),
    }

    def paired_impl(self, qrels: pd.DataFrame, run: pd.DataFrame, cache: dict):
        q = by_variant(qrels)
        if "og" not in q or "changed" not in q:
            raise unpaired("pMRR", ("og", "changed"), q)
        diff = changed_docs(q["og"], q["changed"])
        r = by_variant(run)
        empty = pd.DataFrame({"qid": [], "docno": [], "score": []})
        og_run, ch_run = r.get("og", empty), r.get("changed", empty)
        with_docs = set(diff["qid"])
        missing = sorted(with_docs - (set(og_run["qid"]) & set(ch_run["qid"])))
        if missing:
            from .._experiment_context import evaluated_system, first_time
            system, batch_size = evaluated_system()
            message = (f"pMRR{f' of {system!r}' if system else ''}: {len(missing)} base queries are skipped because the "
                       f"run has no rows for their -og or -changed topic (the system returned nothing for it) "
                       f"({missing[:5]}{'...' if len(missing) > 5 else ''})")
            if batch_size is not None:
                message += f"; pt.Experiment(batch_size={batch_size}) must also keep the variants of a query in one batch"
            if first_time(message):
                warnings.warn(message, MissingVariantWarning, stacklevel=user_stacklevel())
        without = sorted(set(q["og"]["qid"]) - with_docs)
        if without:
            warnings.warn(f"pMRR: {len(without)} queries have no changed documents and are excluded "
                          f"({without[:5]}{'...' if len(without) > 5 else ''})", stacklevel=user_stacklevel())
        docs = pmrr_per_doc(og_run, ch_run, diff, ties=self.params.get("ties", "docno"), warn=False)
        if len(docs) == 0:
            raise ValueError("pMRR is undefined: no query has a changed document with both its -og and -changed run")
        for base, value in docs.groupby("qid", sort=False)["pmrr"].mean().items():
            yield paired_qid(base, "og"), float(value)


pMRR = register_measure(_pMRR())


def _parse(name: str, where: str) -> measures.Measure:
    try:
        return ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError) as err:
        raise ValueError(f"{where}({name!r}): {name!r} is not a measure ir_measures can read ({err}); write it as "
                         f"'AP@1000', 'nDCG@10' or 'P(rel=2)@10' (a cutoff is an integer: check for a letter O "
                         f"typed for a zero)") from None


class _OnVariant(PairedMeasure):
    """A standard ir_measures measure evaluated on one variant's run against that variant's qrels only,
    reported under the instance's ``-og`` qid (so it shares the qid space of the paired measures).

    Its name is ``OG(AP@1000)``: the inner measure's name, which is also what equality and hashing compare.
    """
    VARIANT = "og"
    SUPPORTED_PARAMS = {
        "measure": measures.ParamInfo(dtype=measures.Measure, required=True, desc="the measure to evaluate"),
    }

    def __call__(self, measure=None, **kwargs):
        if measure is not None:
            kwargs["measure"] = _parse(measure, self.NAME) if isinstance(measure, str) else measure
        return super().__call__(**kwargs)

    def __repr__(self):
        inner = self.params.get("measure")
        return self.NAME if inner is None else f"{self.NAME}({inner!r})"

    def unit(self, qid):
        return None  # one value per qid

    def paired_impl(self, qrels: pd.DataFrame, run: pd.DataFrame, cache: dict):
        inner, v = self.params["measure"], self.VARIANT
        part_qrels = by_variant(qrels).get(v)
        if part_qrels is None:
            raise unpaired(repr(self), (v,), by_variant(qrels))
        part_run = by_variant(run).get(v, pd.DataFrame({"qid": [], "docno": [], "score": []}))
        part_qrels = part_qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        part_run = part_run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        for metric in ir_measures.iter_calc([inner], part_qrels, part_run):
            yield paired_qid(metric.query_id, "og"), metric.value


class _OG(_OnVariant):
    """A standard measure on the ``-og`` variant (FollowIR's headline MAP/nDCG; InfoSearch "Ori")."""
    __name__ = "OG"
    NAME = __name__
    VARIANT = "og"


OG = register_measure(_OG())

class _Changed(_OnVariant):
    """A standard measure on the ``-changed`` variant against the changed qrels (InfoSearch "Ins")."""
    __name__ = "Changed"
    NAME = __name__
    VARIANT = "changed"


Changed = register_measure(_Changed())

class _Reversed(_OnVariant):
    """A standard measure on the ``-reversed`` variant against the reversed qrels (InfoSearch "Rev")."""
    __name__ = "Reversed"
    NAME = __name__
    VARIANT = "reversed"


Reversed = register_measure(_Reversed())

_TIES_INPUT = measures.ParamInfo(dtype=str, choices=["input", "docno"], default="input",
                                 desc="tie-break: run row order (the InfoSearch reference) or docno descending")
_EMPTY_RUN = pd.DataFrame({"qid": [], "docno": [], "score": []})


class _InfoSearchMeasure(PairedMeasure):
    """Base of the InfoSearch measures: one rank table (partition ranks in the three runs) per evaluation."""
    NEEDS_REVERSED = True
    COMPARES_VARIANTS = True

    def table(self, qrels: pd.DataFrame, run: pd.DataFrame, cache: dict) -> RankTable:
        if "variants" not in cache:  # split the paired frames once per evaluation
            cache["variants"] = (by_variant(qrels), by_variant(run))
        q, r = cache["variants"]
        if "og" not in q or "changed" not in q:
            raise unpaired(str(self), ("og", "changed"), q)
        with_rev = self.NEEDS_REVERSED or "reversed" in r  # p-MRR shares the three-run table when there is one
        key = ("infosearch", self.params.get("ties", "input"), with_rev)
        if key not in cache:
            rev = r.get("reversed", _EMPTY_RUN) if with_rev else None
            cache[key] = RankTable(r.get("og", _EMPTY_RUN), r.get("changed", _EMPTY_RUN), rev,
                                   infosearch_partition(q["og"], q["changed"]), key[1], check_ids=False)
        return cache[key]

    @staticmethod
    def emit(values: pd.Series):
        for base, value in values.items():
            yield paired_qid(base, "og"), float(value)

    @classmethod
    def emit_mean(cls, qids: pd.Series, values):
        """One value per instance: the mean of ``values`` over its documents, keyed by ``<qid>-og``."""
        return cls.emit(pd.Series(values, index=qids.to_numpy()).groupby(level=0, sort=False).mean())


class _WISE(_InfoSearchMeasure):
    """WISE (InfoSearch): rank-aware reward/penalty of the gold document across the og (core query),
    changed (instructed) and reversed runs; raw in [-1, 1]. Default: the 2024 reference code.

    .. cite.dblp:: journals/corr/abs-2410-23841
    """
    __name__ = "WISE"
    NAME = __name__
    PRETTY_NAME = "Weighted Instruction Sensitivity Evaluation"
    SHORT_DESC = "Reward when the gold rises with the instruction and falls with the reversed one; penalty otherwise."
    SUPPORTED_PARAMS = {
        "version": measures.ParamInfo(dtype=str, choices=list(WISE_VERSIONS), default="2024",
                                      desc="2024 code (default), 2025 code (sqrt reward, -1 penalty) or the paper"),
        "ties": _TIES_INPUT,
    }

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        return self.emit_mean(pos["qid"], wise_values(pos["ori_rank"], pos["ins_rank"], pos["rev_rank"], pos["sum_count"],
                                                      self.params.get("version", "2024")))


WISE = register_measure(_WISE())

class _IdealWISE(_InfoSearchMeasure):
    """The ideal WISE bound given the og run (gold at rank 1 when instructed, pushed down when reversed)."""
    __name__ = "IdealWISE"
    NAME = __name__
    SUPPORTED_PARAMS = _WISE.SUPPORTED_PARAMS

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        return self.emit_mean(pos["qid"], ideal_wise_values(pos["ori_rank"], pos["sum_count"], self.params.get("version", "2024")))


IdealWISE = register_measure(_IdealWISE())

class _SICR(_InfoSearchMeasure):
    """SICR (InfoSearch): share of instances whose gold rises (rank and raw score) with the instruction
    and falls with the reversed one; raw in [0, 1]. Default: the reference code (last-gold quirk).

    .. cite.dblp:: journals/corr/abs-2410-23841
    """
    __name__ = "SICR"
    NAME = __name__
    PRETTY_NAME = "Strict Instruction Compliance Ratio"
    SHORT_DESC = "Instances whose gold document moves up with the instruction and down with the reversed one."
    SUPPORTED_PARAMS = {
        "version": measures.ParamInfo(dtype=str, choices=list(SICR_VERSIONS), default="code",
                                      desc="reference code (default), true mean over golds, or the paper's eq. 4"),
        "ties": _TIES_INPUT,
    }

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        return self.emit(sicr_per_query(pos, self.params.get("version", "code")))


SICR = register_measure(_SICR())

class _InfoSearch_pMRR(_InfoSearchMeasure):
    """InfoSearch's p-MRR: FollowIR's per-document rank change of the negatives, og run → changed run."""
    __name__ = "InfoSearch_pMRR"
    NAME = __name__
    NEEDS_REVERSED = False
    SUPPORTED_PARAMS = {"ties": _TIES_INPUT}

    def paired_impl(self, qrels, run, cache):
        neg = self.table(qrels, run, cache).negative
        return self.emit_mean(neg["qid"], pmrr_values(neg["ori_rank"], neg["ins_rank"]))


InfoSearch_pMRR = register_measure(_InfoSearch_pMRR())

class _GoldRank(_InfoSearchMeasure):
    """Mean 1-based rank of the gold documents in one variant's run (InfoSearch's R_ori/R_ins/R_rev)."""
    __name__ = "GoldRank"
    NAME = __name__
    SUPPORTED_PARAMS = {
        "run": measures.ParamInfo(dtype=str, choices=list(VARIANTS), default="og", desc="which variant's run"),
        "ties": _TIES_INPUT,
    }

    def paired_impl(self, qrels, run, cache):
        pos = self.table(qrels, run, cache).positive
        col = {"og": "ori_rank", "changed": "ins_rank", "reversed": "rev_rank"}[self.params.get("run", "og")]
        return self.emit_mean(pos["qid"], pos[col].to_numpy(dtype="float64"))


GoldRank = register_measure(_GoldRank())

class _Robustness(PairedMeasure):
    """Robustness@k (InstructIR): mean over groups (qid up to the first ``_``) of the minimum nDCG@k of
    the group's instances; one value per group, keyed by the group. ``variant`` restricts it to one
    mode of a paired frame (``Robustness(variant='changed')@10``); by default every qid is an instance.
    """
    __name__ = "Robustness"
    NAME = __name__
    AT_PARAM = "cutoff"
    PRETTY_NAME = "Robustness@k"
    SHORT_DESC = "Worst-case nDCG@k over the instruction variants of a query, averaged over queries."
    SUPPORTED_PARAMS = {
        "cutoff": measures.ParamInfo(dtype=int, required=True, desc="nDCG cut-off"),
        "variant": measures.ParamInfo(dtype=str, choices=list(VARIANTS), default=None,
                                      desc="evaluate only this variant's qids (paired frames)"),
    }

    def unit(self, qid):
        return group_of(split_qid(qid)[0])

    def paired_impl(self, qrels, run, cache):
        variant = self.params.get("variant")
        if variant is not None:
            qrels = by_variant(qrels).get(variant)
            if qrels is None:
                raise unpaired(str(self), (variant,), by_variant(qrels))
            run = by_variant(run).get(variant, _EMPTY_RUN)
        result = robustness_eval(run, qrels, self.params["cutoff"], warn=False)  # the provider checked the ids
        return result["per_group_min"].items()


Robustness = register_measure(_Robustness())

class _IFIR_nDCG(PairedMeasure):
    """IFIR nDCG@k: IDCG from the retrieved top-k's own gold count (the IFIR code, default) or standard
    (``norm='standard'``, ir_measures nDCG@k); each (query, level) qid is one unit.
    """
    __name__ = "IFIR_nDCG"
    NAME = __name__
    AT_PARAM = "cutoff"
    SUPPORTED_PARAMS = {
        "cutoff": measures.ParamInfo(dtype=int, required=True, desc="rank cut-off"),
        "norm": measures.ParamInfo(dtype=str, choices=["ifir_code", "standard"], default="ifir_code",
                                   desc="IDCG from the retrieved list (IFIR code) or from the qrels (trec_eval)"),
        "ties": measures.ParamInfo(dtype=str, choices=["docno", "input"], default="docno",
                                   desc="tie-break of the top-k list: docno descending or run row order"),
    }

    def unit(self, qid):
        return None  # each (query, level) qid is one unit

    def paired_impl(self, qrels, run, cache):
        values = ifir_ndcg_per_query(run, qrels, self.params["cutoff"], self.params.get("norm", "ifir_code"),
                                     self.params.get("ties", "docno"), warn=False)  # the provider checked the ids
        return ((str(q), float(v)) for q, v in values.items())


IFIR_nDCG = register_measure(_IFIR_nDCG())


class _PairedAccuracy(PairedMeasure):
    """NevIR paired accuracy: the share of query pairs in which each query scores its own document strictly above the
    other one (the official rule: a tie is wrong; ``ties='mteb'``: its own document first in its whole run, mteb's docno
    tie-break). One value per pair, keyed by
    its ``<pair>_q1`` qid. See :mod:`.nevir`.

    .. cite.dblp:: conf/eacl/WellerLD24
    """
    __name__ = "PairedAccuracy"
    NAME = __name__
    PRETTY_NAME = "NevIR paired accuracy"
    SHORT_DESC = "Pairs of queries that each rank their own document above the other one."
    SUPPORTED_PARAMS = {
        "ties": measures.ParamInfo(dtype=str, choices=list(NEVIR_TIES), default="strict",
                                   desc="own document strictly above the other (official NevIR code) or first in the "
                                        "whole run, ties by docno descending (mteb's recall@1)"),
    }

    def unit(self, qid):
        return pair_of(qid)

    def paired_impl(self, qrels, run, cache):
        return paired_accuracy_per_pair(run, qrels, self.params.get("ties", "strict"))


PairedAccuracy = register_measure(_PairedAccuracy())
