"""The systems of the reproduction pipelines: the rows shared by several tables (:data:`ROWS_2025`,
:data:`ROWS_SETWISE`) and their constructors, the rows ``--systems`` selected (:func:`selected`), the offline check of
their weights (:func:`check_models`), their saved runs labelled by checkpoint (:func:`saved`, :func:`row_name`),
``--ray`` (:func:`on_cluster`) and the full-retrieval rows (:func:`full_retrieval`)."""
from __future__ import annotations

import argparse
import os
from typing import Callable, Dict, Mapping, Optional, Sequence

from .arguments import FIRST_STAGES, Row, backend_options

#: RepLLaMA as the Promptriever paper reproduced it (FollowIR, InstructIR, the BEIR prompt study)
ROW_REPLLAMA = Row("RepLLaMA", "RepLLaMA", "samaya-ai/RepLLaMA-reproduced")
#: rank1 (FollowIR, InfoSearch): a reasoning reranker, run only when ``--systems`` names it
ROW_RANK1 = Row("rank1-7b", None, "jhu-clsp/rank1-7b", "reasoning reranker, up to 8192 generated tokens per passage "
                "(run on request: --systems ...,rank1)", default=False)

#: The instruction-aware models of 2025 as rows of the reranking tables (FollowIR, InfoSearch; IFIR: the embedding): not
#: in the papers' tables, so run only when ``--systems`` names them.
ROWS_2025 = {
    "qwen3-reranker": Row("Qwen3-Reranker-0.6B", None, "Qwen/Qwen3-Reranker-0.6B",
                          "2025, not in the paper: instruction in <Instruct>", default=False),
    "mxbai-rerank-v2": Row("mxbai-rerank-base-v2", None, "mixedbread-ai/mxbai-rerank-base-v2",
                           "2025, not in the paper: instruction in its instruction: field", default=False),
    "qwen3-embedding": Row("Qwen3-Embedding-0.6B", None, "Qwen/Qwen3-Embedding-0.6B",
                           "2025, not in the paper: instruction in Instruct:", default=False),
}


def rerankers_2025(models: Mapping[str, str], kw: Mapping[str, object]) -> Dict[str, Callable]:
    """The :data:`ROWS_2025` systems as reranking stages (constructors for :func:`selected`) of ``--<key>`` weights."""
    import pyterrier_instruct as pti
    m = models
    return {
        "qwen3-reranker": lambda: pti.Qwen3Reranker(m["qwen3-reranker"], **kw),
        "mxbai-rerank-v2": lambda: pti.MxbaiRerankV2(m["mxbai-rerank-v2"], **kw),
        "qwen3-embedding": lambda: pti.Qwen3Embedding(m["qwen3-embedding"], **kw).scorer(),
    }


def listwise_backend(model: str, backend: str, options: Mapping[str, object]):
    """A listwise row's backend: ``pti.HFBackend`` (with :func:`backend_options`) or ``pti.VLLMBackend``."""
    import pyterrier_instruct as pti
    return pti.HFBackend(model, **backend_options(options)) if backend == "hf" else pti.VLLMBackend(model)


def rank1(model: str, backend: str, options: Mapping[str, object]):
    """The rank1 row: ``pti.Rank1`` on the ``'hf'`` backend (with ``device``/``batch_size`` from :func:`model_options`)
    or on ``'vllm'``."""
    import pyterrier_instruct as pti
    backend_options_ = backend_options(options) if backend == "hf" else None
    return pti.Rank1(model, backend=backend, backend_options=backend_options_, verbose=options["verbose"])


#: The setwise rows (Setwise, SIGIR 2024; Rank-R1, 2025): not in the papers' tables, so run only when ``--systems``
#: names them. FollowIR: both rerank the candidates; BRIGHT (``inf-ir``): Rank-R1 reranks BM25's top 100.
ROWS_SETWISE = {
    "setwise": Row("Setwise (Flan-T5-large)", None, "google/flan-t5-large",
                   "setwise heapsort, top 10 (Zhuang et al., 2024; not in the paper)", default=False),
    "rank-r1": Row("Rank-R1-7B", None, "ielabgroup/Rank-R1-7B-v0.1", "setwise reasoning, 20 documents per comparison, "
                   "up to 2048 generated tokens per comparison (a LoRA adapter on Qwen2.5-7B-Instruct; not in the "
                   "paper)", default=False),
}


def setwise_rerankers(models: Mapping[str, str], backend: str, options: Mapping[str, object],
                      reasoning_budget: Optional[int] = None, **rank_r1) -> Dict[str, Callable]:
    """The :data:`ROWS_SETWISE` systems over ``--<key>`` weights on the ``'hf'`` (with ``device``/``batch_size``) or
    ``'vllm'`` backend; ``reasoning_budget`` (``--reasoning-budget``; None: Rank-R1's own 2,048) and ``rank_r1`` keyword
    arguments go to Rank-R1 (BRIGHT's longer query and passages)."""
    import pyterrier_instruct as pti
    hf = backend_options(options) if backend == "hf" else None
    if reasoning_budget is not None:
        rank_r1["max_output_tokens"] = reasoning_budget
    return {"setwise": lambda: pti.Setwise(models["setwise"], backend=backend, backend_options=hf,
                                           verbose=options["verbose"]),
            "rank-r1": lambda: pti.RankR1(models["rank-r1"], backend=backend, backend_options=hf,
                                          verbose=options["verbose"], **rank_r1)}


