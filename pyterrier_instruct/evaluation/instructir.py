"""InstructIR report (FollowIR Table 4, Promptriever Tables 1/4/5): nDCG@10 over instances and Robustness@10 over base
queries (qids ``<base>_<n>``), ×100 to one decimal (mteb ``robustness_at_10``; FollowIR Table 4)."""
from __future__ import annotations

from typing import Optional, Sequence

import ir_measures
import pandas as pd

from ..measures import Robustness
from ._report import build_table, experiment_means, system_names


def instructir_report(systems, dataset, names: Optional[Sequence[str]] = None, k: int = 10) -> pd.DataFrame:
    """``Model | instructir nDCG@10 | instructir Robustness@10`` for ``systems`` on an InstructIR dataset
    (``get_topics()``: one row per instance, qid ``<base>_<n>``; ``get_qrels()``)."""
    systems, names = system_names(systems, names)
    measures = [ir_measures.nDCG @ k, Robustness @ k]
    labels = {str(m): str(m) for m in measures}
    long = experiment_means(systems, names, dataset.get_topics(), dataset.get_qrels(), measures, "instructir", labels)
    return build_table(long, "instructir", models=names,
                       settings={"nDCG": "trec_eval (ir_measures)", "group": "qid before '_'"},
                       provenance={"instructir": dict(getattr(dataset, "provenance", {}) or {})})
