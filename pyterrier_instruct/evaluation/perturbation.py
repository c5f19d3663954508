"""How much a ranking depends on its instruction (:func:`sensitivity`): the topics' instructions perturbed by a stage
(:class:`Perturb`) before the system, each perturbed run scored with the benchmark's main measure (as
:func:`~.leaderboard.suite` scores it) and compared with the unperturbed run: RBO (pyterrier-alpha's
``pyterrier_alpha.rbo`` when installed, else the same computation), Kendall's τ over the documents both runs rank,
and the share of queries whose top 10 changed. A system that ignores its instruction changes nothing; one that
follows it does.
"""
from __future__ import annotations

import random
import re
from typing import Dict, Iterable, Optional, Sequence, Tuple

import pandas as pd
import pyterrier as pt

from .._config import Configured
from ._report import finish_figure

__all__ = ["sensitivity", "Perturb", "PERTURBATIONS", "rbo", "kendall_tau", "plot_sensitivity"]

#: the perturbations without a model, and those an LLM ``backend`` writes (its ``store=`` keeps them)
PERTURBATIONS = ("drop", "swap", "truncate", "shuffle")
LLM_PERTURBATIONS = {
    "negate": "Rewrite the following search instruction so that it asks for the opposite: what it asks for becomes "
              "what must be excluded, and what it excludes becomes what is asked for. Answer with the rewritten "
              "instruction only.",
    "paraphrase": "Paraphrase the following search instruction: the same meaning in different words. Answer with the "
                  "paraphrase only.",
    "contradict": "Write a search instruction that contradicts the following one while staying on the same topic. "
                  "Answer with the new instruction only.",
}


class Perturb(Configured, pt.Transformer):
    """``Q → Q``: the topics' ``instruction`` perturbed; every other column kept.

    Args:
        kind: ``drop`` (the instruction removed: the model's default applies), ``swap`` (each query gets the
            instruction of the next base query, same variant), ``truncate`` (its first ``fraction`` of words),
            ``shuffle`` (its sentences in a random order, ``seed`` per qid), or with ``backend`` ``negate``,
            ``paraphrase``, ``contradict`` (one LLM call per distinct instruction, greedy).
        backend: a :class:`~pyterrier_instruct.backends.Backend` (give it ``store=`` to keep the rewrites).
    """

    def __init__(self, kind: str, *, fraction: float = 0.5, seed: int = 0, backend=None, max_new_tokens: int = 256):
        if kind not in PERTURBATIONS and kind not in LLM_PERTURBATIONS:
            raise ValueError(f"Perturb: unknown kind {kind!r}; choose from {PERTURBATIONS + tuple(LLM_PERTURBATIONS)}")
        if kind in LLM_PERTURBATIONS and backend is None:
            raise ValueError(f"Perturb({kind!r}) writes the instruction with an LLM: give backend=")
        self.kind, self.fraction, self.seed = kind, fraction, seed
        self.backend, self.max_new_tokens = backend, max_new_tokens

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(topics, includes=["qid", "instruction"])
        out = topics.copy()
        text = out["instruction"].fillna("").astype(str)
        if self.kind == "drop":
            out["instruction"] = ""
        elif self.kind == "swap":
            out["instruction"] = _swapped(out["qid"].astype(str), text)
        elif self.kind == "truncate":
            out["instruction"] = [" ".join(t.split()[:int(len(t.split()) * self.fraction)]) for t in text]
        elif self.kind == "shuffle":
            out["instruction"] = [_shuffled(t, random.Random(f"{self.seed}:{q}")) for q, t in zip(out["qid"], text)]
        else:
            distinct = list(dict.fromkeys(t for t in text if t.strip()))
            prompts = [self.backend.prepare([{"role": "user", "content": f"{LLM_PERTURBATIONS[self.kind]}\n\n{t}"}])
                       for t in distinct]
            answers = self.backend.generate(prompts, max_new_tokens=self.max_new_tokens) if prompts else []
            rewritten = {t: a.strip() for t, a in zip(distinct, answers)}
            out["instruction"] = [rewritten.get(t, t) for t in text]
        return out


