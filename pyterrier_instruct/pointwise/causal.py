"""Causal-LM true/false rerankers (FollowIR's ``rerank.py``, InfoSearch's rerankers): FollowIR-7B, Mistral-7B-Instruct,
Llama-2-chat, Llama, GritLM, or any model + template + token pair. Left padding, pad = eos, the default BOS prepended
(so templates with a literal ``<s>`` start with two BOS tokens, as in the reference), logits of
``vocab[true]``/``vocab[false]`` at the last position, 2-way softmax. ``backend='vllm'`` scores the same prompts on vLLM
(:mod:`._vllm`)."""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np
import pandas as pd

from .._tokens import common_prefix_length
from .._config import preset
from .._hub import from_pretrained, loading, model_path
from ..prompts import PROMPTS
from ._vllm import engine_backend, engine_scores
from .base import TrueFalseReranker, log, two_way


@functools.lru_cache(maxsize=None)
def _cache_keyword() -> str:
    """The decoder's key/value cache argument and output field: ``cache`` from transformers 5.2x (``past_key_values``
    is deprecated there), ``past_key_values`` before."""
    import inspect

    from transformers.modeling_outputs import BaseModelOutputWithPast
    return "cache" if "cache" in inspect.signature(BaseModelOutputWithPast).parameters else "past_key_values"


