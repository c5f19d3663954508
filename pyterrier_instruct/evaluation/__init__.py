"""Benchmark reports: each takes systems and a dataset (or several) and returns the paper's layout.

- FollowIR Table 2: :func:`followir_report` (:func:`followir_experiment` per dataset, :func:`followir_table`).
- InfoSearch Tables 2/3: :func:`infosearch_report`.
- InstructIR: :func:`instructir_report`.
- IFIR Table 3: :func:`ifir_report` (with ``judge=`` also INSTFOL@20).
- Promptriever Table 3 (BEIR prompts: none / selected / best): :func:`prompt_study_report`.
- IFIR INSTFOL: :func:`instfol` (one subset, two runs, a judge), :class:`IFIRJudge` (prompts, probability-weighted
  scores, backends; judgements kept in a :class:`~pyterrier_instruct.calls.CallStore`); the judge's arithmetic is
  :mod:`.scoring`, INSTFOL's :mod:`pyterrier_instruct.measures.instfol`.
- InF-IR Table 2 (FollowIR, MAIR DD/FR, BRIGHT): :func:`inf_ir_report`.
- Across benchmarks: :func:`suite` (one leaderboard, :mod:`.leaderboard`); how much a ranking depends on its
  instruction: :func:`sensitivity` (:mod:`.perturbation`).
- Shared: :func:`with_paper` (published numbers and Δ beside ours; none beside stand-ins), :func:`label_stand_ins`
  (``[stand-in]`` on the rows of a ``pt.Experiment`` computed with stand-in weights or data), :func:`to_markdown`,
  :func:`plot_report`,
  :class:`PerDataset` (systems that differ per dataset), :class:`SavedRun` (a system's runs kept on disk and reused).
"""
from ._report import PerDataset, build_table, label_stand_ins, plot_report, to_markdown, with_paper
from .runs import SavedRun
from .beir import prompt_study_report
from .followir import (followir_experiment, followir_measures, followir_report, followir_table, plot_per_query_pmrr)
from .ifir import ifir_report
from .instfol import doc_texts, instfol
from .judge import IFIRJudge, Judgement, JudgeItem, weighted_judge_score
from .infosearch import infosearch_measures, infosearch_report
from .instructir import instructir_report
from .inf_ir import inf_ir_report
from .leaderboard import suite
from .perturbation import PERTURBATIONS, Perturb, kendall_tau, plot_sensitivity, rbo, sensitivity

__all__ = ["followir_experiment", "followir_measures", "followir_report", "followir_table", "plot_per_query_pmrr",
           "infosearch_report", "infosearch_measures", "instructir_report", "ifir_report", "inf_ir_report",
           "prompt_study_report", "with_paper", "to_markdown", "PerDataset", "SavedRun", "plot_report", "build_table",
           "instfol", "doc_texts", "IFIRJudge", "Judgement", "JudgeItem", "weighted_judge_score", "suite",
           "sensitivity", "PERTURBATIONS", "Perturb", "plot_sensitivity", "rbo", "kendall_tau", "label_stand_ins"]
