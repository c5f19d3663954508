"""The ir_measures provider for this package's measures, first in ``ir_measures.DefaultPipeline``.

Needed because ir_measures fills ``DEFAULT`` (0) for every qrels qid without a value (a 0 for each ``-changed`` qid,
which ``pt.Experiment`` would average in) and its runtime provider re-sorts away ``ties='input'``. Run and qrels are
normalised once per evaluation (``_runs.py``); measures are evaluated in a fixed order (ir_measures hands over a set).
"""
from __future__ import annotations

import warnings
from typing import Iterator, List, Optional

import ir_measures
import pandas as pd
from ir_measures import Metric, measures, providers

from .._experiment_context import active, user_stacklevel
from ..instructions import by_variant, split_qid
from ._runs import normalised, warn_unmatched

#: an empty run (a variant the run lacks)
EMPTY_RUN = pd.DataFrame({"qid": [], "docno": [], "score": []})


class MissingVariantWarning(UserWarning):
    """A paired measure skipped base queries whose run lacks one of the variants it compares."""


class PairedMeasure(ir_measures.measures.Measure):
    """Base of the measures served by :class:`InstructProvider`.

    Subclasses implement ``paired_impl(qrels, run, cache) -> iterable of (qid, value)``; ``qrels`` and
    ``run`` are PyTerrier-style frames (``qid, docno, label`` / ``qid, docno, score``) in the order
    received; ``cache`` is a dict shared by the measures of one evaluation (e.g. InfoSearch rank tables).
    """
    RUN_INPUTS = ["query_id", "doc_id", "score"]
    QREL_INPUTS = ["query_id", "doc_id", "relevance"]
    #: compares the runs of a query's instruction variants, so the run must carry the instructions it was made with
    COMPARES_VARIANTS = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.NAME = cls.__dict__.get("__name__", getattr(cls, "NAME", None))  # ir_measures' name: the class's __name__

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

    @staticmethod
    def variants(qrels: pd.DataFrame, run: pd.DataFrame, cache: dict):
        """``(by_variant(qrels), by_variant(run))``, split once per evaluation: the measures of one share ``cache``."""
        if "variants" not in cache:
            cache["variants"] = (by_variant(qrels), by_variant(run))
        return cache["variants"]

    def unit(self, qid: str) -> Optional[str]:
        """The evaluation unit a topic qid belongs to when the measure's value spans several qids (every qid of a
        unit must be evaluated together), or None when each qid is evaluated on its own. Default: the base query
        (``<base>-og``/``-changed``/``-reversed`` → ``<base>``)."""
        return split_qid(qid)[0]


class _Evaluator(providers.Evaluator):
    def __init__(self, measures, qrels: pd.DataFrame):
        # ir_measures hands over a set: a fixed order keeps the metrics (and pt.Experiment's columns) stable
        super().__init__(sorted(measures, key=repr), set())
        self.qrels = qrels

    def iter_calc(self, run) -> Iterator[Metric]:
        # No DEFAULT fill: a paired measure has no value for queries it excludes (by definition).
        return self._iter_calc(run)

    def _iter_calc(self, run) -> Iterator[Metric]:
        run = ir_measures.util.RunConverter(run, strict=False).as_pd_dataframe()
        run = normalised(run.rename(columns={"query_id": "qid", "doc_id": "docno"}), "run", "run")
        names = ", ".join(repr(m) for m in self.measures)
        comparing = [repr(m) for m in self.measures if m.COMPARES_VARIANTS]
        reused = getattr(active(), "reuses_runs", False)  # a run read back from save_dir keeps no topic columns
        if comparing and "instruction" not in run.columns and len(run) and not reused:
            warnings.warn(f"{', '.join(comparing)}: the run has no 'instruction' column, so the system most likely "
                          "never saw the instructions and its -og and -changed runs rank alike (p-MRR 0). Evaluate "
                          "runs made from topics that carry the instruction: pyterrier_instruct.paired_topics(...) or "
                          "the dataset's get_topics(); keep that column through the pipeline", UserWarning,
                          stacklevel=user_stacklevel())
        warn_unmatched(run, self.qrels, names)
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
        qrels = normalised(qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"}),
                           "qrels", "qrels")
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


def unpaired(measure: str, needed, found) -> ValueError:
    """The error of a measure whose qrels lack variants it ``needed`` (``found``: the variants they have), naming
    what is one-sided: the topics given to ``pt.Experiment`` when they lack a variant (e.g.
    ``ds.get_topics('og')``; PyTerrier evaluates the qrels of the topics' qids only), else the qrels."""
    qids = getattr(active(), "topic_qids", None)
    if qids is not None:
        in_topics = {split_qid(q)[1] for q in qids} - {None}
        lacking = [v for v in needed if v not in in_topics]
        if lacking:  # PyTerrier keeps the qrels of the topics' qids only (filter_by_topics): the topics lack them
            return ValueError(f"{measure} needs the topics of every variant it compares ({', '.join(needed)}): the "
                              f"topics given to pt.Experiment have variants {sorted(in_topics)} only, no "
                              f"'<qid>-{lacking[0]}' query; pass all the variants' topics, e.g. ds.get_topics() "
                              f"rather than ds.get_topics('og')")
    wanted = " and ".join(f"'<qid>-{v}'" for v in needed)
    return ValueError(f"{measure} needs paired qrels with {wanted} query ids (see pyterrier_instruct.paired_qrels); "
                      f"found variants {sorted(found)}")


def register_measure(instance: PairedMeasure) -> PairedMeasure:
    """Registers a measure with ir_measures (so it parses by name), and the provider first, where the measure is
    defined: ``pMRR = register_measure(_pMRR())``."""
    install()
    measures.register(instance)
    return instance
