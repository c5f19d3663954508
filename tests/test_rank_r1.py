"""Rank-R1 against the reference's logic re-run on transformers: ``RankR1SetwiseLlmRanker`` is not in the PyPI release
of llm-rankers, so its ``compare`` (ielab/llm-rankers b36517bf, ``llmrankers/setwise.py`` lines 462-553: shuffle with
the process's ``random``, the toml's messages, the answer pattern on the lower-cased completion, votes) is written out
below on top of llm-rankers 0.0.2's ``SetwiseLlmRanker`` (its heapsort, bubblesort and output, identical at that
commit), with vLLM's ``LLM.chat`` replaced by the chat template + a generator. ``random.seed(929)`` before each query
makes the reference's shuffles those of our per-query ``random.Random(929)``."""
from __future__ import annotations

import os
import random
import re
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from stubs import with_chat_template
from test_setwise import LLM_RANKERS, llmrankers  # noqa: F401 - the fixture

import pyterrier_instruct as pti
from pyterrier_instruct.backends import Continuation
from pyterrier_instruct.setwise.rank_r1 import _AdapterHFBackend
from pyterrier_instruct.testing.models import QWEN_CHAT_TEMPLATE

QWEN_CHAT = QWEN_CHAT_TEMPLATE
PROMPT = {"prompt_system": pti.setwise.rank_r1.SYSTEM, "prompt_user": pti.setwise.rank_r1.USER,
          "pattern": r"<think>.*?</think>\s*<answer>(.*?)</answer>"}


def script(text: str) -> str:
    """A scripted Rank-R1: picks the shown document with the highest hidden grade, answering in one of five forms
    (clean, upper-case tags, no ``<think>``, a label out of range, a label with inner spaces)."""
    shown = re.findall(r"^\[(\d+)\] .*?grade (\d+)", text, re.M)
    if not shown:  # the reference's bubblesort asks about an empty window past a short list
        return "<think>nothing</think><answer></answer>"
    best = max(shown, key=lambda s: int(s[1]))[0]
    kind = sum(int(g) for _, g in shown) % 5
    return ["<think> grade wins </think>\n<answer>[{}]</answer>", "<THINK>x</THINK> <ANSWER> [{}] </ANSWER>",
            "<answer>[{}]</answer>", "<think>y</think><answer>[99]</answer>",
            "<think>z</think><answer>[ {} ]</answer>"][kind].format(best)


def reference_class(setwise):
    """``RankR1SetwiseLlmRanker`` with vLLM's ``LLM.chat`` replaced by ``generate(rendered chats)``."""
    class RankR1Reference(setwise.SetwiseLlmRanker):
        CHARACTERS = [f'[{i+1}]' for i in range(20)]

        def __init__(self, tokenizer, generate, num_child=19, k=10, method="heapsort", num_permutation=1):
            self.prompt, self.tokenizer, self.generate = PROMPT, tokenizer, generate
            self.num_child, self.num_permutation, self.k, self.method = num_child, num_permutation, k, method
            self.scoring, self.total_compare = "generation", 0
            self.total_completion_tokens = self.total_prompt_tokens = 0
            self.seen = []

        def compare(self, query, docs):  # lines 462-553, vLLM's chat replaced
            self.total_compare += 1 if self.num_permutation == 1 else self.num_permutation
            id_passage = [(i, p) for i, p in enumerate(docs)]
            labels = [self.CHARACTERS[i] for i in range(len(docs))]
            batch_data = []
            for _ in range(self.num_permutation):
                batch_data.append([random.sample(id_passage, len(id_passage)), labels])
            batch_ref, input_text = [], []
            for batch in batch_data:
                ref, passages, characters = [], [], []
                for p, c in zip(batch[0], batch[1]):
                    ref.append(p[0])
                    passages.append(p[1].text)
                    characters.append(c)
                batch_ref.append((ref, characters))
                passages = "\n".join([f'{characters[i]} {passages[i]}' for i in range(len(passages))])
                input_text.append([{'role': "system", 'content': self.prompt["prompt_system"]},
                                   {'role': "user",
                                    'content': self.prompt['prompt_user'].format(query=query, docs=passages)}])
            rendered = [self.tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True)
                        for m in input_text]
            self.seen += rendered
            results = []
            for completion in self.generate(rendered):
                match = re.search(rf'{self.prompt["pattern"]}', completion.lower(), re.DOTALL)
                results.append(match.group(1).strip() if match else f'completion:\n{completion}')
            candidates = []
            for ref, result in zip(batch_ref, results):
                result = result.strip()
                docids, characters = ref
                if result not in characters:
                    continue
                candidates.append(docids[characters.index(result)])
            if len(candidates) == 0:
                output = "Unexpected voting."
            else:
                candidate_counts = Counter(candidates)
                max_count = max(candidate_counts.values())
                most_common_candidates = [c for c, count in candidate_counts.items() if count == max_count]
                if len(most_common_candidates) == 1:
                    output = self.CHARACTERS[most_common_candidates[0]]
                else:
                    output = self.CHARACTERS[random.choice(most_common_candidates)]
            return output
    return RankR1Reference


