"""Instruction-following measures, registered in ir_measures on import (``pt.Experiment``,
``ir_measures.calc_aggregate`` and ``ir_measures.parse_measure`` know them).

Paired-qid convention: every instruction variant of an instance has its own qid ``<base>-og`` /
``<base>-changed`` / ``<base>-reversed`` in topics, runs and qrels; the paired measures report one
value per instance keyed by its ``-og`` qid. The measures and their parameters: docs/measures.md.
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
