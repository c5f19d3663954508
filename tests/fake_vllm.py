"""A stand-in for the parts of vLLM's public API that VLLMBackend uses (``LLM``, ``SamplingParams``, the output objects),
injected as ``sys.modules['vllm']`` by tests: vLLM itself cannot be installed on these machines.

It mirrors vLLM's signatures and input rules (``generate`` takes a prompt string, a ``{"prompt_token_ids": [...]}``
dict, or a list of either; ``sampling_params`` is one ``SamplingParams``) and records every call. Its "model" reads
the number of passages of a listwise prompt back from the token ids and ranks them in reverse order; to an IFIR judge
prompt ("Please give a score between 0 and N.") it answers ``{"score": min(2, N), "reason": "stand-in"}``.

Logprobs as vLLM returns them: ``SamplingParams(logprobs=k)`` makes ``CompletionOutput.logprobs`` a list, one entry per
generated token, of ``{token_id: Logprob(logprob, rank, decoded_token)}`` holding the top-k tokens (plus the sampled
one if it were outside them). The stand-in's distribution at every position: the emitted token at
:data:`PROBS` [0], then — for a digit token d — the digits d+1, d+2, … (mod 10), else the ids t+1, t+2, …, at
``PROBS[1:]``. Greedy sampling (``temperature < 1e-5``) resets ``top_p`` to 1.0 as vLLM does; ``requested`` keeps the
arguments as given.

Any other prompt (a pointwise reranker's) runs through the engine's model itself: the checkpoint loaded with
transformers (float32), one forward pass, the last position's logits, then vLLM's V1 sampler in the order its
documentation gives (``vllm.v1.sample.sampler.Sampler``, https://docs.vllm.ai/en/v0.10.2/api/vllm/v1/sample/sampler.html,
the same steps in the v0.11.0, v0.19.0 and v0.22.1 pages):

1. with ``logprobs`` requested and ``logprobs_mode`` ``raw_logprobs`` (the engine default) / ``raw_logits``: the
   log-softmax of / the raw logits over the whole vocabulary, taken **before** anything below;
3. ``SamplingParams.allowed_token_ids`` (https://docs.vllm.ai/en/v0.10.2/api/vllm/sampling_params.html): every other
   token's logit set to ``-inf``;
7a. greedy (``temperature < 1e-5``): the argmax is sampled and, for ``processed_logprobs`` / ``processed_logits``, the
   log-softmax of / the logits after step 3 are the values returned (no temperature applied);
8. the top ``logprobs`` of the returned values, plus the sampled token when it is outside them, as
   ``{token_id: Logprob(value, rank, decoded_token)}``.

``logprobs_mode`` is an engine argument (``LLM(..., logprobs_mode=)``,
https://docs.vllm.ai/en/v0.10.2/configuration/engine_args.html). Prefix caching (``enable_prefix_caching``, on by
default in V1; design: https://docs.vllm.ai/en/v0.10.2/design/prefix_caching.html) is simulated at its granularity:
blocks of :data:`BLOCK_SIZE` tokens, a block reusable when the same tokens up to its end were computed before, at most
``len(prompt) - 1`` tokens served from the cache (the last one is always computed); ``RequestOutput.num_cached_tokens``
(https://docs.vllm.ai/en/v0.10.2/api/vllm/outputs.html) reports them. Requests of one ``generate`` call are served
in the order given.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

instances: List["LLM"] = []

#: vLLM's default KV-cache block size (tokens): the granularity of prefix-cache hits
BLOCK_SIZE = 16
LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")

#: The stand-in's next-token probabilities by rank (see the module docstring).
PROBS = (0.6, 0.2, 0.1, 0.05, 0.03, 0.01, 0.005, 0.003, 0.001, 0.001)


class SamplingParams:
    def __init__(self, n: int = 1, temperature: float = 1.0, top_p: float = 1.0, max_tokens: Optional[int] = 16,
                 min_tokens: int = 0, seed: Optional[int] = None, stop=None, logprobs: Optional[int] = None,
                 allowed_token_ids: Optional[List[int]] = None, skip_special_tokens: bool = True):
        if min_tokens and max_tokens is not None and min_tokens > max_tokens:
            raise ValueError("min_tokens must be less than or equal to max_tokens")
        if logprobs is not None and logprobs < 0:
            raise ValueError(f"logprobs must be non-negative, got {logprobs}.")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}.")
        if allowed_token_ids is not None and not allowed_token_ids:
            raise ValueError("allowed_token_ids is not None and empty!")
        self.requested = dict(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, min_tokens=min_tokens, seed=seed,
                              stop=stop, logprobs=logprobs)
        if allowed_token_ids is not None:
            self.requested["allowed_token_ids"] = allowed_token_ids
        if temperature < 1e-5:  # greedy: vLLM resets the sampling filters
            top_p = 1.0
        self.n, self.temperature, self.top_p, self.max_tokens, self.min_tokens, self.seed, self.stop = \
            n, temperature, top_p, max_tokens, min_tokens, seed, stop
        self.logprobs, self.allowed_token_ids = logprobs, allowed_token_ids
        self.skip_special_tokens = skip_special_tokens  # detokenisation only; the stand-in's one-token answers ignore it


@dataclass
class Logprob:
    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float] = None
    logprobs: Optional[List[Dict[int, Logprob]]] = None
    finish_reason: str = "length"


@dataclass
class RequestOutput:
    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    outputs: List[CompletionOutput] = field(default_factory=list)
    finished: bool = True
    num_cached_tokens: Optional[int] = None


class LLM:
    def __init__(self, model: str, *, tokenizer: Optional[str] = None, tensor_parallel_size: int = 1, dtype: str = "auto",
                 seed: int = 0, gpu_memory_utilization: float = 0.9, max_model_len: Optional[int] = None,
                 logprobs_mode: Optional[str] = None, **kwargs):
        import transformers
        if logprobs_mode is not None and logprobs_mode not in LOGPROBS_MODES:
            raise ValueError(f"logprobs_mode must be one of {LOGPROBS_MODES}, got {logprobs_mode!r}")
        self.model = model
        self.init_args = dict(model=model, tokenizer=tokenizer, tensor_parallel_size=tensor_parallel_size, dtype=dtype, seed=seed,
                              gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, **kwargs)
        if logprobs_mode is not None:
            self.init_args["logprobs_mode"] = logprobs_mode
        self.logprobs_mode = logprobs_mode or "raw_logprobs"  # vLLM's default
        self.prefix_caching = kwargs.get("enable_prefix_caching") is not False  # V1: on unless turned off
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer or model)
        self._model = None
        self._blocks = set()  # the prefixes (as token tuples) of every full block computed so far
        self.calls = []
        instances.append(self)

    def get_tokenizer(self):
        return self._tokenizer

    def generate(self, prompts, sampling_params: Optional[SamplingParams] = None, use_tqdm: bool = True, lora_request=None):
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        if sampling_params is not None and not isinstance(sampling_params, SamplingParams):
            raise TypeError("sampling_params must be a SamplingParams")
        params = sampling_params or SamplingParams()
        self.calls.append({"prompts": prompts, "params": params, "use_tqdm": use_tqdm})
        outputs = []
        for n, p in enumerate(prompts):
            if isinstance(p, str):
                ids = self._tokenizer(p)["input_ids"]
            elif isinstance(p, dict) and set(p) <= {"prompt_token_ids", "multi_modal_data"}:
                ids = list(p["prompt_token_ids"])
                if not all(isinstance(i, int) for i in ids):
                    raise TypeError("prompt_token_ids must be a list of int")
            else:
                raise TypeError(f"unsupported prompt type {type(p).__name__}")
            cached = self._cache(ids)
            text = self._tokenizer.decode(ids, skip_special_tokens=True)
            listwise = re.search(r"provide you with (\d+) passages", text)
            judge = re.search(r"Please give a score between 0 and (\d)", text)
            if (listwise or judge) and params.allowed_token_ids is None:  # a restricted step (FIRST's) runs the model
                answer = (" > ".join(f"[{i}]" for i in range(int(listwise.group(1)), 0, -1)) if listwise
                          else f'{{"score": {min(2, int(judge.group(1)))}, "reason": "stand-in"}}')
                out_ids = self._tokenizer(answer, add_special_tokens=False)["input_ids"][:params.max_tokens]
                logprobs = None if params.logprobs is None else [self._logprobs(t, params.logprobs) for t in out_ids]
            else:
                token, position = self._sample(ids, params)
                out_ids, answer = [token], self._tokenizer.decode([token])
                logprobs = None if params.logprobs is None else [position]
            outputs.append(RequestOutput(str(n), p if isinstance(p, str) else None, ids,
                                         [CompletionOutput(0, answer, out_ids, logprobs=logprobs)], num_cached_tokens=cached))
        return outputs

    def _cache(self, ids: List[int]) -> int:
        """Prompt tokens served from the prefix cache (whole blocks, at most ``len - 1``); records the new blocks."""
        if not self.prefix_caching:
            return 0
        hit, n = 0, BLOCK_SIZE
        while n <= len(ids) - 1 and tuple(ids[:n]) in self._blocks:
            hit, n = n, n + BLOCK_SIZE
        self._blocks.update(tuple(ids[:m]) for m in range(BLOCK_SIZE, len(ids) + 1, BLOCK_SIZE))
        return hit

    def _sample(self, ids: List[int], params: SamplingParams):
        """The model's next token and the logprobs entry vLLM's V1 sampler returns for it (module docstring, steps 1-8)."""
        import torch
        import transformers
        if self._model is None:
            self._model = transformers.AutoModelForCausalLM.from_pretrained(self.model, dtype=torch.float32).eval()
        with torch.inference_mode():
            logits = self._model(input_ids=torch.tensor([ids])).logits[0, -1].float()
        returned = None
        if self.logprobs_mode == "raw_logprobs":                     # step 1
            returned = torch.log_softmax(logits, -1)
        elif self.logprobs_mode == "raw_logits":
            returned = logits.clone()
        if params.allowed_token_ids is not None:                     # step 3
            if max(params.allowed_token_ids) >= logits.shape[0] or min(params.allowed_token_ids) < 0:
                raise ValueError("allowed_token_ids contains out-of-vocab token id!")
            masked = torch.full_like(logits, float("-inf"))
            masked[params.allowed_token_ids] = logits[params.allowed_token_ids]
            logits = masked
        if params.temperature >= 1e-5:
            raise NotImplementedError("the stand-in samples greedily only (temperature=0)")
        token = int(torch.argmax(logits))                            # step 7a
        if self.logprobs_mode == "processed_logprobs":
            returned = torch.log_softmax(logits, -1)
        elif self.logprobs_mode == "processed_logits":
            returned = logits
        if params.logprobs is None:
            return token, None
        order = torch.argsort(returned, descending=True, stable=True).tolist()   # step 8
        keep = order[:params.logprobs] + ([token] if token not in order[:params.logprobs] else [])
        decode = self._tokenizer.decode
        return token, {t: Logprob(float(returned[t]), order.index(t) + 1, decode([t])) for t in keep}

    def _logprobs(self, token_id: int, k: int) -> Dict[int, Logprob]:
        decode = self._tokenizer.decode
        text = decode([token_id])
        if len(text) == 1 and text.isdigit():
            digits = {d: self._tokenizer.convert_tokens_to_ids(d) for d in "0123456789"}
            others = [digits[str((int(text) + j) % 10)] for j in range(1, 10)]
        else:
            others = [(token_id + j) % len(self._tokenizer) for j in range(1, 10)]
        ranked = [token_id] + others
        return {t: Logprob(math.log(PROBS[r]), r + 1, decode([t])) for r, t in enumerate(ranked[:max(k, 1)])}
