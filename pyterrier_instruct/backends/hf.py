"""Greedy generation with Hugging Face transformers (CPU or GPU), batched with left padding."""
from __future__ import annotations

import logging
from typing import List, Optional, Sequence

import numpy as np

from .._optional import require
from .._torch import by_length, hf_setup
from .base import Prompt, TokenizerBackend

log = logging.getLogger(__name__)


class HFBackend(TokenizerBackend):
    """``AutoModelForCausalLM.generate`` with ``do_sample=False``, prompts batched by length with left padding.

    Args:
        model_name_or_path: a hub id or a local folder (loaded lazily, on the first prompt).
        batch_size: prompts per ``generate`` call (halved on GPU out-of-memory).
        device: ``None``/``'auto'`` (cuda, mps, cpu) or a torch device string.
        dtype: ``'auto'`` (bf16 on GPU, fp32 on CPU), ``'bf16'``, ``'fp16'``, ``'fp32'``.
        chat_template: replaces the checkpoint's chat template (a Jinja string).
        verbose: transformers' download/loading progress bars.
    """

    def __init__(self, model_name_or_path: str, *, batch_size: int = 8, device: Optional[str] = None, dtype="auto",
                 chat_template: Optional[str] = None, verbose: bool = False):
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        self.model_name_or_path, self.batch_size = str(model_name_or_path), int(batch_size)
        self.device, self.dtype, self.chat_template, self.verbose = device, dtype, chat_template, verbose
        self._model = self._tok = None

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k, d in (("batch_size", 8), ("dtype", "auto")) if getattr(self, k) != d)
        return f"HFBackend({self.model_name_or_path!r}{extra})"

    def _eq_key(self) -> tuple:
        return (self.model_name_or_path, self.batch_size, str(self.dtype), self.chat_template)

    def _tokenizer(self):
        if self._tok is None:
            transformers = require("transformers", "hf")
            tok = transformers.AutoTokenizer.from_pretrained(self.model_name_or_path)
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            self._tok = tok
        return self._tok

    def _load(self):
        if self._model is None:
            transformers, self._device, dtype = hf_setup(self.device, self.dtype, self.verbose)
            model = transformers.AutoModelForCausalLM.from_pretrained(self.model_name_or_path, dtype=dtype)
            self._model = model.to(self._device).eval()
        return self._model, self._tokenizer()

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        model, tok = self._load()
        feats = [{"input_ids": self._ids(p)} for p in prompts]
        out: List[str] = [""] * len(prompts)

        def run(idx: np.ndarray) -> None:
            import torch
            batch = tok.pad([feats[i] for i in idx], padding=True, padding_side="left", return_tensors="pt").to(self._device)
            with torch.inference_mode():
                ids = model.generate(**batch, do_sample=False, max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens,
                                     pad_token_id=tok.pad_token_id, temperature=None, top_p=None, top_k=None)
            new = ids[:, batch["input_ids"].shape[1]:]
            for i, row in zip(idx, new):
                out[i] = tok.decode(row, skip_special_tokens=True, spaces_between_special_tokens=False)

        lengths = np.array([len(f["input_ids"]) for f in feats], dtype=np.int64)
        by_length(lengths, self.batch_size, run, name=self.model_name_or_path)
        return out
