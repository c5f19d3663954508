"""Tiny random models of the real architectures, built offline with locally trained tokenizers and saved to a
folder, so that a test loads them through the same ``from_pretrained(local_path)`` path a user's run takes. Each builder
takes a folder and returns the model folder it wrote; :mod:`pyterrier_instruct.testing.standins` installs them at the
hub ids of the presets. Needs the ``[hf]`` extra (torch, transformers, sentencepiece, tokenizers; peft for
:func:`tiny_lora`), imported inside each builder."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path

from .._hub import quiet

__all__ = ["tiny_t5", "tiny_mistral", "tiny_bert", "tiny_llama", "tiny_qwen", "tiny_rank1", "tiny_lora",
           "qwen_tokenizer", "stops_at_once", "quiet", "with_chat_template", "ZEPHYR_TEMPLATE", "QWEN_KINDS",
           "QWEN_SPLIT", "QWEN3_EMBEDDING_QUERY_PROMPT", "RANK1_WORDS", "EXTRA", "CORPUS"]

#: the bundled instruct-mini corpus: the text every tokenizer here is trained on
CORPUS = Path(__file__).parents[1] / "datasets" / "data" / "instruct-mini" / "corpus.jsonl"
EXTRA = ["Query: Document: Relevant: true false yes no (true/false) [INST] [/INST] <<SYS>> Passage:"] * 200


def _texts():
    return [json.loads(line)["text"] for line in open(CORPUS)] + EXTRA


@contextlib.contextmanager
def _no_stdout():
    """File descriptor 1 to the null device (what a C++ library prints bypasses ``sys.stdout``)."""
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def _spm(folder: Path, name: str, vocab_size: int, **kwargs) -> Path:
    import sentencepiece as spm
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "train.txt"
    src.write_text("\n".join(_texts()))
    with _no_stdout():  # sentencepiece's trainer writes an empty line to the process's stdout
        spm.SentencePieceTrainer.train(input=str(src), model_prefix=str(folder / "sp"), vocab_size=vocab_size,
                                       model_type="unigram", character_coverage=1.0, minloglevel=2, **kwargs)
    (folder / "sp.model").rename(folder / name)
    src.unlink()
    (folder / "sp.vocab").unlink()
    return folder / name


def tiny_t5(root: Path, seed: int = 0, d_model: int = 32, layers: int = 2, vocab_size: int = 600) -> str:
    """A T5 (``T5ForConditionalGeneration``) with a sentencepiece vocabulary trained here."""
    import torch
    import transformers
    folder = Path(root) / "t5"
    _spm(folder, "spiece.model", vocab_size, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
         user_defined_symbols=["▁true", "▁false", "▁yes", "▁no"])
    tok = transformers.T5Tokenizer.from_pretrained(str(folder), extra_ids=0, model_max_length=512)
    (folder / "spiece.model").unlink()
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    config = transformers.T5Config(vocab_size=len(tok), d_model=d_model, d_kv=8, d_ff=64, num_layers=layers,
                                   num_decoder_layers=layers, num_heads=4, decoder_start_token_id=0, pad_token_id=0,
                                   eos_token_id=1, n_positions=512)
    transformers.T5ForConditionalGeneration(config).save_pretrained(str(folder))
    return str(folder)


def tiny_mistral(root: Path, seed: int = 0, vocab_size: int = 700, max_position_embeddings: int = 4096) -> str:
    """A Mistral (``MistralForCausalLM``) with a Llama sentencepiece tokenizer (``<s>``/``</s>``,
    ``true``/``false``)."""
    import torch
    import transformers
    folder = Path(root) / "mistral"
    _spm(folder, "tokenizer.model", vocab_size, pad_id=-1, bos_id=1, eos_id=2, unk_id=0,
         user_defined_symbols=["true", "false"], split_digits=True)  # as Llama/Mistral: a digit is a piece
    tok = transformers.LlamaTokenizer.from_pretrained(str(folder), model_max_length=4096, add_bos_token=True)
    (folder / "tokenizer.model").unlink()
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    config = transformers.MistralConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=max_position_embeddings,
                                        bos_token_id=1, eos_token_id=2, sliding_window=None)
    transformers.MistralForCausalLM(config).save_pretrained(str(folder))
    return str(folder)


def tiny_bert(root: Path, seed: int = 0, vocab_size: int = 800) -> str:
    """A BERT sequence classifier (2 labels) with a WordPiece vocabulary trained here."""
    import tokenizers
    import torch
    import transformers
    folder = Path(root) / "bert"
    folder.mkdir(parents=True, exist_ok=True)
    wp = tokenizers.BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(_texts(), vocab_size=vocab_size, show_progress=False,  # its bars: empty lines on stdout
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    wp.save_model(str(folder))
    tok = transformers.BertTokenizer.from_pretrained(str(folder), model_max_length=512)
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    config = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=512, num_labels=2)
    transformers.BertForSequenceClassification(config).save_pretrained(str(folder))
    return str(folder)


def tiny_llama(root: Path, seed: int = 0, vocab_size: int = 700) -> str:
    """A Llama (``LlamaForCausalLM``, Llama-2 architecture at toy size) with a Llama sentencepiece tokenizer
    (``<s>`` BOS, ``</s>`` EOS, no pad token), as the Promptriever/RepLLaMA base."""
    import torch
    import transformers
    folder = Path(root) / "llama"
    _spm(folder, "tokenizer.model", vocab_size, pad_id=-1, bos_id=1, eos_id=2, unk_id=0)
    tok = transformers.LlamaTokenizer.from_pretrained(str(folder), model_max_length=4096, add_bos_token=True,
                                                      add_eos_token=False)
    (folder / "tokenizer.model").unlink()
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                                      bos_token_id=1, eos_token_id=2)
    transformers.LlamaForCausalLM(config).save_pretrained(str(folder))
    return str(folder)


# -- Qwen ------------------------------------------------------------------------------------------
# Qwen2/Qwen3's pre-tokeniser (the regex of their tokenizer.json) over byte-level BPE.
QWEN_SPLIT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
              r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_WORDS = (["yes no true false Judge whether the Document meets the Query and the Instruct relevant Relevance: "
               "query: document: instruction: Passage: Determine if the following passage is relevant"] * 200
              + ["yes", "no", "no\n", "Relevance:"] * 100)
QWEN_KINDS = ("reranker", "reranker-seq-cls", "embedding", "qwen2")
QWEN3_EMBEDDING_QUERY_PROMPT = ("Instruct: Given a web search query, retrieve relevant passages that answer the "
                                "query\nQuery:")


def qwen_tokenizer(folder: Path, vocab_size: int = 800, append_eos: bool = False) -> None:
    """A Qwen-style byte-level BPE tokenizer trained here and saved as ``tokenizer.json`` + ``tokenizer_config.json``
    (``Qwen2Tokenizer``): Qwen's pre-tokeniser regex, ``<|endoftext|>`` (pad), ``<|im_start|>``, ``<|im_end|>`` (eos) as
    special tokens, ``<think>``/``</think>`` as added (non-special) tokens, and ``yes``, ``no``, `` true``, `` false``,
    ``1``, ``0`` single tokens. ``append_eos`` adds Qwen3-Embedding's post-processor, appending ``<|endoftext|>``."""
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                            trainers)
    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    split = pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([split, byte_level])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=QWEN_SPECIAL, show_progress=False)
    tok.train_from_iterator(_texts() + QWEN_WORDS, trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ("<think>", "</think>")])
    if append_eos:
        eos = [("<|endoftext|>", tok.token_to_id("<|endoftext|>"))]
        tok.post_processor = processors.TemplateProcessing(single="$A <|endoftext|>",
                                                           pair="$A <|endoftext|> $B <|endoftext|>", special_tokens=eos)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None,
        "unk_token": None, "model_max_length": 8192, "errors": "replace", "clean_up_tokenization_spaces": False}))
    for word in ("yes", "no", " true", " false", "1", "0"):
        ids = tok.encode(word, add_special_tokens=False).ids
        assert len(ids) == 1, f"tiny Qwen tokenizer: {word!r} is not a single token"


