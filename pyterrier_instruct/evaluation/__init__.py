"""Benchmark reports: each takes systems and a dataset (or several) and returns the paper's layout.

FollowIR (:func:`followir_report`), InfoSearch, InstructIR, IFIR (with ``judge=`` also INSTFOL@20, :class:`IFIRJudge`),
Promptriever's BEIR prompt study, InF-IR; across benchmarks :func:`suite` and :func:`sensitivity`; shared helpers
:func:`with_paper`, :func:`label_stand_ins`, :func:`to_markdown`, :func:`plot_report`, :class:`PerDataset`,
:class:`SavedRun`.
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
