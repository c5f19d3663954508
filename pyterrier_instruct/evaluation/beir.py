"""Promptriever's BEIR prompt study (Table 3; protocol Promptriever §4.3): per dataset, the measure with no prompt, with
the prompt selected on a dev sample, and with the best prompt on the test queries (an oracle: test-set leakage, reported
separately). A prompt is applied to every query exactly like an instruction (the ``instruction`` column).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd
import pyterrier as pt

from ..prompts import BEIR_PROMPTS
from ._report import as_datasets, build_table, systems_per_dataset


def prompt_study_report(systems, datasets, dev: Optional[Mapping[str, object]] = None,
                        names: Optional[Sequence[str]] = None, *, prompts: Sequence[str] = BEIR_PROMPTS,
                        measure: str = "nDCG@10", sample: Optional[int] = 10, seed: int = 0,
                        ignore_identical_ids: bool = True, verbose: bool = True) -> pd.DataFrame:
    """``Model | <dataset> nDCG@10/none | …/selected | …/best | Avg …`` (×100, one decimal).

    Args:
        systems: ``Q → R`` transformers reading ``instruction`` (a list with ``names``, ``{name: system}``, or a
            :class:`PerDataset`); each runs once per prompt on the test topics and on the dev sample.
        datasets: ``{key: test dataset}`` (keys as the paper's columns: ``scifact``, ``fiqa``, …) or one dataset.
        dev: ``{key: dataset}`` of the selection split (validation, else train); without one no ``selected`` cell.
        prompts: the candidate prompts (default: the 10 of Promptriever Table 10); no prompt is not a candidate.
        sample, seed: the dev sample (:func:`~pyterrier_instruct.dense.selection.dev_sample`); ties: lowest index.
        ignore_identical_ids: drop a retrieved document whose id is the query's, as BEIR's evaluator does by default.
        verbose: the prompt-selection progress bar.

    ``table.attrs["prompts"]``: every prompt's value per system and dataset (``model, dataset, prompt, text, test,
    dev``).
    """
    from ..dense.selection import evaluate, select_prompt
    prompts = list(prompts)
    if not prompts:
        raise ValueError("prompt_study_report needs at least one prompt")
    datasets = as_datasets(datasets)
    dev = dict(dev or {})
    unknown = [k for k in dev if k not in datasets]
    if unknown:
        raise ValueError(f"dev has dataset(s) {unknown} that are not in datasets {list(datasets)}")
    systems, names = systems_per_dataset(systems, names, list(datasets))
    if ignore_identical_ids:
        systems = {k: [s >> pt.apply.generic(_drop_identical_ids) for s in v] for k, v in systems.items()}
    rows, per_prompt = [], []
    for key, ds in datasets.items():
        topics, qrels = ds.get_topics(), ds.get_qrels()
        for system, name in zip(systems[key], names):
            def on_test(prompt):
                return evaluate(system(topics.assign(instruction=prompt)), qrels, measure, topics["qid"])
            test = [on_test(p) for p in prompts]
            rows.append((name, key, f"{measure}/none", on_test("")))
            dev_values = [float("nan")] * len(prompts)
            if key in dev:
                sel = select_prompt(system, dev[key].get_topics(), dev[key].get_qrels(), prompts, measure=measure,
                                    sample=sample, seed=seed, verbose=verbose)
                dev_values = sel.scores["dev"].tolist()
                rows.append((name, key, f"{measure}/selected", test[sel.selected]))
            rows.append((name, key, f"{measure}/best", test[int(np.argmax(test))]))
            per_prompt += [(name, key, i + 1, p, t, d) for i, (p, t, d) in enumerate(zip(prompts, test, dev_values))]
    long = pd.DataFrame(rows, columns=["model", "dataset", "measure", "value"])  # in order: none, selected, best
    cells = [f"{measure}/{s}" for s in ("none", "selected", "best")]
    settings = {"measure": measure, "prompts": len(prompts), "dev sample": sample, "seed": seed,
                "selection": "dev argmax, lowest prompt on ties", "ignore_identical_ids": ignore_identical_ids}
    provenance = {key: dict(getattr(ds, "provenance", {}) or {}) for key, ds in datasets.items()}
    table = build_table(long, "beir", models=names, settings=settings, provenance=provenance,
                        average={m: m for m in cells})
    table.attrs["prompts"] = pd.DataFrame(per_prompt, columns=["model", "dataset", "prompt", "text", "test", "dev"])
    return table


def _drop_identical_ids(run: pd.DataFrame) -> pd.DataFrame:
    return run[run["qid"].astype(str) != run["docno"].astype(str)]