def tiny_qwen(root: Path, kind: str = "reranker", seed: int = 0, hidden_size: int = 64, layers: int = 2,
              max_position_embeddings: int = 4096, vocab_size: int = 800) -> str:
    """A tiny random Qwen model + tokenizer in ``root/qwen-{kind}``, loadable with ``from_pretrained``:

    - ``'reranker'``: ``Qwen3ForCausalLM`` (Qwen3-Reranker's architecture; also rank1-style generation);
    - ``'reranker-seq-cls'``: the sequence-classification conversion of the ``'reranker'`` built with the same seed
      (``Qwen3ForSequenceClassification``, one label, head = ``lm_head[yes] - lm_head[no]``, so sigmoid(logit) =
      p(yes));
    - ``'embedding'``: ``Qwen3Model`` with a tokenizer that appends ``<|endoftext|>`` and the sentence-transformers
      files of Qwen3-Embedding (modules.json, last-token pooling, Normalize, the query prompt);
    - ``'qwen2'``: ``Qwen2ForCausalLM`` (mxbai-rerank-v2's architecture)."""
    import torch
    import transformers
    if kind not in QWEN_KINDS:
        raise ValueError(f"kind must be one of {QWEN_KINDS}, got {kind!r}")
    folder = Path(root) / f"qwen-{kind}"
    qwen_tokenizer(folder, vocab_size=vocab_size, append_eos=kind == "embedding")
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    ids = dict(vocab_size=len(tok), bos_token_id=None, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
               pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"))
    size = dict(hidden_size=hidden_size, intermediate_size=2 * hidden_size, num_hidden_layers=layers,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_position_embeddings,
                tie_word_embeddings=True)
    torch.manual_seed(seed)
    if kind == "qwen2":
        transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**size, **ids)).save_pretrained(str(folder))
        return str(folder)
    config = transformers.Qwen3Config(head_dim=hidden_size // 4, **size, **ids)
    if kind == "embedding":
        transformers.Qwen3Model(config).save_pretrained(str(folder))
        _sentence_transformers_files(folder, hidden_size)
        return str(folder)
    lm = transformers.Qwen3ForCausalLM(config)
    if kind == "reranker":
        lm.save_pretrained(str(folder))
        return str(folder)
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    head = lm.get_output_embeddings().weight.detach()
    config.num_labels, config.architectures = 1, ["Qwen3ForSequenceClassification"]
    cls = transformers.Qwen3ForSequenceClassification(config)
    cls.model.load_state_dict(lm.model.state_dict())
    with torch.no_grad():
        cls.score.weight.copy_((head[yes] - head[no])[None])
    cls.save_pretrained(str(folder))
    return str(folder)


def _sentence_transformers_files(folder: Path, dim: int) -> None:
    """Qwen3-Embedding's sentence-transformers set-up: Transformer → last-token Pooling → Normalize, query prompt."""
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 8192, "do_lower_case": False}))
    (folder / "config_sentence_transformers.json").write_text(json.dumps({
        "prompts": {"query": QWEN3_EMBEDDING_QUERY_PROMPT, "document": ""}, "default_prompt_name": None,
        "similarity_fn_name": "cosine"}))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": dim, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": True, "include_prompt": True}))
    (folder / "2_Normalize").mkdir(exist_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "padding_side": "left"}))


