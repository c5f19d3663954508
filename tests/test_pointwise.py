"""Pointwise rerankers on tiny random models built offline: exact templates, equivalence with pyterrier_t5 and
with the reference formulas, batch/order invariance, truncation modes, PyTerrier contracts."""
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch
import transformers

import pyterrier_instruct as pti
from pyterrier_instruct.prompts import PROMPTS, render

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def frame(mini):
    """Candidates of two queries (short and long documents, with and without instructions), title column dropped."""
    t = mini.get_topics()
    res = mini.candidates("text")(t[t.base_qid.isin(["101", "104"])])
    res = res.groupby("qid").head(6).reset_index(drop=True)
    res.loc[res.variant == "og", "instruction"] = ""  # one side without instruction: the query alone
    res["text"] = [" ".join(t.split()[:60]) for t in res["text"]]  # fits every model: truncation is tested apart
    return res


def _reference_causal(path, template, frame, batch_size=32):
    """FollowIR's LlamaReranker, re-computed: left padding, pad = eos, whole-prompt right truncation at
    min(2048, model_max_length), logits[:, -1] of vocab['false'], vocab['true'], 2-way softmax, P(true)."""
    tok = transformers.AutoTokenizer.from_pretrained(path, padding_side="left")
    tok.pad_token = tok.eos_token
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    ids = [tok.get_vocab()["false"], tok.get_vocab()["true"]]
    queries = [f"{q} {i}".strip() for q, i in zip(frame["query"], frame["instruction"])]
    prompts = [template.format(query=q, text=t) for q, t in zip(queries, frame["text"])]
    out = []
    for s in range(0, len(prompts), batch_size):
        enc = tok(prompts[s:s + batch_size], padding=True, truncation=True, max_length=min(2048, tok.model_max_length),
                  return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[:, -1, ids]
        out += torch.log_softmax(logits.float(), -1)[:, 1].exp().tolist()
    return np.array(out)


# -- templates -------------------------------------------------------------------------------------
def test_templates_are_byte_identical_to_models_md():
    spec = json.loads((DATA / "model_templates.json").read_text())["templates"]
    for name, template in spec.items():
        assert PROMPTS[name].template == template, name
    assert PROMPTS["followir_7b"].template.endswith("[/INST] ") and PROMPTS["llama"].template.endswith("Relevant: ")
    assert "\n                        Query: " in PROMPTS["mistral_infosearch"].template
    assert (PROMPTS["monot5"].true_token, PROMPTS["flan_t5"].true_token, PROMPTS["mt5_mmarco"].false_token) == \
        ("true", "yes", "no")
    assert pti.FollowIR7B("x").template == spec["followir_7b"]
    assert pti.CausalLMReranker.mistral_instruct("x", style="infosearch").template == spec["mistral_infosearch"]
    assert pti.CausalLMReranker.llama_chat("x").template == spec["llama_chat"]
    assert pti.MonoT5.flan_t5("x").template == spec["flan_t5"]


def test_render_is_one_pass():
    assert render("Q: {query} D: {text} R:", "a {text} b", "d {query}") == "Q: a {text} b D: d {query} R:"
    with pytest.raises(ValueError, match="no {text} placeholder"):
        render("{query}", "q", "d")


def test_followir_prompt_starts_with_two_bos(tiny, frame):
    r = pti.FollowIR7B(tiny["mistral"])
    r._load()
    ids = r._encode(["q"], ["d"])[0]["input_ids"]
    bos = r._tokenizer.bos_token_id
    assert ids[:2] == [bos, bos] and ids[2] != bos


# -- equivalence -----------------------------------------------------------------------------------
def test_monot5_equals_pyterrier_t5(tiny, frame):
    from pyterrier_t5 import MonoT5ReRanker
    inp = frame.assign(query=[f"{q} {i}".strip() for q, i in zip(frame["query"], frame["instruction"])], instruction="")
    theirs = MonoT5ReRanker(tok_model=tiny["t5"], model=tiny["t5"], batch_size=1, verbose=False)(inp)
    ours = pti.MonoT5(tiny["t5"], score="logprob", batch_size=4)(frame)
    np.testing.assert_allclose(ours["score"], theirs["score"], atol=1e-5)
    assert ours.sort_values(["qid", "rank"]).docno.tolist() == theirs.sort_values(["qid", "rank"]).docno.tolist()
    prob = pti.MonoT5(tiny["t5"])(frame)
    np.testing.assert_allclose(prob["score"], np.exp(theirs["score"]), atol=1e-5)
    assert len(set(np.round(prob["score"], 6))) > 3  # the tiny model discriminates


def test_causal_equals_reference_formula(tiny, frame):
    ours = pti.FollowIR7B(tiny["mistral"], batch_size=5)(frame)
    ref = _reference_causal(tiny["mistral"], PROMPTS["followir_7b"].template, frame)
    np.testing.assert_allclose(ours["score"], ref, atol=1e-5)
    for preset in (pti.CausalLMReranker.mistral_instruct, pti.CausalLMReranker.llama, pti.CausalLMReranker.gritlm):
        r = preset(tiny["mistral"])
        np.testing.assert_allclose(r(frame)["score"], _reference_causal(tiny["mistral"], r.template, frame), atol=1e-5)


def test_cross_encoder_equals_reference_formula(tiny, frame):
    ours = pti.MonoBERT(tiny["bert"])(frame)
    tok = transformers.AutoTokenizer.from_pretrained(tiny["bert"])
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny["bert"]).eval()
    q = [f"{a} {b}".strip() for a, b in zip(frame["query"], frame["instruction"])]
    enc = tok(q, frame["text"].tolist(), truncation="only_second", max_length=tok.model_max_length, padding=True,
              return_tensors="pt")
    with torch.no_grad():
        ref = torch.softmax(model(**enc).logits, -1)[:, 1].numpy()
    np.testing.assert_allclose(ours["score"], ref, atol=1e-5)
    tart = pti.TART(tiny["bert"], max_length=512)
    composed = tart.query_slot.frame(tart.prompt_view(frame.iloc[:2].assign(instruction=["", "x"])))
    assert composed.tolist() == [f"{frame['query'][0]} [SEP] Retrieve news paper paragraph to answer this question",
                                 f"{frame['query'][1]} [SEP] x"]


