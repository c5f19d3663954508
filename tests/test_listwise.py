"""Listwise reranking (rank_llm's sliding window and prompts): schedule, exact prompts, repair, batching across
queries, scores, the family classes, and the four backends (a function, HF transformers on a tiny chat model, a vLLM
stand-in, an OpenAI-compatible local server)."""
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from stubs import ZEPHYR_TEMPLATE, with_chat_template

import pyterrier_instruct as pti
from pyterrier_instruct.backends import FunctionBackend, HFBackend, VLLMBackend
from pyterrier_instruct.listwise import ListwiseReranker, parse_permutation, windows
from pyterrier_instruct.prompts import LISTWISE

SPEC = json.loads((Path(__file__).parent / "data" / "listwise_templates.json").read_text())


def window_passages(messages):
    """The passages of one window, whatever the preset (single user message or one turn per passage)."""
    text = "\n".join(m["content"] for m in messages if m["role"] == "user")
    return re.findall(r"(?m)^\[(\d+)\] (.*)$", text)


def grade_ranker(prompts, max_new_tokens):
    """A perfect listwise model: orders each window by the hidden 'grade <g>' in the passages (higher first)."""
    answers = []
    for messages in prompts:
        found = window_passages(messages)
        grades = [int(re.search(r"grade (\d+)", t).group(1)) for _, t in found]
        order = sorted(range(len(found)), key=lambda i: -grades[i])
        answers.append(" > ".join(f"[{i + 1}]" for i in order))
    return answers


def synthetic(n_queries=3, n_docs=100, seed=0, title=False):
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        grades = rng.permutation(n_docs)
        for j in range(n_docs):
            rows.append({"qid": f"q{q}", "query": f"query {q}", "instruction": f"instruction {q}", "docno": f"q{q}d{j}",
                         "text": f"passage {j} grade {grades[j]}", "score": float(n_docs - j), "rank": j,
                         "extra": j % 3})
    df = pd.DataFrame(rows)
    return df.assign(title=[f"T{j}" for j in range(len(df))]) if title else df


# -- schedule and repair (rank_llm sliding_windows, receive_permutation) -----------------------------------------------
def test_rank_llm_window_schedule():
    assert windows(100) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40), (10, 30), (0, 20)]
    assert windows(1000) == windows(100)  # depth 100
    assert windows(30) == [(10, 30), (0, 20)] and windows(25) == [(5, 25), (0, 15)]
    assert windows(10) == [(0, 10)]  # rank_llm visits no window here (start + stride == 0 at once)
    assert windows(3, window_size=4, stride=2) == [(0, 3)] and windows(0) == [] and windows(1) == [(0, 1)]
    assert windows(50, window_size=10, stride=5, depth=30) == [(20, 30), (15, 25), (10, 20), (5, 15), (0, 10)]
    for bad, match in [(dict(stride=0), "stride must be a positive integer"),
                       (dict(stride=-1), "stride must be a positive"), (dict(window_size=0), "window_size must be"),
                       (dict(stride=30), r"stride \(30\) must not exceed window_size"),
                       (dict(depth=0), "depth must be")]:
        with pytest.raises(ValueError, match=match):
            windows(100, **{"window_size": 20, "stride": 10, "depth": 100, **bad})
        with pytest.raises(ValueError, match=match):
            ListwiseReranker(grade_ranker, **bad)


@pytest.mark.parametrize("answer, size, order, problems", [
    ("[2] > [3] > [1]", 3, [1, 2, 0], ()),
    ("[2] > [2] > [1] > [3]", 3, [1, 0, 2], ("duplicate",)),
    ("[4] > [1] > [0] > [2]", 3, [0, 1, 2], ("out_of_range", "missing")),
    ("[3] > [1]", 4, [2, 0, 1, 3], ("missing",)),
    ("The ranking is: [2] > [1] > [3]. Passage 2 is best", 3, [1, 0, 2], ("format", "duplicate")),
    ("I cannot rank these passages.", 3, [0, 1, 2], ("no_ranking",)),
    ("", 2, [0, 1], ("no_ranking",)),
    ("2, 1", 2, [1, 0], ("format",)),
    ("<think>[1] > [2] is wrong</think>[2] > [1]", 2, [1, 0], ()),
    ("[２] > [１]", 2, [1, 0], ()),
    ("[99999999999999999999] > [1]", 2, [0, 1], ("out_of_range", "missing")),
    ("[²] > [³] > [¹]", 3, [1, 2, 0], ()),  # rank_llm 0.26 clean_ranking_response: superscript digits
    ("[②] > [①] > [❸]", 3, [1, 0, 2], ()),  # circled and negative circled digits
    ("[0000000002] > [01]", 2, [1, 0], ()),  # zero-padded ids are their number
    ("[0000000000000000000000003] > [1]", 3, [2, 0, 1], ("missing",)),
])
def test_permutation_parsing_and_repair(answer, size, order, problems):
    got, found = parse_permutation(answer, size)
    assert got == order and set(found) == set(problems) and sorted(got) == list(range(size))


