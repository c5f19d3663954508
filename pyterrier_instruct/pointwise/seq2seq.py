"""monoT5 and other seq2seq true/false rerankers (pyterrier_t5 ``MonoT5ReRanker``, FollowIR's ``rerank.py``): one decoder step from the decoder start
token, the logits of ``encode(true_word)[0]`` / ``encode(false_word)[0]`` (``▁true``/``▁false`` for T5)."""
from __future__ import annotations

import warnings
from .._config import preset
from .._hub import from_pretrained
from ..prompts import PROMPTS
from .base import TrueFalseReranker, two_way


class MonoT5(TrueFalseReranker):
    """monoT5 (Nogueira et al., 2020): ``"Query: {query} Document: {text} Relevant:"`` → P(``true``), one decoder step.

    | preset | checkpoint |
    |---|---|
    | ``MonoT5()`` | ``castorini/monot5-base-msmarco-10k`` (FollowIR's "MonoT5-base") |
    | ``MonoT5.three_b()`` | ``castorini/monot5-3b-msmarco-10k`` (FollowIR's "MonoT5-3B") |
    | ``MonoT5.flan_t5(model_name_or_path="google/flan-t5-base")`` | FLAN-T5 zero-shot with FollowIR's yes/no prompt |
    | ``MonoT5.mt5(model_name_or_path="unicamp-dl/mt5-base-mmarco-v2")`` | mT5 mMARCO: the monoT5 prompt answered ``yes``/``no`` |

    Args:
        model_name_or_path: a hub id or a local folder.
        template, true_token, false_token: the prompt and answer words (:data:`pyterrier_instruct.prompts.PROMPTS`).
        score: ``'prob'`` (the reference), ``'logprob'`` (pyterrier_t5) or ``'logit_diff'``.
        Other arguments: see :class:`~pyterrier_instruct.pointwise.base.PointwiseReranker`.
    """
    schematic = {"label": "MonoT5"}
    padding_side = "right"

    def __init__(self, model_name_or_path: str = "castorini/monot5-base-msmarco-10k", *,
                 template: str = PROMPTS["monot5"].template, true_token: str = "true", false_token: str = "false",
                 **kwargs):
        super().__init__(model_name_or_path, template=template, true_token=true_token, false_token=false_token, **kwargs)

    @preset
    def three_b(cls, **kwargs) -> "MonoT5":
        """``castorini/monot5-3b-msmarco-10k``."""
        return cls("castorini/monot5-3b-msmarco-10k", **kwargs)

    @preset
    def flan_t5(cls, model_name_or_path: str = "google/flan-t5-base", **kwargs) -> "MonoT5":
        """FLAN-T5 zero-shot (yes/no) with FollowIR's prompt; ``google/flan-t5-large`` was also used there."""
        p = PROMPTS["flan_t5"]
        return cls(model_name_or_path, template=p.template, true_token=p.true_token, false_token=p.false_token, **kwargs)

    @preset
    def mt5(cls, model_name_or_path: str = "unicamp-dl/mt5-base-mmarco-v2", **kwargs) -> "MonoT5":
        """mT5 mMARCO checkpoints: the monoT5 prompt answered with ``yes``/``no``."""
        p = PROMPTS["mt5_mmarco"]
        return cls(model_name_or_path, template=p.template, true_token=p.true_token, false_token=p.false_token, **kwargs)

    def _load_model(self):
        import transformers
        if "float16" == str(self._torch_dtype).split(".")[-1]:
            warnings.warn("T5 in fp16 overflows (NaN scores); use dtype='bf16' or 'fp32'", stacklevel=3)
        tok = from_pretrained(transformers.AutoTokenizer, self.model_name_or_path)
        model = from_pretrained(transformers.AutoModelForSeq2SeqLM, self.model_name_or_path, dtype=self._torch_dtype)
        self._ids = [tok.encode(w)[0] for w in (self.false_token, self.true_token)]
        self._start = model.config.decoder_start_token_id
        return model, tok

    def _forward(self, batch):
        import torch
        ids = batch["input_ids"]
        decoder = torch.full((ids.shape[0], 1), self._start, dtype=torch.long, device=ids.device)
        logits = self._model(input_ids=ids, attention_mask=batch["attention_mask"], decoder_input_ids=decoder).logits
        return two_way(logits[:, 0, self._ids], self.score)