def _swapped(qids: pd.Series, text: pd.Series) -> list:
    """Each row's instruction taken from the next base query (in topic order, cyclic), same variant where it has one."""
    from ..instructions import split_qid
    parts = [split_qid(q) for q in qids]
    bases = list(dict.fromkeys(b for b, _ in parts))
    of = {}
    for (base, variant), t in zip(parts, text):
        of.setdefault((base, variant), t)
        of.setdefault((base, "*"), t)
    following = {b: bases[(i + 1) % len(bases)] for i, b in enumerate(bases)}
    return [of.get((following[b], v), of[(following[b], "*")]) for b, v in parts]


def _shuffled(text: str, rng: random.Random) -> str:
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
    rng.shuffle(sentences)
    return " ".join(sentences)


def _ordered(run: pd.DataFrame) -> Dict[str, list]:
    """``{qid: docnos best first}``: by ``rank`` when the run has it, else by score (stable)."""
    key = ["qid", "rank"] if "rank" in run.columns else ["qid", "score"]
    run = run.sort_values(key, ascending=[True, "rank" in run.columns], kind="stable")
    return {str(q): list(g["docno"].astype(str)) for q, g in run.groupby("qid", sort=False)}


def rbo(a: pd.DataFrame, b: pd.DataFrame, p: float = 0.99) -> Iterable[Tuple[str, float]]:
    """Rank-biased overlap per query of runs ``a`` and ``b`` (``qid, docno, score``), computed as pyterrier-alpha's
    ``pyterrier_alpha.rbo`` (its finite form to depth 1,000, runs ordered by descending score), which is used when
    installed."""
    try:
        from pyterrier_alpha import rbo as alpha_rbo
    except ImportError:
        return _rbo(a, b, p)
    return alpha_rbo(a, b, p=p)


def _rbo(a: pd.DataFrame, b: pd.DataFrame, p: float = 0.99, depth: int = 1000) -> Iterable[Tuple[str, float]]:
    def lists(run):
        run = run.sort_values(["qid", "score"], ascending=False)
        return {q: list(g["docno"]) for q, g in run.groupby("qid")}
    first, second = lists(a), lists(b)
    out = {}
    for qid in set(first) | set(second):
        x, y = first.get(qid, []), second.get(qid, [])
        seen_x, seen_y, overlap, score, norm, weight = set(), set(), 0, 0.0, 0.0, 1.0
        for i in range(depth):
            for doc, mine, other in ((x[i] if i < len(x) else None, seen_x, seen_y),
                                     (y[i] if i < len(y) else None, seen_y, seen_x)):
                if doc is not None and doc not in mine:
                    mine.add(doc)
                    overlap += doc in other
            score += weight * overlap / (i + 1)
            norm += weight
            weight *= p
        out[qid] = score / norm
    return out.items()


def kendall_tau(a: pd.DataFrame, b: pd.DataFrame) -> Dict[str, float]:
    """Kendall's τ-b per query between the positions of the documents both runs rank (queries with fewer than two
    such documents left out)."""
    from scipy.stats import kendalltau
    first, second = _ordered(a), _ordered(b)
    out = {}
    for qid, docs in first.items():
        where = {d: i for i, d in enumerate(second.get(qid, []))}
        common = [d for d in docs if d in where]
        if len(common) >= 2:
            out[qid] = float(kendalltau(range(len(common)), [where[d] for d in common]).statistic)
    return out


def _top_changed(a: pd.DataFrame, b: pd.DataFrame, k: int = 10) -> float:
    first, second = _ordered(a), _ordered(b)
    qids = set(first) | set(second)
    return sum(first.get(q, [])[:k] != second.get(q, [])[:k] for q in qids) / max(1, len(qids))


