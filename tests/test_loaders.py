"""Dataset loaders over fixtures in the exact released layouts (written by pyterrier_instruct.testing.layouts, see
conftest.py).

Every registered id goes end to end: ``pt.get_dataset('instruct:<id>')`` → topics/qrels/candidates → a
pipeline → the benchmark's paired measure, checked against the measure function on the same run.
"""
import json
import os
import shutil
from pathlib import Path

import ir_datasets
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.datasets import DATASETS, DataError, source
from pyterrier_instruct.datasets.docstore import DocStore
from pyterrier_instruct.measures import infosearch_eval, infosearch_partition, robustness

LAYOUTS = Path(os.environ["PYTERRIER_INSTRUCT_DATA"])  # written by conftest.py
PAIRED = [n for n, e in DATASETS.items() if e.family in ("bundled", "followir", "followir-mteb", "mfollowir")]
INFOSEARCH = [n for n, e in DATASETS.items() if e.family == "infosearch"]
IFIR = [n for n, e in DATASETS.items() if e.family == "ifir"]


def _base_keyed(frame, variant):
    part = frame[frame["variant"] == variant]
    return part.assign(qid=part["base_qid"])


def test_registry_has_exactly_the_documented_ids():
    want = {"instruct-mini", "infosearch-mini", "instructir"}
    want |= {f"followir/{c}{m}" for c in ("robust04", "news21", "core17") for m in ("", "/mteb")}
    want |= {f"mfollowir/{lang}" for lang in ("fas", "rus", "zho")}
    want |= {f"infosearch/{d}" for d in ("audience", "keyword", "format", "language", "length", "source")}
    want |= {f"ifir/{s}" for s in ("fiqa", "scifact_open", "nfcorpus", "aila", "fire", "pm", "cds")}
    want |= {f"beir/{k}"
             for k in ("arguana", "climate_fever", "dbpedia", "fever", "fiqa", "hotpotqa", "nfcorpus", "nq", "quora",
                       "scidocs", "scifact", "touche2020", "trec_covid")}
    want |= {f"beir/{k}/dev" for k in ("dbpedia", "fever", "fiqa", "hotpotqa", "nfcorpus", "quora", "scifact")}
    from pyterrier_instruct.datasets.catalog import BRIGHT_TASKS, MAIR_TASKS  # the rest: test_bright_mair_nevir.py
    want |= {f"bright/{t}{s}" for t, (_, _, long, _) in BRIGHT_TASKS.items() for s in ("", "-long") if s == "" or long}
    want |= {f"mair/{t}" for t in [*MAIR_TASKS, "dd-15", "dd-16", "dd-17", "fr-21", "fr-22"]}
    want |= {f"nevir{m}{s}" for m in ("", "/mteb") for s in ("", "/validation", "/train")}
    from pyterrier_instruct.datasets import catalog26  # issue 44: test_benchmarks_2026.py
    want |= {*catalog26.LIMIT, *(f"r2med/{t}" for t in catalog26.R2MED)}
    want |= {f"freshstack/{t}" for t in catalog26.FRESHSTACK} | {f"bright-pro/{t}" for t in catalog26.BRIGHT_PRO}
    want |= {f"multiconir/{d}{s}" for d in catalog26.MULTICONIR_DOMAINS for s in ("", "/task1", "/len512", "/len1024")}
    want |= {f"crumb/{t}{c}{s}" for t in catalog26.CRUMB_TASKS for c in ("", "/full-doc") for s in ("", "/validation")
             if c == "" or t not in catalog26.CRUMB_SINGLE}
    assert set(DATASETS) == want
    from importlib.metadata import entry_points

    from pyterrier_instruct.datasets.provider import InstructDatasetProvider
    (ep,) = [e for e in entry_points(group="pyterrier.dataset_provider") if e.name == "instruct"]
    assert ep.load() is InstructDatasetProvider and set(InstructDatasetProvider().list_dataset_names()) == want
    assert all(f"instruct/{n}" in ir_datasets.registry for n in want)


