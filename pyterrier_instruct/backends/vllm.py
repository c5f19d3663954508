"""Greedy generation with vLLM's offline engine (``pip install 'pyterrier-instruct[vllm]'``, imported lazily)."""
from __future__ import annotations

from typing import List, Optional, Sequence, Union

from .._optional import require
from .._hub import model_path
from .base import Generation, Prompt, TokenizerBackend, check_logprob_args


class VLLMBackend(TokenizerBackend):
    """``vllm.LLM(...).generate`` on token-id prompts (the same ids the HF backend would see), greedy
    (``temperature=0``), ``min_tokens = max_tokens`` = the caller's output budget, prefix caching on.

    Args:
        model: a hub id or a local folder.
        tensor_parallel_size: GPUs to shard over.
        gpu_memory_utilization: the fraction of GPU memory vLLM pre-allocates (rank_llm hard-codes 0.90; lower it
            when another model shares the GPU).
        max_model_len: the engine's context length (``None``: the model's); rank_llm uses context size + output budget.
        dtype: vLLM's ``dtype`` (``'auto'``, ``'bfloat16'``, ``'float16'``).
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes (the system message and instructions).
        chat_template: replaces the checkpoint's chat template.
        seed, verbose: the engine seed; vLLM's own progress bar.
        **llm_kwargs: passed to ``vllm.LLM`` as they are (e.g. ``enforce_eager``, ``quantization``).
    """

    _identity = ("model", "dtype", "chat_template", "seed", "llm_kwargs")
    _weights = ("model",)

    def __init__(self, model: str, *, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9,
                 max_model_len: Optional[int] = None, dtype: str = "auto", enable_prefix_caching: bool = True,
                 chat_template: Optional[str] = None, seed: int = 0, verbose: bool = False, **llm_kwargs):
        if not 0 < float(gpu_memory_utilization) <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}")
        if int(tensor_parallel_size) < 1:
            raise ValueError(f"tensor_parallel_size must be at least 1, got {tensor_parallel_size!r}")
        self.model, self.tensor_parallel_size = str(model), int(tensor_parallel_size)
        self.gpu_memory_utilization, self.max_model_len, self.dtype = float(gpu_memory_utilization), max_model_len, dtype
        self.enable_prefix_caching, self.chat_template, self.seed, self.verbose = enable_prefix_caching, chat_template, seed, verbose
        self.llm_kwargs = dict(llm_kwargs)
        self._llm = None

    _lazy = ("_llm",)

    def _eq_key(self) -> tuple:
        return super()._eq_key() + (("llm_kwargs", tuple(sorted(self.llm_kwargs.items()))),)

    def _engine(self):
        if self._llm is None:
            vllm = require("vllm", "vllm")
            self._llm = vllm.LLM(model=model_path(self.model), tensor_parallel_size=self.tensor_parallel_size,
                                 gpu_memory_utilization=self.gpu_memory_utilization, max_model_len=self.max_model_len,
                                 dtype=self.dtype, enable_prefix_caching=self.enable_prefix_caching, seed=self.seed,
                                 **self.llm_kwargs)
        return self._llm

    def _tokenizer(self):
        return self._engine().get_tokenizer()

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        vllm = require("vllm", "vllm")
        llm = self._engine()
        params = vllm.SamplingParams(n=1, temperature=0.0, max_tokens=max_new_tokens, min_tokens=min_new_tokens)
        inputs = [{"prompt_token_ids": self._ids(p)} for p in prompts]
        outputs = llm.generate(inputs, sampling_params=params, use_tqdm=self.verbose)
        if len(outputs) != len(inputs):
            raise RuntimeError(f"{self!r}: vLLM returned {len(outputs)} outputs for {len(inputs)} prompts")
        return [o.outputs[0].text for o in outputs]

    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int, temperature: float = 0.0,
                          top_p: float = 1.0, return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        """``SamplingParams(logprobs=top_logprobs, temperature=, top_p=, max_tokens=max_new_tokens)``; each generated
        position's ``{token_id: Logprob(logprob, rank, decoded_token)}`` becomes its candidates, by rank (the top-k plus
        the sampled token when it is outside them, as vLLM returns). Requests do not fail one by one here, so
        ``return_exceptions`` changes nothing."""
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        vllm = require("vllm", "vllm")
        llm = self._engine()
        params = vllm.SamplingParams(n=1, temperature=float(temperature), top_p=float(top_p), max_tokens=int(max_new_tokens),
                                     logprobs=int(top_logprobs))
        inputs = [{"prompt_token_ids": self._ids(p)} for p in prompts]
        outputs = llm.generate(inputs, sampling_params=params, use_tqdm=self.verbose)
        if len(outputs) != len(inputs):
            raise RuntimeError(f"{self!r}: vLLM returned {len(outputs)} outputs for {len(inputs)} prompts")
        tok = None
        result: List[Union[Generation, Exception]] = []
        for o in outputs:
            c = o.outputs[0]
            if c.logprobs is None or len(c.logprobs) != len(c.token_ids):
                raise RuntimeError(f"{self!r}: vLLM returned no per-token logprobs for request {o.request_id!r}")
            tokens, tops = [], []
            for token_id, position in zip(c.token_ids, c.logprobs):
                ranked = sorted(position.items(), key=lambda kv: (kv[1].rank if kv[1].rank is not None else float("inf")))
                if tok is None and (token_id not in position or any(lp.decoded_token is None for _, lp in ranked)):
                    tok = self._tokenizer()  # detokenize=False: decode here
                texts = {i: (lp.decoded_token if lp.decoded_token is not None else tok.decode([i])) for i, lp in ranked}
                tokens.append(texts[token_id] if token_id in texts else tok.decode([token_id]))
                tops.append(tuple((texts[i], float(lp.logprob)) for i, lp in ranked))
            result.append(Generation(c.text, tuple(tokens), tuple(tops)))
        return result
