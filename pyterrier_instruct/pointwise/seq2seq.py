"""monoT5 and other seq2seq true/false rerankers (pyterrier_t5 ``MonoT5ReRanker``, FollowIR's ``rerank.py``): one
decoder step from the decoder start token, the logits of ``encode(true_word)[0]`` / ``encode(false_word)[0]``
(``▁true``/``▁false`` for T5)."""
from __future__ import annotations

import logging
import warnings

from .._config import preset
from .._experiment_context import user_stacklevel
from .._hub import from_pretrained
from ..prompts import PROMPTS
from .base import TrueFalseReranker, two_way

log = logging.getLogger(__name__)


class MonoT5(TrueFalseReranker):
    """monoT5 (Nogueira et al., 2020): ``"Query: {query} Document: {text} Relevant:"`` → P(``true``), one decoder step.

    Presets (checkpoint):

    - ``MonoT5()``: ``castorini/monot5-base-msmarco-10k`` (FollowIR's "MonoT5-base")
    - ``MonoT5.three_b()``: ``castorini/monot5-3b-msmarco-10k`` (FollowIR's "MonoT5-3B")
    - ``MonoT5.flan_t5(model_name_or_path="google/flan-t5-base")``: FLAN-T5 zero-shot with FollowIR's yes/no prompt
    - ``MonoT5.mt5(model_name_or_path="unicamp-dl/mt5-base-mmarco-v2")``: mT5 mMARCO: the monoT5 prompt answered
      ``yes``/``no``

    Args:
        model_name_or_path: a hub id or a local folder.
        template, true_token, false_token: the prompt and answer words (:data:`pyterrier_instruct.prompts.PROMPTS`).
        score: ``'prob'`` (the reference), ``'logprob'`` (pyterrier_t5) or ``'logit_diff'``.
        Other arguments: see :class:`~pyterrier_instruct.pointwise.base.PointwiseReranker`.
    """
    schematic = {"label": "MonoT5"}
    padding_side = "right"
    #: ``_fold_scale``: None until checked on the loaded model, then the LM-head scale of the folded step or False
    _lazy = ("_model", "_tokenizer", "_fold_scale")

    def __init__(self, model_name_or_path: str = "castorini/monot5-base-msmarco-10k", *,
                 template: str = PROMPTS["monot5"].template, true_token: str = "true", false_token: str = "false",
                 **kwargs):
        super().__init__(model_name_or_path, template=template, true_token=true_token, false_token=false_token,
                         **kwargs)
        self._fold_scale = None

    @preset
    def three_b(cls, **kwargs) -> "MonoT5":
        """``castorini/monot5-3b-msmarco-10k``."""
        return cls("castorini/monot5-3b-msmarco-10k", **kwargs)

    @preset
    def flan_t5(cls, model_name_or_path: str = "google/flan-t5-base", **kwargs) -> "MonoT5":
        """FLAN-T5 zero-shot (yes/no) with FollowIR's prompt; ``google/flan-t5-large`` was also used there."""
        p = PROMPTS["flan_t5"]
        return cls(model_name_or_path, template=p.template, true_token=p.true_token, false_token=p.false_token,
                   **kwargs)

    @preset
    def mt5(cls, model_name_or_path: str = "unicamp-dl/mt5-base-mmarco-v2", **kwargs) -> "MonoT5":
        """mT5 mMARCO checkpoints: the monoT5 prompt answered with ``yes``/``no``."""
        p = PROMPTS["mt5_mmarco"]
        return cls(model_name_or_path, template=p.template, true_token=p.true_token, false_token=p.false_token,
                   **kwargs)

    def _load_model(self):
        import transformers
        if "float16" == str(self._torch_dtype).split(".")[-1]:
            warnings.warn("T5 in fp16 overflows (NaN scores); use dtype='bf16' or 'fp32'", stacklevel=user_stacklevel())
        tok = from_pretrained(transformers.AutoTokenizer, self.model_name_or_path)
        model = from_pretrained(transformers.AutoModelForSeq2SeqLM, self.model_name_or_path, dtype=self._torch_dtype)
        self._ids = [tok.encode(w)[0] for w in (self.false_token, self.true_token)]
        self._start = model.config.decoder_start_token_id
        return model, tok

    def _forward(self, batch):
        ids, mask = batch["input_ids"], batch["attention_mask"]
        if self._fold_scale is None:  # decided once per load: the folded step on the first row vs transformers' forward
            self._fold_scale = self._folded_step_scale(ids[:1], mask[:1])
        if self._fold_scale is False:
            return two_way(self._transformers_logits(ids, mask), self.score)
        encoded = self._model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        return two_way(self._first_step_logits(encoded, mask, self._fold_scale), self.score)

    def _transformers_logits(self, ids, mask):
        """``[false, true]`` logits of transformers' forward: the encoder and one decoder step from the start token."""
        import torch
        decoder = torch.full((ids.shape[0], 1), self._start, dtype=torch.long, device=ids.device)
        return self._model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder).logits[:, 0, self._ids]

    # -- the first decoder step with the cross-attention projections folded ------------------------------------------
    #: checkpoints whose first decoder step :meth:`_first_step_logits` computes (T5 v1.0/v1.1, FLAN-T5, mT5 blocks)
    FOLDED_MODELS = ("T5ForConditionalGeneration", "MT5ForConditionalGeneration")

    def _first_step_logits(self, encoded, mask, scale: float):
        """``[false, true]`` logits of the first decoder step, as transformers' forward computes them, with less work.

        The one decoder token's self-attention sees only itself (softmax over one key is 1: the output is ``o(v(x))``),
        and each cross-attention folds its key and value projections into its query and output: ``q·(E·Wk)ᵀ =
        (q·Wk)·Eᵀ`` and ``softmax·(E·Wv) = (softmax·E)·Wvᵀ``, O(n·d) per layer instead of projecting all n encoder
        states (O(n·d²), 1/7 of a t5-small rerank's multiply-adds). T5 scales no attention scores; the padding mask is
        added as in transformers; ``scale`` multiplies the last hidden state before the LM head (``d_model**-0.5`` for
        T5's tied head; which one a transformers version applies is found by :meth:`_folded_step_scale`)."""
        import torch
        dec, n, d = self._model.decoder, encoded.shape[0], encoded.shape[-1]
        h = dec.embed_tokens(torch.full((n, 1), self._start, dtype=torch.long, device=encoded.device))
        masked = (1.0 - mask[:, None, :].to(encoded.dtype)) * torch.finfo(encoded.dtype).min
        for block in dec.block:
            self_attn, cross, ff = block.layer[0], block.layer[1], block.layer[2]
            h = h + self_attn.SelfAttention.o(self_attn.SelfAttention.v(self_attn.layer_norm(h)))
            a = cross.EncDecAttention
            heads, k = a.n_heads, a.key_value_proj_dim
            q = a.q(cross.layer_norm(h)).view(n, heads, k)
            scores = torch.einsum("nhd,nld->nhl", torch.einsum("nhk,hkd->nhd", q, a.k.weight.view(heads, k, d)),
                                  encoded)
            p = torch.softmax((scores + masked).float(), dim=-1).type_as(scores)
            mixed = torch.einsum("nhl,nld->nhd", p, encoded)
            h = h + a.o(torch.einsum("nhd,hkd->nhk", mixed, a.v.weight.view(heads, k, d)).reshape(n, 1, heads * k))
            h = ff(h)
        return (dec.final_layer_norm(h)[:, 0] * scale) @ self._model.lm_head.weight[self._ids].T

    def _folded_step_scale(self, ids, mask):
        """The ``scale`` with which :meth:`_first_step_logits` gives transformers' logits (within 1e-4, checked on one
        row), or False: then every batch takes transformers' forward (not a known T5 class, fp16, where T5 clamps, or
        a block layout this code does not know)."""
        import torch
        if type(self._model).__name__ not in self.FOLDED_MODELS or self._model.dtype == torch.float16:
            return False
        try:
            with torch.inference_mode():
                want = self._transformers_logits(ids, mask).float()
                encoded = self._model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
                tolerance = 1e-4 if self._model.dtype == torch.float32 else 5e-2
                for scale in (self._model.config.d_model ** -0.5, 1.0):
                    if torch.allclose(self._first_step_logits(encoded, mask, scale).float(), want, atol=tolerance,
                                      rtol=0):
                        return scale
        except (AttributeError, IndexError, RuntimeError, TypeError) as err:
            log.info("%s: the folded first decoder step does not apply (%s); using transformers' forward",
                     self.model_name_or_path, err)
            return False
        log.info("%s: the folded first decoder step differs from transformers' forward; using the latter",
                 self.model_name_or_path)
        return False
