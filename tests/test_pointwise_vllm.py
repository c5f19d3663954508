"""Causal pointwise rerankers on vLLM (``backend='vllm'``) against tests/fake_vllm.py: vLLM 0.33.0's own Python
(argument checks, tokenizer, prompt-length rules, V1 Sampler with ``allowed_token_ids``/``logprobs``/``logprobs_mode``,
outputs) with the same tiny model's forward pass: the scores equal the transformers path's (truncated prompts included),
an approximate top-k formulation does not, requests arrive query-contiguous with the shared prefix first, prompts fit
the engine's ``max_model_len``. With vLLM importable and a GPU, the last test checks the same equality against the real
engine."""
import os
import pickle
import sys

import numpy as np
import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._optional import is_available
from pyterrier_instruct._tokens import common_prefix_length
from pyterrier_instruct.backends import VLLMBackend

#: every causal pointwise family and preset: (constructor, tiny model kind)
PRESETS = {
    "followir_7b": (pti.FollowIR7B, "mistral"),
    "mistral_instruct": (pti.CausalLMReranker.mistral_instruct, "mistral"),
    "mistral_infosearch": (lambda m, **kw: pti.CausalLMReranker.mistral_instruct(m, style="infosearch", **kw),
                           "mistral"),
    "llama_chat": (pti.CausalLMReranker.llama_chat, "mistral"),
    "llama": (pti.CausalLMReranker.llama, "mistral"),
    "gritlm": (pti.CausalLMReranker.gritlm, "mistral"),
    "qwen3_reranker": (pti.Qwen3Reranker, "reranker"),
    "qwen3_reranker_reference_truncation": (lambda m, **kw: pti.Qwen3Reranker(m, truncation="reference", **kw),
                                            "reranker"),
    "mxbai_rerank_v2": (pti.MxbaiRerankV2, "qwen2"),
}


def model_of(kind, tiny, qwen):
    return tiny[kind] if kind == "mistral" else qwen[kind]


@pytest.fixture
def stand_in(monkeypatch):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    return fake_vllm


@pytest.fixture(scope="module")
def frame():
    """Three queries interleaved (one without instruction), documents of 3 to 120 words."""
    words = "salmon river dam fish ladder water quality report from the upper basin with many new findings".split()
    rows = []
    for d in range(5):
        for q, (query, instruction) in enumerate([("salmon dams", "Relevant documents discuss fish ladders."),
                                                  ("river water quality", ""),
                                                  ("basin report", "Only reports from the upper basin are relevant.")]):
            n = [3, 120, 17, 60, 40][(d + q) % 5]
            rows.append({"qid": f"q{q}", "query": query, "instruction": instruction, "docno": f"d{q}-{d}",
                         "text": " ".join(words[(i * 7 + d + q) % len(words)] for i in range(n))})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("name", list(PRESETS))
def test_vllm_scores_equal_the_transformers_path(tiny, qwen, frame, stand_in, name):
    make, kind = PRESETS[name]
    model = model_of(kind, tiny, qwen)
    want = make(model, batch_size=4)(frame)
    got = make(model, backend="vllm")(frame)
    assert got.docno.tolist() == want.docno.tolist() and got["rank"].tolist() == want["rank"].tolist()
    np.testing.assert_allclose(got["score"], want["score"], rtol=0, atol=1e-4)
    assert len(set(np.round(want["score"], 4))) > 5  # the tiny model discriminates


@pytest.mark.parametrize("score", ["logprob", "logit_diff"])
def test_every_score_mode_and_truncation_match(tiny, frame, stand_in, score):
    kw = dict(score=score, max_length=260)  # long prompts truncated: the same ids reach both paths
    want = pti.FollowIR7B(tiny["mistral"], **kw)(frame)
    vllm = pti.FollowIR7B(tiny["mistral"], backend="vllm", **kw)
    np.testing.assert_allclose(vllm(frame)["score"], want["score"], rtol=0, atol=1e-4)
    assert vllm.truncated > 0


def long_frame():
    """Queries of 2 to 82 words and documents of 20 to 110 words: over 96 tokens the query and the document are cut."""
    words = "salmon river dam fish ladder water quality report from the upper basin with many new findings".split()
    return pd.DataFrame([{"qid": f"q{k}", "query": "salmon dams " * (1 + 20 * k),
                          "instruction": "Relevant documents discuss fish ladders.", "docno": f"d{k}{d}",
                          "text": " ".join(words[(i * 7 + d) % len(words)] for i in range(20 + 30 * d))}
                         for k in range(3) for d in range(4)])


