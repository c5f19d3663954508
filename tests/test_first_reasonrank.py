"""FIRST and ReasonRank against rank_llm 0.26.0 itself (its code unchanged, installed outside site-packages; see
``test_rank_llm_parity.py``), on tiny random weights built here.

FIRST: rank_llm's ``RankListwiseOSLLM(use_logits=True, use_alpha=True)`` runs on a stand-in vLLM engine whose
first-token top-30 log-probabilities come from the tiny model itself (transformers, float32); its prompts (``prompt +
"["``) must be byte-identical to ours with an empty instruction, and each of its windows ranked by our full identifier
log-probabilities must give its order wherever all the window's identifiers are in its top 30 (the rest are counted).
ReasonRank: rank_llm's ``reasonrank_template.yaml`` with ``is_thinking`` on a scripted engine: every window's prompt,
token ids and budgets (min = ranking tokens, max = reasoning budget + ranking tokens), the repair of answers with and
without ``</think>``, and the final rankings."""
import os
import re
import sys
import threading
from types import SimpleNamespace

import ftfy
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from stubs import ZEPHYR_TEMPLATE, with_chat_template
from test_rank_llm_parity import Recorder, compare, our_rankings, queries, rankings_of, requests_of, script
from test_rank_llm_parity import fake_vllm as scripted_engine

import pyterrier_instruct as pti
from pyterrier_instruct.backends import FunctionBackend, HFBackend
from pyterrier_instruct.backends.hf import _pieces
from pyterrier_instruct.listwise import parse_permutation, windows
from pyterrier_instruct.prompts import LISTWISE

CHATML = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: Mistral-7B-Instruct-v0.3's chat template (castorini/first_mistral's base) without its tool-call branches: it writes
#: BOS itself and puts the system message in front of the last user turn
MISTRAL_V03_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}"
    "{%- set loop_messages = messages[1:] %}{%- else %}{%- set loop_messages = messages %}{%- endif %}{{- bos_token }}"
    "{%- for message in loop_messages %}{%- if message['role'] == 'user' %}"
    "{%- if loop.last and system_message is defined %}"
    "{{- '[INST] ' + system_message + '\\n\\n' + message['content'] + '[/INST]' }}{%- else %}"
    "{{- '[INST] ' + message['content'] + '[/INST]' }}{%- endif %}{%- elif message['role'] == 'assistant' %}"
    "{{- ' ' + message['content'] | trim + eos_token }}{%- endif %}{%- endfor %}")


def letter_model(base: str, folder) -> str:
    """The tiny Mistral (Zephyr chat template) made to like letters: a large constant first coordinate in every token
    embedding makes the last hidden state's first coordinate nearly constant and positive, and the output rows of
    ``A``–``H`` lean on it, so those eight letters sit at the top of every next-token distribution (their order set by
    the rest of the model) while ``I``–``Z`` fall among the other 700 tokens: short windows have all identifiers in the
    top 30, long ones do not (and there ``J`` has a slightly higher logit than ``I``)."""
    import torch
    import transformers
    path = with_chat_template(base, folder, ZEPHYR_TEMPLATE)
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    ids = [tok(f"[{c}", add_special_tokens=False)["input_ids"][-1] for c in LETTERS[:10]]
    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] += 4.0
        model.lm_head.weight[ids[:8], 0] += 0.6
        model.lm_head.weight[ids[9]] = model.lm_head.weight[ids[8]]  # J just above I: where rank_llm puts them unseen
        model.lm_head.weight[ids[9], 0] += 0.01                       # in input order (I, J), the logits say J, I
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def models(tiny, qwen, tmp_path_factory):
    root = tmp_path_factory.mktemp("first-reasonrank")
    return {"zephyr": with_chat_template(tiny["mistral"], root / "zephyr", ZEPHYR_TEMPLATE),
            "letters": letter_model(tiny["mistral"], root / "letters"),
            "v03": with_chat_template(tiny["mistral"], root / "v03", MISTRAL_V03_TEMPLATE),
            "qwen": with_chat_template(qwen["qwen2"], root / "qwen", CHATML)}


