"""Greedy generation and exact answer-token scores with vLLM's offline engine (``pip install
'pyterrier-instruct[vllm]'``, imported lazily).

Supported vLLM: 0.10.2 to 0.22 (the ``[vllm]`` extra), the V1 engine, whose documentation this module follows:
``logprobs_mode`` (engine arguments, https://docs.vllm.ai/en/v0.10.2/configuration/engine_args.html),
``SamplingParams(allowed_token_ids=, logprobs=)`` (https://docs.vllm.ai/en/v0.10.2/api/vllm/sampling_params.html), the
order of the sampler's steps (https://docs.vllm.ai/en/v0.10.2/api/vllm/v1/sample/sampler.html, unchanged in the
v0.11.0, v0.19.0 and v0.22.1 pages) and ``RequestOutput.num_cached_tokens``
(https://docs.vllm.ai/en/v0.10.2/api/vllm/outputs.html).
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from .._optional import is_available, require
from .._progress import library_progress
from .._hub import model_path
from .base import Continuation, Generation, Prompt, Text, TokenizerBackend, as_store, check_logprob_args


#: vLLM's ``logprobs_mode`` values; the processed ones are taken after ``allowed_token_ids`` masks the other tokens
LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
EXACT_MODES = ("processed_logprobs", "processed_logits")


def named_logprobs() -> bool:
    """Whether the installed vLLM's ``SamplingParams`` takes ``logprob_token_ids`` (0.22.1+): the values of named tokens
    at each generated position, without an engine-wide ``logprobs_mode``. False where vLLM is not importable."""
    import inspect
    if not is_available("vllm"):
        return False
    params = require("vllm", "vllm").SamplingParams
    try:
        return "logprob_token_ids" in inspect.signature(params).parameters
    except (TypeError, ValueError):  # pragma: no cover - a signature inspect cannot read
        return False


class VLLMBackend(TokenizerBackend):
    """``vllm.LLM(...).generate`` on token-id prompts (the same ids the HF backend would see), greedy
    (``temperature=0``), ``min_tokens = max_tokens`` = the caller's output budget, prefix caching on.

    Args:
        model: a hub id or a local folder.
        tensor_parallel_size: GPUs to shard over.
        gpu_memory_utilization: the fraction of GPU memory vLLM pre-allocates (rank_llm's 0.90).
        max_model_len: the engine's context length (``None``: the model's).
        dtype: vLLM's ``dtype`` (``'auto'``, ``'bfloat16'``, ``'float16'``).
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        chat_template: replaces the checkpoint's chat template.
        logprobs_mode: vLLM's; :meth:`answer_logits` needs ``'processed_logprobs'`` or ``'processed_logits'``.
        seed: the engine seed.
        **llm_kwargs: passed to ``vllm.LLM`` as they are (e.g. ``enforce_eager``, ``quantization``).
    """

    _identity = ("model", "dtype", "chat_template", "seed", "logprobs_mode", "llm_kwargs")
    _weights = ("model",)

    def __init__(self, model: str, *, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9,
                 max_model_len: Optional[int] = None, dtype: str = "auto", enable_prefix_caching: bool = True,
                 chat_template: Optional[str] = None, logprobs_mode: Optional[str] = None, seed: int = 0, store=None,
                 **llm_kwargs):
        if "verbose" in llm_kwargs:  # would otherwise reach vllm.LLM
            raise TypeError("VLLMBackend: verbose= is gone; vLLM's progress bar follows "
                            "pyterrier_instruct.library_progress(True) (or PYTERRIER_INSTRUCT_LIBRARY_BARS=1)")
        if not 0 < float(gpu_memory_utilization) <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}")
        if int(tensor_parallel_size) < 1:
            raise ValueError(f"tensor_parallel_size must be at least 1, got {tensor_parallel_size!r}")
        if logprobs_mode is not None and logprobs_mode not in LOGPROBS_MODES:
            raise ValueError(f"logprobs_mode must be None or one of {LOGPROBS_MODES}, got {logprobs_mode!r}")
        self.model, self.tensor_parallel_size = str(model), int(tensor_parallel_size)
        self.gpu_memory_utilization = float(gpu_memory_utilization)
        self.max_model_len, self.dtype = max_model_len, dtype
        self.enable_prefix_caching, self.chat_template, self.seed = enable_prefix_caching, chat_template, seed
        self.logprobs_mode, self.store = logprobs_mode, as_store(store)
        self.llm_kwargs = dict(llm_kwargs)
        self._llm = None
        self._config = None  # (runner, vLLM's ModelConfig) built without the engine, for its tokenizer
        self._runner: Optional[str] = None  # 'pooling': set by a reranker on a sequence-classification checkpoint
        #: answer-token scoring: requests, prompt tokens and prompt tokens served from the prefix cache
        self.stats: Counter = Counter()

    _lazy = ("_llm", "_config")

    def _eq_key(self) -> tuple:
        return super()._eq_key() + (("llm_kwargs", tuple(sorted(self.llm_kwargs.items()))),)

    def _options(self) -> dict:
        """``vllm.LLM``'s keyword arguments but ``model``."""
        mode = {} if self.logprobs_mode is None else {"logprobs_mode": self.logprobs_mode}
        if self._runner is not None and "runner" not in self.llm_kwargs:
            mode["runner"] = self._runner
        return dict(tensor_parallel_size=self.tensor_parallel_size, gpu_memory_utilization=self.gpu_memory_utilization,
                    max_model_len=self.max_model_len, dtype=self.dtype,
                    enable_prefix_caching=self.enable_prefix_caching, seed=self.seed, **mode, **self.llm_kwargs)

    def _engine(self):
        if self._llm is None:
            self._llm = require("vllm", "vllm").LLM(model=model_path(self.model), **self._options())
        return self._llm

    def _model_config(self):
        """vLLM's ``ModelConfig``: the engine's, else the one ``vllm.LLM`` would build (``EngineArgs(model=,
        **options).create_model_config()``: the checkpoint's config, no weights, no GPU)."""
        if self._llm is not None:
            return self._llm.llm_engine.model_config
        if self._config is None or self._config[0] != self._runner:
            import dataclasses
            require("vllm", "vllm")
            from vllm.engine.arg_utils import EngineArgs
            fields = {f.name for f in dataclasses.fields(EngineArgs)}  # vllm.LLM's own options (chat_template) aside
            options = {k: v for k, v in self._options().items() if k in fields}
            self._config = (self._runner, EngineArgs(model=model_path(self.model), **options).create_model_config())
        return self._config[1]

    def _tokenizer(self):
        """The engine's tokenizer; until the engine exists (a rerun answered by the store never builds it), the one
        it would have, from vLLM's own code on its ``ModelConfig``: ``vllm.tokenizers.registry``'s
        ``cached_tokenizer_from_config`` (0.33: the engine's own call, ``renderers/registry.py``, so the very object),
        else 0.10.2's ``vllm.transformers_utils.tokenizer.cached_tokenizer_from_config`` (the engine's
        ``get_tokenizer`` arguments, ``transformers_utils/tokenizer_group.py`` ``init_tokenizer_from_configs``, with
        its ``truncation_side``)."""
        if self._llm is not None:
            return self._llm.get_tokenizer()
        config = self._model_config()
        try:
            from vllm.tokenizers.registry import cached_tokenizer_from_config
        except ImportError:
            try:
                from vllm.transformers_utils.tokenizer import cached_tokenizer_from_config as older
            except ImportError:  # a vLLM with neither, not read here: its engine's, the only one known to be right
                return self._engine().get_tokenizer()
            return older(config, truncation_side="right" if config.runner_type == "pooling" else "left")
        return cached_tokenizer_from_config(config)

    def max_prompt_tokens(self) -> Optional[int]:
        """The longest token-id prompt the engine takes with room for one output token: its ``max_model_len`` (given,
        or the model's, read from the engine's ``model_config``, built without the engine until it exists) minus
        one. vLLM refuses a generate prompt of ``max_model_len`` tokens (from 0.22.1: ``v1/engine/input_processor.py``
        ``_validate_prompt_len``) and longer ones in every version."""
        length = getattr(self._model_config(), "max_model_len", None) or self.max_model_len
        return None if length is None else int(length) - 1

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int, min_new_tokens: int = 0) -> List[str]:
        vllm = require("vllm", "vllm")
        params = vllm.SamplingParams(n=1, temperature=0.0, max_tokens=max_new_tokens, min_tokens=min_new_tokens)
        return [Text(o.outputs[0].text, {"prompt_tokens": len(o.prompt_token_ids),  # the tokens the engine counted,
                                         "completion_tokens": len(o.outputs[0].token_ids)})  # for the call store
                for o in self._generate(prompts, params)]

    def _generate(self, prompts: Sequence[Prompt], params) -> list:
        """One ``LLM.generate`` call over the prompts' token ids: one output per prompt, in order."""
        inputs = [{"prompt_token_ids": self._ids(p)} for p in prompts]
        outputs = self._engine().generate(inputs, sampling_params=params, use_tqdm=library_progress())
        if len(outputs) != len(inputs):
            raise RuntimeError(f"{self!r}: vLLM returned {len(outputs)} outputs for {len(inputs)} prompts")
        return outputs

    def generate_logprobs(self, prompts: Sequence[Prompt], *, max_new_tokens: int, top_logprobs: int,
                          temperature: float = 0.0, top_p: float = 1.0,
                          return_exceptions: bool = False) -> List[Union[Generation, Exception]]:
        """``SamplingParams(logprobs=top_logprobs, temperature=, top_p=, max_tokens=max_new_tokens)``; each generated
        position's ``{token_id: Logprob(logprob, rank, decoded_token)}`` becomes its candidates, by rank (the top-k plus
        the sampled token when it is outside them, as vLLM returns). Requests do not fail one by one here, so
        ``return_exceptions`` changes nothing."""
        check_logprob_args(max_new_tokens, top_logprobs, temperature, top_p)
        if self.logprobs_mode in ("raw_logits", "processed_logits"):
            raise ValueError(f"{self!r}: generate_logprobs needs log-probabilities; this engine returns logits "
                             f"(logprobs_mode={self.logprobs_mode!r}): use another VLLMBackend for judges")
        vllm = require("vllm", "vllm")
        params = vllm.SamplingParams(n=1, temperature=float(temperature), top_p=float(top_p),
                                     max_tokens=int(max_new_tokens), logprobs=int(top_logprobs))
        outputs = self._generate(prompts, params)
        tok = None
        result: List[Union[Generation, Exception]] = []
        for o in outputs:
            c = o.outputs[0]
            if c.logprobs is None or len(c.logprobs) != len(c.token_ids):
                raise RuntimeError(f"{self!r}: vLLM returned no per-token logprobs for request {o.request_id!r}")
            tokens, tops = [], []
            for token_id, position in zip(c.token_ids, c.logprobs):
                ranked = sorted(position.items(),
                                key=lambda kv: (kv[1].rank if kv[1].rank is not None else float("inf")))
                if tok is None and (token_id not in position or any(lp.decoded_token is None for _, lp in ranked)):
                    tok = self._tokenizer()  # detokenize=False: decode here
                texts = {i: (lp.decoded_token if lp.decoded_token is not None else tok.decode([i])) for i, lp in ranked}
                tokens.append(texts[token_id] if token_id in texts else tok.decode([token_id]))
                tops.append(tuple((texts[i], float(lp.logprob)) for i, lp in ranked))
            result.append(Generation(c.text, tuple(tokens), tuple(tops)))
        return result

    # -- pointwise scoring ---------------------------------------------------------------------------------------------
    def exact_answer_values(self) -> bool:
        """Whether :meth:`answer_logits` is exact on this engine: vLLM >= 0.22.1 (``logprob_token_ids``), or an
        engine with ``logprobs_mode`` ``'processed_logprobs'``/``'processed_logits'``."""
        return self.logprobs_mode in EXACT_MODES or named_logprobs()

    def answer_logits(self, prompts: Sequence[Sequence[int]], answer_ids: Sequence[int]) -> np.ndarray:
        """For each token-id prompt, the next-token values of ``answer_ids``: an ``(n, len(answer_ids))`` float64 array
        whose row softmax is exactly the softmax of the model's logits restricted to those tokens (as the transformers
        path). vLLM >= 0.22.1 (:func:`named_logprobs`): ``SamplingParams(logprob_token_ids=answer_ids)``, any
        ``logprobs_mode``. Older vLLM: ``allowed_token_ids=answer_ids, logprobs=len(answer_ids)`` on an engine with
        ``logprobs_mode`` ``'processed_logprobs'``/``'processed_logits'`` (the V1 sampler whitelists before taking them;
        ``raw_logprobs`` is refused). Prompts go in the order given (prefix-cache hits); ``stats`` counts requests,
        prompt tokens and cached ones."""
        answer_ids = [int(i) for i in answer_ids]
        if len(set(answer_ids)) != len(answer_ids) or len(answer_ids) < 2:
            raise ValueError(f"answer_ids must be at least two distinct token ids, got {answer_ids!r}")
        named = named_logprobs()
        if not named and self.logprobs_mode not in EXACT_MODES:
            raise ValueError(f"{self!r}: exact answer-token scores need logprobs_mode='processed_logprobs' (or "
                             f"'processed_logits'), got {self.logprobs_mode!r}; vLLM's default returns raw "
                             "log-probabilities of the top k tokens only (vLLM >= 0.22.1 names the tokens instead: "
                             "SamplingParams(logprob_token_ids=))")
        if not prompts:
            return np.empty((0, len(answer_ids)), dtype="float64")
        vllm = require("vllm", "vllm")
        if named:  # the named tokens' values whatever the logprobs_mode: one engine serves rerankers and judges
            params = vllm.SamplingParams(n=1, temperature=0.0, max_tokens=1, logprob_token_ids=answer_ids)
        else:
            params = vllm.SamplingParams(n=1, temperature=0.0, max_tokens=1, allowed_token_ids=answer_ids,
                                         logprobs=len(answer_ids))
        outputs = self._generate_ids(prompts, params)
        values = np.empty((len(prompts), len(answer_ids)), dtype="float64")
        for n, o in enumerate(outputs):
            lps = o.outputs[0].logprobs
            missing = [] if lps else answer_ids
            if lps:
                missing = [i for i in answer_ids if i not in lps[0]]
            if missing:
                raise RuntimeError(f"{self!r}: vLLM returned no value for answer token(s) {missing} of request "
                                   f"{o.request_id!r}: allowed_token_ids and logprobs_mode='processed_logprobs' need "
                                   "vLLM >= 0.10.2")
            values[n] = [lps[0][i].logprob for i in answer_ids]
            cached = getattr(o, "num_cached_tokens", None)
            self.stats["prompt_tokens"] += len(prompts[n])
            self.stats["cached_tokens"] += int(cached or 0)
        self.stats["requests"] += len(prompts)
        return values

    def classify_logits(self, prompts: Sequence[Sequence[int]]) -> np.ndarray:
        """A sequence-classification checkpoint on vLLM's pooling runner (``runner='pooling'``): ``LLM.classify`` on the
        token-id prompts with the activation off (``PoolingParams(use_activation=False)``, ``activation=False`` before
        0.22), one ``(n, num_labels)`` float64 row of raw classifier logits per prompt. vLLM's own reranker example
        (``examples/pooling/score/qwen3_reranker_offline.py`` in 0.33) builds its own prompts with ``LLM.score``; the
        package sends its own ids, so both backends score the same tokens."""
        import inspect
        if not prompts:
            return np.empty((0, 0), dtype="float64")
        vllm = require("vllm", "vllm")
        fields = inspect.signature(vllm.PoolingParams).parameters
        params = vllm.PoolingParams(**{"use_activation" if "use_activation" in fields else "activation": False})
        inputs = [{"prompt_token_ids": [int(i) for i in ids]} for ids in prompts]
        outputs = self._engine().classify(inputs, pooling_params=params, use_tqdm=library_progress())
        if len(outputs) != len(inputs):
            raise RuntimeError(f"{self!r}: vLLM returned {len(outputs)} outputs for {len(inputs)} prompts")
        for n, o in enumerate(outputs):
            self.stats["prompt_tokens"] += len(inputs[n]["prompt_token_ids"])
            self.stats["cached_tokens"] += int(getattr(o, "num_cached_tokens", None) or 0)
        self.stats["requests"] += len(inputs)
        return np.asarray([list(o.outputs.probs) for o in outputs], dtype="float64")

    # -- reasoning rerankers ----------------------------------------------------------------------------------------
    def generate_until(self, token_ids: Sequence[Sequence[int]], *, max_new_tokens: int, stop: Sequence[str] = (),
                       top_logprobs: int = 20, bar=None) -> List[Continuation]:
        """``SamplingParams(temperature=0, max_tokens=max_new_tokens, stop=stop, logprobs=top_logprobs,
        skip_special_tokens=False)`` (rank1's, orionw/rank1 ``rank1.py``): vLLM ends a request at a stop string found in
        its detokenised text (removed from ``text``, ``include_stop_str_in_output=False``), at an end-of-sequence id, or
        at the budget; ``CompletionOutput.logprobs[-1]`` is the last step's ``{token_id: Logprob}`` (the top k plus the
        sampled token). One ``generate`` call for all prompts (vLLM schedules them); ``bar`` is updated at the end."""
        check_logprob_args(max_new_tokens, top_logprobs, 0.0, 1.0)
        vllm = require("vllm", "vllm")
        params = vllm.SamplingParams(n=1, temperature=0.0, max_tokens=int(max_new_tokens), stop=list(stop) or None,
                                     logprobs=int(top_logprobs), skip_special_tokens=False)
        out = []
        for o in self._generate_ids(token_ids, params):
            c = o.outputs[0]
            if not c.logprobs or len(c.logprobs) != len(c.token_ids):
                raise RuntimeError(f"{self!r}: vLLM returned no per-token logprobs for request {o.request_id!r}")
            out.append(Continuation(c.text, tuple(int(t) for t in c.token_ids),
                                    {int(i): float(lp.logprob) for i, lp in c.logprobs[-1].items()},
                                    "length" if c.finish_reason == "length" else "stop"))
        if bar is not None:
            bar.update(len(out))
        return out

    def next_token_logprobs(self, token_ids: Sequence[Sequence[int]], *,
                            allowed: Sequence[int]) -> List[Dict[int, float]]:
        """rank1's forced step (orionw/rank1 ``rank1.py``: ``allowed_token_ids`` = the two answer tokens): the
        next-token log-probabilities renormalised over ``allowed`` (a log-softmax of :meth:`answer_logits`, the one
        exact answer-token request: the same values whether the engine's processed values are logits or
        log-probabilities)."""
        allowed = [int(a) for a in allowed]
        if not allowed:
            raise ValueError("next_token_logprobs needs at least one allowed token id")
        if len(allowed) == 1:  # one allowed token: probability one, nothing to ask the engine
            return [{allowed[0]: 0.0} for _ in token_ids]
        values = self.answer_logits(token_ids, allowed)
        values = values - values.max(axis=1, keepdims=True)
        values -= np.log(np.exp(values).sum(axis=1, keepdims=True))
        return [dict(zip(allowed, row.tolist())) for row in values]

    def _generate_ids(self, token_ids: Sequence[Sequence[int]], params) -> list:
        inputs = [{"prompt_token_ids": [int(i) for i in ids]} for ids in token_ids]
        outputs = self._engine().generate(inputs, sampling_params=params, use_tqdm=library_progress()) if inputs else []
        if len(outputs) != len(inputs):
            raise RuntimeError(f"{self!r}: vLLM returned {len(outputs)} outputs for {len(inputs)} prompts")
        return outputs