def greedy(folder: str, budget: int):
    """The tokenizer and vLLM's ``LLM.chat`` as the reference uses it, on transformers: one greedy ``generate`` per
    rendered chat (tokenised without special tokens), decoded with ``skip_special_tokens`` (vLLM's default)."""
    import torch
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    lm = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()

    def generate(texts):
        out = []
        for t in texts:
            ids = tok(t, add_special_tokens=False, return_tensors="pt")["input_ids"]
            with torch.no_grad():
                gen = lm.generate(ids, do_sample=False, max_new_tokens=budget, pad_token_id=tok.pad_token_id)
            out.append(tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=True))
        return out
    return tok, generate


@pytest.fixture(scope="module")
def model(qwen, tmp_path_factory):
    return with_chat_template(qwen["qwen2"], tmp_path_factory.mktemp("rank-r1") / "qwen", QWEN_CHAT)


def frame(n_per_query=(25, 9, 21, 2)) -> pd.DataFrame:
    rows = []
    for q, n in enumerate(n_per_query):
        for j in range(n):
            rows.append({"qid": f"q{q}", "query": f"claim {q} about trials", "instruction": "", "docno": f"q{q}d{j}",
                         "text": f"passage {j} grade {(j * 7 + q * 3) % 23} of the study", "score": float(n - j)})
    return pd.DataFrame(rows)


class Scripted(_AdapterHFBackend):
    """The HF backend with :func:`script` in place of generation; records every prompt's token ids."""
    def generate_until(self, token_ids, *, max_new_tokens, stop=(), top_logprobs=20, bar=None):
        tok = self.tokenizer()
        self.seen = getattr(self, "seen", []) + [list(t) for t in token_ids]
        return [Continuation(script(tok.decode(t)), (1, 2), {}, "stop") for t in token_ids]


def reference_run(cls, tok, generate, df, **kwargs):
    from llmrankers.rankers import SearchResult
    ref = cls(tok, generate, **kwargs)
    scores, counts = {}, {}
    for qid, g in df.groupby("qid", sort=False):
        random.seed(929)  # per query: the shuffles of a query ranked first after import
        ranking = [SearchResult(docid=d, score=s, text=ref.truncate(t, 512))
                   for d, s, t in zip(g["docno"], g["score"], g["text"])]
        out = ref.rerank(ref.truncate(g["query"].iloc[0], 32), ranking)
        scores.update({(qid, r.docid): r.score for r in out})
        counts[qid] = ref.total_compare
    return ref, scores, counts


@pytest.mark.parametrize("method,num_child,num_permutation",
                         [("heapsort", 19, 1), ("heapsort", 4, 3), ("bubblesort", 19, 1), ("bubblesort", 3, 2)])