class CausalLMReranker(TrueFalseReranker):
    """A decoder-only LM asked "relevant (true/false)?" per (query + instruction, document).

    Args:
        model_name_or_path: a hub id or local folder (``AutoModelForCausalLM``); for a LoRA adapter folder
            (``adapter_config.json``) peft loads the base model and merges the adapter.
        template: the full prompt, with ``{query}`` (query + instruction) and ``{text}``; presets hold the verbatim
            reference prompts (:data:`pyterrier_instruct.prompts.PROMPTS`).
        true_token, false_token: vocabulary entries (no ``▁``) whose logits are compared.
        share_prefix: compute the key/value cache of the prefix a query's candidates share once per query (the same
            scores within float rounding); ``None``: where it pays (``SHARE_MIN_ROWS``, ``SHARE_MIN_TOKENS``); on vLLM
            the engine's prefix cache does it. Measured in docs/performance.md.
        score, batch_size, max_length (default ``min(2048, model_max_length)``), truncation, device, dtype, text_field,
        title_field, instruction, verbose: see :class:`~pyterrier_instruct.pointwise.base.PointwiseReranker`.

    Presets (checkpoint, prompt):

    - ``CausalLMReranker.mistral_instruct()``: ``mistralai/Mistral-7B-Instruct-v0.2``; FollowIR's zero-shot prompt
    - ``CausalLMReranker.mistral_instruct(style="infosearch")``: ``mistralai/Mistral-7B-Instruct-v0.2``; InfoSearch's
      prompt
    - ``CausalLMReranker.llama_chat()``: ``meta-llama/Llama-2-7b-chat-hf``; FollowIR's Llama-2 chat prompt
    - ``CausalLMReranker.llama()``: ``meta-llama/Meta-Llama-3.1-8B-Instruct``; InfoSearch's plain Llama prompt
    - ``CausalLMReranker.gritlm()``: ``GritLM/GritLM-7B``; FollowIR's GritLM reranking prompt

    FollowIR-7B has its own class, :class:`FollowIR7B`.
    """
    schematic = {"label": "CausalLM"}
    padding_side = "left"
    default_max_length = 2048
    #: a sequence-classification conversion of the checkpoint scores on vLLM's pooling runner (Qwen3Reranker)
    pooling_checkpoints = False
    STYLES = {"followir": "mistral_followir", "infosearch": "mistral_infosearch"}
    #: ``share_prefix=None``: a query shares its prefix when it has this many candidates (fewer: its rows run whole,
    #: batched with other queries' rows) ...
    SHARE_MIN_ROWS = 2
    #: ... and its candidates share at least this many prompt tokens
    SHARE_MIN_TOKENS = 16

    def __init__(self, model_name_or_path: str, *, template: str, true_token: str = "true", false_token: str = "false",
                 share_prefix: Optional[bool] = None, backend="hf", backend_options: Optional[dict] = None, **kwargs):
        super().__init__(model_name_or_path, template=template, true_token=true_token, false_token=false_token,
                         **kwargs)
        self.share_prefix = None if share_prefix is None else bool(share_prefix)
        self.backend, self.backend_options = engine_backend(self, backend, backend_options), backend_options

    @classmethod
    def _from_prompt(cls, model, prompt: str, **kwargs) -> "CausalLMReranker":
        p = PROMPTS[prompt]
        return cls(model, **{**p._asdict(), **kwargs})

    @preset
    def mistral_instruct(cls, model_name_or_path: str = "mistralai/Mistral-7B-Instruct-v0.2", *,
                         style: str = "followir", **kwargs) -> "CausalLMReranker":
        """Zero-shot ``mistralai/Mistral-7B-Instruct-v0.2``: FollowIR's prompt (``style='followir'``) or InfoSearch."""
        if style not in cls.STYLES:
            raise ValueError(f"style must be one of {sorted(cls.STYLES)}, got {style!r}")
        return cls._from_prompt(model_name_or_path, cls.STYLES[style], **kwargs)

    @preset
    def llama_chat(cls, model_name_or_path: str = "meta-llama/Llama-2-7b-chat-hf", **kwargs) -> "CausalLMReranker":
        """``meta-llama/Llama-2-7b-chat-hf`` with FollowIR's Llama-2 chat prompt (FollowIR's "Llama-2-7B-chat")."""
        return cls._from_prompt(model_name_or_path, "llama_chat", **kwargs)

    @preset
    def llama(cls, model_name_or_path: str = "meta-llama/Meta-Llama-3.1-8B-Instruct", **kwargs) -> "CausalLMReranker":
        """``meta-llama/Meta-Llama-3.1-8B-Instruct``, the plain Llama prompt (InfoSearch's Llama-3.1-8B-Instruct)."""
        return cls._from_prompt(model_name_or_path, "llama", **kwargs)

    @preset
    def gritlm(cls, model_name_or_path: str = "GritLM/GritLM-7B", **kwargs) -> "CausalLMReranker":
        """``GritLM/GritLM-7B`` with FollowIR's GritLM reranking prompt."""
        return cls._from_prompt(model_name_or_path, "gritlm", **kwargs)

    def _reference_max_length(self, tokenizer) -> int:
        limit = getattr(tokenizer, "model_max_length", None) or self.default_max_length
        return int(min(self.default_max_length, limit))

    def _load(self):
        if self.backend == "hf":
            return super()._load()
        if self._tokenizer is None:  # the engine's tokenizer (the same ids); the model runs inside the engine
            with loading(self.model_name_or_path):
                architectures = self._model_config().architectures or ()
            self._pooling = any(a.endswith("ForSequenceClassification") for a in architectures)
            if self._pooling and self.pooling_checkpoints:
                if self.backend._llm is None:  # vLLM's pooling runner: LLM.classify on the same ids
                    self.backend._runner = "pooling"
                elif getattr(self.backend._llm, "runner_type", "pooling") != "pooling":
                    raise ValueError(f"{self!r}: {self.model_name_or_path} is a sequence-classification checkpoint; "
                                     "its vLLM engine must run runner='pooling' (pass it in the VLLMBackend's options)")
            elif self._pooling:
                raise ValueError(f"{self!r}: {self.model_name_or_path} is a sequence-classification checkpoint; "
                                 "backend='vllm' scores a causal LM's answer tokens: use its causal-LM checkpoint, or "
                                 "backend='hf'")
            # the package's own tokenizer, not the engine's: vLLM's truncates on the left (``get_tokenizer`` sets
            # truncation_side='left' for generate models), which would cut the template's head, not the document
            tok = self._load_tokenizer(model_path(self.model_name_or_path))
            self._ids = self._answer_ids(tok, self.backend.model)
            self._tokenizer = tok
            self._max_length = self._fit_engine(self.max_length or self._reference_max_length(tok))
        return None, self._tokenizer

    def _classified(self, prompts) -> np.ndarray:
        """``[no, yes]`` columns from vLLM's pooling runner: two labels as they are, one label (yes - no) as ``[0, x]``
        (the transformers path's head, :meth:`Qwen3Reranker._answer_logits`)."""
        values = self.backend.classify_logits(prompts)
        return values if values.shape[1] == 2 else np.concatenate([np.zeros_like(values), values], axis=1)

    def _fit_engine(self, length: int) -> int:
        """``length`` fitted to the engine: vLLM refuses a generate prompt of ``max_model_len`` tokens or more (one
        output token must fit; from 0.22.1, ``v1/engine/input_processor.py`` ``_validate_prompt_len``), and one refused
        prompt aborts the whole ``generate`` call. A ``max_length`` the caller set and the engine cannot take is refused
        naming both numbers; the reference length is cut to the engine's."""
        limit = self.backend.max_prompt_tokens()
        if limit is None or length <= limit:
            return length
        if self.max_length is not None:
            raise ValueError(f"{self!r}: max_length={self.max_length} prompts do not fit the vLLM engine's "
                             f"max_model_len={limit + 1} (a prompt of max_model_len tokens or more is refused): pass "
                             f"max_model_len >= {self.max_length + 1} in backend_options, or max_length <= {limit}")
        log.info("%r: prompts cut to %d tokens, the vLLM engine's max_model_len - 1", self, limit)
        return limit

    def _model_config(self):
        """The checkpoint's ``transformers`` config: the loaded model's, or read from the folder on the vLLM path."""
        if self._model is not None:
            return self._model.config
        import transformers
        return from_pretrained(transformers.AutoConfig, model_path(self.model_name_or_path))

    def _answer_ids(self, tok, path: str):
        """``[vocab[false_token], vocab[true_token]]``: the token ids whose logits are compared."""
        vocab = tok.get_vocab()
        missing = [w for w in (self.false_token, self.true_token) if w not in vocab]
        if missing:
            raise ValueError(f"{path}: answer token(s) {missing} are not in the tokenizer's vocabulary")
        return [vocab[self.false_token], vocab[self.true_token]]

    def _load_model(self):
        import os

        import transformers
        path = model_path(self.model_name_or_path)
        tok = self._load_tokenizer(path)
        if os.path.isfile(os.path.join(path, "adapter_config.json")):
            from .._optional import require
            peft = require("peft", "hf")
            model = from_pretrained(peft.AutoPeftModelForCausalLM, path, dtype=self._torch_dtype).merge_and_unload()
        else:
            model = from_pretrained(transformers.AutoModelForCausalLM, path, dtype=self._torch_dtype)
        self._ids = self._answer_ids(tok, path)
        tok.pad_token = tok.eos_token
        return model, tok

    def _load_tokenizer(self, path: str):
        """The tokenizer both backends encode with: the checkpoint's, left padding, its own truncation side."""
        import transformers
        return from_pretrained(transformers.AutoTokenizer, path, padding_side="left")

    def _forward(self, batch):
        mask = batch["attention_mask"]
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        out = self._model(input_ids=batch["input_ids"], attention_mask=mask, position_ids=positions, logits_to_keep=1)
        return two_way(out.logits[:, -1, self._ids], self.score)

    # -- shared-prefix scoring ---------------------------------------------------------------------
    def _score_features(self, feats, queries, bar):
        if self.backend != "hf":
            return engine_scores(self.backend, feats, queries, self._ids, self.score, bar,
                                 values=self._classified if getattr(self, "_pooling", False) else None)
        if self.share_prefix is False:
            return super()._score_features(feats, queries, bar)
        scores, whole = np.empty(len(feats), dtype="float64"), []
        for _, rows in pd.Series(np.arange(len(feats))).groupby(pd.Series(queries), sort=False):
            rows = rows.to_numpy()
            ids = [feats[i]["input_ids"] for i in rows]
            shared = min(common_prefix_length(ids), min(map(len, ids)) - 1)  # every row keeps a token of its own
            if self.share_prefix is None and (len(rows) < self.SHARE_MIN_ROWS or shared < self.SHARE_MIN_TOKENS):
                whole.extend(rows)
                continue
            prefix = self._prefix_cache(ids[0][:shared])
            tails = {i: {"input_ids": feats[i]["input_ids"][shared:]} for i in rows}
            self._in_batches(tails, rows, scores, lambda fs: self._run_suffix(fs, prefix, shared), bar, context=shared)
        if whole:
            self._in_batches(feats, np.asarray(whole), scores, self._run, bar)
        return scores

    def _prefix_cache(self, prefix_ids):
        import torch
        with torch.inference_mode():
            ids = torch.tensor([prefix_ids], device=self._device)
            out = self._model.model(input_ids=ids, use_cache=True)
            return getattr(out, _cache_keyword())

    def _run_suffix(self, feats, prefix, shared: int):
        import copy

        import torch
        batch = self._tokenizer.pad(feats, padding=True, return_tensors="pt", padding_side="right")
        ids, mask = batch["input_ids"].to(self._device), batch["attention_mask"].to(self._device)
        n, width = ids.shape
        cache = copy.deepcopy(prefix)
        cache.batch_repeat_interleave(n)
        full_mask = torch.cat([torch.ones((n, shared), dtype=mask.dtype, device=mask.device), mask], dim=1)
        positions = shared + torch.arange(width, device=ids.device).expand(n, width)
        with torch.inference_mode():
            hidden = self._model.model(input_ids=ids, attention_mask=full_mask, position_ids=positions,
                                       use_cache=True, **{_cache_keyword(): cache}).last_hidden_state
            last = hidden[torch.arange(n, device=ids.device), mask.sum(-1) - 1]
            return two_way(self._answer_logits(last), self.score).float().cpu().numpy()

    def _answer_logits(self, last):
        """``[false, true]`` logits of the LM head's two answer rows from last-position hidden states."""
        head = self._model.get_output_embeddings()
        logits = last @ head.weight[self._ids].T
        if getattr(head, "bias", None) is not None:
            logits = logits + head.bias[self._ids]
        return logits


class FollowIR7B(CausalLMReranker):
    """FollowIR-7B (Weller et al., 2024; ``jhu-clsp/FollowIR-7B``, Mistral-7B-Instruct-v0.2 fine-tuned): the exact
    prompt of FollowIR's ``rerank.py`` (literal ``<s>`` + BOS, trailing space), left padding, pad = eos, P(true) from
    the last position.

    Presets (checkpoint):

    - ``FollowIR7B()``: ``jhu-clsp/FollowIR-7B``

    Arguments: see :class:`CausalLMReranker` (``share_prefix``: each query's prompt prefix is computed once, by
    default)."""
    schematic = {"label": "FollowIR-7B"}

    def __init__(self, model_name_or_path: str = "jhu-clsp/FollowIR-7B", **kwargs):
        p = PROMPTS["followir_7b"]
        kwargs.setdefault("template", p.template)
        super().__init__(model_name_or_path, **kwargs)
