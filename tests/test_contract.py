"""The one PyTerrier contract, checked on every public transformer class (built on tiny offline models).

For each reranking family: a ``pt.Transformer``; an empty frame gives correctly shaped output without loading the model;
``ds.candidates() % 8 >> X`` keeps every input column, keeps the first-stage score as ``score_0`` and ranks each query
consistently with its scores; ``pt.inspect`` works; repr/eq/hash are consistent; the object pickles before and after
its model loads, and an unpickled copy reloads lazily and scores identically (PyTerrier's ``.parallel()`` and any
multi-process runner rely on this); a NaN/None query or text is refused before the model loads and a NaN/None
instruction is the default one. Rerankers of different families swap inside one ``pt.Experiment``.
"""
from __future__ import annotations

import os
import pickle

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import AP

import pyterrier_instruct as pti
from pyterrier_instruct._config import Configured
from pyterrier_instruct._fingerprint import fingerprint
from pyterrier_instruct.testing.models import QWEN_CHAT_TEMPLATE
from stubs import ZEPHYR_TEMPLATE, ChatServer, with_chat_template

KEY_ENV = "PTI_CONTRACT_TEST_KEY"
REMOTE = {"RankGPT"}  # served over HTTP: nothing is loaded locally


@pytest.fixture(scope="module")
def models(tiny, qwen, tmp_path_factory):
    import peft
    import torch
    import tiny_models
    import transformers
    root = tmp_path_factory.mktemp("contract")
    llama = tiny_models.tiny_llama(root)
    torch.manual_seed(1)
    lora = peft.get_peft_model(transformers.AutoModel.from_pretrained(llama),
                               peft.LoraConfig(r=4, lora_alpha=8, init_lora_weights=False,
                                               target_modules=["q_proj", "v_proj"]))
    adapter = root / "adapter"
    lora.save_pretrained(str(adapter))  # its config names the local base folder
    server = ChatServer(lambda body: (200, {"choices": [{"message": {"content": "[2] > [1] > [3]"}}]}))
    os.environ[KEY_ENV] = "sk-contract"
    yield {**tiny, "llama": llama, "adapter": str(adapter), "chat": server.url, "qwen3": qwen["reranker"],
           "qwen3-embedding": qwen["embedding"], "qwen2": qwen["qwen2"], "rank1": tiny_models.tiny_rank1(root),
           "zephyr": with_chat_template(tiny["mistral"], root / "zephyr", ZEPHYR_TEMPLATE),
           "qwen-chat": with_chat_template(qwen["qwen2"], root / "qwen-chat", QWEN_CHAT_TEMPLATE)}
    server.close()


#: every public reranking family (R → R), built on the tiny models
FAMILIES = {
    "MonoT5": lambda m: pti.MonoT5(m["t5"]),
    "FollowIR7B": lambda m: pti.FollowIR7B(m["mistral"]),
    "CausalLMReranker": lambda m: pti.CausalLMReranker.mistral_instruct(m["mistral"]),
    "CrossEncoderReranker": lambda m: pti.CrossEncoderReranker(m["bert"]),
    "MonoBERT": lambda m: pti.MonoBERT(m["bert"]),
    "TART": lambda m: pti.TART(m["bert"], max_length=512),
    "Qwen3Reranker": lambda m: pti.Qwen3Reranker(m["qwen3"]),
    "MxbaiRerankV2": lambda m: pti.MxbaiRerankV2(m["qwen2"]),
    "Rank1": lambda m: pti.Rank1(m["rank1"], max_output_tokens=8),
    "ListwiseReranker": lambda m: pti.ListwiseReranker(pti.HFBackend(m["zephyr"]), window_size=4, stride=2, depth=6),
    "RankZephyr": lambda m: pti.RankZephyr(m["zephyr"], window_size=4, stride=2, depth=6),
    "RankVicuna": lambda m: pti.RankVicuna(m["zephyr"], window_size=4, stride=2, depth=6),
    "RankGPT": lambda m: pti.RankGPT("gpt-4o", base_url=m["chat"], api_key_env=KEY_ENV, window_size=4, stride=2,
                                     depth=6),
    "FIRST": lambda m: pti.FIRST(m["zephyr"], window_size=4, stride=2, depth=6),
    "ReasonRank": lambda m: pti.ReasonRank(m["zephyr"], window_size=4, stride=2, depth=6, max_output_tokens=4),
    "Setwise": lambda m: pti.Setwise(m["t5"], num_child=2, k=3),
    "RankR1": lambda m: pti.RankR1(m["qwen-chat"], num_child=3, k=2, max_output_tokens=4),
    "BiEncoder": lambda m: pti.BiEncoder(m["bert"]),
    "SBertBiEncoder": lambda m: pti.SBertBiEncoder(m["bert"]),
    "Promptriever": lambda m: pti.Promptriever(m["adapter"]),
    "RepLLaMA": lambda m: pti.RepLLaMA(m["adapter"]),
    "E5Mistral": lambda m: pti.E5Mistral(m["mistral"]),
    "InFEmbed": lambda m: pti.InFEmbed(m["mistral"]),
    "Qwen3Embedding": lambda m: pti.Qwen3Embedding(m["qwen3-embedding"]),
    "PoolBM25": lambda m: pti.PoolBM25(),
}