@pytest.mark.parametrize("name, make, kind", [
    ("followir_reference", lambda m, **kw: pti.FollowIR7B(m, max_length=96, truncation="reference", **kw), "mistral"),
    ("qwen3_reference", lambda m, **kw: pti.Qwen3Reranker(m, max_length=96, truncation="reference", **kw), "reranker"),
    ("mxbai_query_cap", lambda m, **kw: pti.MxbaiRerankV2(m, max_length=96, **kw), "qwen2")])
def test_truncated_prompts_are_the_transformers_paths(tiny, qwen, stand_in, name, make, kind):
    """vLLM's ``get_tokenizer`` truncates on the left (``truncation_side='left'`` for generate models): prompts are
    encoded with the package's own tokenizer on both paths, so the same ids are cut the same way (with the engine's
    tokenizer the template's head was cut: FollowIR7B 0.14 off, Qwen3Reranker 0.016, MxbaiRerankV2 0.013)."""
    frame, model = long_frame(), model_of(kind, tiny, qwen)
    want = make(model)(frame)
    vllm = make(model, backend="vllm")
    got = vllm(frame)
    np.testing.assert_allclose(got["score"], want["score"], rtol=0, atol=1e-5)
    assert vllm.truncated > 0
    (llm,) = stand_in.instances
    assert llm.get_tokenizer().truncation_side == "left" and vllm._tokenizer.truncation_side == "right"


def test_prompts_fit_the_engines_max_model_len(tiny, stand_in):
    """vLLM refuses a generate prompt of ``max_model_len`` tokens (0.22.1+) and the refusal aborts the whole call: a
    ``max_length`` the engine cannot take is refused at construction naming both numbers, the reference length is cut
    to ``max_model_len - 1``."""
    m, frame = tiny["mistral"], long_frame()
    with pytest.raises(ValueError, match=r"max_length=200 prompts do not fit max_model_len=200.*max_model_len >= 201"):
        pti.FollowIR7B(m, max_length=200, backend="vllm", backend_options={"max_model_len": 200})
    with pytest.raises(ValueError, match=r"max_model_len=120.*max_model_len >= 201"):
        pti.FollowIR7B(m, max_length=200, backend=VLLMBackend(m, max_model_len=120, logprobs_mode="processed_logprobs"))
    # vLLM's own rule, as the engine applies it: a prompt of exactly max_model_len tokens fails the whole call
    llm = stand_in.LLM(m, max_model_len=40)
    params = stand_in.SamplingParams(temperature=0.0, max_tokens=1)
    with pytest.raises(Exception, match=r"prompt \(length 40\) plus the number of requested output tokens"):
        llm.generate([{"prompt_token_ids": [5] * 10}, {"prompt_token_ids": [5] * 40}], params)
    assert len(llm.generate([{"prompt_token_ids": [5] * 39}], params)) == 1
    fitted = pti.FollowIR7B(m, backend="vllm", backend_options={"max_model_len": 257})  # max_length=None: 2048
    np.testing.assert_allclose(fitted(frame)["score"], pti.FollowIR7B(m, max_length=256)(frame)["score"], rtol=0,
                               atol=1e-5)
    assert fitted._max_length == 256 and fitted.truncated > 0
    exact = pti.FollowIR7B(m, max_length=256, backend="vllm", backend_options={"max_model_len": 257})
    np.testing.assert_allclose(exact(frame)["score"], fitted(frame)["score"], rtol=0, atol=0)


