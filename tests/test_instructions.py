"""The instruction data model: composing, folding, setting, and paired topics/qrels."""
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.instructions import by_variant, compose_frame, query_instructions, split_qids, variant_frame


def test_compose_append_rule():
    assert pti.compose("What is X?", "Only documents from 2001.") == "What is X? Only documents from 2001."
    assert pti.compose("  What is X? ", "") == "What is X?"
    assert pti.compose("What is X?", None) == "What is X?"
    assert pti.compose("q", "i", composer="{instruction} [SEP] {query}") == "i [SEP] q"
    assert pti.compose("q", "i", composer="append") == pti.compose("q", "i") == "q i"
    assert pti.compose("what is x", "Be brief.", composer="promptriever") == "what is x? Be brief."
    assert pti.DEFAULT_COMPOSER == "{query} {instruction}"
    with pytest.raises(ValueError, match="compose: composer must be one of .*got 'nope'"):
        pti.compose("q", "i", composer="nope")


def test_compose_frame_matches_compose_and_missing_column():
    df = pd.DataFrame({"qid": ["1", "2"], "query": ["a b ", "c"], "instruction": ["x", None]})
    assert list(compose_frame(df)) == [pti.compose("a b ", "x"), "c"]
    assert list(compose_frame(df[["qid", "query"]])) == ["a b", "c"]
    assert list(compose_frame(df, "{instruction}: {query}")) == ["x: a b", ": c"]
    assert list(compose_frame(df, composer="mteb")) == ["a b x", "c"]


def test_fold_instruction_keeps_query_0_and_is_byte_identical_when_empty():
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["what is x?", "  spaced query "], "instruction": ["only y", ""]})
    out = pti.FoldInstruction()(topics)
    assert out["query"].tolist() == ["what is x? only y", "spaced query"]
    assert out["query_0"].tolist() == topics["query"].tolist()
    assert out["instruction"].tolist() == topics["instruction"].tolist()
    plain = pd.DataFrame({"qid": ["1"], "query": ["exact bytes ü?"]})
    assert pti.FoldInstruction()(plain)["query"].tolist() == ["exact bytes ü?"]
    twice = pti.FoldInstruction()(out)
    assert twice["query_1"].tolist() == topics["query"].tolist()


def test_fold_instruction_marks_the_frame_and_never_folds_twice():
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["what is x?", "y"], "instruction": ["only y", ""]})
    once = pti.FoldInstruction()(topics)
    assert once["folded_query"].tolist() == once["query"].tolist() == ["what is x? only y", "y"]
    # every instruction-aware stage reads the unfolded query (the one rule, in instructions.query_instructions)
    assert query_instructions(once)["query"].tolist() == ["what is x?", "y"]
    assert query_instructions(pt.rewrite.reset()(once))["query"].tolist() == ["what is x?", "y"]
    # a second FoldInstruction folds the unfolded query, not the folded one
    again = pti.FoldInstruction("{instruction} [SEP] {query}")(once)
    assert again["query"].tolist() == ["only y [SEP] what is x?", "[SEP] y"] and again["query_0"].tolist() == ["what is x?", "y"]
    # a query rewritten after folding (e.g. an expansion) is no longer the folded one: read as it is
    rewritten = once.assign(query=["what is x? only y expanded", "y"])
    assert query_instructions(rewritten)["query"].tolist() == ["what is x? only y expanded", "y"]


def test_query_slot_owns_the_instruction_place():
    slot = pti.QuerySlot("{query} [SEP] {instruction}", empty="default task")
    assert slot.fill("q", "") == "q [SEP] default task" and slot.fill("q", "i") == "q [SEP] i"
    assert pti.QuerySlot().fill(" q ", "") == "q" and pti.QuerySlot("rank_llm").fill(" q ", " ") == " q "
    df = pd.DataFrame({"query": ["a", "b"], "instruction": ["", "x"]})
    assert list(slot.frame(df)) == ["a [SEP] default task", "b [SEP] x"]
    assert list(pti.QuerySlot("{query}", empty="d").instructions(df)) == ["d", "x"]
    with pytest.raises(ValueError, match="MonoT5: composer must be"):
        pti.MonoT5("m", query_slot="no slot")
    with pytest.warns(DeprecationWarning, match="write query_slot=QuerySlot"):
        pti.CrossEncoderReranker("m", composer="{instruction} {query}")