def loaded(obj, seen=None) -> bool:
    """Whether ``obj`` or any configured object it holds has a lazily loaded attribute set."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if any(getattr(obj, name, None) is not None for name in getattr(type(obj), "_lazy", ())):
        return True
    return any(loaded(v, seen) for v in vars(obj).values() if isinstance(v, Configured))


def has_lazy_state(obj, seen=None) -> bool:
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    return bool(getattr(type(obj), "_lazy", ())) or any(has_lazy_state(v, seen)
                                                        for v in vars(obj).values() if isinstance(v, Configured))


@pytest.fixture(scope="module")
def topics(mini):
    return mini.get_topics().iloc[:2]


#: one reranker per family, its model loaded once for the module (issue 45): the tests that compare its scores on
#: several inputs share it; the tests of what happens before loading build their own
_SHARED: dict = {}


def shared(name: str, models):
    """The module's reranker of family ``name`` (built on first use; equal to a fresh ``FAMILIES[name](models)``)."""
    if name not in _SHARED:
        _SHARED[name] = FAMILIES[name](models)
    return _SHARED[name]


def test_every_registered_family_is_built_here():
    """A family registers itself where it is defined (``pyterrier_instruct.base.FAMILIES``); each needs a builder above,
    so a new family cannot skip the contract."""
    from pyterrier_instruct.base import FAMILIES as REGISTERED
    public = [getattr(pti, n) for n in pti.__all__]  # imports every public module, so every family has registered
    families = {c.__name__ for c in public if isinstance(c, type) and issubclass(c, pti.InstructReranker) and c._family}
    assert families <= set(REGISTERED)
    assert {"PointwiseReranker", "MonoT5", "BiEncoder", "RankGPT"} & families == {"MonoT5", "BiEncoder", "RankGPT"}
    assert set(REGISTERED) == set(FAMILIES), set(REGISTERED) ^ set(FAMILIES)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_contract(name, models, mini, topics):
    make = FAMILIES[name]
    r = make(models)
    assert isinstance(r, pt.Transformer)

    # empty frame: correctly shaped, nothing loaded
    cols = ["qid", "query", "instruction", "docno", "text", "extra"]
    empty = r(pd.DataFrame(columns=cols))
    assert list(empty.columns) == cols + list(r.extra_outputs) + ["score", "rank"] and len(empty) == 0
    assert not loaded(r)

    # pt.inspect: the instruction is an optional input (a mode with it, the same without it); every input column out
    modes = [set(m) for m in pt.inspect.transformer_inputs(r)]
    assert any("instruction" in m and "docno" in m and m - {"instruction"} in modes for m in modes), modes
    assert "score" in pt.inspect.transformer_outputs(r, ["qid", "query", "docno", "text"])
    full = ["qid", "query", "instruction", "docno", "text", "score", "rank"]
    assert set(full) <= set(pt.inspect.transformer_outputs(r, full))

    # repr / eq / hash / the content fingerprint on-disk caches key on (SavedRun)
    again = make(models)
    assert again == r and hash(again) == hash(r) and repr(again) == repr(r)
    key = fingerprint(r)
    assert fingerprint(again) == key and f"{type(r).__qualname__}(" in key
    assert repr(r).startswith(name) or repr(r).startswith(f"pti.{name}") or name in repr(r)
    unpickled = pickle.loads(pickle.dumps(r))
    assert unpickled == r and repr(unpickled) == repr(r) and not loaded(unpickled)

    # ds.candidates() >> X: every column kept, score_0 = the first-stage score, ranks consistent with scores (8 of
    # the 28 candidates per query: more than a listwise depth or a setwise k, so each family reranks a head and a tail)
    first = (mini.candidates() % 8)(topics.assign(extra="x"))
    out = (mini.candidates() % 8 >> r)(topics.assign(extra="x"))
    assert set(first.columns) - {"score", "rank"} <= set(out.columns) and "extra" in out.columns
    assert len(out) == len(first)
    merged = out.merge(first[["qid", "docno", "score"]].rename(columns={"score": "first"}), on=["qid", "docno"])
    np.testing.assert_array_equal(merged["score_0"].to_numpy(), merged["first"].to_numpy())
    for _, group in out.groupby("qid"):
        ranked = group.sort_values("rank")
        assert ranked["rank"].tolist() == list(range(len(group)))
        assert (np.diff(ranked["score"].to_numpy()) <= 1e-12).all()

    # pickled after loading: the copy drops the weights, reloads lazily and scores the same
    if has_lazy_state(r) and name not in REMOTE:
        assert loaded(r)
    copy = pickle.loads(pickle.dumps(r))
    assert not loaded(copy) and copy == r
    assert fingerprint(r) == fingerprint(copy) == key  # loading the model does not change what a run is keyed on
    again_out = (mini.candidates() % 8 >> copy)(topics.assign(extra="x"))
    _SHARED.setdefault(name, r)  # loaded: the tests below score with it
    np.testing.assert_allclose(again_out["score"].to_numpy(), out["score"].to_numpy(), atol=1e-6)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_missing_text_one_rule(name, models, mini, topics):
    """NaN/None query or text: a ValueError naming the column and the rows, before any model loads; NaN/None
    instruction: the default instruction ("" here), exactly as an empty one."""
    r = FAMILIES[name](models)
    cands = (mini.candidates() % 4)(topics)
    for col, row in (("query", 1), ("text", 6)):
        bad = cands.astype({col: object})
        bad.loc[row, col] = None if col == "text" else np.nan
        with pytest.raises(ValueError,
                           match=f"{name}: 1 row\\(s\\) have no '{col}' \\(NaN/None\\), e.g. qid='{bad.qid[row]}', "
                                 f"docno='{bad.docno[row]}'; fill them first, e.g. df.fillna"):
            r(bad)
    assert not loaded(r)
    r = shared(name, models)
    assert r == FAMILIES[name](models)
    qid = cands["qid"].iloc[0]
    missing = cands.assign(instruction=cands["instruction"].where(cands["qid"] != qid, np.nan))
    empty = cands.assign(instruction=cands["instruction"].where(cands["qid"] != qid, ""))
    np.testing.assert_allclose(r(missing)["score"].to_numpy(), r(empty)["score"].to_numpy(), atol=1e-6)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_folded_query_is_not_folded_again(name, models, mini, topics):
    """``FoldInstruction() >> first stage >> X`` scores as ``... >> pt.rewrite.reset() >> X``: a query the instruction
    was folded into is read unfolded (its ``query_0``), whatever the family: the instruction is never joined twice."""
    r = shared(name, models)
    cands = (mini.candidates() % 4)(topics)
    assert (cands["instruction"].str.strip() != "").any()
    folded = pti.FoldInstruction()(cands)  # what a stage after FoldInstruction hands on: query folded, query_0 kept
    assert (folded["query"] != cands["query"]).any()
    out = r(folded)
    np.testing.assert_allclose(out["score"].to_numpy(), r(pt.rewrite.reset()(folded))["score"].to_numpy(), atol=1e-6)
    np.testing.assert_allclose(out["score"].to_numpy(), r(cands)["score"].to_numpy(), atol=1e-6)
    assert out["query"].tolist() == folded["query"].tolist()  # the input columns are kept as they came


