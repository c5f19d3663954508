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
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

instances: List["LLM"] = []

#: The stand-in's next-token probabilities by rank (see the module docstring).
PROBS = (0.6, 0.2, 0.1, 0.05, 0.03, 0.01, 0.005, 0.003, 0.001, 0.001)


class SamplingParams:
    def __init__(self, n: int = 1, temperature: float = 1.0, top_p: float = 1.0, max_tokens: Optional[int] = 16,
                 min_tokens: int = 0, seed: Optional[int] = None, stop=None, logprobs: Optional[int] = None):
        if min_tokens and max_tokens is not None and min_tokens > max_tokens:
            raise ValueError("min_tokens must be less than or equal to max_tokens")
        if logprobs is not None and logprobs < 0:
            raise ValueError(f"logprobs must be non-negative, got {logprobs}.")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}.")
        self.requested = dict(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, min_tokens=min_tokens, seed=seed,
                              stop=stop, logprobs=logprobs)
        if temperature < 1e-5:  # greedy: vLLM resets the sampling filters
            top_p = 1.0
        self.n, self.temperature, self.top_p, self.max_tokens, self.min_tokens, self.seed, self.stop = \
            n, temperature, top_p, max_tokens, min_tokens, seed, stop
        self.logprobs = logprobs


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


class LLM:
    def __init__(self, model: str, *, tokenizer: Optional[str] = None, tensor_parallel_size: int = 1, dtype: str = "auto",
                 seed: int = 0, gpu_memory_utilization: float = 0.9, max_model_len: Optional[int] = None, **kwargs):
        import transformers
        self.model = model
        self.init_args = dict(model=model, tokenizer=tokenizer, tensor_parallel_size=tensor_parallel_size, dtype=dtype, seed=seed,
                              gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, **kwargs)
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer or model)
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
            text = self._tokenizer.decode(ids, skip_special_tokens=True)
            listwise = re.search(r"provide you with (\d+) passages", text)
            if listwise:
                answer = " > ".join(f"[{i}]" for i in range(int(listwise.group(1)), 0, -1))
            else:
                scale = int(re.search(r"Please give a score between 0 and (\d)", text).group(1))
                answer = f'{{"score": {min(2, scale)}, "reason": "stand-in"}}'
            out_ids = self._tokenizer(answer, add_special_tokens=False)["input_ids"][:params.max_tokens]
            logprobs = None if params.logprobs is None else [self._logprobs(t, params.logprobs) for t in out_ids]
            outputs.append(RequestOutput(str(n), p if isinstance(p, str) else None, ids,
                                         [CompletionOutput(0, answer, out_ids, logprobs=logprobs)]))
        return outputs

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
