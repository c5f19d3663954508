"""The instruction data model: composing, folding, setting, and paired topics/qrels."""
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.instructions import (E5_EMPTY_INSTRUCTION, TART_EMPTY_INSTRUCTION, by_variant,
                                             query_instructions, split_qids, variant_frame)


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


def test_query_slot_frame_matches_compose_and_missing_column():
    df = pd.DataFrame({"qid": ["1", "2"], "query": ["a b ", "c"], "instruction": ["x", None]})

    def frame(df, composer=pti.DEFAULT_COMPOSER):
        return list(pti.QuerySlot(composer).frame(query_instructions(df)))
    assert frame(df) == [pti.compose("a b ", "x"), "c"]
    assert frame(df[["qid", "query"]]) == ["a b", "c"]
    assert frame(df, "{instruction}: {query}") == ["x: a b", ": c"]
    assert frame(df, "mteb") == ["a b x", "c"]


def test_fold_instruction_keeps_query_0_and_is_byte_identical_when_empty():
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["what is x?", "  spaced query "],
                           "instruction": ["only y", ""]})
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
    assert again["query"].tolist() == ["only y [SEP] what is x?", "[SEP] y"]
    assert again["query_0"].tolist() == ["what is x?", "y"]
    # a query rewritten after folding (e.g. an expansion) is no longer the folded one: read as it is
    rewritten = once.assign(query=["what is x? only y expanded", "y"])
    assert query_instructions(rewritten)["query"].tolist() == ["what is x? only y expanded", "y"]


def test_query_slot_owns_the_instruction_place():
    slot = pti.QuerySlot("{query} [SEP] {instruction}")
    df = pd.DataFrame({"query": ["a", "b"], "instruction": ["", "x"]})
    assert list(slot.frame(df)) == ["a [SEP]", "b [SEP] x"]
    assert list(pti.QuerySlot("rank_llm").frame(pd.DataFrame({"query": [" q "], "instruction": [""]}))) == [" q "]
    with pytest.raises(ValueError, match="MonoT5: composer must be"):
        pti.MonoT5("m", query_slot="no slot")


def test_the_deprecated_composer_arguments_are_gone():
    """composer=/empty_instruction= were spellings of query_slot= that never shipped (the 1.0.0 API has query_slot= and
    instruction= only)."""
    with pytest.raises(TypeError, match="composer"):
        pti.CrossEncoderReranker("m", composer="{instruction} {query}")
    with pytest.raises(TypeError, match="empty_instruction"):
        pti.BiEncoder("m", empty_instruction="task")
    with pytest.raises(TypeError):
        pti.QuerySlot("{query}", empty="task")


def test_one_default_for_a_missing_or_blank_instruction():
    """The stage's instruction= replaces a missing column, a NaN/None and a blank value alike (before: TART, E5-Mistral
    and Qwen3 replaced a blank one by a second default of their query slot, and instruction= only a missing one)."""
    rows = pd.DataFrame({"qid": list("abcd"), "query": ["q"] * 4, "instruction": ["x", "", None, "  "]})
    view = query_instructions(rows, "mine")
    assert view["instruction"].tolist() == ["x", "mine", "mine", "mine"]
    assert query_instructions(rows[["qid", "query"]], "mine")["instruction"].tolist() == ["mine"] * 4
    tart = pti.TART("never-loaded", instruction="mine")
    assert tart.query_slot.frame(tart.prompt_view(rows)).tolist() == ["q [SEP] x"] + ["q [SEP] mine"] * 3
    default = pti.TART("never-loaded")
    assert default.query_slot.frame(default.prompt_view(rows)).tolist()[1:] == [f"q [SEP] {TART_EMPTY_INSTRUCTION}"] * 3
    assert pti.E5Mistral("never-loaded", instruction="mine").query_strings(rows).tolist() == ["q x"] + ["q mine"] * 3
    assert pti.E5Mistral("never-loaded").query_strings(rows).tolist()[1:] == [f"q {E5_EMPTY_INSTRUCTION}"] * 3
    qwen = pti.Qwen3Embedding("never-loaded", instruction="mine").query_strings(rows).tolist()
    assert qwen == ["Instruct: x\nQuery:q"] + ["Instruct: mine\nQuery:q"] * 3
    # a blank instruction is no instruction, for every rule (mxbai-v2 wrote an "instruction:   " line for it)
    mxbai = pti.QuerySlot("mxbai_v2").frame(query_instructions(rows)).tolist()
    assert mxbai == ["instruction: x\nquery: q"] + ["query: q"] * 3


def test_a_stage_builds_its_prompt_view_once(monkeypatch):
    """One prompt view per call: the instruction default applied and a folded query unfolded once, by the stage's
    transform, which its families and dense models read (before: BiEncoder and rank1 built it again)."""
    import sys
    import numpy as np
    import pyterrier_instruct.instructions as instructions
    calls, real = [], instructions.query_instructions

    def counted(df, default=""):
        calls.append(len(df))
        return real(df, default)
    for module in [m for name, m in sys.modules.items() if name.startswith("pyterrier_instruct") and m is not None]:
        if getattr(module, "query_instructions", None) is real:
            monkeypatch.setattr(module, "query_instructions", counted)
    model, seen = pti.BiEncoder("never-loaded", instruction="mine"), []
    monkeypatch.setattr(model, "encode_queries", lambda s: seen.append(list(s)) or np.ones((len(s), 2)))
    monkeypatch.setattr(model, "encode_passages", lambda strings: np.ones((len(strings), 2)))
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["what is x?", "y"], "instruction": ["only y", " "]})
    folded = pti.FoldInstruction()(topics).assign(docno=["d1", "d2"], text=["t1", "t2"])
    calls.clear()
    out = model(folded)
    assert calls == [2]
    assert seen == [["what is x? only y", "y mine"]]
    assert out["query"].tolist() == ["what is x? only y", "y"]  # the input columns as they came


def test_fold_instruction_composer():
    topics = pd.DataFrame({"qid": ["1"], "query": ["what is x"], "instruction": ["Be brief."]})
    assert pti.FoldInstruction(composer="{instruction} [SEP] {query}")(topics)["query"].tolist() == \
        ["Be brief. [SEP] what is x"]
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
