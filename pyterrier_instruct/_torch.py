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


def by_length(lengths: np.ndarray, batch_size: int, run: Callable[[np.ndarray], None], *, bar=None, name: str = "") -> None:
    """Calls ``run(idx)`` on batches of positions into ``lengths``, longest first (so an out-of-memory error shows
    up in the first batch), halving the batch and retrying on out-of-memory; ``bar.update`` per finished batch."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    start, size = 0, int(batch_size)
    while start < len(order):
        idx = order[start:start + size]
        try:
            run(idx)
        except Exception as err:  # noqa: BLE001 - only out-of-memory is retried
            if not is_oom(err) or size == 1:
                raise
            size = max(1, size // 2)
            log.warning("%s: out of memory, retrying with batch_size=%d", name, size)
            empty_cache()
            continue
        start += len(idx)
        if bar is not None:
            bar.update(len(idx))