#: The words a :func:`tiny_rank1` model reasons with (each one token of the tiny Qwen tokenizer).
RANK1_WORDS = (" the", " query", " passage", " is")


def tiny_rank1(root: Path, seed: int = 0) -> str:
    """A rank1-style reasoning model: a ``Qwen2ForCausalLM`` (rank1-7b's architecture, one layer) with the tiny Qwen
    tokenizer (:func:`qwen_tokenizer`: `` true``/`` false`` single tokens, ``<think>``/``</think>`` added tokens; rank1
    matches its stop strings on text either way). Its weights are random except for a planted greedy path: ``<think>`` →
    one of :data:`RANK1_WORDS` → more words or ``.`` (the last word may end the text: EOS) → ``.`` → ``</think>`` (with
    `` true`` and `` false`` ranked 2nd/3rd) → `` true`` or `` false``. Ties on the path are broken by the random,
    context-dependent attention layer (the true/false tie centred on this corpus), so rows of different passages stop
    on ``</think> true``, ``</think> false`` or EOS after different numbers of steps, and a small budget leaves them
    unfinished."""
    import torch
    import transformers
    folder = Path(root) / "rank1"
    qwen_tokenizer(folder)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))

    def one(text: str) -> int:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, f"tiny_rank1: {text!r} is not one token: {ids}"
        return ids[0]
    think, end, dot, true, false = map(one, ("<think>", "</think>", ".", " true", " false"))
    words, eos, a = [one(w) for w in RANK1_WORDS], tok.eos_token_id, 12.0
    path = {think: {w: a for w in words}, end: {true: a, false: a}, dot: {end: a, true: a - 1.0, false: a - 1.5}}
    for n, w in enumerate(words):
        path[w] = {dot: a, words[(n + 1) % len(words)]: a, **({eos: a} if n == len(words) - 1 else {})}
    for targets in path.values():
        targets.setdefault(true, -a)
        targets.setdefault(false, -a)
    torch.manual_seed(seed)
    config = transformers.Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                                      eos_token_id=eos, bos_token_id=None, pad_token_id=tok.pad_token_id,
                                      tie_word_embeddings=False)
    model = transformers.Qwen2ForCausalLM(config)
    with torch.no_grad():
        emb = model.model.embed_tokens.weight
        emb.normal_(0.0, 1.0)
        layer = model.model.layers[0]
        for proj, scale in ((layer.self_attn.q_proj, 6.0), (layer.self_attn.k_proj, 6.0),
                            (layer.self_attn.o_proj, 30.0)):
            proj.weight.mul_(scale)  # peaked attention: a context-dependent perturbation of the final state
        layer.mlp.down_proj.weight.zero_()
        states = list(path)
        normed = emb[states] / emb[states].pow(2).mean(-1, keepdim=True).sqrt()
        target = torch.zeros(len(states), len(tok))
        for row, s in enumerate(states):
            for t, logit in path[s].items():
                target[row, t] = logit
        inverse = torch.linalg.pinv(normed)
        head = (inverse @ target).T
        # off the planted path
        tilt = torch.randn(normed.shape[1]) @ (torch.eye(normed.shape[1]) - inverse @ normed) * 0.5
        head[true] += tilt  # the true/false tie follows the context ...
        head[false] -= tilt
        model.lm_head.weight.copy_(head)
        # ... centred on this corpus: about half of its passages end in true
        contexts = [tok(f"Passage: {t[:200]}\n<think> the.</think>", return_tensors="pt")["input_ids"]
                    for t in _texts()[:40]]
        gaps = torch.stack([model(input_ids=c).logits[0, -1, [true, false]] for c in contexts])
        model.lm_head.weight[false] += (gaps[:, 0] - gaps[:, 1]).median() * inverse[:, states.index(end)]
    model.save_pretrained(str(folder))
    return str(folder)


