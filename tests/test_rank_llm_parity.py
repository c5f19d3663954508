"""Parity with rank_llm 0.26.0 itself (its reranker code unchanged, installed by ``make install`` outside
site-packages): rank_llm's ZephyrReranker and VicunaReranker run on a stand-in vLLM engine that records every prompt
(text, token ids, output budget) and answers from a script; SafeOpenai runs with its ``run_llm`` scripted. Our
RankZephyr/RankVicuna/RankGPT with ``style='rank_llm_0.26'`` see the same candidates and the same scripted answers;
every window's prompt must be byte-identical in text and token ids, and the final rankings equal. The repair of
answers is compared with rank_llm's own ``receive_permutation``."""
import asyncio
import re
import shutil
import threading
from collections import Counter
from types import SimpleNamespace

import ftfy
import numpy as np
import pandas as pd
import pytest
from stubs import ZEPHYR_TEMPLATE, with_chat_template

import pyterrier_instruct as pti
from pyterrier_instruct.backends import HFBackend
from pyterrier_instruct.listwise import parse_permutation

FILLER = ("the [12] “quoted” report notes 3 trials café " * 80).split()


#: the queries whose passages are long (5-160 words): their windows overflow a 2048-token context and run the word
#: budget loop (which fixes and counts every passage again per step: the cost of these tests); the others' 1-20 words
LONG = (11,)


