"""Dense (bi-encoder) models."""
from .biencoder import BiEncoderScorer

__all__ = ["BiEncoderScorer"]