# -- exact prompts (rank_llm <= 0.20, RankGPT, rank_llm 0.26) ----------------------------------------------------------
def test_presets_are_byte_identical_to_models_md():
    z, g = LISTWISE["rank_zephyr"], LISTWISE["rank_gpt"]
    keys = ("system", "prefix", "body", "suffix", "example")
    assert (z.system, z.prefix, z.body, z.suffix, z.example) == tuple(SPEC["rank_zephyr"][k] for k in keys)
    assert (g.system, g.prefix, g.opening, g.body, g.ack) == \
        tuple(SPEC["rank_gpt"][k] for k in ("system", "prefix", "opening", "body", "ack"))
    assert g.suffix.replace("{example}", g.example) == SPEC["rank_gpt"]["final"]
    assert LISTWISE["rank_vicuna"].example == "[4] > [2]"
    # rank_llm 0.26's YAML templates ({candidate} is our {passage}; the one-turn user text is prefix + bodies + suffix)
    new, s26 = LISTWISE["rank_llm_0.26"], SPEC["rank_llm_0.26"]
    assert (new.system, new.prefix + "\n", new.body, new.suffix.replace("{example}", new.example)) == (
        s26["system"], s26["prefix"], s26["body"].replace("{candidate}", "{passage}"), s26["suffix"])
    g26, sg = LISTWISE["rank_gpt_0.26"], SPEC["rank_gpt_0.26"]
    assert (g26.system, g26.prefix, g26.opening, g26.body, g26.ack, g26.suffix.replace("{example}", g26.example)) == (
        sg["system"], sg["prefix"], sg["opening"], sg["body"].replace("{candidate}", "{passage}"), sg["ack"],
        sg["final"])
    assert g26.mask_query and g26.fixed_words and new.fixed_words and not z.fixed_words


def test_rank_zephyr_messages_with_instruction_and_masking():
    r = ListwiseReranker(grade_ranker)
    query = pti.compose("what is [1] in C?", "Documents citing [2023] standards are relevant.")
    msgs = r.messages(query, ["first [12] passage", "second passage"])
    s = SPEC["rank_zephyr"]
    q = "what is (1) in C? Documents citing (2023) standards are relevant."
    user = (s["prefix"].replace("{num}", "2").replace("{query}", q) + "\n" + "[1] first (12) passage\n"
            + "[2] second passage\n"
            + s["suffix"].replace("{num}", "2").replace("{query}", q).replace("{example}", "[2] > [1]"))
    assert msgs == [{"role": "system", "content": s["system"]}, {"role": "user", "content": user}]
    assert "search query: " + q + ".\n\n[1] first" in user  # the blank line after the prefix
    assert ListwiseReranker(grade_ranker, system="Be brief.").messages("q", ["a"])[0] == \
        {"role": "system", "content": "Be brief."}
    # braces in the query are text, not slots
    assert "{num}" in ListwiseReranker(grade_ranker).messages("a {num} b", ["x"])[1]["content"]


def test_rank_gpt_multi_turn_messages_mask_passages_only():
    msgs = ListwiseReranker(grade_ranker, style="rank_gpt").messages("q [7]", ["alpha [3]", "beta"])
    g = SPEC["rank_gpt"]
    assert msgs == [
        {"role": "system", "content": g["system"]},
        {"role": "user", "content": g["prefix"].replace("{num}", "2").replace("{query}", "q [7]")},
        {"role": "assistant", "content": g["opening"]},
        {"role": "user", "content": "[1] alpha (3)"}, {"role": "assistant", "content": "Received passage [1]."},
        {"role": "user", "content": "[2] beta"}, {"role": "assistant", "content": "Received passage [2]."},
        {"role": "user", "content": g["final"].replace("{num}", "2").replace("{query}", "q [7]")}]