def test_requests_are_query_contiguous_with_the_shared_prefix_first(tiny, frame, stand_in):
    r = pti.FollowIR7B(tiny["mistral"], backend="vllm", backend_options={"max_model_len": 2048})
    r(frame)  # queries interleaved row by row in the input
    (llm,) = stand_in.instances
    assert llm.init_args["logprobs_mode"] == "processed_logprobs" and llm.init_args["enable_prefix_caching"] is True
    assert llm.init_args["max_model_len"] == 2048
    (call,) = llm.calls  # every query in one generate call
    params = call["params"]  # vLLM >= 0.22.1: the answer tokens named, no whitelist, no top-k
    assert (params.temperature, params.max_tokens, params.logprobs, params.allowed_token_ids) == (0.0, 1, None, None)
    assert params.logprob_token_ids == r._ids
    sent = [p["prompt_token_ids"] for p in call["prompts"]]
    tok = r._tokenizer
    heads = {}
    for q, i in zip(frame["query"], frame["instruction"]):  # template head + query: what a query's prompts share
        head = r.template.split("{text}")[0].format(query=f"{q} {i}".strip())
        heads[f"{q} {i}".strip()] = tok(head)["input_ids"]
    order = []
    for ids in sent:
        owner = [k for k, h in heads.items() if ids[:len(h) - 1] == h[:-1]]
        assert len(owner) == 1
        order.append(owner[0])
    assert order == sorted(order, key=order.index)  # contiguous: each query's prompts one after another
    assert list(dict.fromkeys(order)) == \
        list(dict.fromkeys(f"{q} {i}".strip() for q, i in zip(frame["query"], frame["instruction"])))
    for key in heads:
        group = [ids for ids, o in zip(sent, order) if o == key]
        assert len(group) == 5 and common_prefix_length(group) >= len(heads[key]) - 1
    # all but the first prompt of a query find its whole blocks in the prefix cache
    stats = r.backend.stats
    assert stats["requests"] == 15 and stats["prompt_tokens"] == sum(map(len, sent))
    expect = sum(min(len(h) - 1, len(ids) - 1) // stand_in.BLOCK_SIZE * stand_in.BLOCK_SIZE
                 for key, h in heads.items() for ids in [g for g, o in zip(sent, order) if o == key][1:])
    assert stats["cached_tokens"] >= expect > 0


@pytest.fixture
def before_0_22_1(monkeypatch):
    """vLLM before 0.22.1: no ``SamplingParams(logprob_token_ids=)``; exact values need a processed logprobs_mode."""
    import pyterrier_instruct.backends.vllm as module
    monkeypatch.setattr(module, "named_logprobs", lambda: False)


def test_one_engine_serves_rerankers_and_judges(tiny, frame, stand_in):
    """With ``logprob_token_ids`` (vLLM >= 0.22.1) an engine at vLLM's default ``logprobs_mode`` gives exact scores, and
    the same engine serves a judge's top-k log-probabilities; before 0.22.1 the whitelist + processed values do."""
    m = tiny["mistral"]
    shared = VLLMBackend(m, chat_template="{% for x in messages %}{{ x['content'] }}{% endfor %}")
    got = pti.FollowIR7B(m, backend=shared)(frame)["score"]
    np.testing.assert_allclose(got, pti.FollowIR7B(m)(frame)["score"], rtol=0, atol=1e-4)
    (llm,) = stand_in.instances
    assert "logprobs_mode" not in llm.init_args and llm.logprobs_mode == "raw_logprobs"
    gens = shared.generate_logprobs([shared.prepare([{"role": "user", "content": "hello"}])], max_new_tokens=2,
                                    top_logprobs=3)
    assert len(gens[0].tokens) == 2 and all(len(t) >= 3 for t in gens[0].top_logprobs)


def test_the_whitelist_path_before_0_22_1(tiny, frame, stand_in, before_0_22_1):
    m = tiny["mistral"]
    r = pti.FollowIR7B(m, backend="vllm")
    np.testing.assert_allclose(r(frame)["score"], pti.FollowIR7B(m)(frame)["score"], rtol=0, atol=1e-4)
    params = stand_in.instances[-1].calls[0]["params"]
    assert (params.allowed_token_ids, params.logprobs, params.logprob_token_ids) == (r._ids, 2, None)
    with pytest.raises(ValueError, match="logprobs_mode='processed_logprobs'"):
        pti.FollowIR7B(m, backend=VLLMBackend(m))


def test_an_approximate_top_k_formulation_fails(tiny, frame, stand_in, before_0_22_1):
    """vLLM's default engine (raw_logprobs) with ``logprobs=k``: the top k tokens of the whole vocabulary, taken before
    any whitelist. Reading P(true) from them misses answer tokens outside the top k; before 0.22.1 the exact path
    refuses that engine."""
    want = pti.FollowIR7B(tiny["mistral"])(frame)["score"].to_numpy()
    r = pti.FollowIR7B(tiny["mistral"], backend="vllm")
    r(frame.iloc[:1])
    queries = [f"{q} {i}".strip() for q, i in zip(frame["query"], frame["instruction"])]
    feats = r._encode(queries, frame["text"].tolist())
    raw = stand_in.LLM(tiny["mistral"])
    for k in (2, 20):
        outs = raw.generate([{"prompt_token_ids": f["input_ids"]} for f in feats],
                            stand_in.SamplingParams(temperature=0.0, max_tokens=1, logprobs=k))
        approx = []
        for o in outs:
            top = o.outputs[0].logprobs[0]
            f, t = (top[i].logprob if i in top else -np.inf for i in r._ids)  # a missing token counts as impossible
            approx.append(np.exp(t - np.logaddexp(f, t)) if np.isfinite(np.logaddexp(f, t)) else 0.5)
        assert np.abs(np.array(approx) - want).max() > 1e-4, k
    # the exact path on an engine that returns raw top-k values: refused up front, or failing loudly
    with pytest.raises(ValueError, match="processed_logprobs"):
        VLLMBackend(tiny["mistral"]).answer_logits([feats[0]["input_ids"]], r._ids)
    lying = VLLMBackend(tiny["mistral"], logprobs_mode="processed_logprobs")
    lying._llm = raw  # an engine that ignores logprobs_mode (older than 0.10.2)
    with pytest.raises(RuntimeError, match="no value for answer token"):
        lying.answer_logits([f["input_ids"] for f in feats[:5]], r._ids)