@pytest.mark.parametrize("name", PAIRED)
def test_followir_family_end_to_end(name):
    ds = pt.get_dataset(f"instruct:{name}")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert list(topics.columns[:5]) == ["qid", "query", "instruction", "base_qid", "variant"]
    assert (topics.qid == topics.base_qid + "-" + topics.variant).all() and set(topics.variant) == {"og", "changed"}
    assert (topics.instruction.str.len() > 0).all() and qrels.label.dtype == "int64"
    assert set(qrels.qid) <= set(topics.qid)
    pipe = ds.candidates() >> pti.PoolBM25()
    res = pt.Experiment([pipe], topics, qrels, [pti.pMRR, pti.OG(ds.measure)], names=["pool"])
    run = pipe(topics)
    want = pti.pmrr(_base_keyed(run, "og"), _base_keyed(run, "changed"), ds.changed_docs())
    assert res.loc[0, "pMRR"] == pytest.approx(want, abs=1e-12)
    assert -1 <= res.loc[0, "pMRR"] <= 1 and 0 <= res.loc[0, f"OG({ds.measure})"] <= 1


@pytest.mark.parametrize("name", INFOSEARCH)
def test_infosearch_end_to_end(name):
    ds = pt.get_dataset(f"instruct:{name}")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert set(topics.variant) == {"og", "changed", "reversed"}
    assert (topics.qid == topics.base_qid + "-" + topics.variant).all()
    assert (topics[topics.variant != "og"].instruction.str.len() > 0).all()
    pipe = ds.candidates() >> pti.PoolBM25()
    res = pt.Experiment([pipe], topics, qrels, [pti.WISE, pti.SICR, pti.InfoSearch_pMRR])
    run = pipe(topics)
    ref = infosearch_eval(*(_base_keyed(run, v) for v in ("og", "changed", "reversed")),
                          og_qrels=_base_keyed(qrels, "og"), changed_qrels=_base_keyed(qrels, "changed"),
                          warn=False)["overall"]
    assert res.loc[0, "WISE"] == pytest.approx(ref["WISE"], abs=1e-12)
    assert res.loc[0, "SICR"] == pytest.approx(ref["SICR"], abs=1e-12)
    assert res.loc[0, "InfoSearch_pMRR"] == pytest.approx(ref["p-MRR"], abs=1e-12)


@pytest.mark.parametrize("name", IFIR)
def test_ifir_end_to_end(name):
    ds = pt.get_dataset(f"instruct:{name}")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert (topics.qid == topics.base_qid + "_" + topics.variant).all()
    assert (topics[topics.variant == "0"].instruction == "").all()
    assert (topics[topics.variant != "0"].instruction != "").all()
    assert "0" not in set(qrels.variant) and set(qrels.qid) <= set(topics.qid)
    with pytest.raises(ValueError, match="defines no candidate lists"):
        ds.get_results()
    pipe = pti.FoldInstruction() >> pti.BM25(ds.get_corpus_iter())
    judged = ds.get_topics("level1")
    res = pt.Experiment([pipe], judged, qrels, [pti.IFIR_nDCG @ 20])
    assert res.loc[0, "IFIR_nDCG@20"] == \
        pytest.approx(pti.measures.ifir_ndcg(pipe(judged), qrels[qrels.variant == "1"]), abs=1e-12)
    table = pti.ifir_report([pipe], {name.split("/")[1]: ds}, names=["bm25"], origin=True)
    assert list(table["Model"]) == ["bm25", "bm25 (origin)"]


def test_instructir_end_to_end():
    ds = pt.get_dataset("instruct:instructir")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert topics.loc[0, ["qid", "query", "base_qid", "variant"]].tolist() == \
        ["1078446_1", "dams definition", "1078446", "1"]
    assert topics.loc[0, "instruction"] == "I am reader number 1 and I want dams facts."
    assert (qrels.groupby("qid").size() == 1).all()
    pipe = pti.FoldInstruction() >> pti.BM25(ds.get_corpus_iter())
    res = pt.Experiment([pipe], topics, qrels, [pti.Robustness @ 10])
    assert res.loc[0, "Robustness@10"] == pytest.approx(robustness(pipe(topics), qrels), abs=1e-12)