@pytest.mark.parametrize("kind", ["t5", "mistral", "bert"])
def test_batch_size_and_order_do_not_change_scores(tiny, frame, kind):
    make = {"t5": pti.MonoT5, "mistral": pti.FollowIR7B, "bert": pti.CrossEncoderReranker}[kind]
    one = make(tiny[kind], batch_size=1)(frame).set_index(["qid", "docno"])["score"]
    shuffled = frame.sample(frac=1, random_state=3).reset_index(drop=True)
    many = make(tiny[kind], batch_size=7)(shuffled)
    assert many.docno.tolist() == shuffled.docno.tolist()  # input row order kept
    np.testing.assert_allclose(many.set_index(["qid", "docno"])["score"].loc[one.index], one, atol=1e-5)


# -- truncation ------------------------------------------------------------------------------------
def test_truncation_modes(tiny, frame):
    long = frame.iloc[:1].assign(text=" ".join(["salmon river dam"] * 400))
    safe = pti.MonoT5(tiny["t5"], max_length=64)
    ref = pti.MonoT5(tiny["t5"], max_length=64, truncation="reference")
    for r in (safe, ref):
        r._load()
    ids_safe = safe._encode(["dams fish"], long["text"].tolist())[0]["input_ids"]
    ids_ref = ref._encode(["dams fish"], long["text"].tolist())[0]["input_ids"]
    tok = safe._tokenizer
    tail = tok("Relevant:")["input_ids"]  # ends with </s>
    assert len(ids_safe) <= 64 and ids_safe[-len(tail):] == tail
    assert tok.decode(ids_safe).startswith("Query: dams fish Document: salmon")
    assert len(ids_ref) == 64 and ids_ref[-len(tail):] != tail  # the reference cuts 'Relevant:'
    short = frame.iloc[:3]
    np.testing.assert_allclose(pti.MonoT5(tiny["t5"])(short)["score"],
                               pti.MonoT5(tiny["t5"], truncation="reference")(short)["score"])
    assert safe.truncated == 1 and ref.truncated == 1
    with pytest.raises(ValueError, match="the template alone is longer than max_length=8"):
        r = pti.MonoT5(tiny["t5"], max_length=8)
        r(frame.iloc[:1])
    q = pti.MonoT5(tiny["t5"], max_length=24)
    q._load()
    ids = q._encode([" ".join(["query"] * 50)], ["doc"])[0]["input_ids"]
    assert len(ids) <= 24 and ids[-len(tail):] == tail


