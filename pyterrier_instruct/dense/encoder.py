"""The encoding engine of the dense models: loading (LoRA adapters merged with peft), tokenisation, pooling,
normalisation, and length-sorted batches with out-of-memory halving (shared with the pointwise rerankers).

Pooling: ``eos`` (truncate to ``max_length - 1``, append EOS, pool it: Promptriever, RepLLaMA, E5-Mistral), ``last``
(InF-Embed), ``mean`` (sentence-transformers), ``cls``. The last/first real token comes from the attention mask, so
left and right padding give the same vectors.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import _hub
from .._hub import from_pretrained, loading, model_path
from .._optional import require
from .._torch import batch_limits, by_length, hf_setup

log = logging.getLogger(__name__)

POOLINGS = ("eos", "last", "mean", "cls")
PADDING_SIDES = ("right", "left")


def adapter_base(path: str) -> Optional[str]:
    """``base_model_name_or_path`` of the peft adapter at ``path`` (a folder or a hub id), or None for a plain model."""
    if os.path.isdir(path):
        return _hub.adapter_base(path)
    hub = require("huggingface_hub", "hf")
    try:
        return _hub.adapter_base(os.path.dirname(hub.hf_hub_download(path, "adapter_config.json")))
    except (OSError, ValueError, hub.errors.HfHubHTTPError):
        return None


def merge_adapter(model, name: str):
    """``model`` with the LoRA adapter ``name`` (a hub id or folder) merged in (peft's ``PeftModel.from_pretrained``,
    then ``merge_and_unload``); a stand-in adapter loads quietly (``_hub.quiet``)."""
    path = model_path(name)
    stand_in = os.path.isfile(os.path.join(path, _hub.STAND_IN_MARKER))
    with _hub.quiet() if stand_in else contextlib.nullcontext():
        return require("peft", "hf").PeftModel.from_pretrained(model, path).merge_and_unload()


def load_encoder(path: str, base_model: Optional[str], device: str, torch_dtype):
    """(model, tokenizer): ``AutoModel`` (no head) from ``path``; for a LoRA adapter the base model (``base_model`` or
    the adapter's ``base_model_name_or_path``) with the adapter merged (``merge_and_unload``), the base's tokenizer."""
    transformers = require("transformers", "hf")
    with loading(path):  # weights not there: ModelNotFoundError with the fixes
        base = adapter_base(model_path(path))
        if base is None:
            model = from_pretrained(transformers.AutoModel, path, dtype=torch_dtype)
            tokenizer = from_pretrained(transformers.AutoTokenizer, path)
        else:
            base = base_model or base
            model = merge_adapter(from_pretrained(transformers.AutoModel, base, dtype=torch_dtype), path)
            tokenizer = from_pretrained(transformers.AutoTokenizer, base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(device).eval(), tokenizer


def pool(hidden, mask, pooling: str):
    """One vector per row of ``hidden`` (batch × length × dim, float32) given the attention ``mask``."""
    import torch
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    if pooling == "cls":
        idx = mask.argmax(1)  # first real token, whatever the padding side
    else:
        idx = mask.shape[1] - 1 - mask.flip(1).argmax(1)  # last real token: mask.sum-1 (right) or -1 (left padding)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), idx]


class Embedder:
    """A loaded model and tokenizer: strings → float32 vectors. Created by a BiEncoder on first non-empty use."""

    def __init__(self, model_name_or_path: str, *, base_model: Optional[str], pooling: str, normalize: bool,
                 padding_side: str, add_special_tokens: bool, batch_size: Optional[int], device: Optional[str], dtype,
                 stats):
        _, self._device, torch_dtype = hf_setup(device, dtype)
        self.model_name_or_path, self.pooling, self.normalize = model_name_or_path, pooling, normalize
        self.padding_side, self.add_special_tokens = padding_side, add_special_tokens
        self.batch_size, self.stats = batch_size, stats
        self.model, self.tokenizer = load_encoder(model_name_or_path, base_model, self._device, torch_dtype)
        self.dim = int(self.model.config.hidden_size)
        limit = getattr(self.tokenizer, "model_max_length", None)
        self.model_max_length = int(limit) if limit and limit < 1_000_000 else 512

    def tokenize(self, texts: Sequence[str], max_length: int) -> List[Dict[str, List[int]]]:
        """Token ids per text: BOS etc. per ``add_special_tokens``; for ``eos`` pooling truncated to ``max_length - 1``
        and the EOS id appended (even after a truncation), else truncated to ``max_length``."""
        eos = self.pooling == "eos"
        if eos and self.tokenizer.eos_token_id is None:
            raise ValueError(f"{self.model_name_or_path}: eos pooling needs a tokenizer with an EOS token")
        limit = max_length - 1 if eos else max_length
        ids = self.tokenizer(list(texts), max_length=limit, truncation=True, add_special_tokens=self.add_special_tokens,
                             return_attention_mask=False, return_token_type_ids=False, verbose=False)["input_ids"]
        self.stats.truncated += sum(len(i) >= limit for i in ids)
        if eos:
            ids = [i + [self.tokenizer.eos_token_id] for i in ids]
        return [{"input_ids": i} for i in ids]

    def embed(self, texts: Sequence[str], max_length: int, bar) -> np.ndarray:
        """One row per text, in input order; batches are formed by token length (longest first)."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if len(texts):
            feats = self.tokenize(texts, max_length)

            def run(idx: np.ndarray) -> None:
                out[idx] = self._run([feats[i] for i in idx])

            lengths = np.fromiter((len(f["input_ids"]) for f in feats), dtype=np.int64, count=len(feats))
            rows, tokens = batch_limits(self.batch_size, self._device)
            by_length(lengths, rows, run, max_tokens=tokens, bar=bar, name=self.model_name_or_path)
        return out

    def _run(self, feats: List[Dict[str, List[int]]]) -> np.ndarray:
        import torch
        batch = self.tokenizer.pad(feats, padding=True, return_tensors="pt", padding_side=self.padding_side)
        batch = {k: v.to(self._device) for k, v in batch.items()}
        with torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state
            self.stats.forward_passes += 1
            vec = pool(hidden.float(), batch["attention_mask"], self.pooling)
            if self.normalize:
                vec = torch.nn.functional.normalize(vec, p=2, dim=-1)
        return vec.cpu().numpy()
