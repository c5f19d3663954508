"""Qwen3-Reranker (Zhang et al., 2025, "Qwen3 Embedding: Advancing Text Embedding and Reranking Through Foundation
Models"; QwenLM/Qwen3-Embedding at f4ad0c4, README "Reranker Model / Transformers Usage"): the row's instruction in the
``<Instruct>`` slot of the chat prompt, p(yes) from the 2-way softmax of the ``yes``/``no`` logits at the last position.

Also reads the sequence-classification conversions of the checkpoints (``Qwen3ForSequenceClassification`` whose head is
``lm_head[yes] - lm_head[no]``, one label, or the ``[no, yes]`` rows, two labels): the same scores, the same body."""
from __future__ import annotations

from typing import List, Optional, Sequence

from .._config import preset
from .._hub import from_pretrained, model_path
from ..prompts import PROMPTS, QWEN3_DEFAULT_INSTRUCTION, render
from .base import two_way
from .causal import CausalLMReranker

__all__ = ["Qwen3Reranker"]


class Qwen3Reranker(CausalLMReranker):
    """Qwen3-Reranker over (instruction, query, document).

    The prompt is the README's, byte for byte (:data:`~pyterrier_instruct.prompts.PROMPTS` ``['qwen3_reranker']``); a
    row's ``instruction`` fills ``<Instruct>``, a missing or blank one is replaced by ``instruction=`` (default: the
    README's; mteb uses ``"Given the user query, retrieval the relevant passages"``). Details: docs/rerankers.md.

    Args:
        model_name_or_path: a hub id or local folder: the causal LM (``Qwen3ForCausalLM``) or its
            sequence-classification conversion (``Qwen3ForSequenceClassification``, read from the folder's
            ``config.json``).
        instruction: the default instruction (see above).
        max_length: token limit of the whole prompt (default 8192, the README's).
        truncation: ``'safe'`` (default: whole words off the document, then the query) or ``'reference'`` (README).
        share_prefix: run the prefix a query's documents share once per query (see :class:`CausalLMReranker`).
        score: ``'prob'`` (p(yes), the README's), ``'logprob'`` or ``'logit_diff'``; all rank identically.
        batch_size, device, dtype, text_field, title_field, verbose: see :class:`CausalLMReranker`.

    Presets (checkpoint):

    - ``Qwen3Reranker()``: ``Qwen/Qwen3-Reranker-0.6B``
    - ``Qwen3Reranker.four_b()``: ``Qwen/Qwen3-Reranker-4B``
    - ``Qwen3Reranker.eight_b()``: ``Qwen/Qwen3-Reranker-8B``
    """
    schematic = {"label": "Qwen3Reranker"}
    default_max_length = 8192
    query_slot = PROMPTS["qwen3_reranker"].query_slot
    _lazy = ("_model", "_tokenizer", "_head")
    pooling_checkpoints = True

    def __init__(self, model_name_or_path: str = "Qwen/Qwen3-Reranker-0.6B", *,
                 instruction: str = QWEN3_DEFAULT_INSTRUCTION, **kwargs):
        p = PROMPTS["qwen3_reranker"]
        kwargs = {"template": p.template, "true_token": p.true_token, "false_token": p.false_token, **kwargs}
        super().__init__(model_name_or_path, instruction=instruction, **kwargs)
        self._head = None

    @preset
    def four_b(cls, **kwargs) -> "Qwen3Reranker":
        """``Qwen/Qwen3-Reranker-4B``."""
        return cls("Qwen/Qwen3-Reranker-4B", **kwargs)

    @preset
    def eight_b(cls, **kwargs) -> "Qwen3Reranker":
        """``Qwen/Qwen3-Reranker-8B``."""
        return cls("Qwen/Qwen3-Reranker-8B", **kwargs)

    def _reference_max_length(self, tokenizer) -> int:
        return self.default_max_length

    def _load_model(self):
        import transformers
        path = model_path(self.model_name_or_path)
        config = from_pretrained(transformers.AutoConfig, path)
        if not any(a.endswith("ForSequenceClassification") for a in (config.architectures or ())):
            return super()._load_model()
        if config.num_labels not in (1, 2):
            raise ValueError(f"{path}: a sequence-classification Qwen3-Reranker has 1 label (yes - no) or 2 ([no, "
                             f"yes]), not {config.num_labels}")
        tok = from_pretrained(transformers.AutoTokenizer, path, padding_side="left")
        model = from_pretrained(transformers.AutoModelForSequenceClassification, path, dtype=self._torch_dtype)
        self._head = model.score
        return model, tok

    def _answer_logits(self, last):
        """``[no, yes]`` logits from the last hidden state (``lm_head`` rows, or the classification head)."""
        if self._head is None:
            return super()._answer_logits(last)
        import torch
        logits = self._head(last).float()
        return logits if logits.shape[1] == 2 else torch.cat([torch.zeros_like(logits), logits], dim=1)

    def _forward(self, batch):
        if self._head is None:
            return super()._forward(batch)
        mask = batch["attention_mask"]
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        hidden = self._model.model(input_ids=batch["input_ids"], attention_mask=mask,
                                   position_ids=positions).last_hidden_state
        return two_way(self._answer_logits(hidden[:, -1]), self.score)

    def _encode(self, queries: Sequence[str], texts: Sequence[str],
                instructions: Optional[Sequence[str]] = None) -> List[dict]:
        if self.truncation == "safe":
            return super()._encode(queries, texts, instructions)
        # the README: prefix ids + body ids (truncated to what the fixed parts leave) + suffix ids
        tok, t = self._tokenizer, self.template
        instructions = [None] * len(queries) if instructions is None else instructions
        first = min(t.index(slot) for slot in ("{instruction}", "{query}") if slot in t)
        start, end = t.rindex("\n", 0, first) + 1, t.index("{text}") + len("{text}")
        prefix, suffix = tok.encode(t[:start], add_special_tokens=False), tok.encode(t[end:], add_special_tokens=False)
        budget = self._max_length - len(prefix) - len(suffix)
        ids = tok([render(t[start:end], q, d, i) for q, d, i in zip(queries, texts, instructions)],
                  truncation="longest_first", max_length=budget, verbose=False)["input_ids"]
        self.truncated += sum(len(i) >= budget for i in ids)
        return [{"input_ids": prefix + i + suffix} for i in ids]