# -- PyTerrier contracts ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [pti.MonoT5, pti.FollowIR7B, pti.CrossEncoderReranker])
def test_empty_frame_without_loading_inspect_repr_eq(cls):
    r = cls("/no/such/model")
    empty = r(pd.DataFrame(columns=["qid", "query", "instruction", "docno", "text", "extra"]))
    assert list(empty.columns) == ["qid", "query", "instruction", "docno", "text", "extra", "score", "rank"]
    assert r._model is None
    assert pt.inspect.transformer_inputs(r)
    assert "score" in pt.inspect.transformer_outputs(r, ["qid", "query", "docno", "text"])
    assert cls("/no/such/model") == r and hash(cls("/no/such/model")) == hash(r) and cls("/other") != r
    assert cls("/no/such/model", batch_size=4) != r and "batch_size=4" in repr(cls("/no/such/model", batch_size=4))
    assert repr(r).startswith(f"{cls.__name__}('/no/such/model'")


def test_bad_arguments_and_input(tiny, frame):
    with pytest.raises(ValueError, match="truncation must be one of"):
        pti.MonoT5("x", truncation="left")
    with pytest.raises(ValueError, match="score must be one of"):
        pti.MonoT5("x", score="raw")
    with pytest.raises(ValueError, match="template needs a {text} placeholder"):
        pti.CausalLMReranker("x", template="Query: {query}")
    with pytest.raises(KeyError, match="text"):
        pti.MonoT5(tiny["t5"])(frame.drop(columns="text"))
    with pytest.raises(ValueError, match=r"answer token\(s\) \['nope'\] are not in the tokenizer's vocabulary"):
        pti.CausalLMReranker(tiny["mistral"], template=PROMPTS["llama"].template, true_token="nope")(frame.iloc[:1])
    with pytest.raises(ValueError, match="dtype must be"):
        pti.MonoT5(tiny["t5"], dtype="int8")(frame.iloc[:1])


def test_missing_instruction_uses_the_default_and_columns_are_kept(tiny, frame):
    no_ins = frame.drop(columns="instruction")
    a = pti.MonoT5(tiny["t5"], instruction="only salmon")(no_ins)
    b = pti.MonoT5(tiny["t5"])(no_ins.assign(instruction="only salmon"))
    np.testing.assert_allclose(a["score"], b["score"])
    assert set(no_ins.columns) <= set(a.columns) and "instruction" not in a.columns


def test_out_of_memory_halves_the_batch(tiny, frame, monkeypatch, caplog):
    r = pti.MonoT5(tiny["t5"], batch_size=8)
    want = pti.MonoT5(tiny["t5"], batch_size=1)(frame)["score"]
    real = pti.MonoT5._forward
    sizes = []

    def forward(self, batch):
        sizes.append(batch["input_ids"].shape[0])
        if sizes[-1] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(self, batch)
    monkeypatch.setattr(pti.MonoT5, "_forward", forward)
    with caplog.at_level(logging.WARNING):
        got = r(frame)["score"]
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert sizes[:3] == [8, 4, 2] and "retrying with batch_size=4" in caplog.text


