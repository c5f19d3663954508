"""Setwise against llm-rankers 0.0.2 itself (``SetwiseLlmRanker``, PyPI, installed by ``make install`` outside
site-packages) on tiny random Flan-T5 and Llama models: the same candidates, the same comparisons (prompt text, token
ids), label token ids, comparisons per query, final order and −rank scores, for heapsort and bubblesort, num_child 2
and 3, generation and likelihood. The models' label tokens are boosted so that most answers are labels and the sorts
really swap. Then the parts the reference lacks: any causal model, likelihood on causal models, the instruction slot,
the vLLM backend (the stand-in of tests/fake_vllm.py), pt.Experiment with p-MRR."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from stubs import with_chat_template

import pyterrier_instruct as pti

#: Where ``make install`` puts llm-rankers 0.0.2:
#: ``pip install --no-deps --target $(VENV)/llm_rankers_0.0.2 llm-rankers==0.0.2``.
LLM_RANKERS = Path(os.environ.get("LLM_RANKERS_002", Path(sys.prefix) / "llm_rankers_0.0.2"))
LLAMA_CHAT = ("{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'].strip() + "
              "' [/INST]' }}{% else %}{{ ' ' + m['content'] + ' ' + eos_token }}{% endif %}{% endfor %}")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVW"
LENGTH = 24  # query_length = passage_length in the parity runs (llm-rankers run.py: 128; shorter keeps the tests fast)


@pytest.fixture(scope="module")
def llmrankers():
    """llm-rankers 0.0.2's setwise module (its folder on sys.path for this module). transformers 5 removed
    ``batch_encode_plus``, which its T5 path calls once: the v4 behaviour (``__call__`` on the batch) is supplied."""
    if not (LLM_RANKERS / "llmrankers" / "setwise.py").exists():
        pytest.skip(f"llm-rankers 0.0.2 is not installed in {LLM_RANKERS} (run `make install`, or pip install "
                    f"--no-deps --target {LLM_RANKERS} llm-rankers==0.0.2)")
    import transformers
    sys.path.insert(0, str(LLM_RANKERS))
    patched = not hasattr(transformers.T5Tokenizer, "batch_encode_plus")
    if patched:
        transformers.T5Tokenizer.batch_encode_plus = lambda self, texts, **kw: self(texts, **kw)
    try:
        import llmrankers.setwise as setwise
        assert Path(setwise.__file__).is_relative_to(LLM_RANKERS), setwise.__file__
        yield setwise
    finally:
        sys.path.remove(str(LLM_RANKERS))
        if patched:
            del transformers.T5Tokenizer.batch_encode_plus
        for name in [m for m in sys.modules if m == "llmrankers" or m.startswith("llmrankers.")]:
            del sys.modules[name]


def boost_labels(folder: str, factor: float = 8.0, lower: bool = True, labels: str = "AB") -> None:
    """Scales the output rows of the tokens that read as one of ``labels`` (``A``/``▁A``; with ``lower`` also
    ``a``/``▁a``, which a chat model's answer reads upper-cased) so that greedy answers are mostly labels, which label
    still depending on the context (the first two: answers inside every comparison of two documents or more)."""
    import torch
    import transformers
    config = transformers.AutoConfig.from_pretrained(folder)
    cls = transformers.AutoModelForSeq2SeqLM if config.is_encoder_decoder else transformers.AutoModelForCausalLM
    model, tok = cls.from_pretrained(folder), transformers.AutoTokenizer.from_pretrained(folder)
    vocab = tok.get_vocab()
    ids = sorted({vocab[t] for c in labels
                  for t in (c, "▁" + c) + ((c.lower(), "▁" + c.lower()) if lower else ()) if t in vocab})
    with torch.no_grad():
        head = model.get_output_embeddings().weight
        head[ids] *= factor
    model.save_pretrained(folder)


@pytest.fixture(scope="module")
def models(tiny, tmp_path_factory):
    import shutil
    import tiny_models
    root = tmp_path_factory.mktemp("setwise")
    t5 = str(root / "t5")
    shutil.copytree(tiny["t5"], t5)
    boost_labels(t5, lower=False)
    llama = with_chat_template(tiny_models.tiny_llama(root / "base"), root / "llama", LLAMA_CHAT)
    boost_labels(llama)
    return {"t5": t5, "llama": llama}


def frame(mini, lengths=(11, 6, 9, 7)) -> pd.DataFrame:
    """Queries of the mini benchmark with the first ``lengths`` candidates each (titles included)."""
    cands = mini.candidates()(mini.get_topics("og").iloc[:len(lengths)])
    parts = [g.head(n) for (_, g), n in zip(cands.groupby("qid", sort=False), lengths)]
    df = pd.concat(parts, ignore_index=True)
    df["title"] = ["" if i % 3 else f"Title {i}" for i in range(len(df))]
    df["instruction"] = ""  # the reference has no instruction: its prompt is ours with an empty one
    return df


def reference_run(setwise, model, df, **kwargs):
    """llm-rankers' run: per query, ``rerank(truncate(query, n), [SearchResult(docno, score, truncate(title text,
    n))])`` (llm-rankers ``run.py``); records every comparison's input text and the per-query ``total_compare``.

    Its ``compare`` is wrapped where ours differs on purpose (docs/rerankers.md): a comparison of one document or none
    (bubblesort's windows past the end; the reference's likelihood fails on an empty one with IndexError) is counted
    and answered ``A`` without the model, and an answer naming a label outside the comparison is read as ``A`` (the
    reference's bubblesort would swap in a document outside the window, or fail with IndexError). ``substituted``
    counts both."""
    from llmrankers.rankers import SearchResult
    ranker = setwise.SetwiseLlmRanker(model, None, "cpu", **kwargs)
    seen, compare, substituted = [], ranker.compare, {"short": 0, "outside": 0}

    def wrapped(query, docs):
        if len(docs) <= 1:
            ranker.total_compare += 1
            substituted["short"] += 1
            return "A"
        seen.append((query, [d.text for d in docs]))
        answer = compare(query, docs)
        if answer in ranker.CHARACTERS[len(docs):]:
            substituted["outside"] += 1
            return "A"
        return answer

    ranker.compare = wrapped
    scores, counts, prompts = {}, {}, {}
    for qid, g in df.groupby("qid", sort=False):
        texts = [f"{t} {x}" if t else x for t, x in zip(g["title"], g["text"])]
        ranking = [SearchResult(docid=d, score=s, text=ranker.truncate(x, LENGTH))
                   for d, s, x in zip(g["docno"], g["score"], texts)]
        start = len(seen)
        out = ranker.rerank(ranker.truncate(g["query"].iloc[0], LENGTH), ranking)
        scores.update({(qid, r.docid): r.score for r in out})
        counts[qid] = ranker.total_compare
        prompts[qid] = seen[start:]
    return ranker, scores, counts, prompts, substituted


def ours_run(model, df, **kwargs):
    r = pti.Setwise(model, backend_options={"batch_size": 4}, query_length=LENGTH, passage_length=LENGTH, verbose=False,
                    **kwargs)
    seen = {}
    compare = r._compare

    def recording(items):
        for q, query, passages, _ in items:
            seen.setdefault(q, []).append((query, list(passages)))
        return compare(items)

    r._compare = recording
    out = r(df)
    return r, out, seen


CASES = [(model, scoring, method, child)
         for model, scorings in (("t5", ("generation", "likelihood")), ("llama", ("generation",)))
         for scoring in scorings for method in ("heapsort", "bubblesort") for child in (2, 3)]


@pytest.mark.parametrize("model,scoring,method,num_child", CASES)
def test_setwise_equals_llm_rankers(llmrankers, models, mini, model, scoring, method, num_child):
    df = frame(mini)
    ref, ref_scores, ref_counts, ref_prompts, substituted = reference_run(llmrankers, models[model], df,
                                                                          num_child=num_child, k=4,
                                                                          scoring=scoring, method=method)
    ours, out, seen = ours_run(models[model], df, num_child=num_child, k=4, scoring=scoring, method=method)
    if method == "heapsort":
        assert substituted["short"] == 0  # heapsort compares a node with at least one child
    qids = list(dict.fromkeys(df["qid"]))
    # the comparisons: same documents, same prompts, in the same order, per query
    index = {qid: q for q, qid in enumerate(qids)}
    for qid in qids:
        assert seen.get(index[qid], []) == ref_prompts[qid]
    assert ours.comparisons == ref_counts
    assert sum(ref_counts.values()) > len(qids)
    # label token ids (T5) and the model input of one comparison
    query, docs = ref_prompts[qids[0]][0]
    text = ours.prompt(query, docs)
    if model == "t5":
        assert ours.label_ids() == ref.target_token_ids.tolist()
        assert ours.input_ids(query, docs) == ref.tokenizer(text).input_ids
    else:
        chat = ref.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                 add_generation_prompt=True)
        assert ours.input_ids(query, docs) == ref.tokenizer(chat + " Passage:").input_ids
        assert ours.input_ids(query, docs)[:2] == [ref.tokenizer.bos_token_id] * 2  # the reference's doubled BOS, kept
    # final order and -rank scores
    got = {(q, d): s for q, d, s in zip(out["qid"], out["docno"], out["score"])}
    assert got == ref_scores
    moved = sum(s != -r for qid, g in df.groupby("qid", sort=False)
                for r, (d, s) in enumerate(((d, got[(qid, d)]) for d in g["docno"]), 1))
    # heapsort really swapped documents; in bubblesort the tiny models may answer A throughout (their label preference
    # hardly depends on the passages at this size): its swaps are checked against the reference's code in
    # test_sorts_equal_the_reference_sorts
    assert moved > 0 or method == "bubblesort"
    assert (out.groupby("qid")["rank"].apply(lambda r: sorted(r) == list(range(len(r))))).all()


def test_setwise_prompt_is_the_reference_text_and_takes_the_instruction(models, llmrankers):
    r = pti.Setwise(models["t5"])
    text = r.prompt("what is x", ["one", "two"])
    assert text == \
        ('Given a query "what is x", which of the following passages is the most relevant one to the query?\n\n'
         'Passage A: "one"\n\nPassage B: "two"\n\nOutput only the passage label of the most relevant passage:')
    df = pd.DataFrame({"qid": ["1", "1"], "query": ["what is x", "what is x"], "instruction": ["Only recent ones.", ""],
                       "docno": ["a", "b"], "text": ["one", "two"]})
    assert r.queries(df) == ["what is x Only recent ones.", "what is x"]


def test_causal_models_beyond_the_reference(models, mini, tiny):
    """Mistral (not Llama: the reference refuses it) and likelihood on a causal model (label-token logits): ours."""
    import transformers
    df = frame(mini, (8, 5))
    mistral = with_chat_template(tiny["mistral"], Path(models["llama"]).parent / "mistral", LLAMA_CHAT)
    r = pti.Setwise(mistral, scoring="likelihood", num_child=3, k=3, verbose=False)
    out = r(df)
    tok = transformers.AutoTokenizer.from_pretrained(mistral)
    ids = r.label_ids()
    assert ids == [tok(f" Passage: {c}", add_special_tokens=False)["input_ids"][-1] for c in LETTERS]
    assert len(set(ids)) == len(LETTERS)
    # each comparison's winner is the argmax of the label logits: rerun one comparison by hand
    model = transformers.AutoModelForCausalLM.from_pretrained(mistral)
    query, docs = r.queries(df.iloc[:1])[0], r.passages(df.iloc[:4])
    import torch
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([r.input_ids(query, docs)])).logits[0, -1]
    assert r._compare([(0, query, docs, [0, 1, 2, 3])]) == [int(torch.argmax(logits[ids[:4]]))]
    assert sorted(out.groupby("qid")["score"].min()) == [-8.0, -5.0] and r.stats["comparisons"] > 0


def test_vllm_backend_equals_hf(models, mini, monkeypatch):
    """The vLLM path (the stand-in engine of tests/fake_vllm.py): the same token ids, the same answers, the same ranking
    as transformers, for generation (one greedy token) and likelihood (``answer_logits`` on the label tokens)."""
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    df = frame(mini, (9, 6))
    for scoring in ("generation", "likelihood"):
        hf = pti.Setwise(models["llama"], scoring=scoring, num_child=3, k=3, verbose=False)
        vl = pti.Setwise(models["llama"], backend="vllm", scoring=scoring, num_child=3, k=3, verbose=False)
        ids, encode = [], hf.input_ids
        hf.input_ids = lambda query, passages: ids.append(encode(query, passages)) or ids[-1]
        a, b = hf(df), vl(df)
        assert a["score"].tolist() == b["score"].tolist() and hf.comparisons == vl.comparisons
        engine = fake_vllm.instances[-1]
        assert engine.init_args["logprobs_mode"] == "processed_logprobs"
        sent = [p["prompt_token_ids"] for call in engine.calls for p in call["prompts"]]
        assert len(sent) == hf.stats["comparisons_asked"]
        assert sorted(sent) == sorted(ids)  # likelihood requests go by comparison size


def test_setwise_experiment_pmrr_and_errors(models, mini):
    r = pti.Setwise(models["t5"], scoring="likelihood", num_child=3, k=5, verbose=False)
    first = mini.candidates() % 8
    topics = mini.get_topics()
    topics = topics[topics["base_qid"].isin(topics["base_qid"].unique()[:3])]  # 3 of the 10 og/changed pairs
    res = pt.Experiment([first, first >> r], topics, mini.get_qrels(), [pti.pMRR],
                        names=["first", "setwise"])
    assert res["name"].tolist() == ["first", "setwise"] and res["pMRR"].notna().all()
    with pytest.raises(ValueError, match="scoring must be one of"):
        pti.Setwise(scoring="logits")
    with pytest.raises(ValueError, match="method must be one of"):
        pti.Setwise(method="quicksort")
    with pytest.raises(ValueError, match="at most 22 children"):
        pti.Setwise(num_child=23)
    with pytest.raises(ValueError, match="backend_options for 'hf'"):
        pti.Setwise(backend_options={"tensor_parallel_size": 2})


def test_sorts_equal_the_reference_sorts(llmrankers):
    """The sorts alone against llm-rankers' own heapSort/bubblesort/output code (its ``compare`` answered by an oracle,
    no model): the same comparisons, order, −rank scores and ``total_compare`` on many list lengths, num_child and k;
    heapsort finds the true top k."""
    from llmrankers.rankers import SearchResult
    from pyterrier_instruct.setwise import sort
    rng = np.random.default_rng(3)
    cases = [(n, child, k) for n in (1, 2, 5, 9, 20, 30) for child in (1, 2, 3, 19) for k in (1, 4, 10)]
    for method in ("heapsort", "bubblesort"):  # the reference's (bubblesort_exact: below)
        for n, child, k in cases:
            if method == "bubblesort" and k >= n:
                continue  # the reference compares past the end of the list (empty windows; IndexError on a swap)
            grades = rng.permutation(n).tolist()
            ref = object.__new__(llmrankers.SetwiseLlmRanker)
            ref.num_child, ref.k, ref.method, ref.total_compare, ref.num_permutation = child, k, method, 0, 1
            asked = []

            def oracle(query, docs):
                ref.total_compare += 1
                asked.append([int(d.docid) for d in docs])
                return ref.CHARACTERS[int(np.argmin([grades[int(d.docid)] for d in docs]))] if docs else "A"
            ref.compare = oracle
            out = ref.rerank("q", [SearchResult(docid=str(i), score=0.0, text="") for i in range(n)])
            arr = list(range(n))
            ours = []

            def compare(items):
                ours.extend(docs for _, docs in items)
                return [int(np.argmin([grades[d] for d in docs])) for _, docs in items]
            counts = sort.run([sort.SORTS[method](arr, child, k)], compare)
            assert ours == [a for a in asked if len(a) > 1], (method, n, child, k)
            assert counts == [ref.total_compare], (method, n, child, k)
            assert sort.scores(arr, list(range(n)), k) == {int(r.docid): r.score for r in out}, (method, n, child, k)
            if method == "heapsort":
                assert [grades[d] for d in arr[:min(k, n)]] == list(range(min(k, n)))


def _perfect_judge_misses(method, lists, reference=None) -> list:
    """The lists (``(grades, num_child, k)``, grade 0 the best document) whose k best documents are not the first k
    after a sort with a judge that always picks the best document: ours by ``method``, or llm-rankers' ``rerank`` with
    ``reference`` (its setwise module)."""
    from pyterrier_instruct.setwise import sort
    missed = []
    for case, (grades, child, k) in enumerate(lists):
        if reference is None:
            arr = list(range(len(grades)))
            sort.run([sort.SORTS[method](arr, child, k)], lambda items: [docs.index(min(docs, key=grades.__getitem__))
                                                                         for _, docs in items])
        else:
            from llmrankers.rankers import SearchResult
            ref = object.__new__(reference.SetwiseLlmRanker)
            ref.num_child, ref.k, ref.method, ref.total_compare = child, k, method, 0
            ref.compare = lambda query, docs: ref.CHARACTERS[  # default: an empty window past the top
                min(range(len(docs)), key=lambda j: grades[int(docs[j].docid)], default=0)]
            out = ref.rerank("q", [SearchResult(docid=str(i), score=0.0, text="") for i in range(len(grades))])
            arr = [int(r.docid) for r in out]
        if sorted(grades[d] for d in arr[:k]) != list(range(k)):  # order aside: a document of the k best is missing
            missed.append(case)
        elif reference is None and method != "bubblesort":
            assert [grades[d] for d in arr[:k]] == list(range(k)), (method, case)  # and best first
    return missed


def test_bubblesort_misses_the_top_k_as_the_reference_does_and_the_exact_variant_does_not(llmrankers):
    """3,000 random lists (numpy ``default_rng(0)``: length 2-30, num_child 1-4, k 1 to length - 1, grades a random
    permutation) sorted with a perfect judge: llm-rankers' bubblesort (its ``last_start`` shortcut) misses the true
    top k of 461 (the review's generator, not recorded, gave 451: docs/rerankers.md), ours the same lists;
    ``bubblesort_exact`` misses none and ranks the k best in order."""
    rng = np.random.default_rng(0)
    lists = []
    for _ in range(3000):
        n = int(rng.integers(2, 31))
        lists.append((rng.permutation(n).tolist(), int(rng.integers(1, 5)), int(rng.integers(1, n))))
    missed = _perfect_judge_misses("bubblesort", lists)
    assert len(missed) == 461 and missed == _perfect_judge_misses("bubblesort", lists, llmrankers)
    assert _perfect_judge_misses("bubblesort_exact", lists) == []
    for family in (pti.Setwise, pti.RankR1):  # the option, one value of method
        assert "method='bubblesort_exact'" in repr(family(method="bubblesort_exact"))


def test_followir_cli_setwise_row(models, tmp_path):
    """``--systems setwise`` (not run by default: the FollowIR paper did not report it) runs on the tiny weights."""
    from pyterrier_instruct.reproduce.cli import main
    robust04 = str(Path(os.environ["PYTERRIER_INSTRUCT_DATA"]) / "jhu-clsp" / "robust04-instructions")
    assert main(["followir", "--dataset", "followir/robust04", "--path", robust04, "--out", str(tmp_path), "--quiet",
                 "--systems", "bm25,setwise", "--setwise", models["t5"]]) == 0
    table = pd.read_csv(tmp_path / "table2.csv")
    assert table["Model"].tolist() == ["BM25 (pool)", "Setwise (Flan-T5-large) [t5, unrevisioned]"]
    assert table["robust04 p-MRR"].notna().all()
