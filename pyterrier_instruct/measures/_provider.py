"""The ir_measures provider for this package's measures (p-MRR, WISE, SICR, Robustness, IFIR nDCG, …).

Paired measures read a run and qrels in the paired-qid convention (``<base>-og``, ``<base>-changed``)
and report one value per base query, keyed by its ``-og`` qid. A dedicated provider (rather than
ir_measures' runtime provider) is needed because:

- ir_measures fills ``DEFAULT`` (0) for every qrels qid without a value; for a paired measure that
  would add a 0 for each ``-changed`` qid and for each query without changed documents, and
  ``pt.Experiment`` averages over every qid it sees (PyTerrier ``_evaluation/_rendering.py``, ``_mean_of_measures``);
- ties may follow the run's row order (``ties='input'``), which the runtime provider re-sorts away.

The provider is registered in ir_measures and placed first in ``ir_measures.DefaultPipeline``, so
``ir_measures.calc_aggregate``, ``ir_measures.iter_calc`` and ``pt.Experiment`` all route these
measures here; it supports only this package's measures.
"""
from __future__ import annotations

from typing import Iterator, List

import ir_measures
import pandas as pd
from ir_measures import Metric, providers


class PairedMeasure(ir_measures.measures.Measure):
    """Base of the measures served by :class:`InstructProvider`.

    Subclasses implement ``paired_impl(qrels, run, cache) -> iterable of (qid, value)``; ``qrels`` and
    ``run`` are PyTerrier-style frames (``qid, docno, label`` / ``qid, docno, score``) in the order
    received; ``cache`` is a dict shared by the measures of one evaluation (e.g. InfoSearch rank tables).
    """
    RUN_INPUTS = ["query_id", "doc_id", "score"]
    QREL_INPUTS = ["query_id", "doc_id", "relevance"]

    def __init__(self, **params):
        # ir_measures checks parameters only when evaluating (and then fails inside repr); name the mistake here
        unknown = sorted(set(params) - set(self.SUPPORTED_PARAMS))
        if unknown:
            raise ValueError(f"{self.NAME}: unknown parameter(s) {unknown}; supported: {sorted(self.SUPPORTED_PARAMS)}")
        for name, value in params.items():
            choices = self.SUPPORTED_PARAMS[name].choices
            if isinstance(choices, (list, tuple)) and value not in choices:
                raise ValueError(f"{self.NAME}: {name}={value!r} is not one of {list(choices)}")
        super().__init__(**params)

    def paired_impl(self, qrels: pd.DataFrame, run: pd.DataFrame, cache: dict):  # pragma: no cover - abstract
        raise NotImplementedError  # abstract

    def aggregator(self):
        return ir_measures.measures.MeanAgg()


class _Evaluator(providers.Evaluator):
    def __init__(self, measures, qrels: pd.DataFrame):
        super().__init__(measures, set())
        self.qrels = qrels

    def iter_calc(self, run) -> Iterator[Metric]:
        # No DEFAULT fill: a paired measure has no value for queries it excludes (by definition).
        return self._iter_calc(run)

    def _iter_calc(self, run) -> Iterator[Metric]:
        run = ir_measures.util.RunConverter(run, strict=False).as_pd_dataframe()
        run = run.rename(columns={"query_id": "qid", "doc_id": "docno"})
        cache: dict = {}
        for measure in self.measures:
            for qid, value in measure.paired_impl(self.qrels, run, cache):
                yield Metric(qid, measure, value)


class InstructProvider(providers.Provider):
    """Serves the :class:`PairedMeasure` measures of pyterrier_instruct."""
    NAME = "pyterrier_instruct"

    def supports(self, measure) -> bool:
        if not isinstance(measure, PairedMeasure):
            return False
        measure.validate_params()
        return True

    def _evaluator(self, measures, qrels):
        qrels = ir_measures.util.QrelsConverter(qrels, strict=False).as_pd_dataframe()
        qrels = qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
        return _Evaluator(measures, qrels)

    def run_inputs(self, measures) -> List[str]:
        return sorted({c for m in measures for c in m.RUN_INPUTS})

    def qrel_inputs(self, measures) -> List[str]:
        return sorted({c for m in measures for c in m.QREL_INPUTS})


PROVIDER = InstructProvider()


def install() -> None:
    """Registers the provider with ir_measures (idempotent)."""
    providers.register(PROVIDER)
    pipeline = ir_measures.DefaultPipeline
    if not any(isinstance(p, InstructProvider) for p in pipeline.providers):
        pipeline.providers.insert(0, PROVIDER)
