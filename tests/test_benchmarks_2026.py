"""LIMIT, R2MED and FreshStack (issue 44) over miniatures in their released layouts (testing/layouts.py):
all three front ends, the qrels each rule builds, ``ds.official_evaluate`` against hand computations and against the
official code on shared runs: mteb 2.x's retrieval scoring (installed) and freshstack 0.0.6 with pyndeval 0.0.8 (a side
folder, ``make install``)."""
from __future__ import annotations

import math
import os
import shutil
import sys
from pathlib import Path

import ir_datasets
import ir_measures
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.datasets import DATASETS, DataError, limit, r2med, source

LAYOUTS = Path(os.environ["PYTERRIER_INSTRUCT_DATA"])  # written by conftest.py
IDS = ["limit", "limit/small", "r2med/Biology", "r2med/PMC-Treatment", "freshstack/yolo", "freshstack/langchain",
       "crumb/clinical_trial", "crumb/legal_qa/full-doc", "crumb/paper_retrieval/validation", "bright-pro/biology",
       "multiconir/books", "multiconir/medical/task1"]
#: where ``make install`` puts freshstack 0.0.6 and pyndeval 0.0.8 (``pip install --no-deps --target``)
FRESHSTACK_006 = Path(os.environ.get("FRESHSTACK_006", Path(sys.prefix) / "freshstack_0.0.6"))


def run_frame(rows):
    return pd.DataFrame(rows, columns=["qid", "docno", "score"])


def test_registered_ids():
    fams = {f: sorted(n for n, e in DATASETS.items() if e.family == f)
            for f in ("limit", "r2med", "freshstack", "crumb")}
    assert len(fams["crumb"]) == 8 * 2 + 5 * 2  # passages (+ validation) of 8 tasks, full-doc of the 5 two-collection
    assert "crumb/code_retrieval/full-doc" not in fams["crumb"]
    assert "crumb/legal_qa/full-doc/validation" in fams["crumb"]
    assert fams["limit"] == ["limit", "limit/small"]
    assert len(fams["r2med"]) == 8 and "r2med/Medical-Sciences" in fams["r2med"]
    topics = sorted(("langchain", "yolo", "laravel", "angular", "godot"))
    assert fams["freshstack"] == [f"freshstack/{t}" for t in topics]
    assert DATASETS["limit"].revision == "48142cc741b04d0b4af370ade7e8b42430382670"  # mteb's LIMITRetrieval pin
    assert DATASETS["r2med/Biology"].revision == "8b9fec2db9eda4b5742d03732213fbaee8169556"


@pytest.mark.parametrize("name", IDS)
def test_three_front_ends_agree(name):
    ours = pti.load_dataset(name)
    topics, qrels = ours.get_topics(), ours.get_qrels()
    assert list(topics.columns) == ["qid", "query", "instruction", "base_qid", "variant"]
    assert topics["instruction"].notna().all() and qrels["label"].dtype == "int64"
    assert (topics["instruction"] == "").all() or name.startswith("crumb/")
    assert set(qrels["qid"]) <= set(topics["qid"]) and all(isinstance(q, str) for q in topics["qid"])
    pd.testing.assert_frame_equal(pt.get_dataset(f"instruct:{name}").get_topics(), topics)
    irds = ir_datasets.load(f"instruct/{name}")
    assert [(q.query_id, q.query, q.instruction) for q in irds.queries_iter()] == list(
        zip(topics["qid"], topics["query"], topics["instruction"]))
    assert [(r.query_id, r.doc_id, r.relevance) for r in irds.qrels_iter()] == list(
        zip(qrels["qid"], qrels["docno"], qrels["label"]))
    assert irds.docs_count() == len(list(ours.get_corpus_iter(verbose=False)))
    assert irds.has_scoreddocs() == (name.startswith("multiconir/"))  # the others: full retrieval


def test_irds_metadata_of_limit_is_the_release():
    assert ir_datasets.load("instruct/limit").metadata() == {
        "docs": {"count": 50000}, "queries": {"count": 1000}, "qrels": {"count": 2000}}
    assert ir_datasets.load("instruct/limit/small").metadata()["docs"] == {"count": 46}


# -- LIMIT and R2MED: mteb's rule -----------------------------------------------------------------