def test_dense_encoders_and_first_stages_refuse_missing_text(models, mini_bm25):
    model = FAMILIES["BiEncoder"](models)
    with pytest.raises(ValueError, match="BiEncoder: 1 row\\(s\\) have no 'query' \\(NaN/None\\), e.g. qid='q2'"):
        model.query_encoder()(pd.DataFrame({"qid": ["q1", "q2"], "query": ["fine", None]}))
    with pytest.raises(ValueError, match="BiEncoder: 1 row\\(s\\) have no 'text' \\(NaN/None\\), e.g. docno='d1'"):
        model(pd.DataFrame({"docno": ["d1"], "text": [np.nan]}))
    assert not loaded(model)
    with pytest.raises(ValueError, match="BM25: 1 row\\(s\\) have no 'query'"):
        mini_bm25(pd.DataFrame({"qid": ["q1"], "query": [np.nan]}))


OTHER_TRANSFORMERS = {
    "FoldInstruction": lambda m, ds: pti.FoldInstruction(),
    "SetInstruction": lambda m, ds: pti.SetInstruction("be brief"),
    "Candidates": lambda m, ds: ds.candidates(),
    "TextLoader": lambda m, ds: ds.text_loader(),
    "Exclude": lambda m, ds: ds.exclude(),
    "Perturb": lambda m, ds: pti.Perturb("truncate", fraction=0.25, seed=3),
}


