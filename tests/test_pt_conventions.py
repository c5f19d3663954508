"""PyTerrier 1.1's conventions with the package's rerankers and measures: ``pt.Experiment(plan='tree')`` and
``precompute_prefix=True`` (with and without ``batch_size``) give the linear plan's numbers and run a shared first stage
once; ``pt.inspect`` reads each family's inputs (the ``instruction`` column optional) and outputs."""
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import AP, nDCG

import pyterrier_instruct as pti


class Counted(pt.Transformer):
    """A first stage that records the size of every non-empty frame it is given."""

    def __init__(self, inner, calls):
        self.inner, self.calls = inner, calls

    def transform(self, inp):
        if len(inp):
            self.calls.append(len(inp))
        return self.inner(inp)

    def __repr__(self):
        return f"Counted({self.inner!r})"


@pytest.fixture(scope="module")
def rerankers(tiny):
    return [pti.MonoT5(tiny["t5"], verbose=False), pti.SBertBiEncoder(tiny["bert"], verbose=False), pti.PoolBM25()]


@pytest.mark.parametrize("batch_size", [None, 4])
def test_tree_plan_and_precompute_prefix_give_the_linear_numbers_with_one_first_stage_run(mini, rerankers, batch_size):
    topics, qrels = mini.get_topics().head(10), mini.get_qrels()  # 5 queries (og, changed): a short last batch of 4
    calls = []
    first = Counted(mini.candidates(), calls) % 6
    systems = [first >> r for r in rerankers]
    measures = [pti.pMRR, pti.OG(AP @ 1000), nDCG @ 5]
    kw = {} if batch_size is None else {"batch_size": batch_size}
    linear = pt.Experiment(systems, topics, qrels, measures, names=["t5", "bi", "pool"], **kw)
    assert sum(calls) == len(systems) * len(topics)  # the linear plan runs the first stage per system
    assert linear["pMRR"].notna().all() and linear["OG(AP@1000)"].gt(0).all()
    for options in ({"plan": "tree"}, {"precompute_prefix": True}):
        calls.clear()
        res = pt.Experiment(systems, topics, qrels, measures, names=["t5", "bi", "pool"], **options, **kw)
        assert sum(calls) == len(topics) and len(calls) == (1 if batch_size is None else -(-len(topics) // batch_size))
        pd.testing.assert_frame_equal(res, linear, check_exact=False, rtol=1e-12)


@pytest.mark.parametrize("family", ["MonoT5", "SBertBiEncoder", "PoolBM25"])
def test_inspect_reads_the_instruction_as_an_optional_input(family, rerankers):
    r = {type(x).__name__: x for x in rerankers}[family]
    modes = [set(m) for m in pt.inspect.transformer_inputs(r)]
    assert {"qid", "query", "docno", "text", "instruction"} in modes and {"qid", "query", "docno", "text"} in modes
    for cols in (["qid", "query", "docno", "text"], ["qid", "query", "instruction", "docno", "text", "score", "rank"]):
        out = pt.inspect.transformer_outputs(r, cols)
        kept = [c for c in cols if c not in ("score", "rank")]
        assert out == kept + (["score_0"] if "score" in cols else []) + ["score", "rank"]
    if family == "SBertBiEncoder":  # a bi-encoder also encodes a query frame
        assert pt.inspect.transformer_outputs(r, ["qid", "query", "instruction"]) == \
            ["qid", "query", "instruction", "query_vec"]
    else:
        with pytest.raises(Exception, match="does not match required columns"):
            pt.inspect.transformer_outputs(r, ["qid", "query"])  # a query frame is not a reranker's input


def test_the_caches_inspect_as_their_stage(rerankers, tmp_path):
    scorer = rerankers[1]
    cache = pti.ScorerCache(str(tmp_path / "scores"), scorer)
    assert [set(m) for m in pt.inspect.transformer_inputs(cache)] == [set(m) | {"qid", "query", "docno"}
                                                                      for m in pt.inspect.transformer_inputs(scorer)
                                                                      if {"docno"} <= set(m) and "qid" in m]
    assert pt.inspect.transformer_outputs(cache, ["qid", "query", "instruction", "docno", "text"]) == [
        "qid", "query", "instruction", "docno", "text", "score", "rank"]