def test_reranks_the_bundled_benchmark_end_to_end(tiny, mini, mini_bm25):
    pipe = mini_bm25 % 10 >> pt.text.get_text(mini, "text") >> pti.MonoT5(tiny["t5"])
    res = pt.Experiment([pipe, pti.FoldInstruction() >> mini_bm25], mini.get_topics(), mini.get_qrels(),
                        [pti.OG("nDCG@10"), pti.pMRR], names=["monoT5", "bm25"])
    assert res["pMRR"].between(-1, 1).all() and res["OG(nDCG@10)"].between(0, 1).all()
    out = pipe(mini.get_topics().iloc[:2])
    assert (out.groupby("qid").size() == 10).all()
    assert {"instruction", "base_qid", "variant", "text"} <= set(out.columns)


def test_longest_prefix_search_is_exact():
    from pyterrier_instruct.pointwise.base import PointwiseReranker
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(0, 40))
        cut = int(rng.integers(-1, n + 1))
        guess = int(rng.integers(-2, n + 3))
        assert PointwiseReranker._longest(lambda m: m <= cut, n, guess) == (None if cut < 0 else cut)


def test_local_rerankers_join_the_demo_baselines(tiny, mini, monkeypatch, tmp_path):
    import shutil

    from pyterrier_instruct._hub import local_model
    from pyterrier_instruct.reproduce.baselines import followir_baselines
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(tmp_path))
    assert local_model("castorini/monot5-base-msmarco-10k") is None
    shutil.copytree(tiny["t5"], tmp_path / "castorini" / "monot5-base-msmarco-10k")
    shutil.copytree(tiny["mistral"], tmp_path / "jhu-clsp" / "FollowIR-7B")
    systems = followir_baselines(mini, neural=True)
    assert {"MonoT5-base (rerank)", "FollowIR-7B (rerank)"} <= set(systems)
    out = systems["FollowIR-7B (rerank)"](mini.get_topics().iloc[:1])
    assert len(out) == 28 and out["score"].between(0, 1).all()


@pytest.mark.parametrize("make",
                         [pti.FollowIR7B, pti.CausalLMReranker.mistral_instruct, pti.CausalLMReranker.llama_chat,
                          pti.CausalLMReranker.gritlm],
                         ids=["followir_7b", "mistral_instruct", "llama_chat", "gritlm"])
def test_shared_prefix_cache_gives_the_same_scores(tiny, frame, make):
    """share_prefix is implemented once (CausalLMReranker) and equals the plain path for templates of any shape."""
    plain = make(tiny["mistral"], batch_size=4, share_prefix=False)(frame)["score"]
    shared = make(tiny["mistral"], batch_size=4, share_prefix=True)
    got = shared(frame)["score"]
    np.testing.assert_allclose(got, plain, atol=1e-5)
    np.testing.assert_allclose(make(tiny["mistral"])(frame)["score"], plain, atol=1e-5)  # the defaults share too
    assert "share_prefix=True" in repr(shared) and shared != make(tiny["mistral"], batch_size=4)
    assert "share_prefix" not in repr(make(tiny["mistral"]))
    from pyterrier_instruct._tokens import common_prefix_length
    assert common_prefix_length([[1, 2, 3], [1, 2, 4, 5]]) == 2 and common_prefix_length([[1, 2], [1, 2, 3]]) == 2
    assert common_prefix_length([[7], [1, 2]]) == 0


MISSING = "nobody-pti-test/no-such-model"
#: one loader per kind: pointwise (seq2seq, causal, cross-encoder), dense (plain, LoRA adapter), HF generation
OFFLINE_LOADERS = {
    "MonoT5": lambda m: pti.MonoT5(m),
    "FollowIR7B": lambda m: pti.FollowIR7B(m),
    "MonoBERT": lambda m: pti.MonoBERT(m),
    "BiEncoder": lambda m: pti.BiEncoder(m),
    "Promptriever": lambda m: pti.Promptriever(m),
    "RankZephyr (HFBackend)": lambda m: pti.RankZephyr(m, window_size=4, stride=2),
}