def test_transform_renders_the_windows_it_sends():
    seen = []

    def capture(prompts, max_new_tokens):
        seen.append(prompts)
        return grade_ranker(prompts, max_new_tokens)
    df = synthetic(1, 30, title=True)
    df.loc[df.docno == "q0d29", "title"] = ""
    ListwiseReranker(capture)(df)
    first = seen[0][0]  # the back window [10, 30): first-stage ranks 11..30
    got = window_passages(first)
    assert [int(n) for n, _ in got] == list(range(1, 21))
    assert got[0][1] == "Title: T10 Content: passage 10 grade " + df.text[10].split()[-1]
    assert got[-1][1] == df.text[29]  # empty title: the text alone
    assert "search query: query 0 instruction 0.\n" in first[1]["content"]


# -- the transformer --------------------------------------------------------------------------------------------------
def test_one_backend_call_per_window_position_for_all_queries():
    backend = FunctionBackend(grade_ranker)
    r = ListwiseReranker(backend)
    out = r(synthetic(4, 120))
    assert backend.calls == 9 and r.stats["backend_calls"] == 9 and r.stats["windows"] == 36 and r.stats["clean"] == 36
    # a query with fewer candidates than the window adds one call for its own window length
    mixed = pd.concat([synthetic(2, 100), synthetic(1, 15, seed=1).assign(qid="short", docno=lambda d: "s" + d.docno)])
    backend2 = FunctionBackend(grade_ranker)
    ListwiseReranker(backend2)(mixed)
    assert backend2.calls == 10
    assert len(out) == 480


def test_a_per_prompt_function_is_a_backend_too():
    """``fn(prompt: str) -> str``: one call per prompt with the messages' contents as one text."""
    seen = []

    def first_try(prompt):
        seen.append(prompt)
        return "[2] > [1]"
    backend = FunctionBackend(first_try)
    out = ListwiseReranker(first_try, style="rank_gpt")(synthetic(2, 2))
    assert out.sort_values(["qid", "rank"]).docno.tolist() == ["q0d1", "q0d0", "q1d1", "q1d0"] and len(seen) == 2
    # one turn per passage
    assert seen[0].startswith(LISTWISE["rank_gpt"].system + "\n\n") and "\n\n[1] passage 0 grade" in seen[0]
    assert backend.generate([backend.prepare([{"role": "user", "content": "only this"}])] * 3, max_new_tokens=5) == \
        ["[2] > [1]"] * 3
    assert seen[-1] == "only this" and backend.calls == 3  # a single user message is its content exactly
    with pytest.raises(ValueError, match=r"fn\(prompt\) must return a string, got \['\[1\]'\]"):
        FunctionBackend(lambda prompt: ["[1]"]).generate([backend.prepare([{"role": "user", "content": "x"}])],
                                                         max_new_tokens=1)
    # the batched form, whatever its parameter names; defaults and *args as Python binds them
    assert not FunctionBackend(lambda batch, budget: [])._per_prompt
    assert not FunctionBackend(lambda *args: [])._per_prompt
    assert FunctionBackend(lambda prompt, temperature=0.0: "")._per_prompt and FunctionBackend(str.upper)._per_prompt
    for bad in (lambda: "", lambda a, b, c: [], lambda p, *, seed: ""):
        with pytest.raises(TypeError, match=r"fn must be fn\(prompt: str\) -> str \(one call per prompt\) or fn\("
                                            r"list_of_message_lists, max_new_tokens\) -> list of str \(one call per "
                                            r"batch\)"):
            FunctionBackend(bad)


def test_final_order_scores_and_columns():
    df = synthetic(3, 120, seed=3)
    out = ListwiseReranker(grade_ranker)(df.sample(frac=1, random_state=0))  # input order does not matter
    assert set(df.columns) | {"score_0"} <= set(out.columns) and len(out) == len(df)
    for qid, g in out.groupby("qid"):
        g = g.sort_values("rank")
        top = df[(df.qid == qid) & (df["rank"] < 100)]
        grades = top.text.str.extract(r"grade (\d+)")[0].astype(int)
        best10 = top.docno.to_numpy()[np.argsort(-grades.to_numpy(), kind="stable")[:10]]
        assert g.docno.iloc[:10].tolist() == best10.tolist()  # back-to-front windows bubble the top 10 up
        assert g.docno.iloc[100:].tolist() == [f"{qid}d{j}" for j in range(100, 120)]  # beyond depth: first-stage order
        assert (g.score.to_numpy() == np.arange(120, 0, -1)).all() and (g["rank"].to_numpy() == np.arange(120)).all()
    assert (out.set_index("docno").score_0.sort_index() == df.set_index("docno").score.sort_index()).all()