@pytest.mark.parametrize("name", list(OTHER_TRANSFORMERS))
def test_other_transformers_repr_eq_pickle(name, models, mini):
    r = OTHER_TRANSFORMERS[name](models, mini)
    again = OTHER_TRANSFORMERS[name](models, mini)
    assert isinstance(r, pt.Transformer) and r == again and hash(r) == hash(again) and repr(r) == repr(again)
    copy = pickle.loads(pickle.dumps(r))
    assert copy == r and repr(copy) == repr(r) and fingerprint(copy) == fingerprint(r) == fingerprint(again)
    assert pt.inspect.transformer_inputs(r)


#: public transformer types outside FAMILIES and OTHER_TRANSFORMERS, built here; (stage, whether a copy can score here)
MORE_TRANSFORMERS = {
    "BM25": lambda m, ds, tmp: (pti.BM25(ds.get_corpus_iter(), str(tmp / "pisa"), verbose=False), True),
    "SavedRun": lambda m, ds, tmp: (pti.SavedRun(ds.candidates() >> pti.PoolBM25(), str(tmp / "runs"),
                                                 verbose=False), True),
    "EmbeddingIndexer": lambda m, ds, tmp: (pti.SBertBiEncoder(m["bert"]).indexer(str(tmp / "emb")), False),
    "OnRay": lambda m, ds, tmp: (pti.on_ray(ds.candidates() >> pti.PoolBM25(), workers=1), False),
    "ScorerCache": lambda m, ds, tmp: (pti.ScorerCache(str(tmp / "scores"), pti.SBertBiEncoder(m["bert"])), False),
    "RetrieverCache": lambda m, ds, tmp: (pti.RetrieverCache(str(tmp / "runs-cache"), ds.candidates() % 3), True),
}
#: base classes, built only through a family above; PyseriniBM25 (Java) pickles in tests/test_anserini.py
BASES = {"InstructReranker", "PointwiseReranker", "TrueFalseReranker", "PyseriniBM25"}