def test_limit_official_skips_queries_absent_from_the_run():
    ds = pti.load_dataset("limit")
    assert ds.get_qrels().groupby("qid").size().tolist() == [2, 2, 2, 2]  # exactly 2 relevant per query
    run = run_frame([("query_0", "Geneva Durben", 2.0), ("query_0", "Cy Tan", 1.0),
                     ("query_1", "Olinda Posso", 2.0), ("query_1", "Geneva Durben", 1.0)])  # query_2, query_3 absent
    official = ds.official_evaluate(run)
    assert official["recall_at_2"] == 0.75 and official["recall_at_1"] == 0.5  # (0.5 + 1) / 2 scored queries
    agg = ir_measures.calc_aggregate([ir_measures.R @ 2], ds.get_qrels().rename(
        columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}), run.rename(
        columns={"qid": "query_id", "docno": "doc_id"}))
    assert agg[ir_measures.R @ 2] == 0.375  # ir_measures / pt.Experiment count the absent queries as 0
    assert DATASETS["limit"].measure == "R@2"


def test_limit_and_r2med_official_equal_mteb_on_shared_runs():
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores
    import random
    rng = random.Random(7)
    for name in ("limit", "r2med/Biology"):  # mteb's scoring takes ~0.5 s a call: a few runs with ties and gaps
        ds = pti.load_dataset(name)
        qrels, docs = ds.get_qrels(), [d["docno"] for d in ds.get_corpus_iter(verbose=False)]
        judged = {}
        for q, d, lab in zip(qrels["qid"], qrels["docno"], qrels["label"]):
            judged.setdefault(q, {})[d] = int(lab)
        for trial in range(4):
            qids = list(ds.get_topics()["qid"])[: 1 + trial]
            rows = [(q, d, float(rng.choice([1, 2, rng.random()])))
                    for q in qids for d in rng.sample(docs, rng.randint(1, 6))]
            results = {}
            for q, d, s in rows:
                results.setdefault(q, {})[d] = s
            ks = list(limit.K_VALUES if name == "limit" else r2med.K_VALUES)
            m = calculate_retrieval_scores(results, judged, ks)
            theirs = {f"{name_}_at_{k.split('@')[1]}": v for name_, part in (("ndcg", m.ndcg), ("recall", m.recall),
                      ("precision", m.precision), ("map", m.map)) for k, v in part.items()}
            ours = ds.official_evaluate(run_frame(rows))
            assert {k: ours[k] for k in theirs} == theirs, (name, rows)


def test_r2med_reads_qrels_jsonl_and_names_qrels_txt(tmp_path):
    ds = pti.load_dataset("r2med/Biology")
    assert ds.get_qrels()[["qid", "docno"]].values.tolist()[:2] == [["0", "dams_paper/dams_0.txt"],
                                                                    ["0", "dams_paper/dams_1.txt"]]
    run = run_frame([("0", "dams_paper/dams_0.txt", 1.0), ("0", "dams_paper/dams_1.txt", 0.5)])
    assert ds.official_evaluate(run)["ndcg_at_10"] == 1.0  # queries 1-3 absent: skipped, as eval_BM25.py and mteb
    root = tmp_path / "Biology"
    shutil.copytree(LAYOUTS / "R2MED" / "Biology", root)
    (root / "qrels.jsonl").rename(root / "qrels.txt")
    with pytest.raises(DataError, match=r"qrels.jsonl \(this release has qrels.txt"):
        pti.load_dataset("r2med/Biology", path=str(root)).get_qrels()


# -- FreshStack: nuggets ---------------------------------------------------------------------------

def test_freshstack_qrels_sum_the_nuggets():
    ds = pti.load_dataset("freshstack/yolo")
    assert ds.get_topics()["query"].tolist() == ["How to use yolo 7812? Body of question 7812.",
                                                 "How to use yolo 5903? Body of question 5903."]
    nug = ds.nugget_qrels()
    assert list(nug.columns) == ["nugget_id", "qid", "docno", "label"] and nug["nugget_id"].nunique() == 5
    q = {(r.qid, r.docno.split("/")[-1].split(".")[0]): r.label for r in ds.get_qrels().itertuples()}
    assert q[("7812", "file1")] == 2 and q[("7812", "file5")] == 0 and q[("7812", "file0")] == 1  # 2 nuggets; judged 0
    assert q[("5903", "file6")] == 0 and len(q) == 8


