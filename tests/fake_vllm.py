"""vLLM 0.33.0's own Python with the forward pass on transformers: what tests inject as ``sys.modules['vllm']``.

The GPU part of vLLM (its CUDA kernels, the model runner, the KV cache) cannot run here; everything else that
decides what a caller gets back is vLLM's own code, imported from the side folder ``make install`` fills
(``$(VENV)/vllm_0.33``: the 0.33.0 wheel with ``--no-deps`` plus its pure-Python requirements, tests/vllm_0.33.txt):

- **arguments**: ``LLM(model, **options)`` builds ``vllm.engine.arg_utils.EngineArgs`` (an option ``vllm.LLM`` does not
  take is a ``TypeError``) and its ``ModelConfig`` (``create_model_config``: ``max_model_len`` from the checkpoint when
  not given, ``max_logprobs``, ``logprobs_mode``, the runner);
- **tokenizer**: ``vllm.tokenizers.registry.cached_tokenizer_from_config`` (``truncation_side='left'`` for generate
  models, 0.33 ``tokenizers/registry.py:137-141``);
- **request checks**, all before any request runs (one refused prompt aborts the whole call, as vLLM's
  ``_validate_and_add_requests`` does): ``SamplingParams.verify`` (``max_logprobs``, ``allowed_token_ids``,
  ``logprob_token_ids``) and ``InputProcessor._validate_prompt_len`` (a generate prompt of ``max_model_len`` tokens or
  more is refused, ``v1/engine/input_processor.py:557-602``); ``PoolingParams.verify`` for ``classify``;
- **sampling and logprobs**: ``vllm.v1.sample.sampler.Sampler(logprobs_mode)`` on the last position's logits with a
  ``SamplingMetadata`` (greedy or random, top-k/top-p, ``allowed_token_ids``, ``max_num_logprobs``,
  ``logprob_token_ids``), turned into ``{token_id: Logprob}`` by ``vllm.v1.engine.logprobs.LogprobsProcessor``;
- **outputs**: ``vllm.outputs.RequestOutput``/``CompletionOutput``, ``PoolingRequestOutput``/``ClassificationOutput``,
  ``vllm.SamplingParams``, ``vllm.PoolingParams``.

The stand-in's own parts: the forward pass (the checkpoint through transformers in float32, one full forward per
generated token: ``AutoModelForCausalLM`` on the generate runner, ``AutoModelForSequenceClassification`` on the pooling
runner, the last token's logits); the prefix cache's bookkeeping (blocks of :data:`BLOCK_SIZE` tokens, a block reused
when the same tokens up to its end were computed before, at most ``len - 1`` tokens from the cache,
``RequestOutput.num_cached_tokens``); decoding's end (EOS unless ``ignore_eos``, not before ``min_tokens``; a stop
string in the detokenised text, removed unless ``include_stop_str_in_output``); and a scripted "model" for two kinds of
prompt the tiny random weights cannot answer: to a listwise prompt ("... provide you with N passages ...") it answers
the reverse permutation, to an IFIR judge prompt ("Please give a score between 0 and N.") ``{"score": min(2, N),
"reason": "stand-in"}`` (as text; the tiny tokenizers cannot spell ``{``), greedily, its logits at each step putting
:data:`PROBS` on the emitted token and (for a digit d) the digits d+1, d+2, ... (mod 10), else the ids t+1, t+2, ...,
``-inf`` elsewhere: the Sampler returns exactly ``log(PROBS)``. ``instances`` records every engine, ``LLM.calls`` every
``generate``/``classify`` call, and ``LLM.init_args`` the options as given.

Where vLLM cannot be imported (the side folder is missing), importing this module inside a test skips that test,
naming the folder and the command that fills it.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import List, Optional

#: where ``make install`` puts vLLM 0.33.0's Python (tests/vllm_0.33.txt)
SIDE = Path(os.environ.get("VLLM_033", Path(sys.prefix) / "vllm_0.33"))
MISSING = (f"vLLM 0.33.0's Python is not installed in {SIDE}: run `make install`, or pip install --no-deps --target "
           f"{SIDE} -r tests/vllm_0.33.txt")


def _import_vllm():
    """vLLM from the side folder, appended to ``sys.path`` (the venv's own packages keep precedence)."""
    if (SIDE / "vllm" / "__init__.py").exists() and str(SIDE) not in sys.path:
        sys.path.append(str(SIDE))
        # vLLM inspects a model's architecture in a subprocess (``python -m vllm.model_executor.models.registry``)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(SIDE)) if p)
    current = sys.modules.get("vllm")
    if current is not None and str(getattr(current, "__file__", "")).startswith(str(SIDE)):
        return current  # vLLM itself, imported already
    sys.modules.pop("vllm", None)  # whatever stands in as vllm now (this module, a Ray worker's shim package)
    sys.path.insert(0, str(SIDE))  # for this import only: vLLM itself, not a shim of that name
    try:
        import vllm
        from vllm import engine, logprobs, outputs, pooling_params, sampling_params  # noqa: F401
        from vllm.engine import arg_utils  # noqa: F401
        from vllm.tokenizers import registry  # noqa: F401
        from vllm.v1.engine import input_processor  # noqa: F401
        from vllm.v1.engine import logprobs as engine_logprobs  # noqa: F401
        from vllm.v1.sample import logits_processor, metadata, sampler  # noqa: F401
    except ImportError as err:
        try:
            import pytest
        except ImportError:  # pragma: no cover - outside pytest
            raise ImportError(MISSING) from err
        pytest.skip(f"{MISSING} ({err})")
    finally:
        sys.path.remove(str(SIDE))  # the first entry; the one appended above stays
        if current is not None:
            sys.modules["vllm"] = current
    return vllm


_vllm = _import_vllm()
from vllm.pooling_params import PoolingParams  # noqa: E402  (vLLM's own, re-exported as the package's API)
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.logprobs import Logprob  # noqa: E402,F401
from vllm.outputs import (ClassificationOutput, CompletionOutput, PoolingRequestOutput,  # noqa: E402
                          RequestOutput)
from vllm.tokenizers.registry import cached_tokenizer_from_config  # noqa: E402
from vllm.v1.engine.input_processor import InputProcessor  # noqa: E402
from vllm.v1.engine.logprobs import LogprobsProcessor  # noqa: E402
from vllm.v1.sample.logits_processor import LogitsProcessors  # noqa: E402
from vllm.v1.sample.metadata import SamplingMetadata  # noqa: E402
from vllm.v1.sample.sampler import Sampler  # noqa: E402

__version__ = _vllm.__version__
__path__ = _vllm.__path__  # ``import vllm.x`` while this module stands in as vllm still finds vLLM's submodules



def __getattr__(name: str):
    """Anything else is vLLM's (``vllm.envs``, ``vllm.config``, ...): its own code imports them from ``vllm``."""
    return getattr(_vllm, name)


instances: List["LLM"] = []

#: vLLM inspects a model's architecture in a subprocess, ``python -m vllm.model_executor.models.registry``
#: (``registry._SUBPROCESS_COMMAND``, which vLLM lets callers change), unless ``$VLLM_CACHE_ROOT/modelinfos`` holds the
#: answer. There ``import vllm`` must give vLLM itself: a shim of that name earlier on ``PYTHONPATH`` (the ``vllm.py``
#: of tests/test_pipeline_files.py, a Ray worker's package) would run vLLM's registry through this module or fail.
INSPECT_COMMAND = [sys.executable, "-c", f"import runpy, sys; sys.path.insert(0, {str(SIDE)!r}); import vllm; "
                   f"sys.path.remove({str(SIDE)!r}); "
                   "runpy.run_module('vllm.model_executor.models.registry', run_name='__main__', alter_sys=True)"]

#: vLLM's default KV-cache block size (tokens): the granularity of prefix-cache hits
BLOCK_SIZE = 16
#: The scripted model's next-token probabilities by rank (see the module docstring); they sum to 1.
PROBS = (0.6, 0.2, 0.1, 0.05, 0.03, 0.01, 0.005, 0.003, 0.001, 0.001)


@contextlib.contextmanager
def _as_vllm():
    """vLLM itself as ``sys.modules['vllm']`` for the duration (tests put this module there)."""
    current = sys.modules.get("vllm")
    sys.modules["vllm"] = _vllm
    try:
        yield
    finally:
        if current is None:
            del sys.modules["vllm"]
        else:
            sys.modules["vllm"] = current


#: The architectures of the tests' tiny checkpoints. vLLM inspects each in a child process of its own (~12 CPU-s, most
#: of it ``import vllm``) unless ``$VLLM_CACHE_ROOT/modelinfos`` holds the answer: the first engine on a cold cache has
#: :func:`inspect_once` inspect them all in THIS process instead, which has imported vLLM already: vLLM's own
#: ``_LazyRegisteredModel.inspect_model_cls`` computes and writes each file, with ``registry._run_in_subprocess``
#: replaced by a direct call (what vLLM's own child, ``registry._run``, does with the function it is sent).
ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                 "TransformersForSequenceClassification")
_inspected = set()  # the cache folders this process found holding every answer in ARCHITECTURES