def test_every_public_transformer_type_pickles(models, mini, topics, tmp_path):
    """docs/scaling.md: every transformer of the package pickles (``.parallel()``, multi-process runners): each public
    ``pt.Transformer`` type is in one of the tables of this file, and the ones built here pickle (after use) and score
    the same from the copy."""
    import inspect
    public = {n for n in pti.__all__ if inspect.isclass(getattr(pti, n))
              and issubclass(getattr(pti, n), pt.Transformer)}
    assert len(public) > 25
    assert public - (set(FAMILIES) | set(OTHER_TRANSFORMERS) | set(MORE_TRANSFORMERS) | BASES) == set()
    for name, build in MORE_TRANSFORMERS.items():
        stage, runs = build(models, mini, tmp_path)
        assert type(stage).__name__ == name
        if runs:
            before = stage(topics)
        copy = pickle.loads(pickle.dumps(stage))
        assert type(copy) is type(stage) and repr(copy) == repr(stage)
        if runs:
            pd.testing.assert_frame_equal(copy(topics), before)


def test_families_swap_inside_one_experiment(models, mini, topics):
    """Rerankers of three families (pointwise, listwise, dense) compose with one first stage in one pt.Experiment (on
    3 of instruct-mini's 10 og/changed pairs)."""
    paired = mini.get_topics()
    paired = paired[paired["base_qid"].isin(paired["base_qid"].unique()[:3])]
    first = mini.candidates() % 6
    systems = [first, first >> FAMILIES["MonoT5"](models), first >> FAMILIES["RankZephyr"](models),
               first >> FAMILIES["Promptriever"](models)]
    res = pt.Experiment(systems, paired, mini.get_qrels(), [pti.pMRR, pti.OG(AP @ 1000)],
                        names=["first", "monot5", "zephyr", "promptriever"])
    assert res["name"].tolist() == ["first", "monot5", "zephyr", "promptriever"]
    assert res.filter(like="pMRR").notna().all().all()


#: the long-running kinds: pointwise, listwise, dense (plain and adapter), pool BM25 — built with keyword arguments
WITH_BARS = {
    "MonoT5": lambda m, **kw: pti.MonoT5(m["t5"], **kw),
    "CausalLMReranker": lambda m, **kw: pti.CausalLMReranker.mistral_instruct(m["mistral"], **kw),
    "CrossEncoderReranker": lambda m, **kw: pti.CrossEncoderReranker(m["bert"], **kw),
    "Rank1": lambda m, **kw: pti.Rank1(m["rank1"], max_output_tokens=4, **kw),
    "RankZephyr": lambda m, **kw: pti.RankZephyr(m["zephyr"], window_size=4, stride=2, depth=6, **kw),
    "Setwise": lambda m, **kw: pti.Setwise(m["t5"], num_child=2, k=3, **kw),
    "BiEncoder": lambda m, **kw: pti.BiEncoder(m["bert"], **kw),
    "Promptriever": lambda m, **kw: pti.Promptriever(m["adapter"], **kw),
    "PoolBM25": lambda m, **kw: pti.PoolBM25(**kw),
}


@pytest.mark.parametrize("name", list(WITH_BARS))
def test_progress_bar_by_default_only_for_work_and_silenced_by_verbose_false(name, models, mini, topics, capsys):
    make = WITH_BARS[name]
    cands = (mini.candidates() % 6)(topics)  # a bar needs work, not much of it
    capsys.readouterr()
    quiet = make(models, verbose=False)
    quiet(cands)
    assert "%|" not in capsys.readouterr().err
    loud = make(models)
    assert loud == quiet and hash(loud) == hash(quiet)  # verbose is no part of the identity
    loud(cands.iloc[:0])
    assert "%|" not in capsys.readouterr().err  # nothing to do: no bar
    loud(cands)
    err = capsys.readouterr().err
    assert "100%|" in err and type(loud).__name__ in err, err