def top30_engine(seen, lock):
    """rank_llm 0.26's VllmHandler's vLLM: ``generate`` tokenizes the text prompt as vLLM does (``tokenizer.encode``)
    and returns the first position's top ``logprobs`` of the tiny model's log-softmax as ``{id: Logprob}`` with
    ``decoded_token`` as vLLM's incremental detokenizer gives it."""
    import torch
    import transformers

    class Engine:
        def __init__(self, args):
            self.tok = transformers.AutoTokenizer.from_pretrained(args.kw["model"])
            self.model = transformers.AutoModelForCausalLM.from_pretrained(args.kw["model"], dtype=torch.float32).eval()

        def get_tokenizer(self):
            return self.tok

        async def generate(self, prompt, params, request_id):
            ids = self.tok.encode(prompt)
            with torch.inference_mode():
                logp = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0, -1].float(), -1)
            top = torch.topk(logp, params.logprobs)
            order = top.indices.tolist()
            texts = _pieces(self.tok, ids[-5:], order)
            entry = {t: SimpleNamespace(logprob=float(v), rank=r + 1, decoded_token=s)
                     for r, (t, v, s) in enumerate(zip(order, top.values.tolist(), texts))}
            with lock:
                seen.append((prompt, tuple(ids), params, entry))
            output = SimpleNamespace(text=texts[0], token_ids=[order[0]], logprobs=[entry])
            yield SimpleNamespace(finished=True, prompt_token_ids=ids, outputs=[output])

    return SimpleNamespace(AsyncEngineArgs=lambda **kw: SimpleNamespace(kw=kw),
                           SamplingParams=lambda **kw: SimpleNamespace(**kw),
                           AsyncLLMEngine=SimpleNamespace(from_engine_args=Engine))


def run_rank_llm(monkeypatch, engine, df, **kwargs):
    from rank_llm.rerank import vllm_handler
    from rank_llm.rerank.listwise import rank_listwise_os_llm
    monkeypatch.setattr(rank_listwise_os_llm, "vllm", engine)
    monkeypatch.setattr(vllm_handler, "vllm", engine)
    reranker = rank_listwise_os_llm.RankListwiseOSLLM(device="cpu", **kwargs)
    return reranker, reranker.rerank_batch(requests_of(df), rank_start=0, rank_end=100)


class Prepared(HFBackend):
    """Our HF backend recording every prompt it prepares (text and token ids)."""

    def __init__(self, model_name_or_path, **kwargs):
        super().__init__(model_name_or_path, **kwargs)
        self.seen = []

    def prepare(self, messages, fallback_template=None):
        prompt = super().prepare(messages, fallback_template)
        self.seen.append(prompt)
        return prompt


# -- FIRST -------------------------------------------------------------------------------------------------------------
def test_first_prompt_is_rank_llm_026_alpha_template():
    p = LISTWISE["first"]
    first = pti.ListwiseReranker(FunctionBackend(lambda s: ""), style="first", window_size=3, stride=1)
    msgs = first.messages("what is [1]?", ["x [2]", "y", "z"])
    assert msgs[0]["content"] == \
        "You are RankLLM, an intelligent assistant that can rank passages based on their relevancy to the query"
    assert msgs[1]["content"] == (
        "I will provide you with 3 passages, each indicated by an alphabetical identifier []. Rank the passages based "
        "on their relevance to the search query: what is (1)?.\n[A] x (2)\n[B] y\n[C] z\nSearch Query: what is "
        "(1)?.\nRank the 3 passages above based on their relevance to the search query. All the passages should be "
        "included and listed using identifiers, in descending order of relevance. The output format should be [] > [], "
        "e.g., [B] > [A], Answer concisely and directly and only respond with the ranking results, do not say any word "
        "or explain.")
    assert p.alpha and p.fixed_words and not LISTWISE["reasonrank"].alpha
    with pytest.raises(ValueError, match="at most 26"):
        pti.FIRST(window_size=27)
    with pytest.raises(TypeError, match="next-token log-probabilities"):
        pti.FIRST(backend=lambda s: "")
    with pytest.raises(TypeError, match="next_token_logprobs"):
        pti.FIRST(backend=FunctionBackend(lambda s: ""))


