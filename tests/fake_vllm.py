"""A stand-in for the parts of vLLM's public API that VLLMBackend uses (``LLM``, ``SamplingParams``, the output objects),
injected as ``sys.modules['vllm']`` by tests: vLLM itself cannot be installed on these machines.

It mirrors vLLM's signatures and input rules (``generate`` takes a prompt string, a ``{"prompt_token_ids": [...]}``
dict, or a list of either; ``sampling_params`` is one ``SamplingParams``) and records every call. Its "model" reads
the number of passages of a listwise prompt back from the token ids and ranks them in reverse order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional

instances: List["LLM"] = []


class SamplingParams:
    def __init__(self, n: int = 1, temperature: float = 1.0, top_p: float = 1.0, max_tokens: Optional[int] = 16,
                 min_tokens: int = 0, seed: Optional[int] = None, stop=None):
        if min_tokens and max_tokens is not None and min_tokens > max_tokens:
            raise ValueError("min_tokens must be less than or equal to max_tokens")
        self.n, self.temperature, self.top_p, self.max_tokens, self.min_tokens, self.seed, self.stop = \
            n, temperature, top_p, max_tokens, min_tokens, seed, stop


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float] = None
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
            num = int(re.search(r"provide you with (\d+) passages", text).group(1))
            answer = " > ".join(f"[{i}]" for i in range(num, 0, -1))
            out_ids = self._tokenizer(answer, add_special_tokens=False)["input_ids"][:params.max_tokens]
            outputs.append(RequestOutput(str(n), p if isinstance(p, str) else None, ids, [CompletionOutput(0, answer, out_ids)]))
        return outputs
