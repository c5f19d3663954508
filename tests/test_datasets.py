"""The FollowIR-layout loader and the bundled instruct-mini benchmark."""
import json
import shutil

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.datasets import DataError, UnknownDatasetError, bundled_path


def test_instruct_mini_is_a_real_benchmark(mini):
    base = mini.get_topics("base")
    assert len(base) >= 8
    qrels = mini.get_qrels()
    cands = mini.get_results("og")
    assert (cands.groupby("qid").size() >= 25).all()
    words = [len(d["text"].split()) for d in mini.get_corpus_iter()]
    assert 40 <= min(words) and max(words) <= 200
    assert len(set(d["text"] for d in mini.get_corpus_iter())) == len(words)  # no templated duplicates
    og = qrels[qrels.variant == "og"].set_index(["base_qid", "docno"])["label"]
    ch = qrels[qrels.variant == "changed"].set_index(["base_qid", "docno"])["label"].reindex(og.index)
    assert ((ch > 0) <= (og > 0)).all()  # the changed instruction only narrows: no new relevant documents
    rel_og = (og > 0).groupby(level=0).sum()
    rel_ch = (ch > 0).groupby(level=0).sum()
    assert ((rel_ch / rel_og).between(0.3, 0.7)).all()  # roughly half of the relevant documents drop
    for _, t in base.iterrows():
        assert t.instruction_changed.startswith(t.instruction_og[:40])
        assert len(t.instruction_changed) > len(t.instruction_og)


def test_paired_topics_and_candidates(mini):
    topics = mini.get_topics()
    assert set(topics.variant) == {"og", "changed"} and topics.qid.is_unique
    assert (topics.qid == topics.base_qid + "-" + topics.variant).all()
    assert not (topics["query"].str.contains("relevant", case=False)).any()  # instruction never baked in
    run = mini.get_results()
    order = [json.loads(line)["pid"] for line in open(f"{bundled_path()}/top_ranked.jsonl") if '"101"' in line]
    assert run[run.qid == "101-og"].docno.tolist() == order  # file order
    res = mini.candidates()(topics)
    assert res[res.qid == "101-changed"].docno.tolist() == order
    assert {"instruction", "title", "text", "base_qid", "variant", "score", "rank"} <= set(res.columns)
    empty = mini.candidates()(topics.iloc[:0])
    assert len(empty) == 0 and {"docno", "text", "score", "rank"} <= set(empty.columns)


def test_changed_docs_follow_the_qrel_diff_rule(mini):
    diff = mini.changed_docs()
    q = mini.get_qrels()
    og = q[q.variant == "og"].set_index(["base_qid", "docno"]).label
    ch = q[q.variant == "changed"].set_index(["base_qid", "docno"]).label
    assert sorted(map(tuple, diff.values.tolist())) == sorted(og.index[og != ch.reindex(og.index)].tolist())


def test_pyterrier_dataset_provider(mini):
    ds = pt.get_dataset("instruct:instruct-mini")
    assert ds.get_topics().equals(mini.get_topics())
    with pytest.raises(UnknownDatasetError, match=r"^'instruct:nope' is not a known dataset id\. List the \d+ ids"):
        pt.get_dataset("instruct:nope")


def test_a_typo_id_names_the_closest_ids_in_every_front_end():
    """The error comes at creation, from our code (not PyTerrier's "not found in provider"), with difflib's guess."""
    import ir_datasets
    with pytest.raises(ValueError, match=r"^'instruct:followir/robust4' is not a known dataset id; did you mean "
                                         r"'instruct:followir/robust04'.* List the \d+ ids") as err:
        pt.get_dataset("instruct:followir/robust4")
    assert err.value.__cause__ is None and err.value.__context__ is None
    with pytest.raises(UnknownDatasetError,
                       match=r"^'followir/robust4' is not a known dataset id; did you mean 'followir/robust04'"):
        pti.load_dataset("followir/robust4")
    with pytest.raises(KeyError, match=r"'instruct/followir/robust4' is not a known dataset id; did you mean "
                                       r"'instruct/followir/robust04'"):
        ir_datasets.load("instruct/followir/robust4")
    assert ir_datasets.load("instruct/followir/robust04") is not None  # registered ids never reach the pattern
    with pytest.raises(KeyError, match="msmarco-passage/nope"):  # other namespaces keep ir_datasets' own error
        ir_datasets.load("msmarco-passage/nope")