def tiny_lora(root: Path, base: str, base_id: str, seed: int = 1, causal: bool = False) -> str:
    """A LoRA adapter (random, non-zero B) over the local model folder ``base``, whose ``adapter_config.json`` names the
    hub id ``base_id`` as its base (as a published adapter does). Its keys are those of the class it is loaded onto:
    ``AutoModel`` (a dense encoder's: Promptriever, RepLLaMA), or with ``causal`` ``AutoModelForCausalLM``
    (Rank-R1's)."""
    import peft
    import torch
    import transformers
    folder = Path(root) / "lora"
    torch.manual_seed(seed)
    with quiet():  # a causal checkpoint loaded as AutoModel: its lm_head is "unexpected", as in a dense run
        base_model = (transformers.AutoModelForCausalLM if causal else transformers.AutoModel).from_pretrained(base)
    model = peft.get_peft_model(base_model, peft.LoraConfig(
        r=4, lora_alpha=8, init_lora_weights=False, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    model.save_pretrained(str(folder))
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": base_id}))
    return str(folder)


def stops_at_once(model: str, folder=None, seed: int = 2) -> str:
    """Makes the causal model in the local folder ``model`` (a copy in ``folder`` when given) answer its EOS token at
    once: a constant direction added to every token embedding, which the output head's EOS row reads. A generating
    family's stand-in then runs one step per prompt, not its whole budget of random tokens (its answer is empty:
    unparseable, which the family counts and reports)."""
    import torch
    import transformers
    if folder is not None:
        shutil.copytree(model, folder)
        model = str(folder)
    lm = transformers.AutoModelForCausalLM.from_pretrained(model)
    eos = lm.config.eos_token_id
    eos = eos[0] if isinstance(eos, (list, tuple)) else eos
    with torch.no_grad():
        emb = lm.get_input_embeddings().weight
        direction = torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(seed))
        direction /= direction.norm()
        emb += 3.0 * direction  # far above a token's own (std 0.02) and the random layers' contributions
        lm.get_output_embeddings().weight[eos] += 3.0 * direction
        probe = torch.randint(3, emb.shape[0], (4, 24), generator=torch.Generator().manual_seed(seed))
        assert (lm(input_ids=probe).logits[:, -1].argmax(-1) == eos).all(), "stops_at_once: EOS is not greedy"
    lm.save_pretrained(model)
    return model


def with_chat_template(model: str, folder: Path, template: str) -> str:
    """A copy of the local model folder ``model`` whose tokenizer has ``template`` as its chat template."""
    import transformers
    shutil.copytree(model, folder)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    tok.chat_template = template
    tok.save_pretrained(str(folder))
    return str(folder)


#: Qwen2.5's ChatML, enough of it for the tiny Qwen models (system/user/assistant turns, the generation prompt)
QWEN_CHAT_TEMPLATE = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + "
                      "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

#: a Zephyr-style chat template (rank_llm's RankZephyr prompts: <|system|>\n…</s>\n<|user|>\n…</s>\n<|assistant|>\n)
ZEPHYR_TEMPLATE = ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
                   "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + "
                   "message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ "
                   "'<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and "
                   "add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}")