def test_freshstack_official_hand_computed():
    ds = pti.load_dataset("freshstack/yolo")
    d = [f"yolo/src/file{i}.py_0_{100 * i}" for i in range(8)]
    # 7812's nuggets: n0 {file0, file1}, n1 {file1, file2}, n2 {file3}; query 5903 is absent from the run
    out = ds.official_evaluate(run_frame([("7812", d[1], 3.0), ("7812", d[3], 2.0), ("7812", d[5], 1.0)]))
    dcg = 2 + 1 / math.log2(3)
    idcg = 2 + 1 / math.log2(3) + 0.5 / math.log2(4) + 0.5 / math.log2(5)  # greedy ideal: file1, file3, file0, file2
    assert out["alpha-nDCG@10"] == round(dcg / idcg / 2, 4) == 0.4249
    assert out["Coverage@20"] == 0.5 and out["Recall@50"] == 0.25  # 2 of 4 relevant documents of 7812; 5903 counts 0
    with pytest.raises(DataError, match=r"lacks column\(s\) \['score'\]"):
        ds.official_evaluate(pd.DataFrame({"qid": ["7812"], "docno": [d[1]]}))


@pytest.fixture(scope="module")
def freshstack_006():
    if not (FRESHSTACK_006 / "freshstack" / "__init__.py").exists():
        pytest.skip(f"freshstack 0.0.6 is not installed in {FRESHSTACK_006} (run `make install`, or pip install "
                    f"--no-deps --target {FRESHSTACK_006} freshstack==0.0.6 pyndeval==0.0.8)")
    sys.path.insert(0, str(FRESHSTACK_006))
    try:
        from freshstack.datasets.util import nuggets_to_query_qrels
        from freshstack.retrieval.evaluation import EvaluateRetrieval
        yield nuggets_to_query_qrels, EvaluateRetrieval
    finally:
        sys.path.remove(str(FRESHSTACK_006))
        for mod in [m for m in sys.modules if m.split(".")[0] in ("freshstack", "pyndeval", "_pyndeval")]:
            del sys.modules[mod]


def test_freshstack_official_equals_freshstack_006(freshstack_006):
    import random
    nuggets_to_query_qrels, EvaluateRetrieval = freshstack_006
    rng = random.Random(3)
    ds = pti.load_dataset("freshstack/yolo")
    nug, docs = ds.nugget_qrels(), [d["docno"] for d in ds.get_corpus_iter(verbose=False)]
    judged = {}
    for nid, d, lab in zip(nug["nugget_id"], nug["docno"], nug["label"]):
        judged.setdefault(nid, {})[d] = int(lab)
    query_nuggets, query_qrels = nuggets_to_query_qrels(judged)
    for trial in range(60):  # ties in the scores included: freshstack's stable sort, then ndeval's docno order
        qids = list(ds.get_topics()["qid"])[: 1 + trial % 2]
        rows = [(q, d, float(rng.choice([1, 2, 3, rng.random()])))
                for q in qids for d in rng.sample(docs, rng.randint(1, 8))]
        results = {}
        for q, d, s in rows:
            results.setdefault(q, {})[d] = s
        a, c, r = EvaluateRetrieval(k_values=[10, 20, 50]).evaluate(judged, query_nuggets, query_qrels, results)
        ours = ds.official_evaluate(run_frame(rows))
        assert {k: ours[k] for k in {**a, **c, **r}} == {**a, **c, **r}, rows


def test_freshstack_nuggets_belong_to_their_row_not_an_id_prefix(freshstack_006):
    nuggets_to_query_qrels, EvaluateRetrieval = freshstack_006
    ds = pti.load_dataset("freshstack/langchain")  # queries 7812 and 78: "7812_0".startswith("78")
    nug = ds.nugget_qrels()
    judged = {}
    for nid, d, lab in zip(nug["nugget_id"], nug["docno"], nug["label"]):
        judged.setdefault(nid, {})[d] = int(lab)
    query_nuggets, query_qrels = nuggets_to_query_qrels(judged)
    assert sorted(query_nuggets["78"]) == ["7812_0", "7812_1", "7812_2", "78_0", "78_1"]  # freshstack's prefix rule
    run = [("78", "langchain/src/file4.py_0_400", 1.0), ("78", "langchain/src/file7.py_0_700", 0.5)]
    _, c, _ = EvaluateRetrieval(k_values=[10, 20, 50]).evaluate(judged, query_nuggets, query_qrels,
                                                                {"78": {d: s for _, d, s in run}})
    assert c["Coverage@20"] == round((2 / 5) / 2, 4)  # 78 covers 2 of the 5 nuggets freshstack gives it
    assert ds.official_evaluate(run_frame(run))["Coverage@20"] == 0.5  # here: both of its own 2 nuggets


