"""Promptable dense retrievers on a tiny random Llama with a LoRA adapter made here: byte-exact
Promptriever/E5/InF-Embed strings, and embeddings equal to a direct re-computation of the reference recipe (template →
tokens → EOS → last hidden state → normalise)."""
import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
import transformers

import pyterrier_instruct as pti
from pyterrier_instruct.dense import BEIR_PROMPTS, BiEncoder, E5Mistral, InFEmbed, Promptriever, RepLLaMA
from pyterrier_instruct import prompts as T
from pyterrier_instruct.instructions import compose_promptriever, compose_promptriever_mteb

# Promptriever Table 10, verbatim (5 and 10 without a final period).
BEIR_LITERALS = [
    "Be careful when assigning relevance as your job is on the line and I will give you a 1000 dollar tip.",
    "Think carefully about these conditions when determining relevance.",
    "A relevant document should also provide a clear and concise explanation, avoiding unnecessary complexity or "
    "ambiguity. When in doubt, prioritize documents that provide a clear, direct, and specific answer to the query.",
    "A document that meets these criteria is considered relevant, while a document that does not meet these criteria "
    "is considered non-relevant.",
    "A relevant document should focus solely on providing a clear and accurate answer to the query, without "
    "distracting or unnecessary information",
    "A document is relevant if it helps to answer the query. Surface relevant documents only.",
    "Relevant documents are those that are topically related, answer the given question, or otherwise provide insight "
    "on the input. Think step by step about whether a document is relevant for this question.",
    "Find relevant documents to the query. Use strict criteria when evaluating relevance: a relevant document here "
    "should provide direct information to either fully answer the query, or provide useful information towards "
    "answering it. Avoid only topically relevant documents.",
    "When judging the relevance of a document, focus on the pragmatics of the query and consider irrelevant any "
    "documents for which the user would have used a different query.",
    "Think carefully about relevance",
]


def tevatron_query(q, p):
    """The tevatron fork's format_query with the script's prefix "query: " (its encoding scripts), re-typed."""
    if p.strip():
        return ("query: " + " " + q.strip() + ("" if q.strip()[-1] in ".?!" else "?") + " " + p.strip()).strip()
    return ("query: " + " " + q.strip()).strip()


def tevatron_passage(title, text):
    return ("passage: " + " " + title.strip() + " " + text.strip()).strip()


QUERIES = pd.DataFrame({
    "qid": ["1", "2", "3", "4", "5"],
    "query": ["what is the capital of france", "What is the ongoing status of The Three Gorges Project?",
              "  dams and fish. ", "Salmon counts!", "ransomware hospitals"],
    "instruction": ["Think carefully about relevance", "A relevant document will provide ...", "", "  Only reports.  ",
                    ""],
})
DOCS = pd.DataFrame({"docno": ["a", "b", "c"], "title": ["Paris", "", " Dams "],
                     "text": ["Paris is the capital of France. " * 3, "  Fish passage counts fell.", "x " * 300]})


# -- strings ---------------------------------------------------------------------------------------
def test_templates_and_prompts_are_byte_identical_to_the_references():
    assert list(BEIR_PROMPTS) == BEIR_LITERALS and len(BEIR_PROMPTS) == 10
    assert (T.PROMPTRIEVER_QUERY, T.PROMPTRIEVER_PASSAGE, T.PROMPTRIEVER_MTEB_PASSAGE) == \
        ("query:  {query}", "passage:  {title} {text}", "passage:  {doc}")
    assert T.E5_QUERY == "Instruct: {task}\nQuery: {query}"
    assert T.IFIR_E5_TASK == "Give a query, retrieval relevant passages"
    assert pti.instructions.E5_EMPTY_INSTRUCTION == \
        "Given a web search query, retrieve relevant passages that answer the query"


def test_promptriever_strings_match_the_tevatron_rule():
    m = Promptriever("unused")
    got = m.query_strings(QUERIES).tolist()
    assert got == [tevatron_query(q, p) for q, p in zip(QUERIES["query"], QUERIES["instruction"])]
    assert got[:2] == ["query:  what is the capital of france? Think carefully about relevance",
                       "query:  What is the ongoing status of The Three Gorges Project? A relevant document will "
                       "provide ..."]
    assert got[2] == "query:  dams and fish." and got[3] == "query:  Salmon counts! Only reports."
    passages = m.passage_strings(DOCS).tolist()
    assert passages == [tevatron_passage(a, b) for a, b in zip(DOCS["title"], DOCS["text"])]
    assert passages[1] == "passage:   Fish passage counts fell."  # empty title: three spaces
    assert m.passage_strings(DOCS.drop(columns=["title"])).tolist()[0].startswith("passage:   Paris is")


