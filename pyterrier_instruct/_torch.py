"""What every torch-running component shares: device and dtype resolution, and length-sorted batching that halves
the batch on out-of-memory. torch is imported inside the functions."""
from __future__ import annotations

import logging
from typing import Callable, Optional

import numpy as np

log = logging.getLogger(__name__)

_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16", "fp32": "float32",
           "float32": "float32"}


def resolve_device(device: Optional[str]) -> str:
    """``None``/``'auto'`` → cuda, then mps, then cpu."""
    if device not in (None, "auto"):
        return str(device)
    import torch
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def resolve_dtype(dtype, device: str):
    """``'auto'``: bf16 on GPU, fp32 on CPU; else ``'bf16'``/``'fp16'``/``'fp32'`` or a torch dtype."""
    import torch
    if dtype in (None, "auto"):
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be 'auto', one of {sorted(_DTYPES)} or a torch dtype, got {dtype!r}")
    return getattr(torch, _DTYPES[dtype])



def hf_setup(device: Optional[str], dtype):
    """Imports torch and transformers (or names the ``[hf]`` extra), shows or hides transformers' progress bars as
    :func:`~pyterrier_instruct._progress.library_progress` says, and resolves the device and dtype: returns
    ``(transformers, device, torch_dtype)``."""
    from ._optional import require
    from ._progress import library_progress
    require("torch", "hf")
    transformers = require("transformers", "hf")
    if library_progress():
        transformers.utils.logging.enable_progress_bar()
    else:
        transformers.utils.logging.disable_progress_bar()
    device = resolve_device(device)
    return transformers, device, resolve_dtype(dtype, device)


def is_oom(err: BaseException) -> bool:
    import torch
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    return isinstance(err, oom) or "out of memory" in str(err).lower()


def empty_cache() -> None:
    import torch
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


#: ``batch_size=None`` on an accelerator: rows per batch.
ACCELERATOR_BATCH_SIZE = 32
#: ``batch_size=None`` on CPU: padded tokens per batch (at most ``CPU_MAX_ROWS`` rows); smaller batches stay in cache
#: and were fastest at 1,000–2,500 padded tokens (``benchmarks/bench_throughput.py --sweep``; docs/performance.md).
CPU_BATCH_TOKENS = 2048
CPU_MAX_ROWS = 64


def check_batch_size(batch_size) -> Optional[int]:
    """``None`` (the device's default, :func:`batch_limits`) or a positive row count."""
    if batch_size is None:
        return None
    if isinstance(batch_size, bool) or int(batch_size) < 1:
        raise ValueError(f"batch_size must be a row count of at least 1, or None for the device's default "
                         f"(a token budget on CPU, {ACCELERATOR_BATCH_SIZE} rows on GPU), got {batch_size!r}")
    return int(batch_size)


def batch_limits(batch_size: Optional[int], device: str):
    """``(rows, tokens)`` per batch: a given ``batch_size`` is a plain row count (``tokens`` None); ``None`` is
    ``CPU_BATCH_TOKENS`` padded tokens (at most ``CPU_MAX_ROWS`` rows) on CPU and ``ACCELERATOR_BATCH_SIZE`` rows
    elsewhere."""
    if batch_size is not None:
        return int(batch_size), None
    if str(device).startswith("cpu"):
        return CPU_MAX_ROWS, CPU_BATCH_TOKENS
    return ACCELERATOR_BATCH_SIZE, None


def by_length(lengths: np.ndarray, batch_size: int, run: Callable[[np.ndarray], None], *,
              max_tokens: Optional[int] = None, bar=None, name: str = "") -> None:
    """Calls ``run(idx)`` on batches of positions into ``lengths``, longest first (so an out-of-memory error shows
    up in the first batch): at most ``batch_size`` rows and, when ``max_tokens`` is given, at most ``max_tokens``
    padded tokens (rows × the batch's longest row; at least one row). Halves the batch and retries on
    out-of-memory; ``bar.update`` per finished batch."""
    lengths = np.asarray(lengths)
    order = np.argsort(-lengths, kind="stable")
    start, size = 0, int(batch_size)
    while start < len(order):
        rows = size if max_tokens is None else max(1, min(size, int(max_tokens) // max(1, int(lengths[order[start]]))))
        idx = order[start:start + rows]
        try:
            run(idx)
        except Exception as err:  # noqa: BLE001 - only out-of-memory is retried
            if not is_oom(err) or len(idx) == 1:
                raise
            size = max(1, len(idx) // 2)
            log.warning("%s: out of memory, retrying with batch_size=%d", name, size)
            empty_cache()
            continue
        start += len(idx)
        if bar is not None:
            bar.update(len(idx))
