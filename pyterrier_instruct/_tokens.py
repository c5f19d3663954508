"""Token-id helpers shared by the backends and the causal rerankers (no torch)."""
from __future__ import annotations

from typing import List, Sequence


def encode_rendered(tok, text: str) -> List[int]:
    """Token ids of an already rendered prompt: the tokenizer adds BOS unless the text already starts with it (a chat
    template that writes BOS itself must not give two)."""
    bos = getattr(tok, "bos_token", None)
    return list(tok(text, add_special_tokens=not (bos and text.startswith(bos)))["input_ids"])


def common_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of token-id lists."""
    first, n = rows[0], min(len(r) for r in rows)
    return next((j for j in range(n) if any(r[j] != first[j] for r in rows)), n)