def check_models(args: argparse.Namespace, rows: Mapping[str, Row]) -> None:
    """Fails before any work when a selected row's weights are neither a local folder nor cached and the hub is offline
    (``HF_HUB_OFFLINE``), naming the rows and the ways out."""
    from .._hub import MODELS_ENV, local_model, offline
    if not offline() or getattr(args, "ray", None) is not None:  # on a cluster the workers load the weights (and check)
        return
    missing = [(k, args.models[k]) for k in args.keys if k in args.models and rows[k].hub
               and not os.path.isdir(args.models[k]) and local_model(args.models[k]) is None]
    if missing:
        listed = "; ".join(f"{rows[k].name} ({m})" for k, m in missing)
        raise SystemExit(f"error: HF_HUB_OFFLINE is set and these checkpoints are not available locally: {listed}. "
                         f"Pass a local folder ({', '.join('--' + k + ' DIR' for k, _ in missing)}), put the weights "
                         f"under ${MODELS_ENV}/<hub id>, allow downloads (unset HF_HUB_OFFLINE), or leave the rows out "
                         "with --systems.")


def selected(builders: Mapping[str, Callable[[], object]], args: argparse.Namespace) -> Dict[str, object]:
    """``{row key: builder()}`` for the rows of ``builders`` that ``--systems`` selected, in table order (rows that were
    not asked for are never constructed)."""
    return {k: builders[k]() for k in args.keys if k in builders}


def row_name(rows: Mapping[str, Row], key: str, args: argparse.Namespace) -> str:
    """The table row of ``key`` labelled by the checkpoint used: the row's name for its default checkpoint, else
    ``"<name> [<checkpoint>]"`` (a folder by its name, a hub id as it is), so a user's own checkpoint is never printed
    as the paper's model; weights that are a stand-in or record no revision say so in the row too (``"MonoT5-base
    [stand-in]"``, ``"MonoT5-base [t5, unrevisioned]"``: :func:`pyterrier_instruct._hub.checkpoint_note`)."""
    row, model = rows[key], getattr(args, "models", {}).get(key)
    if row.model is None or model is None:
        return row.name
    from .._hub import checkpoint_note, is_path
    notes = []
    if model != row.model:
        notes.append(os.path.basename(os.path.normpath(model)) if os.path.isdir(model) or is_path(model) else model)
    note = checkpoint_note(model) if row.hub else None
    if note:
        notes.append(note)
    return f"{row.name} [{', '.join(notes)}]" if notes else row.name


def saved(systems: Mapping[str, object], args: argparse.Namespace, rows: Mapping[str, Row],
          label: str) -> Dict[str, object]:
    """``{row name: SavedRun(system)}``: each row's runs on dataset ``label`` go to ``<out>/runs/<label>/<key>/``."""
    from ..evaluation.runs import SavedRun
    return {row_name(rows, k, args): SavedRun(s, os.path.join(args.out, "runs", label, k), verbose=not args.quiet)
            for k, s in systems.items()}


def on_cluster(systems: Mapping[str, object], args: argparse.Namespace,
               local: Sequence[str] = ("bm25",)) -> Dict[str, object]:
    """``systems`` with each one (but the cheap ``local`` rows) wrapped in ``pti.on_ray`` when ``--ray`` is given; the
    saved runs keep their keys (a system on Ray gives the same run)."""
    if getattr(args, "ray", None) is None:
        return dict(systems)
    from ..scale import on_ray
    return {k: s if k in local else on_ray(s, workers=args.workers, address=args.ray, verbose=not args.quiet)
            for k, s in systems.items()}


def first_stage_bm25(first_stage: str, corpus, index: str, **bm25):
    """The BM25 that ``--first-stage`` names over ``corpus`` (an iterable of documents), its index kept at ``index``
    (PISA) or ``index-pyserini`` (Lucene) and reused; ``bm25`` keyword arguments (``k1``/``b``/``verbose``) go to it."""
    from .. import BM25, PyseriniBM25
    if first_stage == "pyserini":
        return PyseriniBM25(corpus, path=f"{index}-pyserini", **bm25)
    if first_stage == "pisa":
        return BM25(corpus, path=index, **bm25)
    raise ValueError(f"first stage {first_stage!r}: choose from {', '.join(FIRST_STAGES)}")


def full_retrieval(args: argparse.Namespace, rows: Mapping[str, Row], label: str, ds, dense: Mapping[str, object],
                   **bm25) -> Dict[str, object]:
    """The saved full-retrieval rows on one dataset: ``bm25`` (when selected; the ``--first-stage`` BM25, PISA by
    default, over the dataset's corpus on query + instruction, ``bm25`` keyword arguments such as ``k1``/``b``) and each
    dense model's exact retriever over the corpus. Indexes are kept under ``<out>/index/<label>/<key>`` and reused."""
    from .. import FoldInstruction
    index = os.path.join(args.out, "index", label)
    systems = {}
    if "bm25" in args.keys:
        bm25_model = first_stage_bm25(getattr(args, "first_stage", "pisa"), ds.get_corpus_iter(verbose=not args.quiet),
                                      os.path.join(index, "bm25"), verbose=not args.quiet, **bm25)
        systems["bm25"] = FoldInstruction() >> bm25_model
    for key, model in dense.items():
        systems[key] = model.retriever(os.path.join(index, key), num_results=1000, corpus=ds.get_corpus_iter)
    return saved(on_cluster(systems, args), args, rows, label)

