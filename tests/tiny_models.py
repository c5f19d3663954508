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


def tiny_lora(root: Path, base: str, base_id: str, seed: int = 1) -> str:
    """A LoRA adapter (random, non-zero B) over the local model folder ``base``, whose ``adapter_config.json`` names the
    hub id ``base_id`` as its base (as a published adapter does)."""
    import peft
    import torch
    import transformers
    folder = Path(root) / "lora"
    torch.manual_seed(seed)
    model = peft.get_peft_model(transformers.AutoModel.from_pretrained(base), peft.LoraConfig(
        r=4, lora_alpha=8, init_lora_weights=False, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    model.save_pretrained(str(folder))
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": base_id}))
    return str(folder)
