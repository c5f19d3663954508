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
- Cost: :data:`Calls`, :data:`Tokens`, :func:`Cost` (``prices``): model calls, tokens, dollars per query of the system
  ``pt.Experiment`` runs, from its backend's call store (:mod:`.cost`).
- The same computations as plain functions: :func:`pmrr`, :func:`infosearch_eval`, :func:`wise`,
  :func:`sicr`, :func:`infosearch_pmrr`, :func:`robustness`, :func:`ifir_ndcg`.
"""
from ._provider import MissingVariantWarning, PairedMeasure
from .ifir import IFIR_nDCG, ifir_ndcg
from .infosearch import (SICR, WISE, GoldRank, IdealWISE, InfoSearch_pMRR, infosearch_eval, infosearch_partition,
                         infosearch_pmrr, sicr, wise)
from .instfol import InstfolResult, combine_instfol, instfol_query, instfol_summary, instfol_value
from .nevir import PairedAccuracy, paired_accuracy
from .pmrr import changed_docs, pMRR, pmrr, pmrr_per_doc
from .robustness import Robustness, group_of, robustness, robustness_eval
from .variants import OG, Changed, Reversed
from .cost import Calls, Cost, Tokens

__all__ = ["pMRR", "OG", "Changed", "Reversed", "WISE", "IdealWISE", "SICR", "InfoSearch_pMRR", "GoldRank",
           "Robustness", "IFIR_nDCG", "PairedAccuracy", "paired_accuracy",
           "pmrr", "pmrr_per_doc", "changed_docs", "infosearch_eval", "infosearch_partition",
           "wise", "sicr", "infosearch_pmrr", "robustness", "robustness_eval", "group_of", "ifir_ndcg",
           "PairedMeasure", "MissingVariantWarning", "instfol_value", "instfol_query", "instfol_summary",
           "combine_instfol", "InstfolResult", "Calls", "Tokens", "Cost"]