@pytest.mark.parametrize("name", list(OFFLINE_LOADERS))
def test_missing_weights_offline_name_the_id_and_the_fixes(name, frame, monkeypatch, tmp_path):
    """Offline, a hub id that is not cached fails with one error naming the id and the three ways out, not transformers'
    "couldn't connect to huggingface.co"."""
    from pyterrier_instruct._hub import ModelNotFoundError
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(tmp_path))
    with pytest.raises(ModelNotFoundError) as err:
        OFFLINE_LOADERS[name](MISSING)(frame.iloc[:4])
    text = str(err.value)
    assert isinstance(err.value, OSError) and text.startswith(f"cannot load the model {MISSING!r}")
    assert "not in the local Hugging Face cache and HF_HUB_OFFLINE is set" in text
    assert f"not in {tmp_path / MISSING}" in text and f"PYTERRIER_INSTRUCT_MODELS/{MISSING}/" in text
    assert f"hf download {MISSING}" in text and "local folder" in text
    assert "huggingface.co" not in text


def test_a_local_folder_with_a_missing_file_keeps_its_own_error(tiny, tmp_path):
    import shutil
    from pyterrier_instruct._hub import ModelNotFoundError
    broken = tmp_path / "t5"
    shutil.copytree(tiny["t5"], broken)
    (broken / "config.json").unlink()
    with pytest.raises((OSError, ValueError)) as err:
        pti.MonoT5(str(broken))._load()
    assert not isinstance(err.value, ModelNotFoundError)


def test_models_folder_serves_hub_ids(tiny, frame, monkeypatch, tmp_path):
    """The folder the error names as fix (2) is where every loader looks first: the same weights as the local path."""
    import shutil
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(tmp_path))
    shutil.copytree(tiny["t5"], tmp_path / "org" / "tiny-t5")
    shutil.copytree(tiny["bert"], tmp_path / "org" / "tiny-bert")
    rows = frame.iloc[:6]
    for make, key, hub in ((pti.MonoT5, "t5", "org/tiny-t5"), (pti.BiEncoder, "bert", "org/tiny-bert"),
                           (pti.MonoBERT, "bert", "org/tiny-bert")):
        np.testing.assert_allclose(make(hub, verbose=False)(rows)["score"],
                                   make(tiny[key], verbose=False)(rows)["score"], atol=1e-6)


# -- defaults: batches and prefix sharing -------------------------------------------------------------
def test_cpu_default_is_a_token_budget_and_a_row_count_is_rows():
    from pyterrier_instruct._torch import (ACCELERATOR_BATCH_SIZE, CPU_BATCH_TOKENS, CPU_MAX_ROWS, batch_limits,
                                           by_length)
    assert batch_limits(None, "cpu") == (CPU_MAX_ROWS, CPU_BATCH_TOKENS)
    assert batch_limits(None, "cuda:0") == batch_limits(None, "mps") == (ACCELERATOR_BATCH_SIZE, None)
    assert batch_limits(5, "cpu") == batch_limits(5, "cuda") == (5, None)
    lengths = np.random.default_rng(0).integers(1, 300, 200)
    batches = []
    by_length(lengths, 16, lambda idx: batches.append(idx), max_tokens=500)
    assert sorted(np.concatenate(batches).tolist()) == list(range(200))  # every row once
    # longest first
    assert [lengths[b].max() for b in batches] == sorted((lengths[b].max() for b in batches), reverse=True)
    for b in batches:
        assert len(b) <= 16 and (len(b) == 1 or len(b) * lengths[b].max() <= 500)
        assert len(b) == 16 or b is batches[-1] or (len(b) + 1) * lengths[b].max() > 500  # rows up to the budget
    with pytest.raises(ValueError,
                       match=r"batch_size must be a row count of at least 1, or None for the device's default"):
        pti.MonoT5("x", batch_size=0)
    with pytest.raises(ValueError, match="batch_size must be a row count"):
        pti.SBertBiEncoder.all_minilm_l6_v2(batch_size=True)