def sensitivity(system, dataset, perturbations: Sequence = PERTURBATIONS, *, backend=None, name: str = "system",
                p: float = 0.99, k: int = 10) -> pd.DataFrame:
    """The system's sensitivity to its instruction on ``dataset``, one row per perturbation.

    Args:
        system: ``Q → R`` on the dataset's topics (e.g. ``ds.candidates() >> reranker``); each perturbation runs
            ``Perturb(kind) >> system``.
        dataset: a benchmark dataset of :data:`~.leaderboard.BENCHMARKS` (or a bundled miniature of its layout).
        perturbations: kinds of :class:`Perturb` (:data:`PERTURBATIONS`; ``negate``/``paraphrase``/``contradict`` with
            ``backend``) or :class:`Perturb` stages.
        backend: the LLM that writes the ``negate``/``paraphrase``/``contradict`` instructions.
        name: the system's name in the table.
        p, k: RBO's persistence; the top ``k`` compared.

    Returns:
        ``system, perturbation, score`` (the benchmark's main measure as its report prints it), ``change`` (minus the
        unperturbed score; the first row is the unperturbed run, ``none``), ``rbo`` and ``kendall_tau`` (means over
        queries against the unperturbed run; pyterrier-alpha's finite RBO stays below 1 for identical rankings shorter
        than 1,000, so compare with the ``none`` row), ``top{k}_changed`` (share of queries). ``attrs["measure"]``.
    """
    from ._report import PerDataset
    from .leaderboard import _label, _report, benchmark_of, main_value
    benchmark = benchmark_of(dataset)
    measure = _suite_measure(benchmark)
    key = _label(getattr(dataset, "name", "dataset"))
    topics = dataset.get_topics()
    stages = [("none", None)] + [(s.kind if isinstance(s, Perturb) else s,
                                  s if isinstance(s, Perturb) else Perturb(s, backend=backend)) for s in perturbations]
    runs, rows = {}, []
    for label, stage in stages:
        run = system(topics if stage is None else stage(topics))
        runs[label] = run
        as_system = pt.Transformer.from_df(run, uniform=False)  # every report runs systems on its own topic subsets
        score = main_value(_report(benchmark, PerDataset({key: {name: as_system}}), {key: dataset}), measure, name)
        base = runs["none"]
        rbo_values = [v for _, v in rbo(base, run, p=p)]
        tau = kendall_tau(base, run)
        rows.append({"system": name, "perturbation": label, "score": score,
                     "rbo": sum(rbo_values) / max(1, len(rbo_values)),
                     "kendall_tau": sum(tau.values()) / len(tau) if tau else float("nan"),
                     f"top{k}_changed": _top_changed(base, run, k)})
    table = pd.DataFrame(rows)
    table.insert(3, "change", (table["score"] - table["score"].iloc[0]).round(6) + 0.0)
    table.attrs.update(measure=measure, benchmark=benchmark)
    return table


def _suite_measure(benchmark: str) -> str:
    from .leaderboard import BENCHMARKS
    return BENCHMARKS[benchmark].main


def plot_sensitivity(table: pd.DataFrame, path: Optional[str] = None):
    """Per system a row of two panels: the main score's change and RBO / τ per perturbation; saved to ``path`` when
    given; returns the (closed) figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(dict.fromkeys(table["system"]))
    fig, axes = plt.subplots(len(systems), 2, figsize=(9, 2.8 * len(systems)), squeeze=False)
    for (left, right), system in zip(axes, systems):
        part = table[table["system"] == system]
        left.bar(part["perturbation"], part["change"], color="tab:red")
        left.axhline(0, color="black", linewidth=0.8)
        left.set_title(f"{system}: change in {table.attrs.get('measure', 'score')}", fontsize="small")
        right.plot(part["perturbation"], part["rbo"], marker="o", label="RBO")
        right.plot(part["perturbation"], part["kendall_tau"], marker="s", label="Kendall's τ")
        right.set_ylim(-1.05, 1.05)
        right.legend(fontsize="x-small")
        right.set_title(f"{system}: agreement with the unperturbed run", fontsize="small")
    return finish_figure(fig, path, dpi=110)