def short_queries():
    """11 queries of 1-30 short candidates (titles, bracketed numbers): with windows of 10 and stride 5, 16 windows, the
    8 of at most 8 passages within the letters every top 30 holds, the others beyond them."""
    df = queries()
    rows = []
    for q, n in enumerate([30, 12, 10, 8, 7, 6, 5, 4, 3, 2, 1]):
        g = df[df.qid == f"q{q}"].head(1)
        for j in range(n):
            rows.append({**g.iloc[0].to_dict(), "qid": f"q{q}", "docno": f"q{q}d{j}",
                         "title": ["", f"Study {j}"][j % 2], "text": f"passage {j} on [{j}] claim {(j * 7) % 11} trial",
                         "score": float(n - j)})
    return pd.DataFrame(rows)


def test_first_matches_rank_llm_026_where_its_top_30_holds_every_identifier(rank_llm_026, models, monkeypatch):
    path = models["letters"]
    seen, lock = [], threading.Lock()
    df = short_queries()
    ref, results = run_rank_llm(monkeypatch, top30_engine(seen, lock), df, model=path, context_size=4096,
                                use_logits=True, use_alpha=True, window_size=10, stride=5)
    assert len(seen) == 16 and all((s[2].max_tokens, s[2].min_tokens, s[2].logprobs) == (1, 1, 30) for s in seen)

    backend = Prepared(path)
    first = pti.FIRST(backend=backend, window_size=10, stride=5)
    out = first(df)
    assert first.stats["windows"] == first.stats["forward_passes"] == first.stats["clean"] == 16
    # one batched forward pass per window position and window length, all queries together
    plans = [windows(len(g), 10, 5) for _, g in df.groupby("qid")]
    lengths = [{p[s][1] - p[s][0] for p in plans if s < len(p)} for s in range(max(map(len, plans)))]
    assert first.stats["backend_calls"] == sum(map(len, lengths)) == 14 and len(lengths) == 5
    ours = [(p.text + "[", tuple(HFBackend(path).tokenizer()(p.text + "[")["input_ids"])) for p in backend.seen]
    # every window rank_llm sends, ranked by our identifier log-probabilities on the same prompt
    tok = backend.tokenizer()
    covered = mismatched = 0
    max_delta = 0.0
    for text, ids, _, entry in seen:
        num = int(re.search(r"provide you with (\d+) passages", text).group(1))
        theirs_string, values = ref._evaluate_logits(entry, (1, num))
        order, _ = parse_permutation(theirs_string, num, alpha=True)
        prompt = SimpleNamespace(text=text[:-1])
        mine = first.window_logprobs([prompt], [num])[0]
        our_order = sorted(range(num), key=lambda i: -mine[i])
        assert tuple(tok(text)["input_ids"]) == ids  # no second BOS: the Zephyr template writes none
        if len(values) == num:  # every identifier in the top 30: the same order, the same values up to a constant
            covered += 1
            assert our_order == order
            theirs = np.array([values[65 + i] for i in range(num)])
            delta = (np.array(mine) - mine[0]) - (theirs - theirs[0])
            max_delta = max(max_delta, float(np.abs(delta).max()))
        else:
            mismatched += our_order != order
    assert covered >= 8 and mismatched >= 3 and max_delta < 1e-4  # both kinds of window occur here
    # queries whose windows were all covered: byte-identical prompts and the same final ranking
    full = {q for q, g in df.groupby("qid") if len(g) <= 8}
    theirs_rank, ours_rank = rankings_of(results), our_rankings(out)
    assert full and all(theirs_rank[q] == ours_rank[q] for q in full)
    assert compare(ours, [s[:2] for s in seen])[0] >= 11  # at least every query's first window is identical
    print(f"FIRST parity: {len(seen)} windows, {covered} with every identifier in rank_llm's top 30 (0 mismatches, "
          f"max |Δ| {max_delta:.2e}), {len(seen) - covered} beyond it ({mismatched} ordered differently)")


