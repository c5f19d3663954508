"""Setwise reranking (Zhuang et al., SIGIR 2024, "A Setwise Approach for Effective and Highly Efficient Zero-shot
Ranking with Large Language Models"; ielab/llm-rankers ``llmrankers/setwise.py``, PyPI 0.0.2, ``SetwiseLlmRanker`` lines
15-310): the model picks the most relevant of ``num_child + 1`` passages labelled ``A``, ``B``, …; heapsort or
bubblesort turn the picks into the top ``k``.

As the reference: the prompt (lines 76-78), Flan-T5 (``<pad> Passage`` as the decoder prefix; generation: two new
tokens, the last character of the decoded text, lines 80-95; likelihood: the full-vocabulary softmax at the labels'
token ids, lines 173-183) and chat models (the chat template, then `` Passage:``, one greedy token, stripped and
upper-cased, lines 153-171). Ours beyond the reference: any causal model with a chat template (the reference accepts
``model_type == 'llama'`` only), likelihood scoring on causal models (the next-token logits of the label tokens
`` A``, `` B``, … after `` Passage:``), the comparisons of all queries of a frame batched, and a vLLM backend for causal
models."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .._hub import from_pretrained
from .._torch import by_length, hf_setup
from ..backends import Prompt, VLLMBackend
from ..prompts import fill
from .base import SetwiseBase

__all__ = ["Setwise"]

#: The reference's labels (``CHARACTERS``, lines 16-17): 23 letters, so at most 23 passages per comparison.
LABELS = tuple("ABCDEFGHIJKLMNOPQRSTUVW")
#: The prompt (lines 76-78): ``{query}`` inside double quotes is the query slot (the instruction follows the query).
PROMPT = ('Given a query "{query}", which of the following passages is the most relevant one to the '
          'query?\n\n{passages}\n\nOutput only the passage label of the most relevant passage:')
PASSAGE = 'Passage {label}: "{text}"'
PASSAGE_SEPARATOR = "\n\n"
#: T5's decoder prefix (line 45) and the text appended to a chat model's rendered prompt (line 157)
T5_PREFIX, CHAT_SUFFIX = "<pad> Passage", " Passage:"
SCORINGS = ("generation", "likelihood")
HF_OPTIONS = ("batch_size", "device", "dtype")


class Setwise(SetwiseBase):
    """Setwise reranking with Flan-T5 or a chat model (heapsort or bubblesort over ``num_child + 1`` passages).

    Args:
        model_name_or_path: a Flan-T5 (``google/flan-t5-large``, the default; ``-xl``, ``-xxl``) or a causal chat model
            (the paper: ``meta-llama/Llama-2-7b-chat-hf``, ``-13b``; any model with a chat template here).
        backend: ``'hf'`` (transformers; T5 and causal) or ``'vllm'`` (causal models only).
        backend_options: ``'hf'``: ``batch_size`` (8), ``device``, ``dtype``; ``'vllm'``: VLLMBackend's arguments.
        scoring: ``'generation'`` (the reference's default) or ``'likelihood'``.
        method: ``'heapsort'`` (default), ``'bubblesort'`` (the reference's, which can miss the top k) or
            ``'bubblesort_exact'`` (every pass from the bottom; docs/rerankers.md).
        num_child: children per heap node / window step (3): ``num_child + 1`` passages per comparison, at most 23.
        k: the number of documents sorted to the top (10); the others follow in first-stage order.
        query_length, passage_length: tokens kept of the query and of ``"{title} {text}"`` (llm-rankers ``run.py``:
            128).
        chat_template: replaces the causal model's chat template (e.g. Vicuna's, as the reference for ``v1.5`` names).
        text_field, title_field: passage columns.
        instruction: used when the input has no ``instruction`` column (``f"{query} {instruction}"``).
        verbose: a progress bar over the queries.

    Output: every input column; ``score`` = −1 … −k for the sorted top k, then the rest in first-stage order (the
    reference's scores), ``score_0``; ``comparisons`` and ``stats`` as docs/rerankers.md describes.
    """
    schematic = {"label": "Setwise"}

    def __init__(self, model_name_or_path: str = "google/flan-t5-large", *, backend: str = "hf",
                 backend_options: Optional[dict] = None, scoring: str = "generation", method: str = "heapsort",
                 num_child: int = 3, k: int = 10, query_length: Optional[int] = 128,
                 passage_length: Optional[int] = 128, chat_template: Optional[str] = None, text_field: str = "text",
                 title_field: Optional[str] = "title", instruction: str = "", verbose: bool = True):
        if scoring not in SCORINGS:
            raise ValueError(f"Setwise: scoring must be one of {list(SCORINGS)}, got {scoring!r}")
        if backend not in ("hf", "vllm"):
            raise ValueError(f"Setwise: backend must be 'hf' or 'vllm', got {backend!r}")
        if int(num_child) + 1 > len(LABELS):
            raise ValueError(f"Setwise: num_child + 1 passages need labels; at most {len(LABELS) - 1} children, got "
                             f"{num_child!r}")
        options = dict(backend_options or {})
        if backend == "hf" and set(options) - set(HF_OPTIONS):
            raise ValueError(f"Setwise: backend_options for 'hf' are {list(HF_OPTIONS)}, got "
                             f"{sorted(set(options) - set(HF_OPTIONS))}")
        self._setup(method, num_child, k, query_length, passage_length)
        self.model_name_or_path, self.backend, self.backend_options = model_name_or_path, backend, backend_options
        self.scoring, self.chat_template = scoring, chat_template
        self.text_field, self.title_field = text_field, title_field
        self.instruction, self.verbose = instruction, verbose
        self._model = self._tok = self._engine = self._labels = None

    _lazy = ("_model", "_tok", "_engine", "_labels")

    # -- loading ---------------------------------------------------------------------------------------------------
    def _load(self):
        if self._tok is not None:
            return
        options = dict(self.backend_options or {})
        if self.backend == "vllm":
            engine = VLLMBackend(self.model_name_or_path,
                                 **{"logprobs_mode": "processed_logprobs", "chat_template": self.chat_template,
                                    **options})
            self._engine, self._tok = engine, engine.tokenizer()
        else:
            transformers, self._device, dtype = hf_setup(options.get("device"), options.get("dtype", "auto"))
            config = from_pretrained(transformers.AutoConfig, self.model_name_or_path)
            if config.is_encoder_decoder:  # the reference: T5Tokenizer + T5ForConditionalGeneration
                tok_cls = transformers.T5Tokenizer if config.model_type == "t5" else transformers.AutoTokenizer
                self._tok = from_pretrained(tok_cls, self.model_name_or_path)
                model = from_pretrained(transformers.AutoModelForSeq2SeqLM, self.model_name_or_path, dtype=dtype)
            else:
                self._tok = from_pretrained(transformers.AutoTokenizer, self.model_name_or_path)
                model = from_pretrained(transformers.AutoModelForCausalLM, self.model_name_or_path, dtype=dtype)
            self._model = model.to(self._device).eval()
        if not self.seq2seq:
            self._tok.use_default_system_prompt = False  # as the reference (line 56)
            if self._tok.pad_token is None:
                self._tok.pad_token = self._tok.eos_token
            if self.chat_template is None and not getattr(self._tok, "chat_template", None):
                raise ValueError(f"{self!r}: {self.model_name_or_path} has no chat template; pass chat_template= (a "
                                 "Jinja string)")
        self._labels = self.label_ids()

    @property
    def seq2seq(self) -> bool:
        return self._model is not None and bool(self._model.config.is_encoder_decoder)

    def _tokenizer(self):
        self._load()
        return self._tok

    def label_ids(self) -> List[int]:
        """The token id of each label. T5: the last id of ``<pad> Passage {L}`` in a right-padded batch (the reference's
        ``batch_encode_plus(..., padding=True).input_ids[:, -1]``, so a label of two tokens reads the pad id). Causal
        models (ours): the last token of `` Passage: {L}``; with likelihood scoring, each of the ``num_child + 1``
        labels a comparison uses must add exactly one token (else a ValueError names it)."""
        tok = self._tok
        if self.seq2seq:
            ids = [tok(f"{T5_PREFIX} {c}", add_special_tokens=False)["input_ids"] for c in LABELS]
            width = max(map(len, ids))
            return [row[-1] if len(row) == width else tok.pad_token_id for row in ids]
        head = tok(CHAT_SUFFIX, add_special_tokens=False)["input_ids"]
        out = []
        for n, c in enumerate(LABELS):
            ids = tok(f"{CHAT_SUFFIX} {c}", add_special_tokens=False)["input_ids"]
            one_token = len(ids) == len(head) + 1 and ids[:len(head)] == head
            if self.scoring == "likelihood" and n <= self.num_child and not one_token:
                raise ValueError(f"{self!r}: label {c!r} is not one token after {CHAT_SUFFIX!r} for this tokenizer; "
                                 "likelihood scoring needs one token per label (use scoring='generation', or fewer "
                                 "children)")
            out.append(ids[-1])
        if self.scoring == "likelihood" and len(set(out[:self.num_child + 1])) <= self.num_child:
            raise ValueError(f"{self!r}: the labels {LABELS[:self.num_child + 1]} do not have distinct tokens for this "
                             "tokenizer")
        return out

    # -- prompts ---------------------------------------------------------------------------------------------------
    def prompt(self, query: str, passages: List[str]) -> str:
        """The comparison's text (the reference's ``input_text``)."""
        body = PASSAGE_SEPARATOR.join(fill(PASSAGE, label=c, text=t) for c, t in zip(LABELS, passages))
        return fill(PROMPT, query=query, passages=body)

    def input_ids(self, query: str, passages: List[str]) -> List[int]:
        """The model's input: T5 ``tokenizer(prompt)`` (``</s>`` added); a chat model: the chat template with one user
        turn and the generation prompt, then ``" Passage:"``, tokenised with the tokenizer's special tokens (as the
        reference: a template that writes BOS itself gets a second one)."""
        self._load()
        text = self.prompt(query, passages)
        if not self.seq2seq:
            text = self._tok.apply_chat_template([{"role": "user", "content": text}], chat_template=self.chat_template,
                                                 tokenize=False, add_generation_prompt=True) + CHAT_SUFFIX
        return list(self._tok(text)["input_ids"])

    # -- comparisons -----------------------------------------------------------------------------------------------
    def _compare(self, items: List[tuple]) -> List[int]:
        ids = [self.input_ids(query, passages) for _, query, passages, _ in items]
        sizes = [len(passages) for _, _, passages, _ in items]
        self.stats["prompt_tokens"] += sum(map(len, ids))
        if self.scoring == "likelihood":
            values = self._label_values(ids, sizes)
            return [int(np.argmax(v)) for v in values]  # the first of equal values, as the reference's stable sort
        answers = self._generate(ids)
        wins = []
        for text in answers:
            win = LABELS.index(text) if len(text) == 1 and text in LABELS else None
            self.stats["invalid"] += win is None
            wins.append(0 if win is None else win)
        return wins

    def _label_values(self, ids: List[List[int]], sizes: List[int]) -> List[np.ndarray]:
        """Per comparison, the values of its labels' tokens (T5: softmax probabilities; causal: logits)."""
        labels = self._labels
        if self._engine is not None:
            out: List[np.ndarray] = [None] * len(ids)  # type: ignore[list-item]
            for n in sorted(set(sizes)):
                rows = [i for i, s in enumerate(sizes) if s == n]
                values = self._engine.answer_logits([ids[i] for i in rows], labels[:n])
                for i, v in zip(rows, values):
                    out[i] = v
            return out
        last = self._forward(ids, generate=False)
        return [row[labels[:n]] for row, n in zip(last, sizes)]

    def _generate(self, ids: List[List[int]]) -> List[str]:
        """The reference's answer text per comparison: T5, the last character of the decoded prefix + two new tokens;
        causal, one greedy token decoded, stripped and upper-cased."""
        if self._engine is not None:
            texts = self._engine.generate([Prompt((), None, row) for row in ids], max_new_tokens=1)
            return [t.strip().upper() for t in texts]
        return self._forward(ids, generate=True)

    def _forward(self, ids: List[List[int]], generate: bool):
        import torch
        model, tok = self._model, self._tok
        out: list = [None] * len(ids)
        prefix = tok(T5_PREFIX, add_special_tokens=False, return_tensors="pt")["input_ids"] if self.seq2seq else None
        batch_size = int((self.backend_options or {}).get("batch_size", 8))

        def run(idx):
            side = "right" if self.seq2seq else "left"
            batch = tok.pad([{"input_ids": ids[i]} for i in idx], padding=True, padding_side=side,
                            return_tensors="pt").to(self._device)
            with torch.inference_mode():
                if self.seq2seq:
                    dec = prefix.repeat(len(idx), 1).to(self._device)
                    if generate:
                        seqs = model.generate(**batch, decoder_input_ids=dec, max_new_tokens=2, do_sample=False,
                                              temperature=None, top_p=None, top_k=None)
                        rows = [tok.decode(s, skip_special_tokens=True).strip() for s in seqs]
                        values = [r[-1] if r else "" for r in rows]
                    else:
                        logits = model(**batch, decoder_input_ids=dec).logits[:, -1].float()
                        values = list(torch.softmax(logits, dim=-1).cpu().numpy())
                else:
                    mask = batch["attention_mask"]
                    positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
                    logits = model(input_ids=batch["input_ids"], attention_mask=mask, position_ids=positions,
                                   logits_to_keep=1).logits[:, -1].float()
                    if generate:
                        values = [tok.decode([t], skip_special_tokens=True).strip().upper()
                                  for t in logits.argmax(-1).tolist()]
                    else:
                        values = list(logits.cpu().numpy())
            for i, v in zip(idx, values):
                out[i] = v

        by_length(np.array([len(r) for r in ids]), batch_size, run, name=self.model_name_or_path)
        return out