class _Cold(Exception):
    pass


def _cold(fn):
    raise _Cold


def inspect_once():
    """Fills ``$VLLM_CACHE_ROOT/modelinfos`` for :data:`ARCHITECTURES` in this process (under a file lock: xdist
    workers and Ray actors share the folder) unless vLLM finds every answer there already."""
    from filelock import FileLock
    with _as_vllm():
        from vllm.model_executor.models import registry
    folder = registry._LazyRegisteredModel._get_cache_dir()
    if not ARCHITECTURES or folder in _inspected:
        return
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"), _as_vllm():
        from vllm.plugins import load_general_plugins
        run, registry._run_in_subprocess = registry._run_in_subprocess, _cold  # vLLM's own cache check, no child
        try:
            cold = []
            for arch in ARCHITECTURES:
                try:
                    registry.ModelRegistry.models[arch].inspect_model_cls()
                except _Cold:
                    cold.append(arch)
            if cold:
                load_general_plugins()  # as vLLM's child does first
                registry._run_in_subprocess = lambda fn: fn()
                for arch in cold:
                    registry.ModelRegistry.models[arch].inspect_model_cls()
        finally:
            registry._run_in_subprocess = run
    _inspected.add(folder)


def _inspecting(create):
    """``EngineArgs.create_model_config`` with vLLM itself as ``vllm``, the tests' architectures inspected once
    (:func:`inspect_once`) and :data:`INSPECT_COMMAND` for any other: vLLM inspects an architecture in a subprocess,
    pickling its own modules by reference (the engine calls it, and so does a backend that builds the engine's
    ``ModelConfig`` without the engine, for its tokenizer)."""
    @functools.wraps(create)
    def create_model_config(self, *args, **kwargs):
        inspect_once()
        with _as_vllm():
            from vllm.model_executor.models import registry
            registry._SUBPROCESS_COMMAND = INSPECT_COMMAND
            return create(self, *args, **kwargs)
    create_model_config.inspecting = True
    return create_model_config