# -- layouts agree -------------------------------------------------------------------------------
def test_original_and_mteb_layouts_give_the_same_benchmark():
    a, b = pti.load_dataset("followir/robust04"), pti.load_dataset("followir/robust04/mteb")
    c = pti.load_dataset("followir/robust04/mteb", path=str(LAYOUTS / "mteb" / "Robust04InstructionRetrieval"))
    cols = ["qid", "query", "instruction", "base_qid", "variant"]
    for other in (b, c):
        pd.testing.assert_frame_equal(a.get_topics()[cols], other.get_topics()[cols], check_dtype=False)
        pd.testing.assert_frame_equal(a.get_qrels(), other.get_qrels(), check_dtype=False)
        pd.testing.assert_frame_equal(a.get_results(), other.get_results(), check_dtype=False)
        assert sorted(map(tuple, a.changed_docs().values.tolist())) == \
            sorted(map(tuple, other.changed_docs().values.tolist()))
        assert list(a.get_corpus_iter()) == list(other.get_corpus_iter())
    assert b.info()["changed_docs"] == "qrel_diff" and c.provenance["path"].endswith("Robust04InstructionRetrieval")


def test_candidates_keep_file_order():
    path = LAYOUTS / "jhu-clsp" / "robust04-instructions"
    order = [json.loads(line)["pid"] for line in open(path / "top_ranked.jsonl") if json.loads(line)["qid"] == "301"]
    assert order != sorted(order)
    ds = pti.load_dataset("followir/robust04")
    run = ds.get_results()
    for qid in ("301-og", "301-changed"):
        assert run[run.qid == qid].docno.tolist() == order
        assert run[run.qid == qid]["rank"].tolist() == list(range(len(order)))
    assert (run.sort_values(["qid", "score"], ascending=[True, False], kind="stable").docno.tolist()
            == run.sort_values("qid", kind="stable").docno.tolist())  # score = -rank: a re-sort keeps file order
    scores = json.load(open(LAYOUTS / "jianqunZ" / "Format-v1" / "empty_scores.json"))
    info = pti.load_dataset("infosearch/format").get_results("changed")
    assert info[info.qid == "format0_1-changed"].docno.tolist() == list(scores["format0_1"])
    irds = pt.get_dataset("irds:instruct/followir/robust04").get_results()
    assert irds[irds.qid == "301-og"].docno.tolist() == order  # even after PyTerrier's re-sort by score


def test_candidates_transformer_matches_suffixed_and_base_qids():
    ds = pti.load_dataset("infosearch/audience")
    cands = ds.candidates("text")
    t = ds.get_topics()
    res = cands(t)
    assert len(res) == len(ds.get_results()) and "title" not in res.columns and res.instruction.notna().all()
    plain = cands(pd.DataFrame({"qid": ["audience0_1"], "query": ["q"]}))
    assert plain.docno.tolist() == res[res.qid == "audience0_1-og"].docno.tolist()
    with pytest.raises(KeyError, match=r"query\(ies\) \['nope'\] have no candidates in infosearch/audience"):
        cands(pd.DataFrame({"qid": ["nope"], "query": ["q"]}))
    empty = cands(t.iloc[:0])
    assert len(empty) == 0 and {"docno", "text", "score", "rank", "instruction"} <= set(empty.columns)


# -- variants ------------------------------------------------------------------------------------
def test_variants_and_aliases():
    ds = pti.load_dataset("infosearch/source")
    for v, alias in (("og", "ori"), ("changed", "ins"), ("reversed", "rev")):
        t = ds.get_topics(v)
        assert set(t.variant) == {v} and t.equals(ds.get_topics(alias))
        assert set(ds.get_qrels(v).qid) <= set(t.qid)
    assert len(ds.get_topics("paired")) == len(ds.get_topics()) == 3 * len(ds.get_topics("og"))
    with pytest.raises(ValueError,
                       match=r"infosearch/source has no variant 'level2'; offered: \['og', 'changed', 'reversed'"):
        ds.get_topics("level2")
    ifir = pti.load_dataset("ifir/aila")
    assert ifir.variants == ("0", "1", "2", "3") and ifir.get_topics("level2").equals(ifir.get_topics("2"))
    assert set(pti.load_dataset("ifir/cds").get_topics().variant) == {"0", "1"}  # single instruction stored as level 0
    base = pti.load_dataset("followir/core17").get_topics("base")
    assert {"instruction_og", "instruction_changed", "keywords", "short_query"} <= set(base.columns)


