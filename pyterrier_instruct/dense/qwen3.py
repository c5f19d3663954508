"""Qwen3-Embedding (Zhang et al., 2025, "Qwen3 Embedding: Advancing Text Embedding and Reranking Through Foundation
Models"; QwenLM/Qwen3-Embedding at f4ad0c4, README "Embedding Model / Transformers Usage", and the checkpoints'
sentence-transformers configuration): the row's instruction in ``Instruct: {instruction}\\nQuery:{query}`` on the query
side only, last-token pooling under left padding, L2-normalised, optional Matryoshka truncation."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .._config import preset
from ..instructions import QuerySlot
from ..prompts import QWEN3_DEFAULT_INSTRUCTION, QWEN3_EMBEDDING_QUERY
from .families import _Family

__all__ = ["Qwen3Embedding"]


class Qwen3Embedding(_Family):
    """Qwen3-Embedding as a dense family (``R → R``, ``Q → Q`` + ``query_vec``, ``D → D`` + ``doc_vec``, indexing and
    the document cache as every :class:`~pyterrier_instruct.dense.biencoder.BiEncoder`).

    Queries: ``"Instruct: {instruction}\\nQuery:{query}"`` as the README (no space after ``Query:``), a missing or blank
    instruction replaced by ``instruction=``; documents ``(title + " " + text).strip()``; last-token pooling, left
    padding, up to 8192 tokens, L2-normalised. Details: docs/dense.md.

    Args:
        model_name_or_path: hub id or local folder (``AutoModel``).
        instruction: the default instruction (see above).
        dim: Matryoshka truncation to the first ``dim`` coordinates, re-normalised; ``None`` keeps every coordinate.
        **kwargs: every other :class:`~pyterrier_instruct.dense.biencoder.BiEncoder` argument.

    Presets (checkpoint):

    - ``Qwen3Embedding()``: ``Qwen/Qwen3-Embedding-0.6B``
    - ``Qwen3Embedding.four_b()``: ``Qwen/Qwen3-Embedding-4B``
    - ``Qwen3Embedding.eight_b()``: ``Qwen/Qwen3-Embedding-8B``
    """
    schematic = {"label": "Qwen3Embedding"}

    def __init__(self, model_name_or_path: str = "Qwen/Qwen3-Embedding-0.6B", *,
                 instruction: str = QWEN3_DEFAULT_INSTRUCTION, dim: Optional[int] = None, **kwargs):
        if dim is not None and int(dim) < 1:
            raise ValueError(f"dim must be a positive number of coordinates (or None), got {dim!r}")
        defaults = dict(query_template=QWEN3_EMBEDDING_QUERY, query_slot=QuerySlot("verbatim"), instruction=instruction,
                        passage_template="{doc}", pooling="last", normalize=True, padding_side="left", max_length=8192,
                        add_special_tokens=True, strip=False)
        self._setup(model_name_or_path, defaults, kwargs)
        self.dim = None if dim is None else int(dim)

    @preset
    def four_b(cls, **kwargs) -> "Qwen3Embedding":
        """``Qwen/Qwen3-Embedding-4B``."""
        return cls("Qwen/Qwen3-Embedding-4B", **kwargs)

    @preset
    def eight_b(cls, **kwargs) -> "Qwen3Embedding":
        """``Qwen/Qwen3-Embedding-8B``."""
        return cls("Qwen/Qwen3-Embedding-8B", **kwargs)

    def doc_key(self) -> str:
        return repr((super().doc_key(), self.dim))

    def _embed(self, texts: np.ndarray, limit: int, what: str, progress: bool = True) -> np.ndarray:
        vectors = super()._embed(texts, limit, what, progress)
        if self.dim is None or self.dim >= vectors.shape[1]:
            return vectors
        cut = np.ascontiguousarray(vectors[:, :self.dim])
        return cut / np.maximum(np.linalg.norm(cut, axis=1, keepdims=True), 1e-12)
