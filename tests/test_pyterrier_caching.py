"""pyterrier-caching's caches with instruction-following runs: the plain ScorerCache (keyed on query and docno) gives
FollowIR's changed queries the og scores or crashes; pti.ScorerCache and pti.RetrieverCache key on the stage's identity
and on what it reads. Hits are proven with a scorer that raises (pyterrier-caching's own test style)."""
import os
import pickle

import numpy as np
import pandas as pd
import pyterrier as pt
import pyterrier_caching as ptc
import pytest

import pyterrier_instruct as pti


def raising(r):
    raise AssertionError("scored a row the cache holds")


class Raising(pt.Transformer):
    """A stage standing in for ``like`` that raises on any non-empty frame (an empty one, as pt.inspect sends, is
    answered by ``like``)."""

    def __init__(self, like):
        self.like = like

    def transform(self, inp):
        if len(inp):
            raise AssertionError("computed a row the cache holds")
        return self.like(inp)


@pytest.fixture(scope="module")
def minilm(minilm_vectors):
    return pti.SBertBiEncoder.all_minilm_l6_v2(cache_dir=minilm_vectors, verbose=False)  # the documents' vectors cached


@pytest.fixture(scope="module")
def bert(tiny):
    return pti.SBertBiEncoder(tiny["bert"], verbose=False)


@pytest.fixture(scope="module")
def paired(mini):
    topics = mini.get_topics()
    return topics, topics[topics.qid.str.endswith("-og")], mini.get_qrels()


@pytest.fixture(scope="module")
def uncached(mini, minilm, paired):
    topics, _, qrels = paired
    return pt.Experiment([mini.candidates() >> minilm], topics, qrels, [pti.pMRR]).iloc[0]["pMRR"]


def test_og_first_then_the_paired_experiment(mini, minilm, paired, uncached, tmp_path):
    """The issue's scenario: og topics cached first, then the paired experiment (p-MRR 0.000 with pyterrier-caching)."""
    topics, og, qrels = paired
    assert round(uncached, 3) == 0.030
    plain = ptc.ScorerCache(str(tmp_path / "plain"), minilm)
    (mini.candidates() >> plain)(og)
    run = (mini.candidates() >> plain)(topics)  # outside pt.Experiment, which refuses the plain cache (issue 45)
    assert pt.Experiment([run], topics, qrels, [pti.pMRR]).iloc[0]["pMRR"] == 0.0  # the flaw
    cache = pti.ScorerCache(tmp_path / "ours", minilm)
    (mini.candidates() >> cache)(og)
    n_og = len(mini.candidates()(og))
    assert (cache.hits, cache.misses) == (0, n_og)
    assert pt.Experiment([mini.candidates() >> cache], topics, qrels, [pti.pMRR]).iloc[0]["pMRR"] == \
        pytest.approx(uncached)
    assert cache.hits == n_og and cache.misses == len(mini.candidates()(topics))  # only the changed rows were scored


def test_og_and_changed_in_one_frame_and_a_second_pass_scores_nothing(mini, bert, paired, tmp_path):
    topics, _, _ = paired
    cands = mini.candidates()(topics)
    plain = ptc.ScorerCache(str(tmp_path / "plain"), bert)
    with pytest.raises(Exception, match="UNIQUE constraint failed"):  # the flaw: og and changed share (query, docno)
        plain(cands)
    cache = pti.ScorerCache(str(tmp_path / "c"), bert, identity="tiny-bert")
    first = cache(cands)
    expected = bert(cands)
    pd.testing.assert_series_equal(first["score"], expected["score"], check_exact=False, atol=1e-6)
    assert first["rank"].tolist() == expected["rank"].tolist() and cache.misses == len(cands)
    # a second pass, by another object whose scorer raises, under the same identity: every row from the cache
    again = pti.ScorerCache(str(tmp_path / "c"), Raising(bert), identity="tiny-bert")
    pd.testing.assert_frame_equal(again(cands), first)
    assert (again.hits, again.misses) == (len(cands), 0)
    # a new instruction for cached (query, docno) pairs is scored; the unchanged rows are not
    new = cands.assign(instruction=cands["instruction"].where(cands["qid"] != cands["qid"].iloc[0],
                                                              "only dams in Asia"))
    changed = int((new["instruction"] != cands["instruction"]).sum())
    with pytest.raises(AssertionError, match="computed a row the cache holds"):
        again(new)
    out = cache(new)
    assert cache.misses == len(cands) + changed and cache.hits == len(cands) - changed
    pd.testing.assert_series_equal(out["score"], bert(new)["score"], check_exact=False, atol=1e-6)


