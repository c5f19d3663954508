"""Dense (bi-encoder) models: one configurable instruction-aware :class:`BiEncoder` (a transformer dispatching on its
input: ``R → R`` reranks, ``Q → Q`` adds ``query_vec``, ``D → D`` adds ``doc_vec``, so it composes with pyterrier-dr's
FlexIndex; explicit stages ``.query_encoder()``, ``.doc_encoder()``, ``.scorer()``, ``.indexer()``/``.retriever()``),
the model families, the numpy index, and Promptriever's prompt selection. torch and transformers load on first use."""
from .biencoder import BiEncoder
from .families import E5Mistral, InFEmbed, Promptriever, RepLLaMA, SBertBiEncoder
from .index import EmbeddingIndex, EmbeddingIndexer
from .qwen3 import Qwen3Embedding
from .selection import PromptSelection, select_prompt
from ..prompts import BEIR_PROMPTS

__all__ = ["BiEncoder", "Promptriever", "RepLLaMA", "E5Mistral", "InFEmbed", "SBertBiEncoder", "Qwen3Embedding",
           "EmbeddingIndex", "EmbeddingIndexer", "select_prompt", "PromptSelection", "BEIR_PROMPTS"]