def test_levels_are_cumulative_and_level_specific():
    q = pti.load_dataset("ifir/fiqa").get_qrels()
    sizes = q.groupby(["base_qid", "variant"]).size().unstack()
    assert (sizes["1"] >= sizes["2"]).all() and (sizes["2"] >= sizes["3"]).all()


def test_text_is_verbatim_and_multilingual():
    zho = pti.load_dataset("mfollowir/zho")
    t = zho.get_topics("og")
    assert t.loc[0, "query"] == "水坝如何影响鱼类？" and t.loc[0, "instruction"] == "相关文件报告水坝对鱼类的影响。"
    assert zho.get_corpus_lang() == "zh"
    fas = pti.load_dataset("mfollowir/fas").get_topics("changed")
    assert fas.loc[0, "instruction"] == "اسناد مرتبط فقط اثر سد بر ماهی آزاد را گزارش می‌کنند."


# -- corpus --------------------------------------------------------------------------------------
def test_corpus_streams_and_text_loader_reads_only_requested(monkeypatch, tmp_path):
    ds = pti.load_dataset("followir/news21")
    it = ds.get_corpus_iter()
    assert iter(it) is it and not hasattr(it, "__len__") and set(next(it)) == {"docno", "title", "text"}  # a stream
    assert it.source == "pti.load_dataset('followir/news21')"  # what an index built from it names as its corpus
    requested = []
    real = DocStore.get_many

    def spy(self, docnos):
        requested.append(list(docnos))
        return real(self, docnos)
    monkeypatch.setattr(DocStore, "get_many", spy)
    run = ds.get_results("og").iloc[[0, 1, 7]]
    out = pt.text.get_text(ds, "text")(run)
    assert requested == [run.docno.tolist()] and "title" not in out.columns
    docs = {d["docno"]: d for d in ds.get_corpus_iter()}
    assert out.text.tolist() == [docs[d]["text"] for d in run.docno]
    # a corpus is read lazily: a broken line is only hit when the iteration reaches it
    bad = tmp_path / "corpus.jsonl"
    bad.write_text('{"_id": "a", "text": "x"}\n{not json\n')
    it = iter(DocStore(bad))
    assert next(it) == ("a", "", "x")
    with pytest.raises(DataError, match=r"corpus.jsonl:2: not valid JSON"):
        next(it)


def test_parquet_corpus_lookup_and_ifir_skips_empty_documents():
    ds = pti.load_dataset("followir/core17/mteb")
    docs = list(ds.get_corpus_iter())
    got = ds.bench.corpus.get_many([docs[5]["docno"], docs[0]["docno"]])
    assert got == {d["docno"]: (d["title"], d["text"]) for d in (docs[5], docs[0])}
    ifir = pti.load_dataset("ifir/pm")
    assert "pm-empty" not in {d["docno"] for d in ifir.get_corpus_iter()}


def test_irds_registration():
    d = ir_datasets.load("instruct/infosearch/language")
    q = next(d.queries_iter())
    assert q._fields == ("query_id", "query", "instruction", "base_qid", "variant") and q.default_text() == q.query
    assert {r.query_id for r in d.qrels_iter()} <= {q.query_id for q in d.queries_iter()}
    doc = d.docs_store().get("language-0-0")
    assert doc.text.endswith("中文") and d.docs_count() == 8
    irds = pt.get_dataset("irds:instruct/infosearch/language")
    assert irds.get_qrels().label.dtype == "int64"
    out = pt.text.get_text(irds, "text")(pd.DataFrame({"qid": ["1"], "docno": ["language-1-n0"]}))
    assert out.text[0].endswith("unrelated 0")
    assert not ir_datasets.load("instruct/ifir/fiqa").has_scoreddocs()


def test_irds_topics_print_nothing_and_keep_the_instruction(capsys):
    """PyTerrier's irds wrapper prints "There are multiple query fields available" for a query type declaring more than
    one text field; ours declares (query_id, query) and yields the full topics."""
    irds = pt.get_dataset("irds:instruct/followir/robust04")
    topics = irds.get_topics()
    results = irds.get_results()
    assert capsys.readouterr().out == ""
    ours = pti.load_dataset("followir/robust04").get_topics()
    assert list(topics.columns) == ["qid", "query", "instruction", "base_qid", "variant"]
    pd.testing.assert_frame_equal(topics, ours[list(topics.columns)].reset_index(drop=True))
    assert results["instruction"].notna().all() and set(results["qid"]) == set(ours["qid"])
    assert irds.get_topics("query").columns.tolist() == ["qid", "query"]