def test_first_stage_order_from_score_when_rank_is_missing():
    df = synthetic(1, 40).drop(columns="rank").sample(frac=1, random_state=1)
    seen = []
    ListwiseReranker(lambda p, n: seen.append(p) or [""] * len(p), depth=20)(df)
    assert [t for _, t in window_passages(seen[0][0])] == \
        df.sort_values("score", ascending=False).text.iloc[:20].tolist()


def test_malformed_answers_are_repaired_and_counted(caplog):
    answers = iter(["[2] > [1] > [2]", "no idea", "[21] > [1]", ""] * 10)
    r = ListwiseReranker(lambda prompts, n: [next(answers) for _ in prompts])
    out = r(synthetic(2, 30))
    assert len(out) == 60 and r.stats["windows"] == 4 and r.stats["repaired"] == 4 and r.stats["clean"] == 0
    assert r.stats["no_ranking"] == 2 and r.stats["duplicate"] == 1 and r.stats["out_of_range"] == 1
    assert "4 of 4 answers were not a clean permutation" in caplog.text


def test_empty_frame_inspect_repr_eq_and_errors():
    calls = []
    backend = FunctionBackend(lambda p, n: calls.append(p) or [])
    r = ListwiseReranker(backend)
    empty = r(pd.DataFrame(columns=["qid", "query", "instruction", "docno", "text", "score", "rank"]))
    assert list(empty.columns) == ["qid", "query", "instruction", "docno", "text", "score_0", "score", "rank"]
    assert not calls
    assert pt.inspect.transformer_inputs(r)
    assert "score" in pt.inspect.transformer_outputs(r, ["qid", "query", "docno", "text"])
    assert r == ListwiseReranker(backend) and hash(r) == hash(ListwiseReranker(backend))
    assert r != ListwiseReranker(backend, depth=50)
    assert repr(ListwiseReranker(backend, depth=50, style="rank_gpt")) == \
        "ListwiseReranker(FunctionBackend(<lambda>), depth=50, style='rank_gpt')"
    with pytest.raises(KeyError, match="text"):
        r(synthetic(1, 5).drop(columns="text"))
    with pytest.raises(ValueError, match="style must be one of"):
        ListwiseReranker(backend, style="rank_nope")
    with pytest.raises(TypeError, match="template must be a pyterrier_instruct.prompts.Listwise"):
        ListwiseReranker(backend, template="rank_gpt")
    with pytest.raises(TypeError, match=r"needs a Backend object or a callable, got 'hf'.*RankZephyr\(backend='hf'\)"):
        ListwiseReranker("hf")
    with pytest.raises(ValueError, match="qid 'q0' has rows with different query/instruction text"):
        ListwiseReranker(grade_ranker)(synthetic(1, 5).assign(instruction=lambda d: d.docno))
    with pytest.raises(ValueError, match=r"must return one string per prompt \(1\)"):
        ListwiseReranker(lambda p, n: [])(synthetic(1, 5))


class WordTokenizer:
    def encode(self, text):
        return text.split()


def test_word_budget_loop_against_the_context_size():
    long = synthetic(1, 20).assign(text=lambda d: d.text + " " + " ".join(["word"] * 400))
    seen = []
    backend = FunctionBackend(lambda p, n: seen.append((p, n)) or grade_ranker(p, n), tokenizer=WordTokenizer())
    budget = len(" > ".join(f"[{i}]" for i in range(1, 21)).split())  # no special tokens: every token counts (rank_llm)
    assert ListwiseReranker(backend).output_budget(20) == budget == 39
    ListwiseReranker(backend, context_size=None)(long)
    assert all(len(t.split()) == 300 for _, t in window_passages(seen[-1][0][0]))  # 300 × 20 / 20 words
    ListwiseReranker(backend, context_size=2000)(long)
    prompt, max_new = seen[-1]
    n_tokens = len("".join(m["content"] for m in prompt[0]).split())
    lengths = {len(t.split()) for _, t in window_passages(prompt[0])}
    assert max_new == budget and n_tokens <= 2000 - budget and len(lengths) == 1 and 50 < lengths.pop() < 300
    with pytest.raises(ValueError, match="the prompt without passage text needs"):
        ListwiseReranker(backend, context_size=100)(long)


