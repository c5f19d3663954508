"""How a frame is cut into the blocks that Ray actors process (pandas and numpy only).

A block is an array of row positions. Blocks of a result frame hold whole queries (a query is never split, so listwise
windows, a causal reranker's shared prompt prefix, ranks and any per-query computation see the whole query); a
query larger than the target size is a block of its own. Pointwise blocks are *length-sorted*: queries ordered by their
text length, longest first, so each block holds rows of similar length (the reranker's own length-sorted batches then
pad little) and the longest blocks start first. Query and document frames are cut into consecutive rows.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np
import pandas as pd


def target_rows(n_rows: int, workers: int, block_rows: Optional[int], per_worker: int = 4, cap: int = 8192) -> int:
    """Rows per block: ``block_rows`` if given, else about ``per_worker`` blocks per worker (load balance and a small
    retry unit), at most ``cap`` rows."""
    if block_rows is not None:
        if int(block_rows) < 1:
            raise ValueError(f"block_rows must be at least 1, got {block_rows!r}")
        return int(block_rows)
    return int(min(cap, max(1, -(-n_rows // max(1, workers * per_worker)))))


def text_lengths(frame: pd.DataFrame, columns) -> np.ndarray:
    """Characters per row over the given columns that exist (a tokenizer-free proxy for the prompt length)."""
    total = np.zeros(len(frame), dtype=np.int64)
    for c in columns:
        if c in frame.columns:
            total += frame[c].fillna("").astype(str).str.len().to_numpy(dtype=np.int64)
    return total


def query_blocks(qids: pd.Series, rows: int, lengths: Optional[np.ndarray] = None) -> List[np.ndarray]:
    """Row positions in blocks of whole queries of about ``rows`` rows. Without ``lengths`` queries keep their input
    order; with ``lengths`` (one per row) they are ordered by their mean row length, longest first. Within a block each
    query's rows keep their input order."""
    codes, _ = pd.factorize(qids, sort=False)
    order = np.argsort(codes, kind="stable")  # rows grouped by query (first-seen order), input order inside a query
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    groups = np.split(order, starts[1:])
    if lengths is not None:
        mean = np.array([lengths[g].mean() for g in groups])
        groups = [groups[i] for i in np.argsort(-mean, kind="stable")]
    blocks, current, size = [], [], 0
    for g in groups:
        if current and size + len(g) > rows:
            blocks.append(np.concatenate(current))
            current, size = [], 0
        current.append(g)
        size += len(g)
    if current:
        blocks.append(np.concatenate(current))
    return blocks


def row_blocks(n_rows: int, rows: int) -> List[np.ndarray]:
    """Consecutive row positions, ``rows`` at a time."""
    return [np.arange(s, min(n_rows, s + rows)) for s in range(0, n_rows, rows)]