def test_the_query_the_model_reads_and_the_scorer_identity(mini, bert, tiny, paired, tmp_path):
    """A query folded by FoldInstruction is keyed as the model reads it (unfolded): a hit. Another checkpoint, template
    or score mode on the same folder never hits."""
    _, og, _ = paired
    cands = mini.candidates()(og.iloc[:2])
    path = str(tmp_path / "c")
    cache = pti.ScorerCache(path, bert)
    cache(cands)
    folded = pti.FoldInstruction()(cands)
    same = pti.SBertBiEncoder(tiny["bert"], verbose=False)
    same.transform = Raising(bert).transform  # the same identity; any row scored would raise
    strict = pti.ScorerCache(path, same)
    pd.testing.assert_series_equal(strict(folded)["score"], cache(cands)["score"])
    assert strict.misses == 0
    import shutil
    copy = shutil.copytree(tiny["bert"], tmp_path / "another-checkpoint")
    for other in (pti.SBertBiEncoder(str(copy), verbose=False), pti.BiEncoder(tiny["bert"], verbose=False),
                  pti.SBertBiEncoder(tiny["bert"], query_template="query: {query}", verbose=False),
                  pti.SBertBiEncoder(tiny["bert"], normalize=False, verbose=False)):
        miss = pti.ScorerCache(path, other)
        pd.testing.assert_series_equal(miss(cands)["score"], other(cands)["score"], check_exact=False, atol=1e-6)
        assert (miss.hits, miss.misses) == (0, len(cands))


def test_contract_errors_and_pickling(mini, bert, tiny, paired, tmp_path):
    _, og, _ = paired
    cands = mini.candidates()(og.iloc[:2])
    with pytest.raises(ValueError, match=r"ScorerCache: the stage has no fingerprint .* pass identity="):
        pti.ScorerCache(tmp_path / "x", pt.apply.score(np.negative))  # a C function: no code to read
    for pooled in (pti.RankZephyr(tiny["mistral"]), pti.Setwise(tiny["t5"]), pti.PoolBM25()):  # scores depend on pools
        with pytest.raises(TypeError, match="listwise, setwise or fitted on the pool .* pti.SavedRun"):
            pti.ScorerCache(tmp_path / "x", pooled)
    fresh = pti.SBertBiEncoder(tiny["bert"], verbose=False)
    cache = pti.ScorerCache(str(tmp_path / "c"), fresh)
    assert repr(cache) == f"ScorerCache({str(tmp_path / 'c')!r}, {fresh!r})"
    empty = cache(cands.iloc[:0])
    assert cache.store._conn is None and not os.path.exists(cache.path)  # nothing opened, no folder, no model
    assert empty.columns.tolist()[-3:] == ["score_0", "score", "rank"] and fresh._embedder is None
    first = cache(cands)
    assert first.columns.tolist() == empty.columns.tolist() and sorted(first.columns) == sorted([*cands, "score_0"])
    copy = pickle.loads(pickle.dumps(cache))
    pd.testing.assert_frame_equal(copy(cands), first)
    assert copy.misses == cache.misses and copy.hits == len(cands)  # counters travel; nothing scored again


def test_retriever_cache_over_dense_retrieval_with_instructions(mini, bert, paired, tmp_path):
    """pyterrier-caching's RetrieverCache on='query' hands the og ranking to the changed query; pti.RetrieverCache keys
    on the instruction too, returns the rows under the input's qids, and a second pass retrieves nothing."""
    topics, og, _ = paired
    retriever = bert.retriever(corpus=mini.get_corpus_iter, num_results=5)
    expected = retriever(topics)
    plain = ptc.RetrieverCache(str(tmp_path / "plain"), retriever, on="query")
    plain(og)
    wrong = plain(topics)
    changed = topics.qid[topics.qid.str.endswith("-changed")].iloc[0]
    assert changed not in set(wrong["qid"])  # the changed query got the og query's run, under the og qid
    cache = pti.RetrieverCache(str(tmp_path / "ours"), retriever)
    cache(og)
    got = cache(topics)
    key = ["qid", "rank"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  expected.sort_values(key).reset_index(drop=True), check_exact=False, atol=1e-6)
    assert (cache.hits, cache.misses) == (len(og), len(topics))
    again = pti.RetrieverCache(str(tmp_path / "ours"), Raising(retriever), identity=cache._key)
    pd.testing.assert_frame_equal(again(topics), got)
    assert (again.hits, again.misses) == (len(topics), 0)


