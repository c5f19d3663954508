"""pyterrier-instruct: instruction-following retrieval for PyTerrier.

``import pyterrier_instruct as pti`` registers the measures (``pMRR``, ``WISE``, ``SICR``, ``Robustness``, …) with ir_measures,
the datasets with ir_datasets (``instruct/followir/robust04``, …), and
exposes the public names below; transformers and loaders are imported on first use, and no model
library (torch, transformers) is imported until a model is actually run.
"""
from __future__ import annotations

import importlib

from . import _pt_compat, measures
from .datasets.irds import register as _register_datasets
from .instructions import (DEFAULT_COMPOSER, VARIANTS, compose, paired_qid, paired_qrels, paired_topics,
                           split_qid)
from .measures import (OG, SICR, WISE, Changed, GoldRank, IdealWISE, IFIR_nDCG, InfoSearch_pMRR, Reversed, Robustness,
                       changed_docs, pMRR, pmrr)

__version__ = "0.1.0"

_pt_compat.install()  # pt.Experiment with paired and standard measures together (when pyterrier is imported)
_register_datasets()  # ir_datasets ids instruct/<name>; files are located and read on first access

_LAZY = {
    "FoldInstruction": "rewrite",
    "SetInstruction": "rewrite",
    "InstructReranker": "_base",
    "BM25": "retrieval.pisa",
    "bm25_index": "retrieval.pisa",
    "PoolBM25": "retrieval.pool_bm25",
    "TerrierBM25": "retrieval.optional",
    "PyseriniBM25": "retrieval.anserini",
    "anserini_index": "retrieval.anserini",
    "BiEncoder": "dense",
    "Promptriever": "dense",
    "RepLLaMA": "dense",
    "E5Mistral": "dense",
    "InFEmbed": "dense",
    "SBertBiEncoder": "dense",
    "EmbeddingIndex": "dense",
    "select_prompt": "dense",
    "BEIR_PROMPTS": "prompts",
    "MonoT5": "pointwise",
    "CausalLMReranker": "pointwise",
    "FollowIR7B": "pointwise",
    "CrossEncoderReranker": "pointwise",
    "MonoBERT": "pointwise",
    "TART": "pointwise",
    "PROMPTS": "prompts",
    "LISTWISE": "prompts",
    "ListwiseReranker": "listwise",
    "RankZephyr": "listwise",
    "RankVicuna": "listwise",
    "RankGPT": "listwise",
    "HFBackend": "backends",
    "VLLMBackend": "backends",
    "OpenAIBackend": "backends",
    "FunctionBackend": "backends",
    "IFIRJudge": "evaluation",
    "JudgeCache": "evaluation",
    "instfol": "evaluation",
    "IFIR_JUDGE": "prompts",
    "followir_experiment": "evaluation",
    "followir_table": "evaluation",
    "followir_report": "evaluation",
    "infosearch_report": "evaluation",
    "instructir_report": "evaluation",
    "ifir_report": "evaluation",
    "prompt_study_report": "evaluation",
    "with_paper": "evaluation",
    "PerDataset": "evaluation",
    "SavedRun": "evaluation",
    "paper_numbers": "paper",
    "datasets": "datasets",
    "evaluation": "evaluation",
    "load_dataset": "datasets",
    "ModelNotFoundError": "_hub",
    "on_ray": "scale",
    "PairedAccuracy": "measures",
    "inf_ir_report": "evaluation",
}

__all__ = ["__version__", "measures", "pMRR", "OG", "Changed", "Reversed", "WISE", "IdealWISE", "SICR",
           "InfoSearch_pMRR", "GoldRank", "Robustness", "IFIR_nDCG", "pmrr", "changed_docs", "compose", "paired_topics",
           "paired_qrels", "paired_qid", "split_qid", "DEFAULT_COMPOSER", "VARIANTS"] + list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'pyterrier_instruct' has no attribute {name!r}")
    module = importlib.import_module(f".{_LAZY[name]}", __name__)
    value = module if name in ("datasets", "evaluation") else getattr(module, "load" if name == "load_dataset" else name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