def test_fold_instruction_composer():
    topics = pd.DataFrame({"qid": ["1"], "query": ["what is x"], "instruction": ["Be brief."]})
    assert pti.FoldInstruction(composer="{instruction} [SEP] {query}")(topics)["query"].tolist() == ["Be brief. [SEP] what is x"]
    assert pti.FoldInstruction(composer="promptriever")(topics)["query"].tolist() == ["what is x? Be brief."]
    assert repr(pti.FoldInstruction()) == "FoldInstruction()"
    assert repr(pti.FoldInstruction(composer="mteb")) == "FoldInstruction(composer='mteb')"
    assert pti.FoldInstruction() == pti.FoldInstruction(pti.DEFAULT_COMPOSER) != pti.FoldInstruction("mteb")


def test_fold_instruction_empty_frame_and_validation():
    out = pti.FoldInstruction()(pd.DataFrame(columns=["qid", "query"]))
    assert len(out) == 0 and "query_0" in out.columns
    with pytest.raises(ValueError, match="FoldInstruction: composer must be .*a {query} field"):
        pti.FoldInstruction("{instruction}")
    with pytest.raises(ValueError, match="FoldInstruction: composer"):
        pti.FoldInstruction(composer="tart")
    with pytest.raises(KeyError):
        pti.FoldInstruction()(pd.DataFrame({"qid": ["1"]}))


def test_set_instruction():
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["a", "b"], "instruction": ["keep", ""]})
    assert pti.SetInstruction("new")(topics)["instruction"].tolist() == ["new", "new"]
    assert pti.SetInstruction("new", overwrite=False)(topics)["instruction"].tolist() == ["keep", "new"]
    assert pti.SetInstruction("x")(topics[["qid", "query"]])["instruction"].tolist() == ["x", "x"]
    assert repr(pti.SetInstruction("x")) == "SetInstruction('x')"
    assert pti.SetInstruction("x") == pti.SetInstruction("x") and pti.SetInstruction("x") != pti.SetInstruction("y")
    with pytest.raises(TypeError):
        pti.SetInstruction(None)


def test_paired_topics_and_qrels():
    base = pd.DataFrame({"qid": ["305", "306"], "query": ["q305", "q306"], "instruction_og": ["og5", "og6"],
                         "instruction_changed": ["ch5", None], "keywords": ["k5", "k6"]})
    topics = pti.paired_topics(base)
    assert topics["qid"].tolist() == ["305-og", "305-changed", "306-og", "306-changed"]
    assert topics["instruction"].tolist() == ["og5", "ch5", "og6", ""]
    assert topics["base_qid"].tolist() == ["305", "305", "306", "306"]
    assert topics["variant"].tolist() == ["og", "changed", "og", "changed"]
    assert topics["keywords"].tolist() == ["k5", "k5", "k6", "k6"]
    assert not topics["query"].str.contains("og5").any()  # never baked into the query
    with pytest.raises(KeyError, match="instruction_reversed"):
        pti.paired_topics(base, variants=("og", "changed", "reversed"))
    with pytest.raises(ValueError, match="unknown variant"):
        pti.paired_topics(base, variants=("og", "other"))
    og = pd.DataFrame({"qid": ["305", "305"], "docno": ["a", "b"], "label": [2, 1]})
    ch = pd.DataFrame({"qid": ["305", "305"], "docno": ["a", "b"], "label": [2.0, 0.0]})
    qrels = pti.paired_qrels({"og": og, "changed": ch})
    assert qrels["qid"].tolist() == ["305-og", "305-og", "305-changed", "305-changed"]
    assert qrels["label"].dtype == "int64"
    assert by_variant(qrels)["changed"]["qid"].tolist() == ["305", "305"]
    assert variant_frame(topics, "og")["qid"].tolist() == ["305-og", "306-og"]


def test_split_qids():
    assert pti.split_qid("305-og") == ("305", "og")
    assert pti.split_qid("a-b-reversed") == ("a-b", "reversed")
    assert pti.split_qid("q-1") == ("q-1", None)
    base, variant = split_qids(pd.Series(["1-og", "x", "2-changed"]))
    assert base.tolist() == ["1", "x", "2"] and variant.isna().tolist() == [False, True, False]


def test_search_without_instruction_column_works():
    # pt.Transformer.search builds [qid, query] only: instruction-aware stages must not need the column.
    scorer = pt.Transformer.from_df(pd.DataFrame({"qid": ["1"], "docno": ["d"], "score": [1.0]}))
    assert len((pti.FoldInstruction() >> scorer).search("hello")) == 1
