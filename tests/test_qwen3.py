"""Qwen3-Reranker and Qwen3-Embedding against their reference code on tiny random Qwen3 weights
(``tiny_models.tiny_qwen``): the README's transformers code (QwenLM/Qwen3-Embedding at f4ad0c4, lines 82–131 and
218–259, written out below from the README), mteb 2.x's Qwen3 reranker wrapper, and sentence-transformers configured
from the checkpoint's own files."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyterrier_instruct as pti

DEFAULT = "Given a web search query, retrieve relevant passages that answer the query"
LONG = " ".join(["the fox jumps over a lazy dog while the reader keeps on reading"] * 30)
FRAME = pd.DataFrame({
    "qid": ["1", "1", "1", "2", "2", "2", "3", "3"],
    "query": ["who wrote hamlet", "who wrote hamlet", "who wrote hamlet", "who wrote hamlet", "who wrote hamlet",
              "who wrote hamlet", "tea {text} brewing ", "tea {text} brewing "],
    "instruction": ["", "", "", "Documents about plays are relevant.", "Documents about plays are relevant.",
                    "Documents about plays are relevant.", "Only green tea.", "Only green tea."],
    "docno": ["a", "b", "c", "a", "b", "c", "d", "e"],
    "text": ["Shakespeare wrote Hamlet.", LONG, "no", "Shakespeare wrote Hamlet.", LONG, "no",
             "Green tea is brewed cool.", "x"],
})


# -- the README's reranker code (lines 218-259) ------------------------------------------------------------------------
def readme_reranker(path, rows, max_length=8192, batch_size=3):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    token_false_id, token_true_id = tokenizer.convert_tokens_to_ids("no"), tokenizer.convert_tokens_to_ids("yes")
    prefix = ("<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
              "Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n")
    suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    prefix_tokens = tokenizer.encode(prefix, add_special_tokens=False)
    suffix_tokens = tokenizer.encode(suffix, add_special_tokens=False)
    pairs = [f"<Instruct>: {i or DEFAULT}\n<Query>: {q}\n<Document>: {d}" for i, q, d in rows]
    scores = []
    for start in range(0, len(pairs), batch_size):
        inputs = tokenizer(pairs[start:start + batch_size], padding=False, truncation="longest_first",
                           return_attention_mask=False, max_length=max_length - len(prefix_tokens) - len(suffix_tokens))
        for n, ele in enumerate(inputs["input_ids"]):
            inputs["input_ids"][n] = prefix_tokens + ele + suffix_tokens
        inputs = tokenizer.pad(inputs, padding=True, return_tensors="pt", max_length=max_length)
        with torch.no_grad():
            batch_scores = model(**inputs).logits[:, -1, :]
        batch_scores = torch.stack([batch_scores[:, token_false_id], batch_scores[:, token_true_id]], dim=1)
        scores += torch.nn.functional.log_softmax(batch_scores, dim=1)[:, 1].exp().tolist()
    return np.array(scores)


def rows_of(frame):
    return list(zip(frame["instruction"], frame["query"], frame["text"]))


def same_ranking(a, b):
    return all((np.argsort(-a[g]) == np.argsort(-b[g])).all() for g in FRAME.groupby("qid").indices.values())


@pytest.fixture(scope="module")
def reference(qwen):
    return readme_reranker(qwen["reranker"], rows_of(FRAME))


def test_reranker_equals_the_readme_code(qwen, reference):
    out = pti.Qwen3Reranker(qwen["reranker"], batch_size=3, verbose=False)(FRAME)
    assert list(out.columns[:len(FRAME.columns)]) == list(FRAME.columns) and (out["docno"] == FRAME["docno"]).all()
    assert np.abs(out["score"].to_numpy() - reference).max() < 1e-4
    assert same_ranking(out["score"].to_numpy(), reference)
    # the instruction changes the score (it is in the prompt), and an empty one is the default, not nothing
    assert not np.allclose(reference[:3], reference[3:6])
    assert np.allclose(reference[:3],
                       readme_reranker(qwen["reranker"], [(DEFAULT, q, d) for _, q, d in rows_of(FRAME)[:3]]))


@pytest.mark.parametrize("kwargs", [dict(batch_size=1), dict(batch_size=8), dict(batch_size=2, share_prefix=True)])
def test_reranker_batch_size_and_share_prefix_invariant(qwen, reference, kwargs):
    scores = pti.Qwen3Reranker(qwen["reranker"], verbose=False, **kwargs)(FRAME)["score"].to_numpy()
    assert np.abs(scores - reference).max() < 1e-4


def test_reranker_sequence_classification_conversion_gives_the_same_scores(qwen, reference):
    model = pti.Qwen3Reranker(qwen["reranker-seq-cls"], batch_size=3, verbose=False)
    assert np.abs(model(FRAME)["score"].to_numpy() - reference).max() < 1e-4
    shared = pti.Qwen3Reranker(qwen["reranker-seq-cls"], batch_size=3, share_prefix=True, verbose=False)
    assert np.abs(shared(FRAME)["score"].to_numpy() - reference).max() < 1e-4


def test_reranker_two_label_conversion_gives_the_same_scores(qwen, reference, tmp_path):
    """A conversion whose head is the ``[no, yes]`` rows of ``lm_head`` (two labels): softmax over them is p(yes)."""
    import shutil

    import torch
    import transformers
    lm = transformers.AutoModelForCausalLM.from_pretrained(qwen["reranker"])
    tok = transformers.AutoTokenizer.from_pretrained(qwen["reranker"])
    config = transformers.AutoConfig.from_pretrained(qwen["reranker"], num_labels=2,
                                                     architectures=["Qwen3ForSequenceClassification"])
    cls = transformers.Qwen3ForSequenceClassification(config)
    cls.model.load_state_dict(lm.model.state_dict())
    with torch.no_grad():
        cls.score.weight.copy_(lm.lm_head.weight[[tok.convert_tokens_to_ids("no"), tok.convert_tokens_to_ids("yes")]])
    cls.save_pretrained(str(tmp_path))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{qwen['reranker']}/{name}", tmp_path / name)
    scores = pti.Qwen3Reranker(str(tmp_path), verbose=False)(FRAME)["score"].to_numpy()
    assert np.abs(scores - reference).max() < 1e-4


def test_reranker_truncation_reference_equals_the_readme_on_cut_documents(qwen):
    ref = readme_reranker(qwen["reranker"], rows_of(FRAME), max_length=90)
    cut = pti.Qwen3Reranker(qwen["reranker"], max_length=90, truncation="reference", verbose=False)
    assert np.abs(cut(FRAME)["score"].to_numpy() - ref).max() < 1e-4 and cut.truncated > 0
    # 'safe' keeps the template's fixed parts (the <Instruct>/<Query> labels included: the instruction has its own slot)
    safe = pti.Qwen3Reranker(qwen["reranker"], max_length=140, verbose=False)
    safe(FRAME)
    assert safe.truncated > 0
    with pytest.raises(ValueError, match="template alone"):  # shorter than the template's fixed parts
        pti.Qwen3Reranker(qwen["reranker"], max_length=20, verbose=False)(FRAME)


def test_reranker_instruction_argument_is_the_default(qwen):
    other = "Retrieve passages about plays"
    rows = [(other if not i else i, q, d) for i, q, d in rows_of(FRAME)]
    ref = readme_reranker(qwen["reranker"], rows)
    missing = FRAME.drop(columns="instruction").assign(instruction=FRAME["instruction"].replace("", None))
    out = pti.Qwen3Reranker(qwen["reranker"], instruction=other, verbose=False)(missing)
    assert np.abs(out["score"].to_numpy() - ref).max() < 1e-4
    assert repr(pti.Qwen3Reranker.four_b(batch_size=2)) == "Qwen3Reranker.four_b(batch_size=2)"
    assert pti.Qwen3Reranker.eight_b().model_name_or_path == "Qwen/Qwen3-Reranker-8B"


def test_mteb_reranker_wrapper_side_by_side(qwen, reference):
    """mteb 2.x's Qwen3 reranker wrapper runs the same README code: given our instruction it gives our scores; given
    none it falls back to its own default ("Given the user query, retrieval the relevant passages"), so it differs."""
    from mteb.models.model_implementations.qwen3_reranker import Qwen3RerankerWrapper
    wrapper = Qwen3RerankerWrapper(qwen["reranker"], device="cpu")
    ours = pti.Qwen3Reranker(qwen["reranker"], verbose=False)(FRAME)["score"].to_numpy()
    given = [wrapper.compute_logits(wrapper.process_inputs([wrapper.format_instruction(i or DEFAULT, q, d)]))[0]
             for i, q, d in rows_of(FRAME)]
    assert np.abs(np.array(given) - ours).max() < 1e-4
    mteb_default = [wrapper.compute_logits(wrapper.process_inputs([wrapper.format_instruction(None, q, d)]))[0]
                    for i, q, d in rows_of(FRAME)[:3]]
    assert np.abs(np.array(mteb_default) - ours[:3]).max() > 1e-6


# -- the README's embedding code (lines 82-131) ------------------------------------------------------------------------
def readme_embeddings(path, texts):
    import torch
    import torch.nn.functional as F
    from transformers import AutoModel, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModel.from_pretrained(path).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=8192, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    left_padding = bool((batch["attention_mask"][:, -1].sum() == batch["attention_mask"].shape[0]))
    if left_padding:
        pooled = hidden[:, -1]
    else:
        lengths = batch["attention_mask"].sum(dim=1) - 1
        pooled = hidden[torch.arange(hidden.shape[0]), lengths]
    return F.normalize(pooled, p=2, dim=1).numpy()


def detailed(instruction, query):
    return f"Instruct: {instruction}\nQuery:{query}"


def test_embedding_equals_the_readme_code_and_sentence_transformers(qwen):
    from sentence_transformers import SentenceTransformer
    path = qwen["embedding"]
    model = pti.Qwen3Embedding(path, batch_size=2, verbose=False)
    queries = FRAME.drop_duplicates(["qid"])[["qid", "query", "instruction"]]
    docs = FRAME.drop_duplicates(["docno"])[["docno", "text"]]
    qv = np.stack(model(queries)["query_vec"])
    dv = np.stack(model(docs)["doc_vec"])
    q_strings = [detailed(i or DEFAULT, q) for q, i in zip(queries["query"], queries["instruction"])]
    ref_q, ref_d = readme_embeddings(path, q_strings), readme_embeddings(path, list(docs["text"]))
    st = SentenceTransformer(path, device="cpu")
    st_q = np.stack([st.encode([q], prompt=detailed(i or DEFAULT, ""))
                     for q, i in zip(queries["query"], queries["instruction"])])[:, 0]
    st_d = st.encode(list(docs["text"]))
    for ours, ref in ((qv, ref_q), (dv, ref_d), (qv, st_q), (dv, st_d)):
        assert (np.einsum("ij,ij->i", ours, ref) >= 0.9999).all()
    # the checkpoint's own prompt
    assert np.allclose(st.encode(list(queries["query"][:1]), prompt_name="query"), qv[:1], atol=1e-4)
    scores = model(FRAME)["score"].to_numpy()
    ref_scores = np.einsum("ij,ij->i",
                           readme_embeddings(path, [detailed(i or DEFAULT, q) for i, q, _ in rows_of(FRAME)]),
                           readme_embeddings(path, list(FRAME["text"])))
    assert np.abs(scores - ref_scores).max() < 1e-4 and same_ranking(scores, ref_scores)


def test_embedding_appends_endoftext_once_and_dim_truncates(qwen):
    path = qwen["embedding"]
    model = pti.Qwen3Embedding(path, verbose=False)
    tok = model.embedder().tokenizer
    ids = model.embedder().tokenize(["hello"], 8192)[0]["input_ids"]
    assert ids[-1] == tok.convert_tokens_to_ids("<|endoftext|>") and ids[-2] != ids[-1]
    small = pti.Qwen3Embedding(path, dim=16, verbose=False)
    docs = FRAME.drop_duplicates(["docno"])[["docno", "text"]]
    full, cut = np.stack(model(docs)["doc_vec"]), np.stack(small(docs)["doc_vec"])
    expected = full[:, :16] / np.linalg.norm(full[:, :16], axis=1, keepdims=True)
    assert cut.shape == (len(docs), 16) and np.abs(cut - expected).max() < 1e-5
    assert small.doc_key() != model.doc_key() and small != model
    with pytest.raises(ValueError, match="dim"):
        pti.Qwen3Embedding(path, dim=0)
    assert repr(pti.Qwen3Embedding.eight_b(dim=256)) == "Qwen3Embedding.eight_b(dim=256)"


def test_reproduction_cli_rows(qwen, tmp_path):
    """The new --systems rows (not run by default: the papers did not report them) run on the tiny weights."""
    from pyterrier_instruct.reproduce.cli import main
    out = tmp_path / "followir"
    robust04 = str(Path(os.environ["PYTERRIER_INSTRUCT_DATA"]) / "jhu-clsp" / "robust04-instructions")
    assert main(["followir", "--dataset", "followir/robust04", "--path", robust04, "--out", str(out), "--quiet",
                 "--systems", "bm25,qwen3-reranker,mxbai-rerank-v2,qwen3-embedding", "--qwen3-reranker",
                 qwen["reranker"], "--mxbai-rerank-v2", qwen["qwen2"], "--qwen3-embedding", qwen["embedding"]]) == 0
    table = pd.read_csv(out / "table2.csv")
    # rows are labelled by the checkpoint used (a local folder other than the row's model shows its name)
    assert table["Model"].tolist() == ["BM25 (pool)", "Qwen3-Reranker-0.6B [qwen-reranker, unrevisioned]",
                                       "mxbai-rerank-base-v2 [qwen-qwen2, unrevisioned]",
                                       "Qwen3-Embedding-0.6B [qwen-embedding, unrevisioned]"]
    assert table["robust04 p-MRR"].notna().all()


def test_inf_ir_qwen3_embedding_row(qwen, tmp_path):
    """The qwen3-embedding row of the inf-ir command (MAIR and BRIGHT: full retrieval over the task's corpus)."""
    from pyterrier_instruct.reproduce.cli import main
    argv = ["inf-ir", "--systems", "qwen3-embedding", "--qwen3-embedding", qwen["embedding"], "--out", str(tmp_path),
            "--quiet", "--dataset", "mair/dd-15", "--dataset", "bright/biology"]
    assert main(argv) == 0
    table = pd.read_csv(tmp_path / "table2.csv")
    assert table["Model"].tolist() == ["Qwen3-Embedding-0.6B [qwen-embedding, unrevisioned]"]
    assert table.notna().all().all()