def test_rank_r1_equals_the_reference_logic(llmrankers, model, method, num_child, num_permutation):  # noqa: F811
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(model)
    df = frame()
    cls = reference_class(llmrankers)
    ref, ref_scores, ref_counts = reference_run(cls, tok, lambda texts: [script(t) for t in texts], df,
                                                num_child=num_child, k=10, method=method,
                                                num_permutation=num_permutation)
    backend = Scripted(model)
    ours = pti.RankR1(backend=backend, method=method, num_child=num_child, num_permutation=num_permutation,
                      verbose=False)
    out = ours(df)
    # every comparison's chat, shuffled the same way, tokenised as vLLM's LLM.chat does
    asked = [s for s in ref.seen if len(re.findall(r"^\[\d+\] ", s, re.M)) > 1]  # ours asks no one-document comparison

    def by_query(prompts):  # ours interleaves queries' comparisons (one batch per step): compare each query's sequence
        return sorted(prompts, key=lambda s: re.search(r"claim (\d+)", s).group(1))
    assert by_query(tok.decode(t) for t in backend.seen) == by_query(asked)
    assert len(asked) <= len(ref.seen) == sum(ref_counts.values())
    assert backend.seen[0] == tok(ref.seen[0], add_special_tokens=False)["input_ids"]
    assert {k: v * num_permutation for k, v in ours.comparisons.items()} == ref_counts  # the reference counts shuffles
    got = {(q, d): s for q, d, s in zip(out["qid"], out["docno"], out["score"])}
    assert got == ref_scores
    assert ours.stats["invalid"] > 0 and ours.stats["generations"] > ours.stats["invalid"]
    won = out[out["reasoning"] != ""]
    assert len(won) > 0 and won["reasoning"].str.lower().str.contains("</answer>").all()


def test_rank_r1_on_tiny_weights_equals_the_reference_generation(llmrankers, model):  # noqa: F811
    """Real greedy generation on both sides (transformers ``generate``, skip_special_tokens as vLLM's default) with a
    short budget: the same completions, so the same (parent-keeping) ranking and comparisons; the reasoning column holds
    them."""
    tok, generate = greedy(model, 6)
    df = frame((7, 5))
    ref, ref_scores, ref_counts = reference_run(reference_class(llmrankers), tok, generate, df, num_child=3, k=3)
    ours = pti.RankR1(model, max_output_tokens=6, num_child=3, k=3, verbose=False)
    out = ours(df)
    assert {(q, d): s for q, d, s in zip(out["qid"], out["docno"], out["score"])} == ref_scores
    assert ours.comparisons == ref_counts and ours.stats["generations"] == sum(ref_counts.values())


def test_rank_r1_instruction_lora_vllm_and_errors(model, tmp_path, monkeypatch):
    import fake_vllm
    r = pti.RankR1(model, verbose=False)
    msgs = r.messages("what is x Only recent ones.", ["one", "two"])
    assert msgs[1]["content"].startswith('Given the query: "what is x Only recent ones.", which of the following '
                                         'documents is most relevant?\n[1] one\n[2] two\nAfter completing')
    df = frame((6,)).assign(instruction="Only recent ones.")
    assert set(r.queries(df)) == {"claim 0 about trials Only recent ones."}
    # a LoRA adapter is merged into its base; the tokenizer is the base's
    import peft
    import torch
    import transformers
    torch.manual_seed(1)  # an adapter of the causal LM (as Rank-R1's are), random non-zero B
    base = transformers.AutoModelForCausalLM.from_pretrained(model)
    lora = peft.LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, target_modules=["q_proj", "v_proj"])
    peft.get_peft_model(base, lora).save_pretrained(str(tmp_path / "lora"))
    adapter = str(tmp_path / "lora")
    lora = pti.RankR1(adapter, max_output_tokens=3, num_child=3, k=2, verbose=False)
    a = lora(df)
    assert lora.backend._base_of() == model and lora.backend._model.config.model_type == "qwen2"
    merged = lora.backend._model.model.layers[0].self_attn.q_proj.weight
    plain = transformers.AutoModelForCausalLM.from_pretrained(model).model.layers[0].self_attn.q_proj.weight
    assert not torch.allclose(merged, plain)  # the adapter was merged
    assert len(a) == 6 and a["score"].max() == -1.0
    # vLLM (the stand-in engine): the same token ids as the HF path
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    hf = pti.RankR1(model, max_output_tokens=1, num_child=3, k=2, verbose=False)
    vl = pti.RankR1(model, backend="vllm", max_output_tokens=1, num_child=3, k=2, verbose=False)
    ids, encode = [], hf.input_ids
    hf.input_ids = lambda messages: ids.append(encode(messages)) or ids[-1]
    assert hf(df)["score"].tolist() == vl(df)["score"].tolist()
    sent = [p["prompt_token_ids"] for call in fake_vllm.instances[-1].calls for p in call["prompts"]]
    assert sent == ids and len(ids) == hf.stats["generations"] > 0
    for bad, match in (({"num_child": 20}, "at most 20 documents"), ({"method": "x"}, "method must be one of"),
                       ({"backend": "openai"}, "backend must be"), ({"num_permutation": 0}, "at least 1")):
        with pytest.raises(ValueError, match=match):
            pti.RankR1(**bad)
    with pytest.raises(ValueError, match="size must be one of"):
        pti.RankR1.released("70b")
    assert repr(pti.RankR1.released("14b", k=5)) == "RankR1.released('14b', k=5)"