def test_backend_arguments_are_checked_early(tiny, qwen, stand_in):
    m = tiny["mistral"]
    with pytest.raises(ValueError, match="backend must be 'hf', 'vllm'"):
        pti.FollowIR7B(m, backend="openai")
    with pytest.raises(ValueError, match="pass the same model"):
        pti.FollowIR7B(m, backend=VLLMBackend("other", logprobs_mode="processed_logprobs"))
    with pytest.raises(ValueError, match="backend_options configure backend='vllm'"):
        pti.FollowIR7B(m, backend_options={"tensor_parallel_size": 2})
    with pytest.raises(ValueError, match="backend_options logprobs_mode"):
        pti.FollowIR7B(m, backend="vllm", backend_options={"logprobs_mode": "raw_logprobs"})
    with pytest.raises(ValueError, match="prefix cache"):
        pti.FollowIR7B(m, backend="vllm", share_prefix=True)
    with pytest.raises(ValueError, match="logprobs_mode must be None or one of"):
        VLLMBackend(m, logprobs_mode="logits")
    with pytest.raises(ValueError, match="sequence-classification checkpoint"):
        pti.FollowIR7B(qwen["reranker-seq-cls"], backend="vllm")(
            pd.DataFrame([{"qid": "1", "query": "q", "docno": "d", "text": "t"}]))
    with pytest.raises(ValueError, match="needs log-probabilities"):
        VLLMBackend(m, logprobs_mode="processed_logits").generate_logprobs([], max_new_tokens=1, top_logprobs=1)