def test_partitions_are_the_infosearch_gold_and_negatives():
    ds = pti.load_dataset("infosearch/format")
    part = ds.partitions()
    q = ds.get_qrels()
    assert part.equals(infosearch_partition(_base_keyed(q, "og"), _base_keyed(q, "changed")))
    assert set(part[part.qid == "format0_1"].role) == {"positive", "negative"}
    with pytest.raises(ValueError, match="InfoSearch only"):
        pti.load_dataset("followir/core17").partitions()


def test_infosearch_drops_instances_without_og_qrels_and_reads_string_scores_and_tsv():
    kw = pti.load_dataset("infosearch/keyword")
    assert kw.info()["dropped_without_og_qrels"] == ["keyword9_0"] and "keyword9_0-og" not in set(kw.get_topics().qid)
    assert pti.load_dataset("infosearch/format").get_qrels().label.dtype == "int64"  # "score": "1" in the file
    assert len(pti.load_dataset("infosearch/length").get_qrels()) == 54  # test.tsv only


def test_other_layouts_by_path():
    fire = pti.load_dataset("ifir/fire", path=str(LAYOUTS / "if-ir" / "fire"))
    t = fire.get_topics()
    assert fire.info()["layout"] == "ifir-mteb" and set(t.variant) == {"1"} and (t.instruction != "").all()
    a = pti.load_dataset("instructir")
    b = pti.load_dataset("instructir", path=str(LAYOUTS / "mteb" / "InstructIR-mteb"))
    assert b.info()["layout"] == "instructir-mteb"
    pd.testing.assert_frame_equal(a.get_topics(), b.get_topics(), check_dtype=False)
    pd.testing.assert_frame_equal(a.get_qrels(), b.get_qrels(), check_dtype=False)


def test_mteb_ifir_level_ids():
    from pyterrier_instruct.datasets.ifir import _mteb_level
    assert _mteb_level("123_v2") == ("123", "2") and _mteb_level("q7-v3") == ("q7", "3")
    assert _mteb_level("abc") == ("abc", "1")


# -- the hub path, against a stand-in for huggingface_hub ----------------------------------------
def test_download_is_pinned_cached_and_only_online(monkeypatch, tmp_path):
    import huggingface_hub
    calls = []

    def fake_download(repo_id, repo_type, revision, local_dir, allow_patterns):  # a stand-in: no network
        calls.append((repo_id, repo_type, revision, tuple(allow_patterns)))
        shutil.copytree(LAYOUTS / "jianqunZ" / "Source-v1", local_dir)
        return local_dir
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    monkeypatch.setattr(source, "hub_unreachable", lambda timeout=3.0: None)  # the stand-in hub answers
    with pytest.raises(DataError, match="HF_HUB_OFFLINE is set"):
        pti.load_dataset("infosearch/source").get_topics()
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    ds = pti.load_dataset("infosearch/source")
    assert calls == []  # creating the dataset downloads nothing; the first use does
    ds.get_topics()
    assert calls == [("jianqunZ/Source-v1", "dataset", "67dad8949d168785706d82f93e6794e88c8fcd2e",
                      DATASETS["infosearch/source"].allow)]
    assert ds.path == tmp_path / "irds" / "instruct" / "jianqunZ" / "Source-v1@67dad8949d168785706d82f93e6794e88c8fcd2e"
    assert ds.provenance["revision"] == "67dad8949d168785706d82f93e6794e88c8fcd2e" and len(ds.get_topics()) == 18
    pti.load_dataset("infosearch/source").get_topics()
    assert len(calls) == 1  # the cache is reused
    with pytest.raises(DataError, match="no local copy found"):
        pti.load_dataset("infosearch/format", download=False).get_topics()


# -- bad data ------------------------------------------------------------------------------------
def _copy(tmp_path, owner, repo):
    dst = tmp_path / repo
    shutil.copytree(LAYOUTS / owner / repo, dst)
    return dst


