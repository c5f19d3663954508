"""rank1 (``pti.Rank1``) against its own ``rank1.py`` logic (orionw/rank1 at 30585c2), re-implemented independently as
an unbatched greedy loop on the same tiny weights (``tiny_models.tiny_rank1``: a planted reasoning path, so rows stop on
``</think> true``/``</think> false``, end with both answers in the top 20 without a stop string, or are forced)."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.backends import FunctionBackend, HFBackend
from pyterrier_instruct.pointwise.rank1 import close_reasoning

STOP = ("</think> true", "</think> false")


@pytest.fixture(scope="module")
def rank1_model(tmp_path_factory):
    import tiny_models
    return tiny_models.tiny_rank1(tmp_path_factory.mktemp("rank1"))


@pytest.fixture(scope="module")
def frame(mini):
    """Two queries x 6 passages (one with a title), instructions: a plain one, and one equal to its query."""
    docs = mini.candidates()(mini.get_topics("og").iloc[:2]).groupby("qid").head(6).reset_index(drop=True)
    docs["text"] = docs["text"].str.slice(0, 200)
    docs["instruction"] = np.where(docs["qid"] == docs["qid"].iloc[0], "Relevant documents mention a date.",
                                   docs["query"])
    docs["title"] = ""
    docs.loc[1, "title"] = "A title"
    return docs


def greedy(model, tok, ids, max_tokens: int, stop=STOP, k: int = 20):
    """One request as vLLM 0.7.2 serves rank1's ``SamplingParams(temperature=0, max_tokens=, logprobs=20, stop=,
    skip_special_tokens=False)``: greedy steps, the full output text decoded after each token and searched for the stop
    strings (cut there, the stop string left out), an end-of-sequence token ends it (its text left out); per step the
    top ``k`` log-probabilities plus the sampled token. Returns (text, token ids, per-step logprobs, finish kind)."""
    import torch
    out = model(input_ids=torch.tensor([ids]), use_cache=True)
    generated, steps, text, kind = [], [], "", "length"
    for _ in range(max_tokens):
        logp = torch.log_softmax(out.logits[0, -1].float(), -1)
        nxt = int(logp.argmax())
        steps.append({int(i): float(logp[i]) for i in logp.topk(k).indices} | {nxt: float(logp[nxt])})
        generated.append(nxt)
        if nxt == tok.eos_token_id:
            text, kind = tok.decode(generated[:-1], skip_special_tokens=False), "eos"
            break
        text = tok.decode(generated, skip_special_tokens=False)
        hits = [text.find(s) for s in stop if s in text]
        if hits:
            kind = "stop_true" if text[min(hits):].startswith(stop[0]) else "stop_false"
            text = text[:min(hits)]
            break
        out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
    return text, generated, steps, kind


def reference(path: str, queries, instructions, passages, max_output_tokens: int):
    """rank1.py's predict/_process_with_vllm/_fix_incomplete_responses on HF transformers, one row at a time: the
    query rule, the raw prompt, :func:`greedy`, the top-20 rule on the last step, the forced '</think>' step restricted
    to true/false. Returns (score, reasoning text, path) per row."""
    import torch
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    true_id = tok(" true", add_special_tokens=False).input_ids[0]
    false_id = tok(" false", add_special_tokens=False).input_ids[0]
    queries = [f"{q} {i}".strip() if q.strip() != i.strip() else q.strip() for i, q in zip(instructions, queries)]
    prompts = [("Determine if the following passage is relevant to the query. Answer only with 'true' or 'false'.\n"
                f"Query: {q}\nPassage: {d}\n<think>") for q, d in zip(queries, passages)]
    rows = []
    with torch.no_grad():
        for prompt in prompts:
            text, _, steps, kind = greedy(model, tok, tok(prompt).input_ids, max_output_tokens)
            top = steps[-1]
            if true_id in top and false_id in top:
                score = math.exp(top[true_id]) / (math.exp(top[true_id]) + math.exp(top[false_id]))
                kind = "top20_no_stop" if kind == "length" else kind
            else:
                text = text.rstrip()
                if not text.endswith(('.', '!', '?')):
                    last = max(text.rfind('.'), text.rfind('!'), text.rfind('?'))
                    if last != -1:
                        text = text[:last + 1]
                text = text.strip()
                forced = torch.tensor([tok(f"{prompt}\n{text}\n</think>").input_ids])
                two = model(input_ids=forced).logits[0, -1, [true_id, false_id]].float()
                score, kind = float(torch.softmax(two, -1)[0]), "forced"
            rows.append((score, text, kind))
    return rows


def passages(df):
    return [f"{t} {x}" if t else x for t, x in zip(df["title"], df["text"])]


def test_rank1_equals_its_reference_logic(rank1_model, frame):
    kinds = set()
    for budget in (2, 3, 12):
        ref = reference(rank1_model, frame["query"], frame["instruction"], passages(frame), budget)
        model = pti.Rank1(rank1_model, max_output_tokens=budget, backend_options={"batch_size": 4}, verbose=False)
        out = model(frame)
        scores, texts, row_kinds = zip(*ref)
        kinds |= set(row_kinds)
        np.testing.assert_allclose(out["score"].to_numpy(), scores, atol=1e-4, rtol=0)
        assert out["reasoning"].tolist() == list(texts)
        assert model.stats["forced"] == row_kinds.count("forced")
        expected = pd.Series(scores).groupby(frame["qid"]).rank(ascending=False, method="first").astype(int) - 1
        assert out["rank"].tolist() == expected.tolist()
    # every path of rank1's scoring was taken by some row
    assert {"stop_true", "stop_false", "top20_no_stop", "forced"} <= kinds, kinds


class StandInVLLM:
    """The part of vLLM 0.7.2's offline API rank1 uses (``LLM.generate`` on ``{"prompt_token_ids": ...}`` with a
    ``SamplingParams``; ``LLM.get_tokenizer``; ``CompletionOutput.text/token_ids/logprobs/finish_reason``,
    ``Logprob.logprob``), serving each request with :func:`greedy` on the tiny weights; ``allowed_token_ids`` masks the
    other tokens before the log-softmax, as vLLM's logits processor does (the ``processed_logprobs`` values, vLLM >=
    0.10.2). Test-local: ``tests/fake_vllm.py`` serves other prompts."""

    class SamplingParams:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

    class LLM:
        def __init__(self, model: str, **kwargs):
            import transformers
            self.tok = transformers.AutoTokenizer.from_pretrained(model)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(model).eval()
            self.calls, self.kwargs = [], kwargs

        def get_tokenizer(self):
            return self.tok

        def generate(self, inputs, sampling_params, use_tqdm=True):
            import torch
            from types import SimpleNamespace as NS
            p, outputs = sampling_params, []
            self.calls.append(p)
            # the generation step is rank1's SamplingParams; the forced one VLLMBackend.answer_logits (1 token, values)
            assert p.temperature == 0 and (getattr(p, "allowed_token_ids", None) or p.skip_special_tokens is False)
            for n, request in enumerate(inputs):
                ids = request["prompt_token_ids"]
                with torch.no_grad():
                    if getattr(p, "allowed_token_ids", None):
                        logits = self.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
                        masked = torch.full_like(logits, float("-inf"))
                        masked[p.allowed_token_ids] = logits[p.allowed_token_ids]
                        logp = torch.log_softmax(masked, -1)
                        token = int(logp.argmax())
                        steps = [{a: float(logp[a]) for a in p.allowed_token_ids}]
                        text, generated, reason = self.tok.decode([token]), [token], "length"
                    else:
                        text, generated, steps, kind = greedy(self.model, self.tok, ids, p.max_tokens,
                                                              tuple(p.stop or ()), p.logprobs)
                        reason = "length" if kind == "length" else "stop"
                logprobs = [{i: NS(logprob=v) for i, v in step.items()} for step in steps]
                outputs.append(NS(request_id=str(n), outputs=[NS(text=text, token_ids=generated, logprobs=logprobs,
                                                                 finish_reason=reason)]))
            return outputs


def test_rank1_on_vllm_equals_its_reference_logic(rank1_model, frame, monkeypatch):
    """The same rows through VLLMBackend (rank1's SamplingParams) on a stand-in engine: the reference's scores."""
    import sys

    import fake_vllm  # noqa: F401  vLLM's own Python (.venv/vllm_0.33) loaded: the backend builds its tokenizer from
    # vLLM's ModelConfig (vllm.engine.arg_utils.EngineArgs), which StandInVLLM, vLLM 0.7.2's offline API, does not hold
    monkeypatch.setitem(sys.modules, "vllm", StandInVLLM)
    ref = reference(rank1_model, frame["query"], frame["instruction"], passages(frame), 3)
    model = pti.Rank1(rank1_model, backend="vllm", max_output_tokens=3, verbose=False)
    out = model(frame)
    np.testing.assert_allclose(out["score"].to_numpy(), [r[0] for r in ref], atol=1e-4, rtol=0)
    assert out["reasoning"].tolist() == [r[1] for r in ref] and 0 < model.stats["forced"] < len(frame)
    first, forced = model.backend._llm.calls
    assert (first.max_tokens, first.logprobs, first.stop) == (3, 20, ["</think> true", "</think> false"])
    assert (forced.max_tokens, forced.allowed_token_ids) == (1, list(model._answer_ids(model.backend.tokenizer())))
    assert model.backend._llm.kwargs["logprobs_mode"] == "processed_logprobs"  # exact values after allowed_token_ids
    # rank1's own engine (orionw/rank1 rank1.py:78-92), each setting overridable
    assert (model.backend._llm.kwargs["dtype"], model.backend._llm.kwargs["max_model_len"]) == ("float16", 16000)
    assert repr(model) == f"Rank1('{rank1_model}', backend='vllm', max_output_tokens=3, verbose=False)"
    mine = pti.Rank1(rank1_model, backend="vllm", backend_options={"dtype": "bfloat16", "max_model_len": 4096}).backend
    assert (mine.dtype, mine.max_model_len, mine.logprobs_mode) == ("bfloat16", 4096, "processed_logprobs")


def test_batch_size_does_not_change_scores(rank1_model, frame):
    one = pti.Rank1(rank1_model, max_output_tokens=6, backend_options={"batch_size": 1}, verbose=False)(frame)
    many = pti.Rank1(rank1_model, max_output_tokens=6, backend_options={"batch_size": 12}, verbose=False)(frame)
    np.testing.assert_allclose(one["score"].to_numpy(), many["score"].to_numpy(), atol=1e-5)
    assert one["reasoning"].tolist() == many["reasoning"].tolist()


def test_prompt_query_rule_and_title():
    df = pd.DataFrame({"query": ["q one ", "same", "q3"], "instruction": ["do x", " same ", ""],
                       "text": ["t1", "t2", "t3"], "title": ["T", "", ""]})
    prompts = pti.Rank1("never-loaded").prompts(df)
    head = "Determine if the following passage is relevant to the query. Answer only with 'true' or 'false'.\n"
    assert prompts == [head + "Query: q one  do x\nPassage: T t1\n<think>", head + "Query: same\nPassage: t2\n<think>",
                       head + "Query: q3\nPassage: t3\n<think>"]


@pytest.mark.parametrize("text, closed",
                         [("It is relevant. But the", "It is relevant."), ("Why? Maybe!  ", "Why? Maybe!"),
                          ("no punctuation ", "no punctuation"), (" ends here.", "ends here.")])
def test_close_reasoning(text, closed):
    assert close_reasoning(text) == closed


def test_empty_frame_repr_pickle_and_presets(rank1_model):
    r = pti.Rank1.released("14b", max_output_tokens=64)
    assert repr(r) == "Rank1.released('14b', max_output_tokens=64)" and r.model_name_or_path == "jhu-clsp/rank1-14b"
    assert pti.Rank1().model_name_or_path == "jhu-clsp/rank1-7b" and pti.Rank1().max_output_tokens == 8192
    assert pti.Rank1.released("llama3-8b", backend="vllm").model_name_or_path == "jhu-clsp/rank1-llama3-8b"
    assert pti.Rank1.released("7b", awq=True, backend="vllm").backend.model == "jhu-clsp/rank1-7b-awq"
    copy = pickle.loads(pickle.dumps(r))
    assert copy == r and repr(copy) == repr(r)
    out = r(pd.DataFrame(columns=["qid", "query", "docno", "text"]))
    assert list(out.columns) == ["qid", "query", "docno", "text", "reasoning", "score", "rank"]
    assert r.backend._model is None
    with pytest.raises(ValueError, match="name must be one of"):
        pti.Rank1.released("9b")
    with pytest.raises(ValueError, match="no AWQ checkpoint of rank1-0.5b"):
        pti.Rank1.released("0.5b", awq=True, backend="vllm")
    with pytest.raises(TypeError, match="backend must be 'hf', 'vllm' or a TokenizerBackend"):
        pti.Rank1(backend=lambda prompt: "true")
    with pytest.raises(TypeError, match="needs a backend with a tokenizer"):
        pti.Rank1(backend=FunctionBackend(lambda prompt: "true"))
    assert pti.Rank1(backend=HFBackend(rank1_model)).backend.model_name_or_path == rank1_model


def test_awq_on_hf_needs_autoawq():
    import importlib.util
    if importlib.util.find_spec("awq") is not None:
        pytest.skip("autoawq is installed: the AWQ preset loads on the HF backend")
    with pytest.raises(ImportError, match="pip install autoawq"):
        pti.Rank1.released("32b", awq=True)


def test_reproduction_rows():
    """FollowIR and InfoSearch have a rank1 row, run on request only; ``--listwise-backend`` picks its backend."""
    from pyterrier_instruct.reproduce import followir, infosearch, rank1
    for module in (followir, infosearch):
        assert module.ROWS["rank1"].model == "jhu-clsp/rank1-7b" and not module.ROWS["rank1"].default
    hf = rank1("/models/rank1", "hf", {"device": "cpu", "batch_size": 2, "verbose": False})
    assert hf == pti.Rank1("/models/rank1", backend_options={"device": "cpu", "batch_size": 2})
    assert hf.backend.batch_size == 2
    assert type(rank1("/models/rank1", "vllm", {"device": None, "verbose": True}).backend).__name__ == "VLLMBackend"


def test_a_backend_without_the_reasoning_calls_is_refused_when_built():
    """A TokenizerBackend that cannot generate until a stop string is refused at construction, naming the calls."""
    from pyterrier_instruct.backends.base import TokenizerBackend

    class Plain(TokenizerBackend):
        def __init__(self):
            self.model_name_or_path = "plain"

    with pytest.raises(TypeError, match="generate_until and next_token_logprobs"):
        pti.Rank1(backend=Plain())