def test_promptriever_mteb_and_ifir_styles():
    mteb = Promptriever("unused", style="mteb").query_strings(QUERIES).tolist()
    assert mteb[0] == "query:  what is the capital of france? Think carefully about relevance"
    assert mteb[4] == "query:  ransomware hospitals?"  # mteb adds the ? even without an instruction
    assert compose_promptriever_mteb("  dams and fish. ", "") == "dams and fish."
    assert compose_promptriever("a", "") == "a" and compose_promptriever("a", "b") == "a? b"
    docs = Promptriever("unused", style="mteb").passage_strings(DOCS).tolist()
    assert docs[0].startswith("passage:  Paris Paris is") and docs[1] == "passage:  Fish passage counts fell."
    ifir = Promptriever("unused", style="ifir")
    assert ifir.query_strings(QUERIES).tolist()[0] == \
        "query:  what is the capital of france Think carefully about relevance"
    assert ifir.max_length == 1024 and repr(ifir) == "Promptriever('unused', style='ifir')"


def test_e5_and_inf_embed_strings():
    followir = E5Mistral("unused").query_strings(QUERIES).tolist()
    assert followir[0] == "what is the capital of france Think carefully about relevance"
    assert followir[4] == \
        "ransomware hospitals Given a web search query, retrieve relevant passages that answer the query"
    card = E5Mistral(style="model_card").query_strings(QUERIES).tolist()
    assert card[0] == ("Instruct: Given a web search query, retrieve relevant passages that answer the query\n"
                       "Query: what is the capital of france Think carefully about relevance")
    assert card[2] == \
        "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: dams and fish."
    assert E5Mistral("unused").passage_strings(DOCS).tolist()[2].startswith("Dams  x x")
    assert InFEmbed("unused").query_strings(QUERIES).tolist()[0] == \
        "what is the capital of france Think carefully about relevance"
    assert InFEmbed("unused", style="paper").query_strings(QUERIES).tolist()[0] == \
        "Think carefully about relevance what is the capital of france"
    assert InFEmbed("unused", style="instruct").query_strings(QUERIES).tolist()[4] == \
        "Instruct: \nQuery: ransomware hospitals"
    inf = InFEmbed("unused")
    assert (inf.pooling, inf.padding_side, inf.query_max_length, inf.passage_max_length) == ("last", "left", 256, 512)


def test_presets_name_the_checkpoints():
    assert Promptriever().model_name_or_path == "samaya-ai/promptriever-llama2-7b-v1"
    assert Promptriever.llama3_1().model_name_or_path == "samaya-ai/promptriever-llama3.1-8b-v1"
    assert Promptriever.llama3_1_instruct().model_name_or_path == "samaya-ai/promptriever-llama3.1-8b-instruct-v1"
    assert Promptriever.mistral().model_name_or_path == "samaya-ai/promptriever-mistral-v0.1-7b-v1"
    assert RepLLaMA().model_name_or_path == "samaya-ai/RepLLaMA-reproduced"
    assert RepLLaMA.original().model_name_or_path == "castorini/repllama-v1-7b-lora-passage"
    p = Promptriever()
    assert (p.pooling, p.max_length, p.padding_side, p.normalize, p.dtype) == ("eos", 512, "right", True, "auto")
    assert repr(Promptriever.mistral(batch_size=8)) == "Promptriever.mistral(batch_size=8)"
    assert Promptriever.mistral(batch_size=8) == Promptriever("samaya-ai/promptriever-mistral-v0.1-7b-v1", batch_size=8)
    default = Promptriever("samaya-ai/promptriever-llama2-7b-v1")
    assert Promptriever() == default and hash(Promptriever()) == hash(default)
    assert Promptriever() != Promptriever(style="mteb")
    assert repr(RepLLaMA.original(style="mteb")) == "RepLLaMA.original(style='mteb')" and RepLLaMA() != Promptriever()
    # the default is not a preset; a style is not a checkpoint
    assert not hasattr(Promptriever, "llama2") and not hasattr(E5Mistral, "model_card")
    card = E5Mistral(style="model_card", task=T.IFIR_E5_TASK)
    assert card.task == T.IFIR_E5_TASK and card != E5Mistral(style="model_card")
    assert repr(card) == f"E5Mistral(style='model_card', task={T.IFIR_E5_TASK!r})"