def test_freshstack_missing_corpus_and_download(monkeypatch, tmp_path):
    root = tmp_path / "queries-oct-2024"
    shutil.copytree(LAYOUTS / "freshstack" / "queries-oct-2024", root)
    with pytest.raises(DataError, match="missing FreshStack corpus .*corpus-oct-2024/godot"):
        pti.load_dataset("freshstack/godot", path=str(root)).get_qrels()
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    with pytest.raises(DataError, match="freshstack/queries-oct-2024 --include 'godot/\\*'.*freshstack/corpus-oct-2024 "
                                        "--include 'godot/\\*' --local-dir <folder>/corpus-oct-2024"):
        pti.load_dataset("freshstack/godot").get_topics()
    with pytest.raises(DataError, match="hf download --repo-type dataset orionweller/LIMIT --revision 48142cc7"):
        pti.load_dataset("limit").get_topics()
    import huggingface_hub
    calls = []

    def fake_download(repo_id, repo_type, revision, local_dir, allow_patterns):  # a stand-in: no network
        calls.append((repo_id, Path(local_dir).name))
        part = "queries-oct-2024" if repo_id.endswith("queries-oct-2024") else "corpus-oct-2024"
        shutil.copytree(LAYOUTS / "freshstack" / part / "godot", Path(local_dir) / "godot")
        return local_dir
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.setattr(source, "hub_unreachable", lambda timeout=3.0: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    ds = pti.load_dataset("freshstack/godot")
    assert len(ds.get_topics()) == 2 and len(list(ds.get_corpus_iter(verbose=False))) == 8
    assert calls == [("freshstack/queries-oct-2024", "godot.partial"),
                     ("freshstack/corpus-oct-2024", "corpus-oct-2024")]


def test_official_evaluate_where_there_is_no_rule(mini):
    with pytest.raises(ValueError, match="instruct-mini has no official scoring rule"):
        mini.official_evaluate(run_frame([("1", "d", 1.0)]))


# -- CRUMB: crumb_eval's metrics, MaxP as intended -----------------------------------------------------

def test_crumb_topics_and_qrels():
    ds = pti.load_dataset("crumb/clinical_trial")
    assert ds.get_topics()["instruction"].tolist() == ["Find relevant clinical_trial documents", ""]  # null → ""
    assert ds.get_qrels()[["docno", "label"]].values.tolist()[:3] == [["CLI00000:1", 2], ["CLI00001:0", 1],
                                                                      ["CLI00001:1", 0]]  # judged 0 kept
    assert ds.document_qrels()[["qid", "docno", "label"]].values.tolist()[:2] == [["eval-q1", "CLI00000", 2],
                                                                                  ["eval-q1", "CLI00001", 1]]
    full = pti.load_dataset("crumb/clinical_trial/full-doc")
    assert full.get_qrels()["docno"].tolist()[:2] == ["CLI00000", "CLI00001"]
    assert next(iter(full.get_corpus_iter(verbose=False)))["docno"] == "CLI00000"
    paper = pti.load_dataset("crumb/paper_retrieval")  # folder scientific_paper/
    assert paper.path.name == "crumb" and paper.info()["task"] == "paper_retrieval"


def test_crumb_official_maxp_hand_computed():
    ds = pti.load_dataset("crumb/clinical_trial")
    run = run_frame([("eval-q1", "CLI00000:1", 3.0), ("eval-q1", "CLI00001:0", 2.0), ("eval-q1", "CLI00000:0", 1.0)])
    docs = ds.maxp()(run)
    assert docs[["docno", "score", "rank"]].values.tolist() == [["CLI00000", 3.0, 0], ["CLI00001", 2.0, 1]]
    out = ds.official_evaluate(run)
    # eval-q1: both relevant documents at ranks 1-2 (nDCG 1, P@10 0.2, R 1, RR 1); eval-q2 absent counts 0 (ir_measures)
    assert out == {"nDCG@10": 0.5, "nDCG@5": 0.5, "P@10": 0.1, "P@5": 0.2, "R@10": 0.5, "RR": 0.5, "R@1000": 0.5,
                   "R@100": 0.5, "RR@10": 0.5}
    # crumb_eval as released keeps the passage ids (modify_run_for_max_p appends the item itself): 0 against documents
    q = ds.document_qrels().rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    as_released = run.sort_values("score", ascending=False).assign(_d=lambda f: f["docno"].str.split(":").str[0])
    as_released = as_released.drop_duplicates(["qid", "_d"]).rename(columns={"qid": "query_id", "docno": "doc_id"})
    assert ir_measures.calc_aggregate([ir_measures.nDCG @ 10], q, as_released[["query_id", "doc_id", "score"]]) == {
        ir_measures.nDCG @ 10: 0.0}
    full = pti.load_dataset("crumb/clinical_trial/full-doc")  # full-document runs never use MaxP
    assert full.official_evaluate(docs)["nDCG@10"] == 0.5 and full.info()["maxp"] is False


def test_crumb_paper_retrieval_uses_its_binary_qrels():
    ds = pti.load_dataset("crumb/paper_retrieval/validation")
    run = run_frame([("val-q1", "PAP00000:1", 3.0), ("val-q1", "PAP00001:0", 2.0)])
    out = ds.official_evaluate(run)
    # binary qrels hold PAP00000:1 only: P@5 = 1/5 for val-q1 (graded would give 2/5); nDCG on the graded qrels: 1
    assert out["P@5"] == 0.1 and out["nDCG@10"] == 0.5 and out["R@10"] == 0.5
    legal = pti.load_dataset("crumb/legal_qa")  # no binary lists elsewhere (crumb_eval HAS_BINARY_QRELS): graded > 0
    run = run_frame([("eval-q1", "LEG00000:1", 3.0), ("eval-q1", "LEG00001:0", 2.0)])
    assert legal.official_evaluate(run)["P@5"] == 0.2


def test_crumb_missing_file_names_the_config(tmp_path):
    shutil.copytree(LAYOUTS / "jfkback" / "crumb" / "legal_qa", tmp_path / "legal_qa")
    (tmp_path / "legal_qa" / "full_document_corpus.jsonl").unlink()
    with pytest.raises(DataError, match="missing CRUMB corpus .*full_document_corpus.jsonl .config full_document"):
        pti.load_dataset("crumb/legal_qa/full-doc", path=str(tmp_path)).get_qrels()


# -- BRIGHT-PRO: weighted aspects -----------------------------------------------------------------------

def test_bright_pro_topics_qrels_aspects_and_exclusions():
    ds = pti.load_dataset("bright-pro/biology")
    assert DATASETS["bright-pro/biology"].repo_id == "ya-ir/BRIGHT-PRO" and len(
        [n for n in DATASETS if n.startswith("bright-pro/")]) == 7
    assert ds.get_qrels().groupby("qid").size().to_dict() == {"0": 3, "1": 1} and (ds.get_qrels()["label"] == 1).all()
    asp = ds.aspects()
    assert asp[["aspect_id", "qid", "weight"]].values.tolist() == [["biology-0-a1", "0", 3], ["biology-0-a2", "0", 1],
                                                                   ["biology-1-a1", "1", 2]]
    assert ds.excluded_ids().values.tolist() == [["1", "antibiotics_page/antibiotics_1.txt"]]


def test_bright_pro_official_hand_computed():
    ds = pti.load_dataset("bright-pro/biology")
    a1, a1b, a2 = "dams_page/dams_0.txt", "biology-0/extraction_0.txt", "dams_page/dams_1.txt"
    # query 0: aspect a1 (weight 3; two gold documents), a2 (weight 1); query 1 retrieves nothing relevant;
    # query 2 (no gold ids) is not evaluated, nor would an absent query be
    run = run_frame([("0", a2, 3.0), ("0", a1, 2.0), ("0", a1b, 1.0), ("1", "x", 1.0), ("2", a1, 1.0)])
    out = ds.official_evaluate(run)
    dcg = 1 + 3 / math.log2(3) + 3 * 0.5 / 2  # a2, then a1 (new), then a1 again (seen once)
    idcg = 3 + 3 * 0.5 / math.log2(3) + 1 / 2  # greedy: a1, a1 (1.5/1.58 > 1/1.58), a2
    assert out["alpha-nDCG@10"] == pytest.approx((dcg / idcg + 0) / 2, abs=1e-12)
    assert out["weighted_aspect_recall@10"] == 0.5  # query 0 covers both aspects (4/4), query 1 none
    top1 = ds.official_evaluate(run_frame([("0", a2, 3.0), ("0", a1, 2.0)]))  # one query in the run
    assert top1["weighted_aspect_recall@25"] == 1.0 and top1["alpha-nDCG@25"] == pytest.approx(
        (1 + 3 / math.log2(3)) / idcg, abs=1e-12)


def test_bright_pro_reads_bright_style_shards_and_refuses_bright_documents(tmp_path):
    root = tmp_path / "BRIGHT-PRO"
    shutil.copytree(LAYOUTS / "ya-ir" / "BRIGHT-PRO", root)
    for config in ("examples", "documents", "aspects"):
        (root / config / "robotics.parquet").rename(root / config / "robotics-00000-of-00001.parquet")
    ds = pti.load_dataset("bright-pro/robotics", path=str(root))
    assert len(ds.get_topics()) == 3 and len(list(ds.get_corpus_iter(verbose=False))) == 9
    pd.read_parquet(root / "documents" / "economics.parquet").drop(columns="aspect").to_parquet(
        root / "documents" / "economics.parquet")
    with pytest.raises(DataError, match="economics.parquet: missing column 'id' or 'aspect'"):
        pti.load_dataset("bright-pro/economics", path=str(root)).get_qrels()


# -- MultiConIR: strict win rates on each row's own candidates ---------------------------------------------

def test_multiconir_topics_candidates_and_qrels():
    ds = pti.load_dataset("multiconir/books")
    assert DATASETS["multiconir/legal/len512"].task == "legal" and ds.info()["file"] == "Task2_&_3/Books_Task2_&_3.csv"
    assert ds.get_topics()[["qid", "base_qid", "variant"]].values.tolist()[:2] == [["0-inst", "0", "inst"],
                                                                                  ["0-desc", "0", "desc"]]
    assert ds.get_topics("desc")["query"].iloc[0].startswith("I want a books item")
    assert ds.get_results()[ds.get_results()["qid"] == "1-desc"]["docno"].tolist() == ["1-pos"] + [
        f"1-hn{k}" for k in range(1, 11)]
    assert ds.get_qrels()[ds.get_qrels()["qid"] == "0-inst"]["label"].tolist() == list(range(10, -1, -1))
    t1 = pti.load_dataset("multiconir/medical/task1")  # "Medical Case_Task1.csv"
    assert t1.get_results()[t1.get_results()["qid"] == "1-q7"]["docno"].tolist() == ["1-pos", "1-hn7"]


def test_multiconir_official_hand_computed():
    ds = pti.load_dataset("multiconir/books")
    run = ds.get_results()
    run["score"] = -run["rank"].astype(float)  # the ideal order for every query …
    flip = (run["qid"] == "0-desc") & run["docno"].isin(["0-hn3", "0-hn4"])  # … but row 0's descriptive query: 4 > 3
    run.loc[flip, "score"] = run.loc[flip, "score"].to_numpy()[::-1]
    tie = (run["qid"] == "1-inst") & run["docno"].isin(["1-pos", "1-hn1"])  # and row 1's inst query ties pos, hn1
    run.loc[tie, "score"] = 5.0
    out = ds.official_evaluate(run)
    assert out["Positive_vs_HN1"] == 0.5 and out["HN1_vs_HN2"] == 1.0  # a tie loses (strict >)
    # row 0: HN3>HN4 changes between the styles (HN2>HN3 and HN4>HN5 still hold); row 1: Positive>HN1 (a tie in
    # inst, a win in desc): 2 of the 10 comparisons × 2 rows
    assert out["Change Rate"] == 2 / 20
    t1 = pti.load_dataset("multiconir/people/task1")
    run = t1.get_results().assign(score=lambda f: [2.0 if d.endswith("pos") else 0.5 for d in f["docno"]])
    run.loc[(run["qid"] == "1-q3") & (run["docno"] == "1-hn3"), "score"] = 3.0
    out = t1.official_evaluate(run)
    assert out["Query3_WinRate"] == 0.5 and out["Query3_AvgDiff"] == (1.5 - 1.0) / 2 and out["Query1_WinRate"] == 1.0
    with pytest.raises(DataError, match="no score for document '0-hn1' of query '0-q1'"):
        t1.official_evaluate(run[run["docno"] != "0-hn1"])


def test_multiconir_is_read_from_a_clone(monkeypatch, tmp_path):
    root = tmp_path / "datasets"
    shutil.copytree(LAYOUTS / "EIT-NLP" / "MultiConIR" / "datasets", root)
    f = root / "Task1" / "Books_Task1.csv"
    pd.read_csv(f, index_col=0).drop(columns="HN4").to_csv(f)
    with pytest.raises(DataError, match=r"Books_Task1.csv: missing column\(s\) \['HN4'\]"):
        pti.load_dataset("multiconir/books/task1", path=str(root)).get_topics()
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with pytest.raises(DataError, match="it is not on the hub.*git clone https://github.com/EIT-NLP/MultiConIR"):
        pti.load_dataset("multiconir/books").get_topics()
