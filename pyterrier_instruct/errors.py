"""The package's public exceptions, in one public module (``pti.ModelNotFoundError``, ``pti.MissingTextError``)."""
from __future__ import annotations

import pyterrier as pt


def missing_text_hint(text_field: str) -> str:
    return (f"The input has no {text_field!r} column: a first stage such as BM25 returns docnos without the document "
            f"text. Add a text loader before this stage, e.g. `bm25 >> pt.text.get_text(dataset, {text_field!r}) >> "
            f"reranker` (`dataset.text_loader({text_field!r})` for a pt.get_dataset('instruct:…') dataset), or use the "
            "benchmark's candidates, which carry the text: `dataset.candidates() >> reranker`.")


class ModelNotFoundError(OSError):
    """A model's weights are neither a local folder, nor under ``$PYTERRIER_INSTRUCT_MODELS``, nor (offline) in the
    Hugging Face cache; the message names the id and the fixes. An ``OSError``, as transformers raises."""


class MissingTextError(pt.validate.InputValidationError):
    """An ``InputValidationError`` for a result frame without the document text, with the fix in its message (a text
    loader between the stages); a subclass with the same ``modes``, so ``pt.inspect`` and
    ``except pt.validate.InputValidationError`` still work."""

    def __init__(self, message: str, modes, text_field: str):
        super().__init__(message, modes)
        self.text_field = text_field

    def __str__(self) -> str:  # the fix first, then what each input mode lacks (not PyTerrier's TransformerMode reprs)
        lacks = "; ".join(f"mode {m.mode_name!r} lacks {m.missing_columns}" for m in self.modes)
        return f"{missing_text_hint(self.text_field)}\n{' '.join(self.args[0].split())} ({lacks})"


__all__ = ["ModelNotFoundError", "MissingTextError"]