def _rewrite_jsonl(path, edit):
    rows = [json.loads(line) for line in open(path)]
    rows = edit(rows)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def test_followir_qrels_caveat_is_asserted_and_mapping_recorded(tmp_path):
    p = _copy(tmp_path, "jhu-clsp", "robust04-instructions")
    og, ch = p / "qrels_og" / "test.jsonl", p / "qrels_changed" / "test.jsonl"
    og_text, ch_text = og.read_text(), ch.read_text()
    og.write_text(ch_text)
    ch.write_text(og_text)
    (p / "qrels_og" / "test.tsv").unlink()
    with pytest.raises(DataError, match=r"og qrels must have more relevant documents per query than the changed qrels.*"
                                        r"query '301' has 2 og vs 3 changed.*qrels_mapping='swapped'"):
        pti.load_dataset("followir/robust04", path=str(p)).get_topics()
    ds = pti.load_dataset("followir/robust04", path=str(p), qrels_mapping="swapped")
    assert ds.get_qrels().equals(pti.load_dataset("followir/robust04").get_qrels())
    assert ds.provenance["qrels_mapping"] == "swapped" and ds.info()["og_relevant_per_query"] == 3.0
    with pytest.raises(ValueError, match="qrels_mapping must be one of"):
        pti.load_dataset("followir/robust04", path=str(p), qrels_mapping="auto").get_topics()


@pytest.mark.parametrize("case",
                         ["missing config", "unknown query", "og doc absent", "duplicate query", "empty instruction",
                          "duplicate judgement", "bad score"])
def test_followir_bad_data_errors_name_file_and_problem(tmp_path, case):
    p = _copy(tmp_path, "jhu-clsp", "core17-instructions")
    qrels_og = p / "qrels_og" / "test.jsonl"
    if case == "missing config":
        shutil.rmtree(p / "qrels_changed")
        match = r"missing qrels config 'qrels_changed': neither .*qrels_changed/test.jsonl nor test.tsv exists"
    elif case == "unknown query":
        _rewrite_jsonl(qrels_og, lambda r: r + [{"query-id": "999", "corpus-id": "DAM-0_0", "score": 1.0}])
        match = r"qrels_og/test.jsonl: qrels row for query '999', which is not in .*queries.jsonl \(1 such rows\)"
    elif case == "og doc absent":
        _rewrite_jsonl(p / "qrels_changed" / "test.jsonl", lambda r: r[1:])
        match = (r"qrels_changed/test.jsonl: document 'DAM-0_0' of query '301' is judged in .*qrels_og/test.jsonl "
                 r"but absent here")
    elif case == "duplicate query":
        _rewrite_jsonl(p / "queries.jsonl", lambda r: r + r[:1])
        match = r"queries.jsonl: duplicate query _id '301'"
    elif case == "empty instruction":
        _rewrite_jsonl(p / "queries.jsonl", lambda r: [dict(r[0], instruction_changed="")] + r[1:])
        match = r"queries.jsonl: query '301' has an empty instruction_changed \(1 in all\); this layout requires it"
    elif case == "duplicate judgement":
        _rewrite_jsonl(qrels_og, lambda r: r + r[:1])
        match = r"qrels_og/test.jsonl: duplicate judgement for query '301', document 'DAM-0_0'"
    else:
        _rewrite_jsonl(qrels_og, lambda r: [dict(r[0], score="high")] + r[1:])
        match = r"qrels_og/test.jsonl: relevance score 'high' is not a number"
    with pytest.raises(DataError, match=match):
        pti.load_dataset("followir/core17", path=str(p)).get_topics()


def test_mteb_bad_data_errors(tmp_path):
    p = _copy(tmp_path, "jhu-clsp", "mFollowIR-parquet-mteb")
    shutil.rmtree(p / "top_ranked-rus")
    with pytest.raises(DataError, match=r"missing config folder .*top_ranked-rus \(mteb layout, language rus\)"):
        pti.load_dataset("mfollowir/rus", path=str(p)).get_topics()
    q = p / "queries-fas" / "queries-00000-of-00001.parquet"
    pd.read_parquet(q).assign(_id=["f1", "f1-changed"]).to_parquet(q)
    with pytest.raises(DataError, match=r"queries-fas: query id 'f1' lacks the -og/-changed suffix"):
        pti.load_dataset("mfollowir/fas", path=str(p)).get_topics()
    i = p / "instruction-zho" / "instruction-00000-of-00001.parquet"
    pd.read_parquet(i).assign(instruction=["", "x"]).to_parquet(i)
    with pytest.raises(DataError, match=r"instruction-zho: query 'z1-og' has an empty instruction"):
        pti.load_dataset("mfollowir/zho", path=str(p)).get_topics()


