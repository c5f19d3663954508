"""Dense (bi-encoder) models: one configurable instruction-aware :class:`BiEncoder` (``.query_encoder()``,
``.doc_encoder()``, ``.scorer()``, ``.index()``/``.retriever()``), presets per family, the numpy index, Promptriever's
prompt selection, and the legacy :class:`BiEncoderScorer`. torch and transformers load on first use."""
from .biencoder import BiEncoderScorer
from .index import EmbeddingIndex, EmbeddingIndexer
from .model import BiEncoder
from .models import E5Mistral, InFEmbed, Promptriever, RepLLaMA, SBertBiEncoder
from .selection import PromptSelection, select_prompt
from ..prompts import BEIR_PROMPTS

__all__ = ["BiEncoder", "Promptriever", "RepLLaMA", "E5Mistral", "InFEmbed", "SBertBiEncoder", "BiEncoderScorer",
           "EmbeddingIndex", "EmbeddingIndexer", "select_prompt", "PromptSelection", "BEIR_PROMPTS"]