class Sent(Prepared):
    """:class:`Prepared`, also recording the token ids of every prompt FIRST scores."""

    def __init__(self, model_name_or_path, **kwargs):
        super().__init__(model_name_or_path, **kwargs)
        self.sent = []

    def next_token_logprobs(self, token_ids, *, allowed):
        self.sent += [tuple(ids) for ids in token_ids]
        return super().next_token_logprobs(token_ids, allowed=allowed)


def trained_ids(tok, messages) -> tuple:
    """A window's token ids as FIRST was trained (rank_llm ``training/utils/data_utils.py`` ``RankingDataset`` and
    ``ranking_collate_fn``, run by ``train_first_mistral.sh``; gangiswag/llm-reranker ``scripts/utils/dataset.py``
    alike): the chat template rendered as text, ``[`` appended, ftfy, then ``tokenizer(prompt)`` with its special
    tokens."""
    text = tok.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True) + "["
    return tuple(tok(ftfy.fix_text(text))["input_ids"])


def test_first_bos_as_trained_and_as_rank_llm_026_runs_it(rank_llm_026, models, monkeypatch):
    """A chat template that writes BOS (Mistral-v0.3's): the default gives the two BOS of FIRST's training and of
    rank_llm 0.26 (its code run here), token for token; ``bos='once'`` gives one, in every window."""
    path = models["v03"]
    seen, lock = [], threading.Lock()
    df = short_queries().query("qid in ['q3', 'q4', 'q5', 'q6', 'q7', 'q8']")  # one window each
    run_rank_llm(monkeypatch, top30_engine(seen, lock), df, model=path, context_size=4096, use_logits=True,
                 use_alpha=True, window_size=10, stride=5)
    backend, once = Sent(path), Sent(path)
    first = pti.FIRST(backend=backend, window_size=10, stride=5, verbose=False)
    first(df)
    tok, bos = backend.tokenizer(), backend.tokenizer().bos_token_id
    assert len(seen) == len(backend.sent) == 6
    assert compare(backend.sent, [s[1] for s in seen]) == (6, 6)  # rank_llm 0.26's ids (vLLM encodes the text)
    assert compare(backend.sent, [trained_ids(tok, p.messages) for p in backend.seen]) == (6, 6)  # the training's ids
    assert all(ids[:2] == (bos, bos) and ids[2] != bos for ids in backend.sent)
    counted = first._prepare(backend.seen[0].messages, None)  # what the word budget counts: both BOS
    assert counted.n_tokens == len(tok(counted.text)["input_ids"]) == backend.seen[0].n_tokens + 1
    other = pti.FIRST(backend=once, window_size=10, stride=5, verbose=False, bos="once")
    other(df)
    assert repr(other).endswith("bos='once')") and "bos=" not in repr(first) and other != first
    assert [ids[0] == bos != ids[1] for ids in once.sent] == [True] * 6
    assert compare(once.sent, [s[1] for s in seen])[0] == 0  # one BOS fewer in 6 of 6 windows
    assert compare([(bos,) + ids for ids in once.sent], [s[1] for s in seen]) == (6, 6)  # and nothing else differs
    # the same windows (rank_llm's prompts) ordered from both token sequences
    changed, delta = 0, 0.0
    for text, *_ in seen:
        num = int(re.search(r"provide you with (\d+) passages", text).group(1))
        two, one = (np.array(f.window_logprobs([SimpleNamespace(text=text[:-1])], [num])[0]) for f in (first, other))
        changed += list(np.argsort(-two, kind="stable")) != list(np.argsort(-one, kind="stable"))
        delta = max(delta, float(np.abs(two - one).max()))
    assert delta > 0
    print(f"FIRST BOS: token ids differ in 6/6 windows, orders in {changed}/6 (max |Δ| {delta:.3f})")
    with pytest.raises(ValueError, match=r"bos must be one of \['rank_llm', 'once'\], got 'twice'"):
        pti.FIRST(bos="twice")