def test_creating_a_dataset_is_lazy_and_the_first_use_names_the_fix(monkeypatch, tmp_path):
    """As ir_datasets.load and irds:, creation reads nothing: a missing copy is reported on first use, with the fix."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path))
    ds = pt.get_dataset("instruct:followir/robust04")
    assert repr(ds) == "InstructDataset('followir/robust04')" and ds.measure == "AP@1000"
    uses = {"get_topics": lambda: ds.get_topics(), "get_qrels": lambda: ds.get_qrels(),
            "get_corpus_iter": lambda: next(ds.get_corpus_iter()), "get_results": lambda: ds.get_results(),
            "text_loader": lambda: ds.text_loader()(pd.DataFrame({"qid": ["1"], "docno": ["d"]})),
            "provenance": lambda: ds.provenance}
    for name, use in uses.items():
        with pytest.raises(DataError, match=f"no local copy found \\(looked in {tmp_path}.*HF_HUB_OFFLINE is set.*hf "
                                            "download --repo-type dataset jhu-clsp/robust04-instructions"):
            use()
    shutil.copytree(bundled_path(), tmp_path / "robust04-instructions")  # data arrives: the same object now reads it
    assert len(ds.get_topics()) == 20 and ds.path == tmp_path / "robust04-instructions"
    assert ds.provenance["pinned_revision"].startswith("a5a1c4f") and ds.provenance["revision"] is None
    assert ds.text_loader() == pti.load_dataset("followir/robust04").text_loader()


def test_loader_errors_name_the_file(tmp_path):
    shutil.copytree(bundled_path(), tmp_path / "ds")
    (tmp_path / "ds" / "top_ranked.jsonl").unlink()
    with pytest.raises(DataError, match="missing candidate lists: neither .*top_ranked.jsonl nor .*empty_scores.json"):
        pti.load_dataset(str(tmp_path / "ds")).get_topics()
    shutil.copy(f"{bundled_path()}/top_ranked.jsonl", tmp_path / "ds")
    with open(tmp_path / "ds" / "queries.jsonl", "a") as f:
        f.write('{"_id": "999", "text": "no instructions"}\n')
    with pytest.raises(DataError,
                       match=r"queries.jsonl:11: missing field\(s\) \['instruction_og', 'instruction_changed'\]"):
        pti.load_dataset(str(tmp_path / "ds")).get_topics()
    with pytest.raises(DataError, match="data folder .*none does not exist"):
        pti.load_dataset("followir/robust04", path=str(tmp_path / "none"))


def test_hub_datasets_never_download_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path))
    with pytest.raises(DataError, match="no local copy found .*HF_HUB_OFFLINE is set.*hf download "
                                        "--repo-type dataset jhu-clsp/robust04-instructions --revision a5a1c4f"):
        pti.load_dataset("followir/robust04").get_topics()
    with pytest.raises(UnknownDatasetError, match="'no-such-thing' is not a known dataset"):
        pti.load_dataset("no-such-thing")
    ds = pti.load_dataset("followir/robust04")  # lazy: the folder is looked for on first use
    with pytest.raises(DataError, match="no local copy found .*HF_HUB_OFFLINE is set"):
        ds.get_topics()


def test_local_snapshot_of_a_known_name_keeps_provenance(tmp_path):
    shutil.copytree(bundled_path(), tmp_path / "robust04-instructions")
    ds = pti.load_dataset("followir/news21", path=str(tmp_path / "robust04-instructions"))
    assert ds.measure == "nDCG@5"
    assert ds.provenance["repo_id"] == "jhu-clsp/news21-instructions"
    assert ds.provenance["pinned_revision"] == "e0144086b45fe31ac125e9ac1a83b6a409bb6ca6"
    # a folder put together by hand is not claimed to be the pinned revision: its content hash records what was read
    assert ds.provenance["revision"] is None and ds.provenance["content_sha256"].startswith("sha256:")
    folder = str(tmp_path / "robust04-instructions")
    same = pti.load_dataset("followir/news21", path=folder).provenance["content_sha256"]
    assert same == ds.provenance["content_sha256"]
    with open(tmp_path / "robust04-instructions" / "queries.jsonl", "a") as f:
        f.write("\n")
    edited = pti.load_dataset("followir/news21", path=folder).provenance["content_sha256"]
    assert edited != same
    meta = tmp_path / "robust04-instructions" / ".cache" / "huggingface" / "download"
    meta.mkdir(parents=True)  # as `hf download --local-dir` leaves it: the commit it fetched
    (meta / "queries.jsonl.metadata").write_text("0123456789abcdef0123456789abcdef01234567\netag\n1.0\n")
    local_dir = pti.load_dataset("followir/news21", path=str(tmp_path / "robust04-instructions")).provenance
    assert local_dir["revision"] == "0123456789abcdef0123456789abcdef01234567" and "content_sha256" not in local_dir


def test_text_loader_after_a_first_stage(mini, mini_bm25):
    pipe = mini_bm25 % 5 >> mini.text_loader() >> pti.PoolBM25()
    res = pipe(mini.get_topics("og").iloc[:1])
    assert len(res) == 5 and {"title", "text", "instruction", "score", "rank"} <= set(res.columns)
    docs = {d["docno"]: d for d in mini.get_corpus_iter()}
    assert res["text"].tolist() == [docs[d]["text"] for d in res["docno"]]
    assert res["title"].tolist() == [docs[d]["title"] for d in res["docno"]]
    empty = mini.text_loader()(pd.DataFrame(columns=["qid", "docno", "score"]))
    assert {"title", "text"} <= set(empty.columns) and len(empty) == 0
    with pytest.raises(KeyError, match=r"docno\(s\) \['nope'\] are not in the corpus .*corpus.jsonl"):
        mini.text_loader()(pd.DataFrame({"qid": ["1"], "docno": ["nope"], "score": [1.0]}))