# -- equivalence with the reference recipe ---------------------------------------------------------
@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A tiny random Llama base and a LoRA adapter (random, non-zero B) whose config names the hub base."""
    import peft
    import tiny_models
    root = tmp_path_factory.mktemp("dense-llama")
    base = tiny_models.tiny_llama(root)
    torch.manual_seed(1)
    model = peft.get_peft_model(transformers.AutoModel.from_pretrained(base), peft.LoraConfig(
        r=4, lora_alpha=8, init_lora_weights=False,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
    adapter = root / "adapter"
    model.save_pretrained(str(adapter))
    hub_named = root / "adapter-hub-base"
    shutil.copytree(adapter, hub_named)
    config = json.loads((hub_named / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "meta-llama/Llama-2-7b-hf"
    (hub_named / "adapter_config.json").write_text(json.dumps(config))
    return {"base": base, "adapter": str(adapter), "hub_named": str(hub_named)}


def reference(base, adapter, texts, max_len):
    """Promptriever's encoding done by hand (tevatron fork: BOS, truncate, append EOS, pool EOS, normalise), one text at
    a time (no padding), with the *unmerged* peft model."""
    import peft
    tok = transformers.AutoTokenizer.from_pretrained(base)
    model = peft.PeftModel.from_pretrained(transformers.AutoModel.from_pretrained(base), adapter).eval()
    out = []
    for text in texts:
        ids = tok(text, max_length=max_len - 1, truncation=True, add_special_tokens=True)["input_ids"]
        ids = ids + [tok.eos_token_id]
        assert ids[0] == tok.bos_token_id and len(ids) <= max_len
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1]
        out.append(torch.nn.functional.normalize(hidden, dim=-1).numpy())
    return np.stack(out)


@pytest.mark.parametrize("max_len,padding", [(512, "right"), (24, "right"), (24, "left")])
def test_promptriever_embeddings_equal_the_reference_recipe(llama, max_len, padding):
    model = Promptriever(llama["adapter"], max_length=max_len, padding_side=padding, batch_size=3)
    q_strings, d_strings = model.query_strings(QUERIES), model.passage_strings(DOCS)
    q = model.query_encoder()(QUERIES)
    d = model.doc_encoder()(DOCS)
    np.testing.assert_allclose(np.stack(q["query_vec"]), reference(llama["base"], llama["adapter"], q_strings, max_len),
                               atol=1e-5)
    np.testing.assert_allclose(np.stack(d["doc_vec"]), reference(llama["base"], llama["adapter"], d_strings, max_len),
                               atol=1e-5)
    tok = transformers.AutoTokenizer.from_pretrained(llama["base"])
    reaching = sum(len(tok(s)["input_ids"]) >= max_len - 1 for s in list(q_strings) + list(d_strings))
    assert model.stats.truncated == reaching >= (1 if max_len == 512 else 4)  # the 300-word doc; long queries at 24


def test_lora_merge_matters_and_base_model_override(llama):
    merged = Promptriever(llama["hub_named"], base_model=llama["base"])  # the config names the hub id: override used
    plain = BiEncoder(llama["base"], pooling="eos", query_template=T.PROMPTRIEVER_QUERY, query_slot="promptriever")
    a = np.stack(merged.query_encoder()(QUERIES)["query_vec"])
    b = np.stack(plain.query_encoder()(QUERIES)["query_vec"])
    assert np.abs(a - b).max() > 1e-2
    np.testing.assert_allclose(a, reference(llama["base"], llama["adapter"], merged.query_strings(QUERIES), 512),
                               atol=1e-5)


def test_last_and_mean_pooling_on_the_base(llama):
    tok = transformers.AutoTokenizer.from_pretrained(llama["base"])
    model = transformers.AutoModel.from_pretrained(llama["base"]).eval()
    texts = DOCS["text"].tolist()
    last = InFEmbed(llama["base"], passage_template="{text}", batch_size=2).encode_passages(texts)
    mean = BiEncoder(llama["base"], passage_template="{text}", pooling="mean", padding_side="right")
    mean = mean.encode_passages(texts)
    for n, text in enumerate(texts):
        ids = tok(text, max_length=512, truncation=True)["input_ids"]
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0]
        np.testing.assert_allclose(last[n], torch.nn.functional.normalize(hidden[-1], dim=-1).numpy(), atol=1e-5)
        np.testing.assert_allclose(mean[n], torch.nn.functional.normalize(hidden.mean(0), dim=-1).numpy(), atol=1e-5)


# -- the model as a transformer ---------------------------------------------------------------------
def test_candidates_then_promptriever(llama, mini):
    """``ds.candidates() >> Promptriever(...)`` reranks (PyTerrier coerces nothing: the model is a transformer)."""
    import pyterrier as pt
    model = Promptriever(llama["adapter"], max_length=64)
    assert isinstance(model, pt.Transformer)
    topics = mini.get_topics()[lambda t: t.base_qid.isin(["101", "102"])]
    frame = mini.candidates()(topics)
    out = (mini.candidates() >> model)(topics)
    assert out[["qid", "docno"]].values.tolist() == frame[["qid", "docno"]].values.tolist()
    assert {"title", "text", "instruction", "score_0", "score", "rank"} <= set(out.columns)
    q = np.stack(model.query_encoder()(frame.drop(columns=["docno", "text", "title", "score", "rank"]))["query_vec"])
    d = np.stack(model.doc_encoder()(frame[["docno", "title", "text"]])["doc_vec"])
    np.testing.assert_allclose(out["score"].to_numpy(), (q * d).sum(1), atol=1e-5)
    pd.testing.assert_frame_equal(out, model.scorer()(frame))
    assert model.stats.passage_texts == len(set(model.passage_strings(frame)))  # doc encoder served from the cache