def test_corpus_duplicates_and_unknown_docs(tmp_path):
    p = _copy(tmp_path, "jianqunZ", "Audience-v1")
    _rewrite_jsonl(p / "corpus.jsonl", lambda r: r + r[:1])
    ds = pti.load_dataset("infosearch/audience", path=str(p))
    with pytest.raises(DataError, match=r"corpus.jsonl: duplicate document id 'audience-0-0'"):
        ds.get_results().pipe(ds.text_loader())
    with pytest.raises(ValueError, match=r"documents have no field\(s\) \['body'\]"):
        ds.text_loader("body")


@pytest.mark.parametrize("case",
                         ["infosearch reversed", "infosearch qrels", "ifir instruction", "ifir rel", "instructir sep",
                          "instructir unknown"])
def test_other_families_bad_data(tmp_path, case):
    if case.startswith("infosearch"):
        p = _copy(tmp_path, "jianqunZ", "Language-v1")
        name = "infosearch/language"
        if case == "infosearch reversed":
            _rewrite_jsonl(p / "queries.jsonl", lambda r: r[:1] + [dict(r[1], instruction_reversed=None)] + r[2:])
            match = r"queries.jsonl: query 'language0_1' has an empty instruction_reversed"
        else:
            _rewrite_jsonl(p / "qrels_reversed" / "test.jsonl", lambda r: r[1:])
            match = r"qrels_reversed/test.jsonl: document 'language-0-0' of query 'language0_0' is judged in .*qrels_og"
    elif case.startswith("ifir"):
        p = tmp_path / "IFIR"
        shutil.copytree(LAYOUTS / "songtingyu" / "IFIR", p)
        name = "ifir/aila"
        data = json.loads((p / "aila" / "test_data.json").read_text())
        if case == "ifir instruction":
            data[1]["instructions"][2]["instruction"] = ""
            match = r"test_data.json: query 'aila1_3' has an empty instruction"
        else:
            data[0]["instructions"][0]["rel"] = [0, 9]
            match = r"test_data.json: query 'aila0' level 1: rel index 9 is outside its corpus list of 5 documents"
        (p / "aila" / "test_data.json").write_text(json.dumps(data))
    else:
        p = _copy(tmp_path, "kaist-ai", "InstructIR")
        name = "instructir"
        if case == "instructir sep":
            _rewrite_jsonl(p / "queries.jsonl", lambda r: [dict(r[0], text="no separator", metadata={})] + r[1:])
            match = r"queries.jsonl: query '1078446_1': text has no ' \[SEP\] ' between instruction and query"
        else:
            with open(p / "qrels" / "test.tsv", "a") as f:
                f.write("77_1\t77_1\t1\n")
            match = r"qrels/test.tsv: qrels row for query '77_1', which is not in .*queries.jsonl"
    with pytest.raises(DataError, match=match):
        pti.load_dataset(name, path=str(p)).get_topics()


def test_ifir_repository_root_or_subset_folder(tmp_path):
    root = LAYOUTS / "songtingyu" / "IFIR"
    a = pti.load_dataset("ifir/nfcorpus", path=str(root))
    b = pti.load_dataset("ifir/nfcorpus", path=str(root / "nfcorpus"))
    assert a.path == b.path and a.get_topics().equals(b.get_topics())


def test_docs_list_every_dataset_with_source_revision_and_size():
    readme = (Path(__file__).parents[1] / "docs" / "data.md").read_text()
    for name, e in DATASETS.items():
        (row,) = [line for line in readme.splitlines() if line.startswith(f"| `{name}` |")]
        revision = e.revision or ("main" if e.repo_id else "—")
        assert revision in row and (e.repo_id or "bundled") in row and e.size in row and e.measure in row