def test_llm_rankers_is_the_pypi_release(llmrankers):  # noqa: F811
    """The re-implementation above stands on llm-rankers 0.0.2's SetwiseLlmRanker, which has no Rank-R1 class."""
    assert Path(llmrankers.__file__).is_relative_to(LLM_RANKERS) and not hasattr(llmrankers, "RankR1SetwiseLlmRanker")


def test_cli_rank_r1_rows_followir_and_bright(model, tmp_path, monkeypatch):
    """``--systems rank-r1`` on FollowIR (the candidates) and on BRIGHT (``inf-ir``: BM25 top 100), through the vLLM
    stand-in (vLLM's own sampler over the tiny model, 4 tokens a comparison: --reasoning-budget)."""
    import fake_vllm

    from pyterrier_instruct.reproduce.cli import main
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    robust04 = str(Path(os.environ["PYTERRIER_INSTRUCT_DATA"]) / "jhu-clsp" / "robust04-instructions")
    assert main(["followir", "--dataset", "followir/robust04", "--path", robust04, "--out", str(tmp_path / "f"),
                 "--quiet", "--systems", "rank-r1", "--rank-r1", model, "--listwise-backend", "vllm",
                 "--reasoning-budget", "4"]) == 0
    table = pd.read_csv(tmp_path / "f" / "table2.csv")
    assert table["Model"].tolist() == ["Rank-R1-7B [qwen, unrevisioned]"] and table["robust04 p-MRR"].notna().all()
    assert main(["inf-ir", "--systems", "rank-r1", "--rank-r1", model, "--listwise-backend", "vllm",
                 "--reasoning-budget", "4", "--out", str(tmp_path / "b"),
                 "--quiet", "--dataset", "bright/biology"]) == 0
    table = pd.read_csv(tmp_path / "b" / "table2.csv")
    assert table["Model"].tolist() == ["Rank-R1-7B [qwen, unrevisioned]"] and table.notna().all().all()


def test_rank_r1_second_run_through_a_call_store_generates_nothing(model, tmp_path):
    """``store=`` on the backend (here the scripted HF one): the second run reads every comparison from the store."""
    first = Scripted(model, store=tmp_path / "calls")
    out = pti.RankR1(backend=first, num_child=3, k=3, verbose=False)(frame((7, 5)))
    second = Scripted(model, store=tmp_path / "calls")
    again = pti.RankR1(backend=second, num_child=3, k=3, verbose=False)(frame((7, 5)))
    assert len(first.seen) > 0 and getattr(second, "seen", []) == []
    pd.testing.assert_frame_equal(out, again)
