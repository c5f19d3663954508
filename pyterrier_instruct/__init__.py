"""pyterrier-instruct: instruction-following retrieval for PyTerrier.

``import pyterrier_instruct as pti`` registers the measures (``pMRR``, ``WISE``, ``SICR``, ``Robustness``, …) with
ir_measures, the datasets with ir_datasets (``instruct/followir/robust04``, …), and exposes the public names below;
transformers and loaders are imported on first use, and no model library (torch, transformers) is imported until a
model is actually run.
"""
# ruff: noqa: F401, F403 - the imports below are the package's public names (re-exported)
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# The eager public names (listed in _EAGER below; ``__all__`` adds the lazy ones).
from . import _pt_compat, measures
from ._progress import LIBRARY_BARS_ENV, library_progress
from ._version import __version__
from .datasets.irds import register as _register_datasets
from .datasets.opening import load as load_dataset
from .instructions import (DEFAULT_COMPOSER, VARIANTS, QuerySlot, compose, paired_qid, paired_qrels, paired_topics,
                           split_qid)
from .measures import (OG, SICR, WISE, Calls, Changed, Cost, GoldRank, IdealWISE, IFIR_nDCG, InfoSearch_pMRR,
                       PairedAccuracy, Reversed, Robustness, Tokens, changed_docs, pMRR, pmrr)

_pt_compat.install()  # pt.Experiment with paired and standard measures together (when pyterrier is imported)
_register_datasets()  # ir_datasets ids instruct/<name>; files are located and read on first access

#: The lazy public names by module: ``pti.<name>`` imports its module on first use (``import pyterrier_instruct``
#: imports no model library). tests/test_package.py checks that each module's ``__all__`` is exactly its entry here.
LAZY = {
    "rewrite": ("FoldInstruction", "SetInstruction"),
    "base": ("InstructReranker",),
    "errors": ("ModelNotFoundError", "MissingTextError"),
    "pointwise": ("PointwiseReranker", "TrueFalseReranker", "MonoT5", "CausalLMReranker", "FollowIR7B",
                  "CrossEncoderReranker", "MonoBERT", "TART", "Qwen3Reranker", "MxbaiRerankV2", "Rank1"),
    "listwise": ("ListwiseReranker", "RankZephyr", "RankVicuna", "RankGPT", "FIRST", "ReasonRank", "parse_permutation",
                 "windows"),
    "setwise": ("Setwise", "RankR1"),
    "dense": ("BiEncoder", "Promptriever", "RepLLaMA", "E5Mistral", "InFEmbed", "SBertBiEncoder", "Qwen3Embedding",
              "EmbeddingIndex", "EmbeddingIndexer", "select_prompt", "PromptSelection"),
    "retrieval": ("BM25", "bm25_index", "PoolBM25", "TerrierBM25", "PyseriniBM25", "anserini_index"),
    "caching": ("ScorerCache", "RetrieverCache"),
    "backends": ("Backend", "BackendUnavailable", "RequestError", "Generation", "Prompt", "TokenizerBackend",
                 "FunctionBackend", "HFBackend", "OpenAIBackend", "VLLMBackend", "make_backend", "Continuation"),
    "evaluation": ("followir_experiment", "followir_measures", "followir_report", "followir_table",
                   "plot_per_query_pmrr", "infosearch_report", "infosearch_measures", "instructir_report",
                   "ifir_report", "inf_ir_report", "prompt_study_report", "with_paper", "to_markdown", "PerDataset",
                   "SavedRun", "plot_report", "build_table", "instfol", "doc_texts", "IFIRJudge",
                   "Judgement", "JudgeItem", "weighted_judge_score", "suite", "sensitivity", "PERTURBATIONS", "Perturb",
                   "plot_sensitivity", "rbo", "kendall_tau", "label_stand_ins"),
    "prompts": ("PROMPTS", "LISTWISE", "IFIR_JUDGE", "BEIR_PROMPTS", "TrueFalse", "Listwise"),
    "paper": ("paper_numbers",),
    "scale": ("on_ray", "OnRay", "connect", "local_cluster"),
    "calls": ("CallStore",),
}
#: Subpackages served as modules (``pti.datasets``, ``pti.evaluation``).
SUBPACKAGES = ("datasets", "evaluation")
_MODULE = {name: module for module, names in LAZY.items() for name in names}
_EAGER = ["__version__", "measures", "pMRR", "OG", "Changed", "Reversed", "WISE", "IdealWISE", "SICR",
          "InfoSearch_pMRR", "GoldRank", "Robustness", "IFIR_nDCG", "PairedAccuracy", "Calls", "Tokens", "Cost", "pmrr",
          "changed_docs",
          "compose", "paired_topics", "paired_qrels", "paired_qid", "split_qid", "DEFAULT_COMPOSER", "VARIANTS",
          "QuerySlot", "load_dataset", "library_progress", "LIBRARY_BARS_ENV"]
__all__ = sorted({*_EAGER, *SUBPACKAGES, *_MODULE})

if TYPE_CHECKING:  # what editors and type checkers read: each module's ``__all__`` (imported on first use)
    from . import datasets, evaluation
    from .rewrite import *
    from .base import *
    from .errors import *
    from .pointwise import *
    from .listwise import *
    from .setwise import *
    from .dense import *
    from .retrieval import *
    from .caching import *
    from .backends import *
    from .evaluation import *
    from .prompts import *
    from .paper import *
    from .scale import *
    from .calls import *


def __getattr__(name: str):
    if name in SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    elif name in _MODULE:
        value = getattr(importlib.import_module(f".{_MODULE[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'pyterrier_instruct' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return __all__