# -- measures on listwise output ---------------------------------------------------------------------------------------
def test_pmrr_and_wise_on_listwise_output(mini):
    def overlap_ranker(prompts, n):  # prefers passages sharing words with the instruction
        answers = []
        for messages in prompts:
            user = messages[1]["content"]
            query = set(re.search(r"search query: (.*)\.\n", user).group(1).lower().split())
            found = window_passages(messages)
            order = sorted(range(len(found)), key=lambda i: -len(query & set(found[i][1].lower().split())))
            answers.append(" > ".join(f"[{i + 1}]" for i in order))
        return answers
    topics = mini.get_topics()
    pipe = mini.candidates() >> ListwiseReranker(overlap_ranker, window_size=10, stride=5)
    res = pt.Experiment([pipe], topics, mini.get_qrels(), [pti.pMRR])
    run = pipe(topics)
    og, ch = (run[run.variant == v].assign(qid=lambda d: d.base_qid) for v in ("og", "changed"))
    assert res.loc[0, "pMRR"] == pytest.approx(pti.pmrr(og, ch, mini.changed_docs()), abs=1e-12)
    assert res.loc[0, "pMRR"] != 0
    ds = pti.load_dataset("infosearch/format")
    res = pt.Experiment([ds.candidates() >> ListwiseReranker(overlap_ranker)], ds.get_topics(), ds.get_qrels(),
                        [pti.WISE])
    assert -1 <= res.loc[0, "WISE"] <= 1


# -- backends ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chat_model(tiny, tmp_path_factory):
    """The tiny Mistral with a Zephyr-style chat template."""
    return with_chat_template(tiny["mistral"], tmp_path_factory.mktemp("chat") / "zephyr", ZEPHYR_TEMPLATE)