def test_a_first_stage_without_text_names_the_text_loader(mini, mini_bm25):
    """``bm25 >> reranker``: the validation error keeps PyTerrier's type and modes (pt.inspect reads them) and says
    which stage to add; the pipeline it suggests runs."""
    from pyterrier_instruct._validation import MissingTextError
    topics = mini.get_topics("og").iloc[:2]
    for reranker in (pti.PoolBM25(verbose=False), pti.BiEncoder("never-loaded"), pti.MonoT5("never-loaded"),
                     pti.RankZephyr("never-loaded"), pti.BiEncoder("never-loaded").scorer()):
        with pytest.raises(pt.validate.InputValidationError) as err:
            (mini_bm25 % 3 >> reranker)(topics)
        assert isinstance(err.value, MissingTextError) and isinstance(err.value, KeyError)
        assert [m.missing_columns for m in err.value.modes][0] == ["text"]
        assert 'pt.text.get_text(dataset, \'text\')' in str(err.value)
        assert "dataset.text_loader('text')" in str(err.value)
        assert pt.inspect.transformer_inputs(reranker)  # inspect still reads the modes from the empty-frame error
        with pytest.raises(pt.validate.InputValidationError):
            pt.inspect.transformer_outputs(reranker, ["qid", "query", "docno", "score"])
    with pytest.raises(MissingTextError, match="text_loader"):  # the dense document encoder: a D frame without text
        pti.BiEncoder("never-loaded").doc_encoder()(pd.DataFrame({"docno": ["d1"]}))
    with pytest.raises(pt.validate.InputValidationError) as err:  # another missing column: PyTerrier's error as it was
        pti.PoolBM25()(pd.DataFrame({"qid": ["1"], "docno": ["d"], "text": ["t"]}))
    assert not isinstance(err.value, MissingTextError)
    out = (mini_bm25 % 3 >> pt.text.get_text(mini, "text") >> pti.PoolBM25(verbose=False))(topics)
    assert len(out) == 6 and out["score"].notna().all()


def test_a_preset_belongs_to_the_class_that_defines_it():
    """``Qwen3Reranker.gritlm()`` (CausalLMReranker's preset reached through a subclass) would mix one family's class
    with another's checkpoint and prompt: it is refused, naming the class to call; the class's own presets build."""
    for cls in (pti.Qwen3Reranker, pti.FollowIR7B, pti.MxbaiRerankV2):
        with pytest.raises(AttributeError, match=rf"{cls.__name__}\.gritlm\(\) is a preset of CausalLMReranker"):
            cls.gritlm()
        assert not hasattr(cls, "llama_chat")
    assert repr(pti.CausalLMReranker.gritlm()) == "CausalLMReranker.gritlm()"
    assert repr(pti.Qwen3Reranker.four_b(batch_size=4)) == "Qwen3Reranker.four_b(batch_size=4)"


def test_constructors_show_their_real_parameters():
    """``inspect.signature`` (and so ``help`` and Sphinx, which read ``__signature__`` first) shows each public
    configured class's constructor, the parameters it forwards to its base classes included, never
    ``pt.Transformer.__new__``'s ``(*args, **kwargs)``; the call is still recorded before ``__init__`` runs."""
    import inspect
    public = [getattr(pti, n) for n in pti.__all__]
    configured = [c for c in public if inspect.isclass(c) and issubclass(c, Configured)]
    assert len(configured) > 40
    for cls in configured:
        params = inspect.signature(cls).parameters
        own = inspect.signature(cls.__init__).parameters
        assert not any(p.kind == p.VAR_POSITIONAL for p in params.values()), cls
        assert {n for n, p in own.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)} - {"self"} <= set(params)
    first = inspect.signature(pti.FIRST).parameters
    assert list(first)[:2] == ["model_name_or_path", "backend"] and {"window_size", "stride", "verbose"} <= set(first)
    assert "template" not in inspect.signature(pti.FollowIR7B).parameters  # FollowIR7B supplies CausalLMReranker's
    seen = []

    class Probe(pti.PoolBM25):
        def __init__(self, **kwargs):
            seen.append(repr(self))
            super().__init__(**kwargs)

    assert repr(Probe(k1=1.2)) == seen[0] == "Probe(k1=1.2)" and "k1" in inspect.signature(Probe).parameters
