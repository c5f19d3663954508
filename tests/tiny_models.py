"""Tiny random models of the real architectures, built offline with locally trained tokenizers and saved to a
folder, so tests load them through the same ``from_pretrained(local_path)`` path users take."""
from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).parents[1] / "pyterrier_instruct" / "datasets" / "data" / "instruct-mini" / "corpus.jsonl"
EXTRA = ["Query: Document: Relevant: true false yes no (true/false) [INST] [/INST] <<SYS>> Passage:"] * 200


def _texts():
    return [json.loads(line)["text"] for line in open(CORPUS)] + EXTRA


def _spm(folder: Path, name: str, vocab_size: int, **kwargs) -> Path:
    import sentencepiece as spm
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "train.txt"
    src.write_text("\n".join(_texts()))
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


def tiny_mistral(root: Path, seed: int = 0, vocab_size: int = 700) -> str:
    """A Mistral (``MistralForCausalLM``) with a Llama sentencepiece tokenizer (``<s>``/``</s>``, ``true``/``false``)."""
    import torch
    import transformers
    folder = Path(root) / "mistral"
    _spm(folder, "tokenizer.model", vocab_size, pad_id=-1, bos_id=1, eos_id=2, unk_id=0, user_defined_symbols=["true", "false"])
    tok = transformers.LlamaTokenizer.from_pretrained(str(folder), model_max_length=4096, add_bos_token=True)
    (folder / "tokenizer.model").unlink()
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    config = transformers.MistralConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                                        bos_token_id=1, eos_token_id=2, sliding_window=None)
    transformers.MistralForCausalLM(config).save_pretrained(str(folder))
    return str(folder)


def tiny_bert(root: Path, seed: int = 0) -> str:
    """A BERT sequence classifier (2 labels) with a WordPiece vocabulary trained here."""
    import tokenizers
    import torch
    import transformers
    folder = Path(root) / "bert"
    folder.mkdir(parents=True, exist_ok=True)
    wp = tokenizers.BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(_texts(), vocab_size=800, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
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
    tok = transformers.LlamaTokenizer.from_pretrained(str(folder), model_max_length=4096, add_bos_token=True, add_eos_token=False)
    (folder / "tokenizer.model").unlink()
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                                      bos_token_id=1, eos_token_id=2)
    transformers.LlamaForCausalLM(config).save_pretrained(str(folder))
    return str(folder)


#: The words a :func:`tiny_rank1` model reasons with (each one byte-level BPE token of its tokenizer).
RANK1_WORDS = (" the", " query", " passage", " is")


def tiny_rank1(root: Path, seed: int = 0) -> str:
    """A rank1-style reasoning model: a ``Qwen2ForCausalLM`` (rank1-7b's architecture) with a byte-level BPE tokenizer
    in which ``" true"``/``" false"`` are single tokens and ``<think>``/``</think>`` added tokens (as in Qwen3's
    vocabulary; matching stays on text). Its weights are random except for a planted greedy path: ``<think>`` → one of
    :data:`RANK1_WORDS` → words or ``.`` (the fourth word may end the text, EOS) → ``.`` → ``</think>`` (with ``" true"``
    and ``" false"`` ranked 2nd/3rd) → ``" true"`` or ``" false"``. Ties on the path are broken by the random
    (context-dependent) layers, so rows of different passages stop on ``</think> true``, ``</think> false`` or EOS
    after different numbers of steps, and a small budget leaves them incomplete."""
    import tokenizers
    import torch
    import transformers
    from tokenizers import decoders, models, pre_tokenizers, trainers
    folder = Path(root) / "rank1"
    folder.mkdir(parents=True, exist_ok=True)
    bpe = tokenizers.Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    extra = ["Determine if the following passage is relevant to the query. Answer only with 'true' or 'false'. true false"] * 200
    bpe.train_from_iterator(_texts() + extra, trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    bpe.add_tokens(["<think>", "</think>"])
    tok = transformers.Qwen2TokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                          unk_token=None, bos_token=None, model_max_length=32768)
    tok.save_pretrained(str(folder))

    def one(text: str) -> int:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise AssertionError(f"tiny_rank1: {text!r} is not one token: {ids}")
        return ids[0]
    think, end, dot, true, false = map(one, ("<think>", "</think>", ".", " true", " false"))
    words, eos = [one(w) for w in RANK1_WORDS], tok.eos_token_id
    a = 12.0
    path = {think: {w: a for w in words}, end: {true: a, false: a + 0.0}, dot: {end: a, true: a - 1.0, false: a - 1.5}}
    for n, w in enumerate(words):
        path[w] = {dot: a, words[(n + 1) % len(words)]: a, **({eos: a} if n == len(words) - 1 else {})}
    for targets in path.values():
        targets.setdefault(true, -a)
        targets.setdefault(false, -a)
    torch.manual_seed(seed)
    config = transformers.Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                                      eos_token_id=eos, bos_token_id=None, pad_token_id=eos, tie_word_embeddings=False)
    model = transformers.Qwen2ForCausalLM(config)
    with torch.no_grad():
        emb = model.model.embed_tokens.weight
        emb.normal_(0.0, 1.0)
        layer = model.model.layers[0]
        for proj, scale in ((layer.self_attn.q_proj, 6.0), (layer.self_attn.k_proj, 6.0), (layer.self_attn.o_proj, 30.0)):
            proj.weight.mul_(scale)  # peaked attention: a context-dependent perturbation of the final state
        layer.mlp.down_proj.weight.zero_()
        states = list(path)
        normed = emb[states] / emb[states].pow(2).mean(-1, keepdim=True).sqrt()
        target = torch.zeros(len(states), len(tok))
        for row, s in enumerate(states):
            for t, logit in path[s].items():
                target[row, t] = logit
        head = (torch.linalg.pinv(normed) @ target).T
        free = torch.eye(normed.shape[1]) - torch.linalg.pinv(normed) @ normed  # directions the planted path ignores
        tilt = torch.randn(normed.shape[1]) @ free * 0.5
        head[true] += tilt  # the true/false tie follows the context ...
        head[false] -= tilt
        model.lm_head.weight.copy_(head)
        # ... centred on this corpus: half of its passages end in true
        contexts = [tok(f"Passage: {t[:200]}\n<think> the.</think>", return_tensors="pt")["input_ids"] for t in _texts()[:40]]
        gaps = torch.stack([model(input_ids=c).logits[0, -1, [true, false]] for c in contexts])
        shift = (gaps[:, 0] - gaps[:, 1]).median()
        model.lm_head.weight[false] += shift * torch.linalg.pinv(normed)[:, states.index(end)]
    model.save_pretrained(str(folder))
    return str(folder)