def test_hf_backend_renders_with_the_chat_template(chat_model):
    import transformers
    backend = HFBackend(chat_model)
    msgs = ListwiseReranker(backend).messages("q “quoted”", ["a"])
    prompt = backend.prepare(msgs)
    want = f"<|system|>\n{msgs[0]['content']}</s>\n<|user|>\n{msgs[1]['content']}</s>\n<|assistant|>\n"
    assert prompt.text == want.replace("“quoted”", '"quoted"')
    tok = transformers.AutoTokenizer.from_pretrained(chat_model)
    assert prompt.token_ids == tok(prompt.text)["input_ids"] and prompt.token_ids[0] == tok.bos_token_id
    assert ListwiseReranker(backend).output_budget(20) == \
        len(tok.encode(" > ".join(f"[{i}]" for i in range(1, 21)))) - 1
    vicuna = backend.prepare([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                             LISTWISE["rank_vicuna"].chat_template)
    assert vicuna.text.startswith("<|system|>")  # the checkpoint's own template wins over a preset's fallback
    bare = HFBackend(str(Path(chat_model).parent.parent / "does-not-matter"))
    bare._tok = transformers.AutoTokenizer.from_pretrained(chat_model)
    bare._tok.chat_template = None
    assert bare.prepare([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                        LISTWISE["rank_vicuna"].chat_template).text == "S USER: U ASSISTANT:"
    with pytest.raises(ValueError, match="the tokenizer has no chat template"):
        bare.prepare([{"role": "user", "content": "U"}])


def test_hf_backend_end_to_end_on_the_bundled_benchmark(chat_model, mini, mini_bm25):
    r = pti.RankZephyr(backend=HFBackend(chat_model, batch_size=4), context_size=4096)
    topics = mini.get_topics().iloc[:4]
    pipe = mini_bm25 % 20 >> pt.text.get_text(mini, "text") >> r
    out = pipe(topics)
    first = (mini_bm25 % 20)(topics)
    assert len(out) == len(first) and set(out.docno) == set(first.docno) and (out.groupby("qid").size() == 20).all()
    assert r.stats["windows"] == 4 and r.stats["backend_calls"] == 1 and "score_0" in out.columns
    # batched greedy generation with left padding equals one prompt at a time
    prompts = [r._prompt(q, [["alpha", "beta"], ["gamma"]])
               for q in ("short", "a much longer query with many words in it")]
    batched = HFBackend(chat_model, batch_size=2).generate(prompts, max_new_tokens=6, min_new_tokens=6)
    single = HFBackend(chat_model, batch_size=1).generate(prompts, max_new_tokens=6, min_new_tokens=6)
    assert batched == single and all(len(a) > 0 for a in batched)


def test_vllm_backend_against_the_stand_in(chat_model, monkeypatch):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    backend = VLLMBackend(chat_model, gpu_memory_utilization=0.5, max_model_len=4096, tensor_parallel_size=2,
                          enforce_eager=True)
    r = pti.RankZephyr(backend=backend)
    out = r(synthetic(3, 100))
    (llm,) = fake_vllm.instances
    assert llm.init_args == \
        dict(model=chat_model, tokenizer=None, tensor_parallel_size=2, dtype="auto", seed=0, gpu_memory_utilization=0.5,
             max_model_len=4096, enable_prefix_caching=True, enforce_eager=True)
    assert len(llm.calls) == 9 and all(len(c["prompts"]) == 3 for c in llm.calls)
    params = llm.calls[0]["params"]
    assert (params.temperature, params.max_tokens, params.min_tokens, params.n) == \
        (0.0, r.output_budget(20), r.output_budget(20), 1)
    # the token ids vLLM receives are the ones the HF backend would generate from
    hf = HFBackend(chat_model)
    sent = llm.calls[0]["prompts"][0]["prompt_token_ids"]
    assert sent == \
        r._prompt("query 0 instruction 0", [w.split() for w in synthetic(1, 100).text.iloc[80:100]]).token_ids
    messages = r.messages("query 0 instruction 0", list(synthetic(1, 100).text.iloc[80:100]))
    assert sent == hf.prepare(backend.prepare(messages).messages).token_ids
    # the stand-in answers each window in reverse: 9 reversals of overlapping windows
    order = out[out.qid == "q0"].sort_values("rank").docno.str.slice(3).astype(int).tolist()
    lst = list(range(100))
    for a, b in windows(100):
        lst[a:b] = lst[a:b][::-1]
    assert order == lst and r.stats["clean"] == 27
    assert repr(backend) == (f"VLLMBackend('{chat_model}', gpu_memory_utilization=0.5, max_model_len=4096, "
                             "tensor_parallel_size=2, enforce_eager=True)")
    assert backend == VLLMBackend(chat_model, tensor_parallel_size=2, max_model_len=4096, enforce_eager=True,
                                  gpu_memory_utilization=0.5)
    # llm_kwargs count
    assert backend != VLLMBackend(chat_model, gpu_memory_utilization=0.5, max_model_len=4096, tensor_parallel_size=2)
    assert repr(HFBackend("x")) == "HFBackend('x')"
    assert HFBackend("x") == HFBackend("x", batch_size=8) != HFBackend("x", batch_size=4)


def test_vllm_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r"pip install 'pyterrier-instruct\[vllm\]'"):
        pti.RankZephyr(backend="vllm")(synthetic(1, 5))
    with pytest.raises(ValueError, match="gpu_memory_utilization must be in"):
        VLLMBackend("m", gpu_memory_utilization=1.5)


# -- the family classes ------------------------------------------------------------------------------------------------
def test_family_classes_presets_repr_eq_and_errors():
    z = pti.RankZephyr()
    assert repr(z) == "RankZephyr()" and z.backend == HFBackend("castorini/rank_zephyr_7b_v1_full")
    assert z.style == "rank_zephyr"
    assert z == pti.RankZephyr("castorini/rank_zephyr_7b_v1_full")
    assert hash(z) == hash(pti.RankZephyr("castorini/rank_zephyr_7b_v1_full"))
    assert z != pti.RankZephyr(style="rank_llm_0.26") and z != pti.RankZephyr(depth=50)
    beta = pti.RankZephyr.zephyr_beta(backend="vllm", backend_options={"tensor_parallel_size": 2})
    assert repr(beta) == "RankZephyr.zephyr_beta(backend='vllm', backend_options={'tensor_parallel_size': 2})"
    assert beta.backend == VLLMBackend("HuggingFaceH4/zephyr-7b-beta", tensor_parallel_size=2)
    assert beta.listwise == LISTWISE["rank_zephyr"]
    assert pti.RankZephyr("/m", backend_options={"batch_size": 4}).backend == HFBackend("/m", batch_size=4)
    v = pti.RankVicuna()
    assert v.backend == HFBackend("castorini/rank_vicuna_7b_v1") and v.listwise == LISTWISE["rank_vicuna"]
    assert pti.RankVicuna(style="rank_llm_0.26").listwise == LISTWISE["rank_llm_0.26"]
    g = pti.RankGPT(base_url="http://localhost:8000/v1", backend_options={"concurrency": 2})
    assert repr(g) == "RankGPT(base_url='http://localhost:8000/v1', backend_options={'concurrency': 2})"
    assert g.backend == pti.OpenAIBackend("gpt-4o", base_url="http://localhost:8000/v1", concurrency=2)
    assert g.listwise == LISTWISE["rank_gpt"]
    assert pti.RankGPT(style="rank_llm_0.26").listwise == LISTWISE["rank_gpt_0.26"] == \
        pti.RankGPT(style="rank_gpt_0.26").listwise
    assert pti.RankGPT("/local", backend="hf").backend == HFBackend("/local")
    fb = FunctionBackend(grade_ranker)
    assert pti.RankZephyr(backend=fb).backend is fb and pti.RankZephyr(backend=grade_ranker).backend.fn is grade_ranker
    custom = LISTWISE["rank_zephyr"]._replace(system="Be brief.")
    assert ListwiseReranker(fb, template=custom).messages("q", ["a"])[0]["content"] == "Be brief."
    with pytest.raises(ValueError, match="backend must be one of"):
        pti.RankZephyr(backend="sglang")
    with pytest.raises(ValueError, match="pass the model and its options to that backend"):
        pti.RankZephyr("/m", backend=fb)
    with pytest.raises(ValueError, match="base_url/api_key_env apply to backend='openai' only"):
        pti.RankGPT("/m", backend="hf", base_url="http://x")
    with pytest.raises(ValueError, match="style must be one of"):
        pti.RankZephyr(style="paper")
    assert not hasattr(ListwiseReranker, "rank_zephyr") and not hasattr(ListwiseReranker, "rank_gpt")


def test_rank_llm_026_style_words_titles_and_raw_query():
    """rank_llm 0.26: every window starts at 300 words; a whitespace-only title is a title; an empty instruction leaves
    the query as it is (rank_llm sends query.text)."""
    seen = []
    backend = FunctionBackend(lambda p, n: seen.append(p) or grade_ranker(p, n))
    df = synthetic(1, 15, title=True).assign(text=lambda d: d.text + " " + " ".join(["w"] * 500),
                                             query="  spaced query ", instruction="")
    df.loc[0, "title"] = "   "
    pti.RankZephyr(backend=backend, style="rank_llm_0.26", context_size=None)(df)
    found = window_passages(seen[-1][0])
    assert {len(t.split()) for _, t in found[1:]} == {300} and len(found) == 15
    assert found[0][1].startswith("Title: Content: passage 0 grade") and len(found[0][1].split()) == 300
    user = seen[-1][0][1]["content"]
    assert "search query:   spaced query .\n[1] Title: Content:" in user
    seen.clear()
    pti.RankZephyr(backend=backend, context_size=None)(df)  # the 2024 style: 300 × 20 / 15 words per passage
    assert {len(t.split()) for _, t in window_passages(seen[-1][0])} == {400}
    seen.clear()
    pti.RankZephyr(backend=backend, context_size=None)(df.assign(instruction="only reviews"))  # composed and stripped
    assert "search query: spaced query  only reviews.\n\n[1]" in seen[-1][0][1]["content"]


def test_pickles_before_and_after_loading_and_reloads_lazily(chat_model):
    import pickle
    r = pti.RankZephyr(chat_model, backend_options={"batch_size": 2}, window_size=4, stride=2)
    clone = pickle.loads(pickle.dumps(r))
    assert clone == r and repr(clone) == repr(r) and clone.backend._model is None
    df = synthetic(1, 6)
    first = r(df)
    assert r.backend._model is not None and r.backend._tok is not None
    blob = pickle.dumps(r)
    again = pickle.loads(blob)
    assert again.backend._model is None and again.backend._tok is None and again == r
    pd.testing.assert_frame_equal(again(df), first)  # reloads on first use, same greedy answers
    assert again.backend._model is not None