def test_word_limit_stops_at_0_where_rank_llm_026_goes_negative(rank_llm_026, models, monkeypatch):
    """rank_llm's shrink step (excess tokens // (4 × passages)) has no floor: on a tokenizer over 4 tokens per word
    (``" zqxv"`` is 5 here) it overshoots 300 to a negative limit, and ``words[:limit]`` then keeps a passage minus its
    last words. Ours stops at 0 (passages empty, the prompt rank_llm renders at limit 0) and returns that prompt."""
    from rank_llm.data import Candidate, Query, Result
    from rank_llm.rerank import vllm_handler
    from rank_llm.rerank.listwise import rank_listwise_os_llm
    engine = scripted_engine([], threading.Lock())
    monkeypatch.setattr(rank_listwise_os_llm, "vllm", engine)
    monkeypatch.setattr(vllm_handler, "vllm", engine)
    path, passages = models["v03"], [" ".join(["zqxv"] * n) for n in (340, 700)]
    ref = rank_listwise_os_llm.RankListwiseOSLLM(model=path, device="cpu", context_size=830, use_logits=True,
                                                 use_alpha=True, window_size=2, stride=1)
    handler, limits = ref._inference_handler, []
    generate = handler.generate_prompt
    monkeypatch.setattr(handler, "generate_prompt",
                        lambda result, **kw: limits.append(kw["max_length"]) or generate(result, **kw))
    result = Result(Query("q", "1"), [Candidate(str(i), 1.0, {"text": t}) for i, t in enumerate(passages)])
    theirs, _ = ref.create_prompt(result, 0, 2)

    def kept(text):  # words of each passage in a rendered window prompt
        return [len(p.split()) for p in re.findall(r"^\[[AB]\] (.*)$", text, flags=re.M)]

    # no floor: below 0 after one step, then further down (300 -> -23 -> -593 on issue 45's tokenizer; the figures
    # depend on the tokenizer's pieces per word, so the test holds the shape, the docs quote the figures)
    assert limits[0] == 300 and 0 > limits[1] > limits[2] > limits[-1] and len(limits) > 3
    assert kept(theirs) == [0, 700 + limits[-1]] and 700 + limits[-1] > 0  # the long passage minus its last words
    backend = Prepared(path)
    df = pd.DataFrame({"qid": "1", "query": "q", "instruction": "", "docno": ["0", "1"], "text": passages,
                       "score": [2.0, 1.0]})
    pti.FIRST(backend=backend, window_size=2, stride=1, context_size=830, verbose=False)(df)
    assert [kept(p.text) for p in backend.seen] == [[300, 300], [0, 0]]
    at_zero = tok_render(ref, generate(result, rank_start=0, rank_end=2, max_length=0, use_alpha=True))
    assert backend.seen[-1].text == at_zero and kept(at_zero) == [0, 0]
    print(f"word limit: rank_llm {' -> '.join(map(str, limits))}; ours 300 -> 0")