def test_a_sequence_classification_conversion_on_the_pooling_runner(qwen, frame, stand_in):
    """Qwen3-Reranker's sequence-classification conversion (score weight lm_head[yes] - lm_head[no], vLLM's
    ``adapters.py``) on vLLM's pooling runner: ``LLM.classify`` on the package's ids, activation off; the scores are the
    transformers path's on the same checkpoint and the causal checkpoint's."""
    r = pti.Qwen3Reranker(qwen["reranker-seq-cls"], backend="vllm")
    got = r(frame)["score"]
    np.testing.assert_allclose(got, pti.Qwen3Reranker(qwen["reranker-seq-cls"])(frame)["score"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(got, pti.Qwen3Reranker(qwen["reranker"])(frame)["score"], rtol=0, atol=1e-5)
    (llm,) = stand_in.instances
    assert llm.init_args["runner"] == "pooling" and llm.runner_type == "pooling"
    (call,) = llm.calls
    assert call["params"].use_activation is False and len(call["prompts"]) == len(frame)
    assert r.backend.stats["requests"] == len(frame) and r.backend.stats["cached_tokens"] > 0
    assert repr(r) == f"Qwen3Reranker('{qwen['reranker-seq-cls']}', backend='vllm')"
    # vLLM's own checks: a pooling engine does not generate
    with pytest.raises(ValueError, match="only supported for generative models"):
        llm.generate([{"prompt_token_ids": [1, 2]}], stand_in.SamplingParams(max_tokens=1))


def test_repr_eq_pickle_empty_frame_and_a_ready_backend(tiny, frame, stand_in):
    m = tiny["mistral"]
    r = pti.FollowIR7B(m, backend="vllm", backend_options={"tensor_parallel_size": 2})
    assert repr(r) == f"FollowIR7B('{m}', backend='vllm', backend_options={{'tensor_parallel_size': 2}})"
    assert r != pti.FollowIR7B(m)
    assert r == pti.FollowIR7B(m, backend="vllm", backend_options={"tensor_parallel_size": 2})
    out = r(frame.iloc[:0])
    assert list(out.columns) == list(frame.columns) + ["score", "rank"] and not stand_in.instances  # nothing loaded
    ready = VLLMBackend(m, logprobs_mode="processed_logits", enable_prefix_caching=False)
    got = pti.FollowIR7B(m, backend=ready)(frame)["score"]
    np.testing.assert_allclose(got, pti.FollowIR7B(m)(frame)["score"], rtol=0, atol=1e-4)
    assert ready.stats["cached_tokens"] == 0 and ready.stats["requests"] == len(frame)
    again = pickle.loads(pickle.dumps(r))
    assert again == r and again.backend._llm is None
    np.testing.assert_allclose(again(frame)["score"], got, rtol=0, atol=1e-4)


def test_an_empty_vllm_cache_inspects_through_vllm_itself_despite_a_shim(tiny, tmp_path, monkeypatch):
    """Issue 45: with a shim ``vllm.py`` first on ``PYTHONPATH`` (as tests/test_pipeline_files.py runs
    pipelines/listwise_vllm.py, whose fresh process gets the stand-in through it; tests/test_ray.py's Ray workers have a
    ``vllm/`` package) and an empty ``VLLM_CACHE_ROOT``, the listwise vLLM path runs. vLLM inspects the architecture in
    a subprocess of its own, which inherits that ``PYTHONPATH`` and must import vLLM itself, not the shim: before,
    "Model architectures ['MistralForCausalLM'] failed to be inspected" over "Tried to register an operator
    (vllm_ir::...) multiple times", unless another test had filled ``modelinfos``. What must be fresh is the cache (on
    disk and vLLM's in-process memo of it), not this process. The file vLLM's own child writes is byte for byte the one
    the harness (fake_vllm.inspect_once, every architecture of the tests at once, in-process) wrote for it."""
    import fake_vllm
    from stubs import ZEPHYR_TEMPLATE, with_chat_template
    from vllm.model_executor.models import registry
    fake_vllm.inspect_once()  # the session's cache, filled by the harness where it was cold
    session = registry._LazyRegisteredModel._get_cache_dir()
    monkeypatch.setattr(fake_vllm, "ARCHITECTURES", ())  # here vLLM inspects on its own
    zephyr = with_chat_template(tiny["mistral"], tmp_path / "zephyr", ZEPHYR_TEMPLATE)
    tests = os.path.dirname(os.path.abspath(__file__))
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "vllm.py").write_text(f"import sys\nsys.path.insert(0, {tests!r})\nimport fake_vllm\n"
                                  "sys.modules['vllm'] = fake_vllm\n")
    cache = tmp_path / "vllm-cache"
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(cache))
    registry._try_inspect_model_cls.cache_clear()  # inspected in this process by an earlier test: forget it
    frame = pd.DataFrame({"qid": "q0", "query": "salmon dams", "instruction": "fish ladders", "score": [4., 3, 2, 1],
                          "docno": ["d0", "d1", "d2", "d3"],
                          "text": ["fish ladder", "river dam", "water report", "upper basin"]})
    out = pti.RankZephyr(zephyr, backend="vllm", window_size=4, stride=2, verbose=False)(frame)
    assert out.sort_values("rank").docno.tolist() == ["d3", "d2", "d1", "d0"]  # the stand-in answers in reverse
    # inspected in a subprocess (the cache was empty), and remembered there
    name = "vllm-model_executor-models-mistral-MistralForCausalLM.json"
    assert [p.name for p in (cache / "modelinfos").iterdir()] == [name]
    assert (cache / "modelinfos" / name).read_bytes() == (session / name).read_bytes()


@pytest.mark.skipif(not is_available("vllm"), reason="vLLM's engine needs a GPU and an installed vLLM; its Python "
                    "runs here (.venv/vllm_0.33) under every other test of this file, through tests/fake_vllm.py")
def test_real_vllm_equals_the_transformers_path(tiny, qwen, frame):  # pragma: no cover - needs vLLM and a GPU
    import torch
    if not torch.cuda.is_available():
        pytest.skip("vLLM needs a GPU")
    if "fake_vllm" in repr(sys.modules.get("vllm")):
        pytest.skip("the stand-in is installed in place of vLLM")
    opts = {"dtype": "float32", "enforce_eager": True, "gpu_memory_utilization": 0.3, "max_model_len": 2048}
    for name, (make, kind) in PRESETS.items():
        want = make(model_of(kind, tiny, qwen))(frame)["score"]
        got = make(model_of(kind, tiny, qwen), backend="vllm", backend_options=opts)(frame)["score"]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4, err_msg=name)