def test_an_experiment_with_a_plain_cache_is_refused_before_any_system_runs(mini, bert, paired, tmp_path, recwarn):
    """The seam: a pyterrier-caching ScorerCache keyed on (query, docno) in an experiment with a paired measure and
    variants that share a query text is refused, named, before any system runs (issue 45: a warning before, then an
    IntegrityError after all the scoring); this package's cache, a system that folds the instruction into the query,
    and an experiment without the package's measures are not."""
    import warnings
    topics, _, qrels = paired
    plain = ptc.ScorerCache(str(tmp_path / "plain"), pt.apply.score(raising))
    with pytest.raises(ValueError, match=r"'cached' holds Sqlite3ScorerCache\(.*keys its entries without the "
                                         r"instruction.*pMRR would compare the system with itself.*pti\.ScorerCache"):
        pt.Experiment([mini.candidates() >> plain], topics, qrels, [pti.pMRR], names=["cached"])  # raising never ran
    quiet = [pti.ScorerCache(str(tmp_path / "ours"), bert),
             pti.FoldInstruction() >> mini.candidates() >> ptc.ScorerCache(str(tmp_path / "folded"), bert)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pt.Experiment([mini.candidates() >> quiet[0], quiet[1]], topics, qrels, [pti.pMRR], names=["ours", "folded"])
        plain_og = ptc.ScorerCache(str(tmp_path / "plain2"), bert)
        pt.Experiment([mini.candidates() >> plain_og], topics[topics.qid.str.endswith("-og")], qrels, ["map"])
    assert not [w for w in seen if "keys its entries without the instruction" in str(w.message)]


# -- issue 42: the output of a cached stage is the stage's own output; any docno dtype; any input the stage accepts --
class TextScorer(pt.Transformer):
    """A foreign scorer reading qid, query, docno and text, without validation: on an empty frame it reads only query
    and docno, so pt.inspect takes its input for an R frame (qid, query, docno, score, rank)."""

    def transform(self, inp):
        text = inp["text"].str.len() if len(inp) else 0
        score = (inp["query"].str.len() + inp["docno"].str.len() + text).astype(float)
        return pt.model.add_ranks(inp.assign(score=score))


def test_a_cached_reranker_returns_its_own_output_on_a_miss_and_a_hit(mini, tiny, paired, tmp_path):
    """Every input column, score_0 (the first stage's score), score, rank, dtypes, row order and index as the reranker
    itself returns them, whether the rows were scored or read back (was: score_0 dropped)."""
    _, og, _ = paired
    cands = mini.candidates()(og.iloc[:3]).sample(frac=1.0, random_state=1)  # rows not in rank order, index shuffled
    for i, reranker in enumerate([pti.SBertBiEncoder(tiny["bert"], verbose=False),
                                  pti.MonoT5(tiny["t5"], verbose=False), pti.MonoBERT(tiny["bert"], verbose=False)]):
        expected = reranker(cands)
        assert "score_0" in expected.columns
        cache = pti.ScorerCache(str(tmp_path / str(i)), reranker)
        pd.testing.assert_frame_equal(cache(cands), expected, check_exact=True)
        hit = pti.ScorerCache(str(tmp_path / str(i)), Raising(reranker), identity=cache._key)
        pd.testing.assert_frame_equal(hit(cands), expected, check_exact=True)
        half = cands.iloc[::2]  # a part of the cached rows (read back: the models' floats vary by 1e-7 with the batch)
        pd.testing.assert_frame_equal(hit(half), pt.model.add_ranks(expected.loc[half.index]), check_exact=True)
        assert (cache.hits, cache.misses, hit.hits, hit.misses) == (0, len(cands), len(cands) + len(half), 0)


def test_integer_docnos_are_keys_once_and_come_back_as_given(mini, paired, tmp_path):
    """Integer docnos were read back as strings: re-scored and inserted twice (IntegrityError)."""
    _, og, _ = paired
    cands = mini.candidates()(og.iloc[:2])
    cands = cands.assign(docno=pd.factorize(cands["docno"])[0].astype("int64") + 7)
    scored = []
    scorer = pt.apply.doc_score(lambda df: scored.append(len(df)) or df["docno"].to_numpy() * 0.5, batch_size=1000)
    cache = pti.ScorerCache(str(tmp_path / "c"), scorer, identity="half-docno")
    first = cache(cands)
    second = cache(cands)
    assert scored == [len(cands)] and (cache.hits, cache.misses) == (len(cands), len(cands))  # the second pass: 0 rows
    pd.testing.assert_frame_equal(second, first)
    pd.testing.assert_frame_equal(first, scorer(cands))
    assert second["docno"].dtype == "int64" and second["docno"].tolist() == cands["docno"].tolist()


def test_the_cache_accepts_what_its_scorer_accepts(mini, paired, tmp_path):
    """A frame of qid, query, docno and text, which the scorer scores, was refused ('missing columns score, rank': the
    columns pt.inspect guessed); what the scorer refuses on an empty frame, the cache refuses before any look-up."""
    _, og, _ = paired
    cands = mini.candidates()(og.iloc[:2])[["qid", "query", "docno", "text"]]
    scorer = TextScorer()
    assert pt.inspect.transformer_inputs(scorer) == [["qid", "query", "docno", "score", "rank"]]
    cache = pti.ScorerCache(str(tmp_path / "c"), scorer, identity="text-length")
    pd.testing.assert_frame_equal(cache(cands), scorer(cands))
    pd.testing.assert_frame_equal(cache(cands), scorer(cands))
    assert (cache.hits, cache.misses) == (len(cands), len(cands))
    strict = pti.ScorerCache(str(tmp_path / "c"), pti.SBertBiEncoder("unused-model"), identity="text-length")
    with pytest.raises(pt.validate.InputValidationError, match="text"):
        strict(cands.drop(columns="text"))
    assert strict.store._conn is None


def test_retriever_cache_over_a_pt_apply_retriever(mini, paired, tmp_path):
    """RetrieverCache(identity=) over pt.apply (failed inside pyterrier-caching: extra_cols, renamed in PyTerrier
    1.1.2): the retriever's own output, dtypes included, on a miss and on a hit, under the input's qids."""
    topics, og, _ = paired
    candidates = mini.candidates()
    retriever = pt.apply.generic(lambda q: candidates(q[["qid", "query", "instruction"]]).astype({"rank": "int32"}))
    cache = pti.RetrieverCache(str(tmp_path / "r"), retriever, identity="candidates-int32")
    pd.testing.assert_frame_equal(cache(og), retriever(og))
    pd.testing.assert_frame_equal(cache(topics), retriever(topics))
    assert (cache.hits, cache.misses) == (len(og), len(topics))
    hit = pti.RetrieverCache(str(tmp_path / "r"), Raising(retriever), identity="candidates-int32")
    renamed = og.assign(qid="q" + og["qid"])  # another qid, the same query and instruction: a hit under the new qid
    pd.testing.assert_frame_equal(hit(renamed), retriever(og).assign(qid="q" + retriever(og)["qid"]))
    assert (hit.hits, hit.misses) == (len(og), 0)


def test_a_hit_keeps_its_own_input_columns(mini, paired, tmp_path):
    """A query that shares the key (query and instruction) with the one that filled the cache, under another qid and
    other columns (base_qid, variant): a hit carries its own values of the columns the retriever passes through, as the
    retriever itself would (before, the first query's base_qid came back and grouped it with the wrong pair)."""
    _, og, _ = paired
    candidates = mini.candidates()
    retriever = pt.apply.generic(lambda q: candidates(q))
    cache = pti.RetrieverCache(str(tmp_path / "r"), retriever, identity="candidates-passthrough")
    pd.testing.assert_frame_equal(cache(og), retriever(og))
    other = og.assign(qid="x" + og["qid"], base_qid="x" + og["base_qid"], variant="changed")
    hit = pti.RetrieverCache(str(tmp_path / "r"), Raising(retriever), identity="candidates-passthrough")
    own = retriever(og)  # what the retriever gives the renamed queries: their own qid, base_qid and variant
    expected = own.assign(qid="x" + own["qid"], base_qid="x" + own["base_qid"], variant="changed")
    pd.testing.assert_frame_equal(hit(other), expected)
    assert (hit.hits, hit.misses) == (len(og), 0)