if not getattr(EngineArgs.create_model_config, "inspecting", False):  # once, whichever copy of this module runs
    EngineArgs.create_model_config = _inspecting(EngineArgs.create_model_config)


class LLM:
    """``vllm.LLM`` with vLLM's own argument checks, tokenizer, request checks, sampler and outputs (see above)."""

    def __init__(self, model: str, *, tokenizer: Optional[str] = None, tensor_parallel_size: int = 1,
                 dtype: str = "auto", seed: int = 0, gpu_memory_utilization: float = 0.9,
                 max_model_len: Optional[int] = None, **kwargs):
        self.model = model
        self.init_args = dict(model=model, tokenizer=tokenizer, tensor_parallel_size=tensor_parallel_size, dtype=dtype,
                              seed=seed, gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                              **kwargs)
        args = EngineArgs(**self.init_args)  # vllm.LLM passes its options to EngineArgs: an unknown one is a TypeError
        self.model_config = args.create_model_config()
        self.llm_engine = SimpleNamespace(model_config=self.model_config)
        self.runner_type = self.model_config.runner_type
        self.logprobs_mode = self.model_config.logprobs_mode
        self.prefix_caching = args.enable_prefix_caching is not False  # V1: on unless turned off
        self._tokenizer = cached_tokenizer_from_config(self.model_config)
        self._sampler = Sampler(logprobs_mode=self.logprobs_mode)
        self._sampler.pin_memory = False  # no CUDA here: vLLM's platform guess says pinned memory, torch has none
        self._inputs = SimpleNamespace(skip_prompt_length_check=False, model_config=self.model_config,
                                       supports_mm_inputs=False, mm_encoder_cache_size=0)
        self._model = None
        self._blocks = set()  # the prefixes (as token tuples) of every full block computed so far
        self.calls = []
        instances.append(self)

    def get_tokenizer(self):
        return self._tokenizer

    # -- requests ------------------------------------------------------------------------------------------------------
    def _prompt_ids(self, p) -> List[int]:
        if isinstance(p, str):
            return list(self._tokenizer.encode(p))
        if isinstance(p, dict) and "prompt_token_ids" in p and set(p) <= {"prompt_token_ids", "multi_modal_data"}:
            ids = list(p["prompt_token_ids"])
            if not all(isinstance(i, int) for i in ids):
                raise TypeError("prompt_token_ids must be a list of int")
            return ids
        raise TypeError(f"unsupported prompt type {type(p).__name__}")

    def _requests(self, prompts, params, kind: str):
        """Each prompt's token ids and its own copy of the params, every one checked by vLLM before any runs."""
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        prompts = list(prompts)
        if not isinstance(params, (list, tuple)):
            params = [params] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError("The lengths of prompts and params must be the same.")
        requests = []
        for p, sp in zip(prompts, params):
            ids = self._prompt_ids(p)
            sp = sp.clone()
            if kind == "generate":
                sp.verify(self.model_config, None, None, self._tokenizer)
            else:
                sp.verify(self.model_config)
            InputProcessor._validate_prompt_len(self._inputs, len(ids), "decoder")
            requests.append((p, ids, sp))
        return prompts, requests

    def generate(self, prompts, sampling_params=None, *, use_tqdm=True, lora_request=None, **kwargs):
        if self.runner_type != "generate":
            raise ValueError("LLM.generate() is only supported for generative models. Try passing `--runner generate` "
                             "to use the model as a generative model.")
        params = SamplingParams() if sampling_params is None else sampling_params
        for sp in (params if isinstance(params, (list, tuple)) else [params]):
            if not isinstance(sp, SamplingParams):
                raise TypeError(f"sampling_params must be SamplingParams, got {type(sp).__name__}")
        prompts, requests = self._requests(prompts, params, "generate")
        self.calls.append({"prompts": prompts, "params": params, "use_tqdm": use_tqdm})
        return [self._complete(str(n), p, ids, sp) for n, (p, ids, sp) in enumerate(requests)]

    def classify(self, prompts, *, pooling_params=None, use_tqdm=True, lora_request=None, tokenization_kwargs=None):
        if self.runner_type != "pooling":
            raise ValueError("LLM.classify() is only supported for pooling models: build the engine with "
                             "runner='pooling'")
        params = (PoolingParams() if pooling_params is None else pooling_params).clone()
        if params.task is None:
            params.task = "classify"  # LLM.classify's pooling_task
        prompts, requests = self._requests(prompts, params, "classify")
        self.calls.append({"prompts": prompts, "params": params, "use_tqdm": use_tqdm})
        out = []
        for n, (p, ids, pp) in enumerate(requests):
            cached = self._cache(ids)
            logits = self._logits(ids)
            values = logits if pp.use_activation is False else self._activation(logits)
            out.append(PoolingRequestOutput(str(n), ClassificationOutput(values.tolist()), ids, cached, True))
        return out

    def _activation(self, logits):
        import torch
        return torch.sigmoid(logits) if logits.numel() == 1 else torch.softmax(logits, -1)

    # -- one request ---------------------------------------------------------------------------------------------------
    def _complete(self, request_id: str, prompt, ids: List[int], sp) -> RequestOutput:
        cached = self._cache(ids)
        answer, script = self._script(ids, sp)
        lp = None if sp.num_logprobs is None else LogprobsProcessor(
            tokenizer=self._tokenizer, logprobs=[], prompt_logprobs=None, cumulative_logprob=0.0,
            num_logprobs=sp.num_logprobs, num_prompt_logprobs=None)
        eos = {self._tokenizer.eos_token_id} | set(sp.stop_token_ids or ())
        out: List[int] = []
        text, finish, reason = "", "length", None
        while len(out) < (sp.max_tokens if sp.max_tokens is not None else 1):
            if script is not None:
                if len(out) == len(script):
                    finish = "stop"
                    break
                logits, greedy = self._scripted_logits(script[len(out)]), True
            else:
                logits, greedy = self._logits(ids + out), sp.temperature < 1e-5
            result = self._sampler(logits[None].float(), self._metadata(sp, ids, out, greedy, logits.shape[-1]))
            token = int(result.sampled_token_ids[0, 0])
            if lp is not None:
                lp._update_sample_logprobs(result.logprobs_tensors.tolists())
            out.append(token)
            text = self._tokenizer.decode(out, skip_special_tokens=sp.skip_special_tokens)
            if token in eos and not sp.ignore_eos and len(out) >= sp.min_tokens:
                finish, reason = "stop", token
                break
            hit = next((s for s in (sp.stop or ()) if s in text), None) if isinstance(sp.stop, list) else (
                sp.stop if sp.stop and sp.stop in text else None)
            if hit is not None:
                text = text[:text.index(hit)] + (hit if sp.include_stop_str_in_output else "")
                finish, reason = "stop", hit
                break
        if script is not None and out == script:  # the tiny tokenizers cannot spell every character ("{" is unknown)
            text = answer
        completion = CompletionOutput(0, text, out, None if lp is None else lp.cumulative_logprob,
                                      None if lp is None else lp.logprobs, finish_reason=finish, stop_reason=reason)
        return RequestOutput(request_id, prompt if isinstance(prompt, str) else None, ids, None, [completion], True,
                             num_cached_tokens=cached)

    def _metadata(self, sp, ids: List[int], out: List[int], greedy: bool, vocab: int) -> SamplingMetadata:
        import torch
        mask = None
        if sp.allowed_token_ids:
            mask = torch.ones((1, vocab), dtype=torch.bool)  # True masks a token out
            mask[0, sp.allowed_token_ids] = False
        return SamplingMetadata(
            temperature=None if greedy else torch.tensor([sp.temperature]), all_greedy=greedy, all_random=not greedy,
            top_p=None if greedy or sp.top_p >= 1.0 else torch.tensor([sp.top_p]),
            top_k=None if greedy or sp.top_k <= 0 else torch.tensor([sp.top_k]), generators={},
            max_num_logprobs=sp.logprobs, no_penalties=True, prompt_token_ids=None,
            frequency_penalties=torch.zeros(1), presence_penalties=torch.zeros(1), repetition_penalties=torch.ones(1),
            output_token_ids=[list(out)], allowed_token_ids_mask=mask, bad_words_token_ids={},
            logitsprocs=LogitsProcessors(),
            logprob_token_ids={0: list(sp.logprob_token_ids)} if sp.logprob_token_ids else None)

    def _cache(self, ids: List[int]) -> int:
        """Prompt tokens served from the prefix cache (whole blocks, at most ``len - 1``); records the new blocks."""
        if not self.prefix_caching:
            return 0
        hit, n = 0, BLOCK_SIZE
        while n <= len(ids) - 1 and tuple(ids[:n]) in self._blocks:
            hit, n = n, n + BLOCK_SIZE
        self._blocks.update(tuple(ids[:m]) for m in range(BLOCK_SIZE, len(ids) + 1, BLOCK_SIZE))
        return hit

    # -- the forward pass (the stand-in's) -----------------------------------------------------------------------------
    def _logits(self, ids: List[int]):
        """The last position's logits (float32): the causal LM's next-token logits, or the classifier's on pooling."""
        import torch
        import transformers
        if self._model is None:
            auto = (transformers.AutoModelForSequenceClassification if self.runner_type == "pooling"
                    else transformers.AutoModelForCausalLM)
            self._model = auto.from_pretrained(self.model, dtype=torch.float32).eval()
        with torch.no_grad():  # not inference_mode: the Sampler masks the logits in place
            logits = self._model(input_ids=torch.tensor([ids])).logits[0].float()
        return logits if self.runner_type == "pooling" else logits[-1]  # the classifier pools the last token itself

    def _script(self, ids: List[int], sp):
        """The scripted answer and its token ids for a listwise or judge prompt, else ``(None, None)`` (the model
        answers). A restricted step (``allowed_token_ids`` or ``logprob_token_ids``: FIRST's one token over the window's
        identifiers) runs the model, as the real engine would."""
        if sp.allowed_token_ids or getattr(sp, "logprob_token_ids", None):
            return None, None
        text = self._tokenizer.decode(ids, skip_special_tokens=True)
        listwise = re.search(r"provide you with (\d+) passages", text)
        judge = re.search(r"Please give a score between 0 and (\d)", text)
        if not (listwise or judge):
            return None, None
        answer = (" > ".join(f"[{i}]" for i in range(int(listwise.group(1)), 0, -1)) if listwise
                  else f'{{"score": {min(2, int(judge.group(1)))}, "reason": "stand-in"}}')
        return answer, list(self._tokenizer.encode(answer, add_special_tokens=False))

    def _scripted_logits(self, token_id: int):
        import torch
        text = self._tokenizer.decode([token_id])
        vocab = max(len(self._tokenizer), self.model_config.get_vocab_size())
        if len(text) == 1 and text.isdigit():
            digits = {d: self._tokenizer.convert_tokens_to_ids(d) for d in "0123456789"}
            others = [digits[str((int(text) + j) % 10)] for j in range(1, 10)]
        else:
            others = [(token_id + j) % len(self._tokenizer) for j in range(1, 10)]
        logits = torch.full((vocab,), float("-inf"))
        for r, t in enumerate([token_id] + others):
            logits[t] = math.log(PROBS[r])
        return logits
