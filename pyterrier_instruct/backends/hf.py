"""Greedy generation with Hugging Face transformers (CPU or GPU), batched with left padding; per-token
log-probabilities (``generate_logprobs``) and the probability of given score tokens (``score_distribution``) for
LLM judges, both from the model's full next-token distribution; generation until a stop string with the last step's
top log-probabilities (``generate_until``) and one restricted step (``next_token_logprobs``) for reasoning rerankers."""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from .._optional import require
from .._hub import from_pretrained
from .._torch import by_length, hf_setup
from .._tokens import common_prefix_length, encode_rendered
from .base import Continuation, Generation, Prompt, Text, TokenizerBackend, as_store, check_logprob_args

log = logging.getLogger(__name__)


class HFBackend(TokenizerBackend):
    """``AutoModelForCausalLM.generate`` with ``do_sample=False``, prompts batched by length with left padding.

    Args:
        model_name_or_path: a hub id or a local folder (loaded lazily, on the first prompt).
        batch_size: prompts per ``generate`` call (halved on GPU out-of-memory).
        device: ``None``/``'auto'`` (cuda, mps, cpu) or a torch device string.
        dtype: ``'auto'`` (bf16 on GPU, fp32 on CPU), ``'bf16'``, ``'fp16'``, ``'fp32'``.
        chat_template: replaces the checkpoint's chat template (a Jinja string).
        store: a :class:`~pyterrier_instruct.calls.CallStore` (or its folder) keeping every call.

    transformers' loading bars follow :func:`~pyterrier_instruct.library_progress`; the stage driving the backend
    shows the package's own bar (its ``verbose``).
    """

    _identity = ("model_name_or_path", "dtype", "chat_template")
    _weights = ("model_name_or_path",)

    def __init__(self, model_name_or_path: str, *, batch_size: int = 8, device: Optional[str] = None, dtype="auto",
                 chat_template: Optional[str] = None, store=None):
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        self.model_name_or_path, self.batch_size = str(model_name_or_path), int(batch_size)
        self.device, self.dtype, self.chat_template = device, dtype, chat_template
        self.store = as_store(store)
        self._model = self._tok = None

    _lazy = ("_model", "_tok")

    def _tokenizer(self):
        if self._tok is None:
            transformers = require("transformers", "hf")
            tok = from_pretrained(transformers.AutoTokenizer, self.model_name_or_path)
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            self._tok = tok
        return self._tok

    def _load(self):
        if self._model is None:
            transformers, self._device, dtype = hf_setup(self.device, self.dtype)
            model = from_pretrained(transformers.AutoModelForCausalLM, self.model_name_or_path, dtype=dtype)
            self._model = model.to(self._device).eval()
        return self._model, self._tokenizer()

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        model, tok = self._load()
        feats = [{"input_ids": self._ids(p)} for p in prompts]
        out: List[str] = [""] * len(prompts)
        stop = sorted(self._eos_ids(model, tok))

        def run(idx: np.ndarray) -> None:
            import torch
            batch = tok.pad([feats[i] for i in idx], padding=True, padding_side="left",
                            return_tensors="pt").to(self._device)
            with torch.inference_mode():
                ids = model.generate(**batch, do_sample=False, max_new_tokens=max_new_tokens,
                                     min_new_tokens=min_new_tokens, pad_token_id=tok.pad_token_id, temperature=None,
                                     top_p=None, top_k=None)
            new = ids[:, batch["input_ids"].shape[1]:]
            for i, row in zip(idx, new):
                ended = np.flatnonzero(np.isin(row.cpu().numpy(), stop))  # the first end of sequence, then padding
                usage = {"prompt_tokens": len(feats[i]["input_ids"]),  # for the call store
                         "completion_tokens": int(ended[0]) + 1 if len(ended) else len(row)}
                out[i] = Text(tok.decode(row, skip_special_tokens=True, spaces_between_special_tokens=False), usage)

        lengths = np.array([len(f["input_ids"]) for f in feats], dtype=np.int64)
        by_length(lengths, self.batch_size, run, name=self.model_name_or_path)
        return out

    # -- LLM judges ----------------------------------------------------------------------------------------------------
    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int,
                          temperature: float = 0.0, top_p: float = 1.0,
                          return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        """Greedy (``temperature=0``; sampling with ``temperature``/``top_p`` otherwise) generation that keeps, at each
        step, the ``top_logprobs`` most likely tokens of the log-softmax of the model's raw logits. Token texts are
        decoded incrementally with the preceding tokens as context (as vLLM does), so a sentencepiece ``▁2`` after a
        space reads ``" 2"``. Generation stops at the first end-of-sequence token, which is not returned."""
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        model, tok = self._load()
        ids_of = [self._ids(p) for p in prompts]
        out: List[Union[Generation, Exception]] = [Generation("", (), ())] * len(prompts)
        stop = self._eos_ids(model, tok)
        sample = float(temperature) > 0

        def run(idx: np.ndarray) -> None:
            import torch
            batch = tok.pad([{"input_ids": ids_of[i]} for i in idx], padding=True, padding_side="left",
                            return_tensors="pt").to(self._device)
            with torch.inference_mode():
                res = model.generate(**batch, do_sample=sample, max_new_tokens=int(max_new_tokens),
                                     pad_token_id=tok.pad_token_id, temperature=float(temperature) if sample else None,
                                     top_p=float(top_p) if sample else None, top_k=None, output_logits=True,
                                     return_dict_in_generate=True)
            new = res.sequences[:, batch["input_ids"].shape[1]:].tolist()
            logp = torch.log_softmax(torch.stack(res.logits, dim=1).float(), dim=-1)
            top = logp.topk(min(int(top_logprobs), logp.shape[-1]), dim=-1)
            values, indices = top.values.tolist(), top.indices.tolist()
            for row, i in enumerate(idx):
                gen = new[row]
                n = next((t for t, x in enumerate(gen) if x in stop), len(gen))
                context = list(ids_of[i])
                tokens, tops = [], []
                for t in range(n):
                    texts = _pieces(tok, (context + gen[:t])[-_CONTEXT:], [gen[t]] + indices[row][t])
                    tokens.append(texts[0])
                    tops.append(tuple(zip(texts[1:], map(float, values[row][t]))))
                text = tok.decode(gen[:n], skip_special_tokens=True, spaces_between_special_tokens=False)
                out[i] = Generation(text, tuple(tokens), tuple(tops))

        lengths = np.array([len(x) for x in ids_of], dtype=np.int64)
        by_length(lengths, self.batch_size, run, name=self.model_name_or_path)
        return out

    def score_distribution(self, prompts: Sequence[Prompt], candidates: Sequence[str] = ("0", "1", "2", "3"), *,
                           prefix: str = "") -> List[Dict[str, float]]:
        """``{candidate: probability}`` per prompt: the model's full-vocabulary next-token probability of each candidate
        (one token each) right after the rendered prompt + ``prefix`` (e.g. the start of the judge's JSON answer,
        ``'{\\n "score": '``). One forward pass per prompt, no generation; not truncated to a top-k list. Each candidate
        must add exactly one token to the common tokenisation of prompt + prefix (``"2"`` after ``"score":``), else a
        ValueError names it. Renormalise over the candidates for a distribution over the scores."""
        if not candidates:
            raise ValueError("score_distribution needs at least one candidate token")
        model, tok = self._load()
        contexts, cand_ids = [], []
        for p in prompts:
            text = (p.text if p.text is not None else self.prepare(p.messages).text) + str(prefix)
            base = encode_rendered(tok, text)
            full = [encode_rendered(tok, text + str(c)) for c in candidates]
            common = base[:common_prefix_length([base] + full)]
            bad = [c for c, f in zip(candidates, full) if len(f) != len(common) + 1]
            if bad or not common:
                raise ValueError(f"{self!r}: score candidate(s) {bad or list(candidates)} are not one token after the "
                                 f"prompt + prefix {str(prefix)!r} for this tokenizer; choose candidates/prefix that "
                                 "tokenise to one token each")
            contexts.append(common)
            cand_ids.append([f[-1] for f in full])
        out: List[Dict[str, float]] = [{} for _ in prompts]

        def run(idx: np.ndarray) -> None:
            import torch
            batch = tok.pad([{"input_ids": contexts[i]} for i in idx], padding=True, padding_side="left",
                            return_tensors="pt").to(self._device)
            with torch.inference_mode():
                logits = model(**batch).logits[:, -1, :].float()
            probs = torch.softmax(logits, dim=-1).tolist()
            for row, i in enumerate(idx):
                out[i] = {str(c): float(probs[row][t]) for c, t in zip(candidates, cand_ids[i])}

        lengths = np.array([len(c) for c in contexts], dtype=np.int64)
        by_length(lengths, self.batch_size, run, name=self.model_name_or_path)
        return out

    # -- reasoning rerankers ----------------------------------------------------------------------------------------
    def generate_until(self, token_ids: Sequence[Sequence[int]], *, max_new_tokens: int, stop: Sequence[str] = (),
                       top_logprobs: int = 20, bar=None) -> List[Continuation]:
        """Greedy ``generate`` (a fresh ``GenerationConfig``: the checkpoint's sampling defaults do not apply, as with
        an explicit vLLM ``SamplingParams``) batched by length. A row ends at an end-of-sequence id (the tokenizer's and
        the generation config's), when the decoded text of its last tokens (special tokens kept) contains a stop
        string (checked after every step, so the first occurrence ends it), or at ``max_new_tokens``. At every step
        the ``top_logprobs`` most likely ids of the log-softmax of the raw logits are kept; a row reports its last
        step's."""
        check_logprob_args(max_new_tokens, top_logprobs, 0.0, 1.0)
        model, tok = self._load()
        ids_of = [list(map(int, ids)) for ids in token_ids]
        out: List[Continuation] = [None] * len(ids_of)  # type: ignore[list-item]
        eos, stop = self._eos_ids(model, tok), tuple(stop)
        window = 1 + max((len(tok(s, add_special_tokens=False)["input_ids"]) for s in stop), default=0)

        def run(idx: np.ndarray) -> None:
            import torch
            transformers = require("transformers", "hf")
            batch = tok.pad([{"input_ids": ids_of[i]} for i in idx], padding=True, padding_side="left",
                            return_tensors="pt").to(self._device)
            width = batch["input_ids"].shape[1]
            tops, stopped = [], {}

            class Record(transformers.LogitsProcessor):
                def __call__(self, input_ids, scores):
                    logprobs = torch.log_softmax(scores.float(), dim=-1)
                    top = logprobs.topk(min(int(top_logprobs), scores.shape[-1]), dim=-1)
                    tops.append((top.values.cpu(), top.indices.cpu()))
                    return scores

            class Stop(transformers.StoppingCriteria):
                def __call__(self, input_ids, scores, **kwargs):
                    done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
                    step = input_ids.shape[1] - width - 1
                    for row in range(input_ids.shape[0]):
                        if row in stopped:
                            done[row] = True
                            continue
                        gen = input_ids[row, width:].tolist()
                        if any(t in eos for t in gen):
                            continue
                        tail = tok.decode(gen[-window * 4:], skip_special_tokens=False)
                        if stop and any(s in tail for s in stop):
                            stopped[row], done[row] = step, True
                    return done

            config = transformers.GenerationConfig(do_sample=False, max_new_tokens=int(max_new_tokens),
                                                   eos_token_id=sorted(eos), pad_token_id=tok.pad_token_id)
            with torch.inference_mode():
                seqs = model.generate(**batch, generation_config=config,
                                      logits_processor=transformers.LogitsProcessorList([Record()]),
                                      stopping_criteria=transformers.StoppingCriteriaList([Stop()])).cpu()
            for row, i in enumerate(idx):
                gen = seqs[row, width:].tolist()
                last = next((t for t, x in enumerate(gen) if x in eos), None)
                if row in stopped and (last is None or stopped[row] < last):
                    last, reason = stopped[row], "stop"
                    text = tok.decode(gen[:last + 1], skip_special_tokens=False)
                    hits = [text.find(s) for s in stop if s in text]
                    text = text[:min(hits)] if hits else text
                elif last is not None:
                    reason, text = "stop", tok.decode(gen[:last], skip_special_tokens=False)
                else:
                    last, reason = len(gen) - 1, "length"
                    text = tok.decode(gen, skip_special_tokens=False)
                values, indices = tops[last][0][row].tolist(), tops[last][1][row].tolist()
                out[i] = Continuation(text, tuple(gen[:last + 1]), dict(zip(indices, values)), reason)
            if bar is not None:
                bar.update(len(idx))

        lengths = np.array([len(x) for x in ids_of], dtype=np.int64)
        by_length(lengths, self.batch_size, run, name=self.model_name_or_path)
        return out

    def next_token_logprobs(self, token_ids: Sequence[Sequence[int]], *,
                            allowed: Sequence[int]) -> List[Dict[int, float]]:
        """One forward pass per batch (left padding, positions from the attention mask): the log-softmax of the last
        position's logits over ``allowed`` only (what masking every other token, as vLLM's ``allowed_token_ids`` does,
        leaves)."""
        allowed = [int(a) for a in allowed]
        if not allowed:
            raise ValueError("next_token_logprobs needs at least one allowed token id")
        model, tok = self._load()
        ids_of = [list(map(int, ids)) for ids in token_ids]
        out: List[Dict[int, float]] = [{} for _ in ids_of]

        def run(idx: np.ndarray) -> None:
            import torch
            batch = tok.pad([{"input_ids": ids_of[i]} for i in idx], padding=True, padding_side="left",
                            return_tensors="pt").to(self._device)
            mask = batch["attention_mask"]
            positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
            with torch.inference_mode():
                logits = model(input_ids=batch["input_ids"], attention_mask=mask, position_ids=positions,
                               logits_to_keep=1).logits
            logp = torch.log_softmax(logits[:, -1, allowed].float(), dim=-1).tolist()
            for row, i in enumerate(idx):
                out[i] = dict(zip(allowed, logp[row]))

        lengths = np.array([len(x) for x in ids_of], dtype=np.int64)
        by_length(lengths, self.batch_size, run, name=self.model_name_or_path)
        return out

    @staticmethod
    def _eos_ids(model, tok) -> set:
        ids = {tok.eos_token_id} if tok.eos_token_id is not None else set()
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        ids |= set(eos) if isinstance(eos, (list, tuple)) else ({eos} if eos is not None else set())
        return ids


_CONTEXT = 5  # preceding tokens decoded with a token to get its text (vLLM's incremental detokenisation offset)


def _pieces(tok, window: List[int], token_ids: List[int]) -> List[str]:
    """The text each of ``token_ids`` adds after ``window`` (incremental decoding: keeps a leading space the token
    carries); a token whose decoding rewrites the window's text falls back to its own decoding."""
    def decode(ids):
        return tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    before = decode(window)
    out = []
    for t in token_ids:
        after = decode(window + [int(t)])
        out.append(after[len(before):] if after.startswith(before) else decode([int(t)]))
    return out