def tok_render(ref, messages) -> str:
    """rank_llm 0.26's ``create_prompt`` rendering of ``messages`` (chat template as text, then ftfy)."""
    return ftfy.fix_text(ref._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


def test_first_one_forward_pass_per_window_and_batches_across_queries(models):
    backend = HFBackend(models["letters"], batch_size=4)
    first = pti.FIRST(backend=backend, window_size=4, stride=2, depth=8, verbose=False)
    df = pd.DataFrame([{"qid": f"q{q}", "query": f"query {q}", "docno": f"q{q}d{j}", "text": f"passage {j} about {q}",
                        "score": -j} for q in range(3) for j in range(8)])
    calls = []
    real = backend.next_token_logprobs
    backend.next_token_logprobs = lambda ids, allowed: calls.append((len(ids), allowed)) or real(ids, allowed=allowed)
    out = first(df)
    assert [c[0] for c in calls] == [3, 3, 3] and len({tuple(c[1]) for c in calls}) == 1
    assert first.stats["forward_passes"] == 9
    # the same windows one query at a time give the same ranking (batching, left padding)
    alone = pd.concat([pti.FIRST(backend=HFBackend(models["letters"], batch_size=1), window_size=4, stride=2, depth=8,
                                 verbose=False)(g) for _, g in df.groupby("qid")])
    assert our_rankings(out) == our_rankings(alone)


def test_first_on_vllm_equals_transformers(models, monkeypatch):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    df = queries().query("qid in ['q3', 'q7', 'q8', 'q9']")
    first = pti.FIRST(models["letters"], backend="vllm", context_size=2048, verbose=False)
    out = first(df)
    (llm,) = fake_vllm.instances
    assert llm.init_args["logprobs_mode"] == "processed_logprobs"
    params = [c["params"] for c in llm.calls]
    if getattr(params[0], "logprob_token_ids", None):  # vLLM >= 0.22.1: identifiers' values named, nothing whitelisted
        assert all(p.max_tokens == 1 and len(p.logprob_token_ids) >= 2 and not p.allowed_token_ids for p in params)
    else:  # older vLLM: the identifiers whitelisted, their processed log-probabilities
        assert all(p.max_tokens == 1 and p.allowed_token_ids and p.logprobs == len(p.allowed_token_ids) for p in params)
    assert our_rankings(out) == our_rankings(pti.FIRST(models["letters"], context_size=2048, verbose=False)(df))
    assert repr(first) == f"FIRST({models['letters']!r}, backend='vllm', context_size=2048, verbose=False)"


# -- ReasonRank --------------------------------------------------------------------------------------------------------
def reasoned(text: str) -> str:
    """A scripted reasoning model: the ranking of :func:`script` after ``<think>…</think>``, or a truncated reasoning
    (no ``</think>``: its own ids are parsed first), or two ``</think>`` (the last counts)."""
    answer = script(text)
    kind = len(text) % 3
    if kind == 0:
        return f"<think>passage [2] looks better than [1]; </think>\n<answer>{answer}</answer>"
    if kind == 1:
        return "<think>comparing [3] with [1] and [3] again"
    return f"<think>first</think> [1] > [2] </think> {answer}"


class Scripted(Recorder):
    """Our HF backend answering as :func:`reasoned` (and recording every prompt and budget)."""
    answer = staticmethod(reasoned)


def test_reasonrank_matches_rank_llm_026_window_by_window(rank_llm_026, models, monkeypatch):
    path = models["qwen"]
    seen, lock = [], threading.Lock()
    df = queries()
    template = rank_llm_026 / "rank_llm" / "rerank" / "prompt_templates" / "reasonrank_template.yaml"
    _, results = run_rank_llm(monkeypatch, scripted_engine(seen, lock, reasoned), df, model=path, context_size=2048,
                              is_thinking=True, reasoning_token_budget=64, prompt_template_path=str(template))
    backend = Scripted(path)
    r = pti.ReasonRank(backend=backend, context_size=2048, max_output_tokens=64)
    out = r(df)
    assert len(seen) == len(backend.seen) == 37
    assert compare([s[:2] for s in backend.seen], [s[:2] for s in seen]) == (37, 37)  # text and token ids
    assert compare([s[2:] for s in backend.seen], [s[2:] for s in seen]) == (37, 37)  # max 64 + ranking, min ranking
    assert all(mx == mn + 64 for _, _, mx, mn in seen) and seen[0][0].startswith("<|im_start|>system\nYou are RankLLM")
    assert our_rankings(out) == rankings_of(results)
    assert any(len(s[1]) > 1800 for s in seen) and r.stats["repaired"] > 0  # the word budget loop and the repair ran
    # each row carries the reasoning of the last window it was in
    top = out[out.qid == "q0"].sort_values("rank")
    assert top.reasoning.iloc[0] in ("passage [2] looks better than [1];", "comparing [3] with [1] and [3] again",
                                     "first</think> [1] > [2]")
    assert (out[out.qid == "q0"].reasoning != "").all()
    print(f"ReasonRank parity: 37 windows, 37 identical prompts (text and ids), 37 identical budgets, "
          f"{len(rankings_of(results))} identical final rankings, {r.stats['repaired']} answers repaired")


@pytest.mark.parametrize("answer",
                         ["<think>[1] > [2]</think>[3] > [1]", "<think>[2] > [9] > [2]", "</think></think>[B] [c]",
                          "<think>x</think>\n<answer>[2] > [2] > [0]</answer>", "<think>3 1</think>", ""])
def test_repair_of_reasoning_answers_matches_rank_llm_026(rank_llm_026, answer):
    from rank_llm.data import Candidate, Query, Result
    from rank_llm.rerank.listwise.listwise_rankllm import ListwiseRankLLM
    for alpha in (False, True):
        result = Result(Query("q", "1"), [Candidate(str(i), 1.0, {}) for i in range(3)])
        reranker = SimpleNamespace(_use_alpha=alpha, _remove_duplicate=lambda r: list(dict.fromkeys(r)))
        theirs = [c.docid for c in ListwiseRankLLM.receive_permutation(reranker, result, answer, 0, 3).candidates]
        order, _ = parse_permutation(answer, 3, alpha=alpha)
        assert [str(i) for i in order] == theirs, alpha


def test_reasonrank_on_transformers_and_vllm(models, monkeypatch):
    import fake_vllm
    df = queries().query("qid in ['q5', 'q8', 'q9']")
    r = pti.ReasonRank(models["qwen"], max_output_tokens=6, window_size=4, stride=2, verbose=False)
    out = r(df)
    assert list(out.columns[-3:]) == ["reasoning", "score", "rank"] and out.reasoning.map(type).eq(str).all()
    assert r.stats["windows"] == 6 and r.stats["backend_calls"] == 6  # a call per position and window length (4, 1, 2)
    assert r.output_budget(4) == len(r.backend.tokenizer().encode("[1] > [2] > [3] > [4]"))  # Qwen adds no BOS
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    v = pti.ReasonRank(models["qwen"], backend="vllm", max_output_tokens=6, window_size=4, stride=2, verbose=False)
    out = v(df)
    (llm,) = fake_vllm.instances
    params = llm.calls[0]["params"]
    assert (params.max_tokens, params.min_tokens, params.temperature) == \
        (6 + v.output_budget(4), v.output_budget(4), 0.0)
    order = out[out.qid == "q5"].sort_values("rank").docno.tolist()
    lst = [f"q5d{j}" for j in range(10)]
    for a, b in windows(10, 4, 2):
        lst[a:b] = lst[a:b][::-1]  # the stand-in answers every window in reverse, without reasoning
    assert order == lst and out.reasoning.iloc[0].startswith("[")


# -- both: measures, errors, the package's conventions -----------------------------------------------------------------
def test_pmrr_experiment_on_instruct_mini(models, mini):
    """Both families in one pt.Experiment with p-MRR; the instruction reaches the prompt through the template's query
    slot (``f"{query} {instruction}"`` in both of rank_llm's ``{query}`` places), so og and changed topics differ."""
    topics = mini.get_topics()
    backend = Prepared(models["letters"])
    first = pti.FIRST(backend=backend, window_size=6, stride=3, verbose=False)
    reason = pti.ReasonRank(backend=Scripted(models["qwen"]), window_size=6, stride=3, max_output_tokens=2,
                            verbose=False)
    runs = {}  # each system's run as the experiment made it (issue 45: not made again to check it)
    pipes = [mini.candidates() % 6 >> system >> pt.apply.generic(lambda run, n=name: runs.update({n: run}) or run)
             for name, system in (("FIRST", first), ("ReasonRank", reason))]
    res = pt.Experiment(pipes, topics, mini.get_qrels(), [pti.pMRR], names=["FIRST", "ReasonRank"])
    assert res["name"].tolist() == list(runs)
    for row, run in zip(res.itertuples(), runs.values()):
        og, ch = (run[run.variant == v].assign(qid=lambda d: d.base_qid) for v in ("og", "changed"))
        assert row.pMRR == pytest.approx(pti.pmrr(og, ch, mini.changed_docs()), abs=1e-12)
    assert res.pMRR.ne(0).any()
    topic = topics[topics.variant == "changed"].iloc[0]
    composed = f"{topic.query} {topic.instruction}".strip().replace("[", "(").replace("]", ")")
    assert any(f"search query: {composed}.\n" in p.text and f"Search Query: {composed}.\n" in p.text
               for p in backend.seen)


def test_repr_eq_presets_and_errors():
    assert repr(pti.ReasonRank.reasonrank_32b(backend="vllm")) == "ReasonRank.reasonrank_32b(backend='vllm')"
    assert pti.ReasonRank.reasonrank_32b().model_name_or_path == "liuwenhan/reasonrank-32B"
    assert pti.ReasonRank() == pti.ReasonRank(max_output_tokens=3072) != pti.ReasonRank(max_output_tokens=10)
    assert pti.FIRST().model_name_or_path == "castorini/first_mistral" and pti.FIRST() != pti.RankZephyr()
    with pytest.raises(ValueError, match="max_output_tokens must be a non-negative integer"):
        pti.ReasonRank(max_output_tokens=-1)
    with pytest.raises(ValueError, match="backend must be one of"):
        pti.FIRST(backend="openai")


def test_followir_cli_rows(models, tmp_path):
    """The --systems rows first and reasonrank (not run by default) on the tiny weights."""
    from pathlib import Path

    from pyterrier_instruct.reproduce.cli import main
    robust04 = str(Path(os.environ["PYTERRIER_INSTRUCT_DATA"]) / "jhu-clsp" / "robust04-instructions")
    assert main(["followir", "--dataset", "followir/robust04", "--path", robust04, "--out", str(tmp_path), "--quiet",
                 "--systems", "first,reasonrank", "--first", models["letters"], "--reasonrank", models["qwen"],
                 "--reasoning-budget", "4"]) == 0
    table = pd.read_csv(tmp_path / "table2.csv")
    assert table["Model"].tolist() == ["FIRST [letters, unrevisioned]", "ReasonRank-7B [qwen, unrevisioned]"]
    assert table["robust04 p-MRR"].notna().all()


def test_inf_ir_reasonrank_row_on_bright(models, tmp_path):
    """``inf-ir --systems reasonrank``: BRIGHT (its paper's benchmark) reranked over the BM25 top 100, the task's
    excluded ids removed (the row ends with ``ds.exclude()`` like every BRIGHT system), on the tiny weights."""
    from pyterrier_instruct.reproduce.cli import main
    assert main(["inf-ir", "--systems", "reasonrank", "--reasonrank", models["qwen"], "--reasoning-budget", "4",
                 "--out", str(tmp_path), "--quiet", "--dataset", "bright/biology"]) == 0
    table = pd.read_csv(tmp_path / "table2.csv")
    assert table["Model"].tolist() == ["ReasonRank-7B [qwen, unrevisioned]"] and table.notna().all().all()