def queries():
    """16 queries with 1-100 candidates (short lists, n = window - stride, window-size lists), titles that are empty
    or whitespace-only, bracketed numbers to mask, surrounding spaces, long passages for the word budget (the
    :data:`LONG` queries' 5 windows, first, strided and last)."""
    lengths = [100, 30, 25, 20, 15, 10, 11, 5, 1, 2, 40, 55, 12, 21, 9, 60]
    rng = np.random.default_rng(7)
    rows = []
    for q, n in enumerate(lengths):
        grades = rng.permutation(n)
        query = f"  what is [{q}] in claim {q}? " if q % 3 == 0 else f"claim {q} (trial)"
        for j in range(n):
            title = ["", "   ", f"Study {j}", ""][j % 4]
            words = FILLER[:int(rng.integers(5, 160)) // (1 if q in LONG else 8)]
            rows.append({"qid": f"q{q}", "query": query, "instruction": "", "docno": f"q{q}d{j}", "title": title,
                         "text": f"passage {j} grade {grades[j]} " + " ".join(words), "score": float(n - j)})
    return pd.DataFrame(rows)


def script(text: str) -> str:
    """A scripted model: orders the window's passages by their hidden grade, in one of five forms (clean, repaired
    duplicates/out of range/missing, superscript digits, circled digits, zero-padded ids)."""
    grades = [int(g) for g in re.findall(r"passage \d+ grade (\d+)", text)]
    order = [i + 1 for i in sorted(range(len(grades)), key=lambda i: -grades[i])]
    kind = sum(grades) % 5
    if kind == 1:
        order = order[:-3] + [order[0], len(grades) + 4]
    ids = [str(i) for i in order]
    if kind == 2:
        ids = [i.translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")) for i in ids]
    elif kind == 3:
        ids = [i.translate(str.maketrans("123456789", "①②③④⑤⑥⑦⑧⑨")) for i in ids]
    elif kind == 4:
        ids = [i.zfill(10) for i in ids]
    return " > ".join(f"[{i}]" for i in ids)


class Recorder(HFBackend):
    """Our HF backend with the scripted model (``answer``, :func:`script`) in place of ``generate``: records (text,
    token ids, budget)."""
    answer = staticmethod(script)

    def __init__(self, model_name_or_path, **kwargs):
        super().__init__(model_name_or_path, **kwargs)
        self.seen = []

    def generate(self, prompts, *, max_new_tokens, min_new_tokens=0):
        self.seen += [(p.text, tuple(p.token_ids), max_new_tokens, min_new_tokens) for p in prompts]
        return [self.answer(p.text) for p in prompts]


def fake_vllm(seen, lock, answer=script):
    """The part of vllm that rank_llm 0.26's VllmHandler touches; ``generate`` tokenizes a text prompt as vLLM does
    (``tokenizer.encode(prompt)``, special tokens added) and answers with ``answer`` (:func:`script`)."""
    import transformers

    class Engine:
        def __init__(self, args):
            self.tok = transformers.AutoTokenizer.from_pretrained(args.kw["model"])

        def get_tokenizer(self):
            return self.tok

        async def generate(self, prompt, params, request_id):
            ids = self.tok.encode(prompt)
            with lock:
                seen.append((prompt, tuple(ids), params.max_tokens, params.min_tokens))
            await asyncio.sleep(0)
            yield SimpleNamespace(finished=True, prompt_token_ids=ids,
                                  outputs=[SimpleNamespace(text=answer(prompt), token_ids=[0] * params.max_tokens,
                                                           logprobs=None)])

    return SimpleNamespace(AsyncEngineArgs=lambda **kw: SimpleNamespace(kw=kw),
                           SamplingParams=lambda **kw: SimpleNamespace(**kw),
                           AsyncLLMEngine=SimpleNamespace(from_engine_args=Engine))


def requests_of(df):
    from rank_llm.data import Candidate, Query, Request
    return [Request(Query(g["query"].iloc[0], qid), [Candidate(d, s, {"title": t, "text": x})
                                                     for d, s, t, x in zip(g.docno, g.score, g.title, g.text)])
            for qid, g in df.groupby("qid", sort=False)]


def rankings_of(results):
    return {r.query.qid: [c.docid for c in r.candidates] for r in results}


def our_rankings(out):
    return {q: g.sort_values("rank").docno.tolist() for q, g in out.groupby("qid")}


@pytest.fixture(scope="module")
def models(tiny, tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    zephyr = with_chat_template(tiny["mistral"], root / "zephyr", ZEPHYR_TEMPLATE)
    vicuna = root / "rank_vicuna_7b_v1"  # rank_llm 0.26 sets its Vicuna template for paths containing "rank_vicuna"
    shutil.copytree(tiny["mistral"], vicuna)
    return {"zephyr": zephyr, "vicuna": str(vicuna)}


def compare(ours, theirs):
    """(identical windows, total) after pairing each of rank_llm's windows with ours (by multiset: rank_llm's async
    scheduler interleaves queries)."""
    a, b = Counter(ours), Counter(theirs)
    return sum((a & b).values()), len(theirs)


@pytest.mark.parametrize("family", ["zephyr", "vicuna"])
def test_open_models_match_rank_llm_026_window_by_window(rank_llm_026, models, monkeypatch, family):
    from rank_llm.rerank import vllm_handler
    from rank_llm.rerank.listwise import VicunaReranker, ZephyrReranker, rank_listwise_os_llm
    seen, lock = [], threading.Lock()
    fake = fake_vllm(seen, lock)
    monkeypatch.setattr(rank_listwise_os_llm, "vllm", fake)
    monkeypatch.setattr(vllm_handler, "vllm", fake)
    df = queries()
    path = models[family]
    cls = ZephyrReranker if family == "zephyr" else VicunaReranker
    results = cls(path, context_size=2048, device="cpu").rerank_batch(requests_of(df), rank_start=0, rank_end=100)

    ours = Recorder(path)
    family_cls = pti.RankZephyr if family == "zephyr" else pti.RankVicuna
    r = family_cls(backend=ours, style="rank_llm_0.26", context_size=2048)
    out = r(df)
    assert len(seen) == len(ours.seen) == 37  # windows visited: the same count
    assert compare([s[:2] for s in ours.seen], [s[:2] for s in seen]) == (37, 37)  # prompt text and token ids
    assert compare([s[2:] for s in ours.seen], [s[2:] for s in seen]) == (37, 37)  # output budgets (max, min tokens)
    assert our_rankings(out) == rankings_of(results)
    assert any(len(s[1]) > 1800 for s in seen) and r.stats["repaired"] > 0  # the budget loop and the repair both ran
    if family == "vicuna":
        assert seen[0][0].startswith("You are RankLLM") and seen[0][0].endswith(" ASSISTANT:")
    else:
        # the 2024 default differs from 0.26 in every window (blank line after the prefix, closing sentence, budget)
        old = Recorder(path)
        pti.RankZephyr(backend=old, context_size=2048)(df)
        assert compare([s[:2] for s in old.seen], [s[:2] for s in seen])[0] == 0


def test_rank_gpt_matches_rank_llm_026_window_by_window(rank_llm_026, models, monkeypatch):
    import openai
    import transformers
    from rank_llm.rerank.listwise.rank_gpt import SafeOpenai
    for attr in ("api_key", "api_type", "proxy"):  # SafeOpenai sets these on the openai module
        monkeypatch.setattr(openai, attr, getattr(openai, attr, None), raising=False)
    tok = transformers.AutoTokenizer.from_pretrained(models["zephyr"])
    seen, lock = [], threading.Lock()

    def run_llm(prompt, current_window_size=None):
        text = ftfy.fix_text(tok.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True))
        with lock:
            seen.append((text, tuple(tok(text)["input_ids"])))
        return script(text), None, {}

    gpt = SafeOpenai("gpt-4o", context_size=10 ** 6,
                     prompt_template_path=str(rank_llm_026 / "rank_llm" / "rerank" / "prompt_templates"
                                              / "rank_gpt_template.yaml"),
                     keys="sk-not-used")
    monkeypatch.setattr(gpt, "run_llm", run_llm)
    monkeypatch.setattr(gpt, "get_num_tokens", lambda prompt: 0)  # tiktoken's files aren't offline; no budget loop here
    monkeypatch.setattr(gpt, "num_output_tokens", lambda *a: 0)
    df = queries()
    results = gpt.rerank_batch(requests_of(df), rank_start=0, rank_end=100)

    ours = Recorder(models["zephyr"])
    out = pti.RankGPT(backend=ours, style="rank_llm_0.26", context_size=None)(df)
    assert compare([s[:2] for s in ours.seen], seen) == (37, 37)
    assert our_rankings(out) == rankings_of(results)
    old = Recorder(models["zephyr"])
    pti.RankGPT(backend=old, context_size=None)(df)  # the RankGPT repository's prompt: a space before the line breaks
    assert compare([s[:2] for s in old.seen], seen)[0] == 0


@pytest.mark.parametrize("answer",
                         ["[²] > [³] > [¹]", "[①] > [❸] > [②]", "[0000000002] > [3] > [0000000001]", "[2] > [2] > [9]",
                          "²>¹", "[３] > [１]", "</think>[3] > [1]", "rank: 3, 1, 2", "", "[0] > [2]",
                          "[₂] > [₁]", "[🄂] > [🄃]", "[1] > [00000000000000000000000000000000003]"])
def test_repair_matches_rank_llm_026(rank_llm_026, answer):
    from rank_llm.data import Candidate, Query, Result
    from rank_llm.rerank.listwise.listwise_rankllm import ListwiseRankLLM
    result = Result(Query("q", "1"), [Candidate(str(i), 1.0, {}) for i in range(3)])
    reranker = SimpleNamespace(_use_alpha=False, _remove_duplicate=lambda r: list(dict.fromkeys(r)))
    theirs = [c.docid for c in ListwiseRankLLM.receive_permutation(reranker, result, answer, 0, 3).candidates]
    order, _ = parse_permutation(answer, 3)
    assert [str(i) for i in order] == theirs