@pytest.mark.parametrize("kind", ["t5", "mistral", "bert"])
def test_default_batches_give_the_row_at_a_time_scores(tiny, frame, kind, monkeypatch):
    import pyterrier_instruct._torch as pti_torch
    make = {"t5": pti.MonoT5, "mistral": pti.FollowIR7B, "bert": pti.CrossEncoderReranker}[kind]
    one = make(tiny[kind], batch_size=1, **({"share_prefix": False} if kind == "mistral" else {}))(frame)["score"]
    monkeypatch.setattr(pti_torch, "CPU_BATCH_TOKENS", 1000)  # a few rows per batch on the tiny prompts
    default = make(tiny[kind])
    assert default.batch_size is None and "batch_size" not in repr(default)
    sizes = []
    real = default._run_suffix if kind == "mistral" else default._run

    def spy(feats, *args):
        sizes.append(len(feats))
        return real(feats, *args)
    monkeypatch.setattr(default, "_run_suffix" if kind == "mistral" else "_run", spy)
    np.testing.assert_allclose(default(frame)["score"], one, atol=1e-5)
    assert max(sizes) > 1 and len(sizes) > 1 + (kind == "mistral") * frame.qid.nunique()


def test_share_prefix_default_shares_queries_with_several_candidates(tiny, frame, monkeypatch):
    """share_prefix=None: a query with one candidate runs whole (batched with others), one with several shares its
    prefix."""
    mixed = pd.concat([frame[frame.qid == q].head(n) for q, n in zip(frame.qid.unique(), (1, 3, 2, 1))],
                      ignore_index=True)
    assert sorted(mixed.groupby("qid").size()) == [1, 1, 2, 3]
    plain = pti.FollowIR7B(tiny["mistral"], share_prefix=False)(mixed)["score"]
    auto = pti.FollowIR7B(tiny["mistral"])
    prefixes, whole = [], []
    real_prefix, real_run = auto._prefix_cache, auto._run
    monkeypatch.setattr(auto, "_prefix_cache", lambda ids: prefixes.append(len(ids)) or real_prefix(ids))
    monkeypatch.setattr(auto, "_run", lambda feats: whole.append(len(feats)) or real_run(feats))
    np.testing.assert_allclose(auto(mixed)["score"], plain, atol=1e-5)
    assert len(prefixes) == 2 and min(prefixes) >= auto.SHARE_MIN_TOKENS and whole == [2]
    prefixes.clear()
    always = pti.FollowIR7B(tiny["mistral"], share_prefix=True)
    monkeypatch.setattr(always, "_prefix_cache", lambda ids: prefixes.append(len(ids)) or real_prefix(ids))
    np.testing.assert_allclose(always(mixed)["score"], plain, atol=1e-5)
    assert len(prefixes) == 4


@pytest.mark.parametrize("variant", ["t5", "flan-t5", "mt5"])
def test_monot5_folded_first_decoder_step_equals_transformers(tiny, frame, variant, tmp_path, monkeypatch):
    """MonoT5's first decoder step with the cross-attention projections folded gives transformers' scores, for T5 v1.0
    (ReLU, tied head), FLAN-T5 (gated-GELU, untied head) and mT5 blocks; it is checked once per load and left when it
    would differ."""
    import shutil
    path = tiny["t5"]
    if variant != "t5":
        path = str(tmp_path / variant)
        shutil.copytree(tiny["t5"], path)
        config = transformers.AutoConfig.from_pretrained(path)
        config.update({"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False, "layer_norm_epsilon": 1e-5})
        cls = transformers.MT5ForConditionalGeneration if variant == "mt5" else transformers.T5ForConditionalGeneration
        if variant == "mt5":
            config = transformers.MT5Config(**config.to_dict())
        torch.manual_seed(1)
        cls(config).save_pretrained(path)
    want = pti.MonoT5(path, batch_size=5)
    monkeypatch.setattr(want, "_folded_step_scale", lambda ids, mask: False)
    want = want(frame)["score"]
    folded = pti.MonoT5(path, batch_size=5)
    np.testing.assert_allclose(folded(frame)["score"], want, atol=1e-5)
    assert folded._fold_scale in (1.0, 32 ** -0.5)
    wrong = pti.MonoT5(path, batch_size=5)
    monkeypatch.setattr(wrong, "_first_step_logits", lambda encoded, mask, scale: torch.zeros((len(encoded), 2)))
    np.testing.assert_allclose(wrong(frame)["score"], want, atol=1e-5)  # the check saw it: transformers' path
    assert wrong._fold_scale is False
