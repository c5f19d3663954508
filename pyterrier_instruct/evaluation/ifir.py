"""IFIR report (Table 3, 8–11): nDCG@20 and MRR@20 per subset and level, micro-averaged over
(query, level) within a subset, unweighted over subsets; fractions to two decimals like the paper.
With a judge, INSTFOL@20 (×100, two decimals) per subset (the mean of its level means) and level.

A dataset gives topics and qrels whose qids are ``<qid>_<level>`` (level 1–3 carry instructions;
level 0, the query alone, is the "origin" run). Qrels are level-specific. With ``origin=True`` the
level-0 run of each query is also scored against every level's qrels (IFIR ``src/eval.py``).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import ir_measures
import pandas as pd

from ..measures import IFIR_nDCG
from ..measures.instfol import combine_instfol
from ._report import UNSCALED_PREFIXES, as_datasets, build_table, systems_per_dataset
from .instfol import instfol, no_instruction_topics


def _level(qids: pd.Series) -> pd.Series:
    return qids.astype(str).str.rsplit("_", n=1).str[-1]


def _base(qids: pd.Series) -> pd.Series:
    return qids.astype(str).str.rsplit("_", n=1).str[0]


def ifir_report(systems, datasets, names: Optional[Sequence[str]] = None, *, k: int = 20, norm: str = "ifir_code",
                ties: str = "docno", levels: bool = True, origin: bool = False, judge=None, docs=None) -> pd.DataFrame:
    """IFIR nDCG@k / MRR@k (``RR@k``) per subset (and per level with ``levels``), plus the average over subsets.

    Args:
        datasets: ``{subset: dataset}`` (fiqa, scifact_open, nfcorpus, aila, fire, pm, cds) or one dataset.
            ``systems`` may be a :class:`PerDataset` (each subset its own systems, e.g. a retriever over its corpus).
        norm: ``'ifir_code'`` (default, the paper's numbers) or ``'standard'`` (trec_eval nDCG).
        origin: also report each system on the level-0 topics scored against every level's qrels.
        judge: an :class:`~pyterrier_instruct.evaluation.judge.IFIRJudge`: adds ``INSTFOL@k`` (×100, the mean of the
            subset's level means; per level with ``levels``; averaged over subsets) from each system's level-0 and
            level runs. The subset keys pick the judge prompts. Per-query values: ``table.attrs["instfol"]``.
        docs: the judge's document texts (see :func:`~pyterrier_instruct.evaluation.instfol.doc_texts`): one source for
            every subset, or ``{subset: source}`` with an entry per subset; default: each dataset itself.
    """
    datasets = as_datasets(datasets)
    systems, names = systems_per_dataset(systems, names, list(datasets))
    measures = {IFIR_nDCG(norm=norm, ties=ties) @ k: f"nDCG@{k}", ir_measures.RR @ k: f"MRR@{k}"}
    rows, judged = [], []
    per_subset = isinstance(docs, Mapping) and all(key in docs for key in datasets)
    for key, ds in datasets.items():
        topics, qrels = ds.get_topics(), ds.get_qrels()
        qrels = qrels[_level(qrels["qid"]) != "0"]
        judged_topics = topics[_level(topics["qid"]) != "0"]
        for system, name in zip(systems[key], names):
            runs = {name: system(judged_topics)}
            res0 = None
            if origin:  # the level-0 ranking of a query, copied under each of its judged level qids
                res0 = system(topics[_level(topics["qid"]) == "0"])
                levels_of = pd.DataFrame({"base": _base(qrels["qid"]), "qid": qrels["qid"].astype(str)})
                levels_of = levels_of.drop_duplicates()
                runs[f"{name} (origin)"] = (res0.assign(base=_base(res0["qid"])).drop(columns="qid")
                                            .merge(levels_of, on="base").drop(columns="base"))
            for run_name, run in runs.items():
                rows += _rows(run, qrels, measures, key, run_name, levels)
            if judge is not None:
                source = ds if docs is None else docs[key] if per_subset else docs
                result = _instfol(system, name, key, topics, runs[name], res0, judge, source, k, ties)
                judged.append((name, result))
                rows += _instfol_rows(result, name, key, k, levels)
    long = pd.DataFrame(rows, columns=["model", "dataset", "measure", "value"])
    models = list(dict.fromkeys(long["model"]))
    average = {m: m for m in measures.values()}
    settings = {"nDCG": norm, "ties": ties, "k": k}
    provenance = {key: dict(getattr(ds, "provenance", {}) or {}) for key, ds in datasets.items()}
    if judge is None:
        return build_table(long, "ifir", models=models, settings=settings, provenance=provenance, average=average,
                           scale=1.0, decimals=2)
    average[f"INSTFOL@{k}"] = f"INSTFOL@{k}"
    settings.update({f"INSTFOL {name}": value for name, value in judge.settings().items()})
    table = build_table(long, "ifir", models=models, settings=settings, provenance=provenance, average=average,
                        scale=100.0, decimals=2, unscaled=("nDCG@", "MRR@") + tuple(UNSCALED_PREFIXES))
    combined = combine_instfol([r for _, r in judged])
    table.attrs["instfol"] = pd.concat([r.per_query.assign(model=n) for n, r in judged], ignore_index=True)
    table.attrs["instfol_judge"] = dict(combined.judge)
    return table


def _instfol(system, name, key, topics, run, res0, judge, source, k, ties):
    """INSTFOL@k of one system on one subset (raw scale): the level-0 run (reused from ``origin``) vs the level run."""
    if res0 is None or not (_level(topics["qid"]) == "0").any():
        res0 = system(no_instruction_topics(topics))
    try:
        result = instfol(res0, run, topics, source, judge, dataset=key, k=k, ties=ties, scale=1.0)
    except ValueError as err:
        raise ValueError(f"ifir_report: INSTFOL of {name!r} on {key!r}: {err}") from None
    return result


def _instfol_rows(result, name, key, k, levels):
    value = float(result.per_dataset.iloc[0]) if len(result.per_dataset) else float("nan")
    out = [(name, key, f"INSTFOL@{k}", value)]
    if levels:
        out += [(name, key, f"INSTFOL@{k}/level{lv}", float(v))
                for lv, v in zip(result.per_level["level"], result.per_level["instfol"])]
    return out


def _rows(run, qrels, measures, key, name, levels):
    q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    q = q[["query_id", "doc_id", "relevance"]]
    r = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    per = pd.DataFrame([(m.query_id, measures[m.measure], m.value)
                        for m in ir_measures.iter_calc(list(measures), q, r)],
                       columns=["qid", "measure", "value"])
    out = [(name, key, m, float(v)) for m, v in per.groupby("measure", sort=False)["value"].mean().items()]
    if levels:
        per["level"] = _level(per["qid"])
        for (lv, m), v in per.groupby(["level", "measure"], sort=True)["value"].mean().items():
            out.append((name, key, f"{m}/level{lv}", float(v)))
    return out
