"""The sorts of setwise reranking (Zhuang et al., SIGIR 2024; ielab/llm-rankers ``llmrankers/setwise.py``, PyPI 0.0.2,
lines 194-307): heapsort, bubblesort and bubblesort without the reference's shortcut (``bubblesort_exact``).

Each sort is a generator over one query's list: it yields a comparison's documents and is sent the winner's position,
so :func:`run` advances every query of a frame together and batches their comparisons; each query's sequence of
comparisons is the reference's. A non-label answer is position 0 (``CHARACTERS.index``); a label beyond the
comparison keeps the parent (heapsort) or the window's first document (bubblesort; docs/rerankers.md).
"""
from __future__ import annotations

import functools
from typing import Callable, Dict, Generator, List, Optional, Sequence


Comparison = Generator[List[int], int, None]
METHODS = ("heapsort", "bubblesort", "bubblesort_exact")


def heapsort(arr: List[int], num_child: int, k: int) -> Comparison:
    """``SetwiseLlmRanker.heapSort`` + ``reversed``: ``arr`` (document ids in first-stage order) is sorted in place so
    that its first ``k`` entries are the top k, best first."""
    n = len(arr)

    def heapify(size: int, i: int) -> Comparison:
        while num_child * i + 1 < size:  # the node has children
            inds = [i] + list(range(num_child * i + 1, min(num_child * (i + 1) + 1, size)))
            best = yield [arr[j] for j in inds]
            largest = inds[best] if 0 <= best < len(inds) else i
            if largest == i:
                return
            arr[i], arr[largest] = arr[largest], arr[i]
            i = largest

    for i in range(n // num_child, -1, -1):
        yield from heapify(n, i)
    ranked = 0
    for i in range(n - 1, 0, -1):
        arr[i], arr[0] = arr[0], arr[i]
        ranked += 1
        if ranked == k:
            break
        yield from heapify(i, 0)
    arr.reverse()


def bubblesort(arr: List[int], num_child: int, k: int, exact: bool = False) -> Comparison:
    """``SetwiseLlmRanker.rerank``'s bubblesort (with its ``last_start`` shortcut): ``k`` passes of windows of
    ``num_child + 1`` documents sliding from the bottom up, the winner swapped to the window's start. The shortcut
    starts a pass where the previous one last moved a document, so a document below it can be missed: with a judge that
    always picks the best, the true top k of 461 of 3,000 random lists, as by the reference (docs/rerankers.md).
    ``exact`` starts every pass at the bottom (the "standard bubblesort implementation" the reference keeps commented
    out)."""
    n, width = len(arr), num_child + 1
    last_start = n - width
    for i in range(k):
        if exact:
            last_start = n - width
        start, end, changed = last_start, last_start + width, False
        while True:
            start = max(start, i)
            window = arr[start:end]
            best = yield list(window)
            if not 0 <= best < len(window):
                best = 0
            if best != 0:
                arr[start], arr[start + best] = arr[start + best], arr[start]
                if not changed:
                    changed = True
                    if last_start != n - width and best == len(window) - 1:
                        last_start += len(window) - 1
            if start == i:
                break
            if not changed:
                last_start -= num_child
            start, end = start - num_child, end - num_child


SORTS: Dict[str, Callable[[List[int], int, int], Comparison]] = {
    "heapsort": heapsort, "bubblesort": bubblesort, "bubblesort_exact": functools.partial(bubblesort, exact=True)}


def run(sorts: Sequence[Comparison], compare: Callable[[List[tuple]], List[int]],
        skipped: Optional[Callable[[int, List[int]], None]] = None) -> List[int]:
    """Advances every generator of ``sorts`` together: ``compare([(query index, documents), ...])`` answers one
    comparison per query that has one (the winner's position in each), until all are done. Returns the comparisons
    made per query (the reference's ``total_compare``). A comparison of one document or none (bubblesort's last passes
    over a short list) counts, as in the reference, but is answered 0 without asking the model (``skipped(q, docs)`` is
    told of it)."""
    counts = [0] * len(sorts)
    pending: Dict[int, List[int]] = {}
    for q, gen in enumerate(sorts):
        docs = next(gen, None)
        if docs is not None:
            pending[q] = docs
    while pending:
        asked = [(q, docs) for q, docs in pending.items() if len(docs) > 1]
        for q, docs in pending.items():
            if len(docs) <= 1 and skipped is not None:
                skipped(q, docs)
        answers = dict(zip((q for q, _ in asked), compare(asked))) if asked else {}
        for q in list(pending):
            counts[q] += 1
            try:
                pending[q] = sorts[q].send(answers.get(q, 0))
            except StopIteration:
                del pending[q]
    return counts


def scores(order: Sequence[int], original: Sequence[int], k: int) -> Dict[int, float]:
    """``SetwiseLlmRanker.rerank``'s output (lines 294-307): the first ``k`` of ``order`` get −1 … −k, every other
    document follows in its ``original`` (first-stage) order, −(k+1) and below."""
    top = list(order[:k])
    chosen = set(top)
    rest = [d for d in original if d not in chosen]
    return {d: -float(r) for r, d in enumerate(top + rest, 1)}


def check(method: str, num_child: int, k: int, owner: str) -> None:
    """Validates the sort arguments (errors name ``owner`` and the parameter)."""
    if method not in METHODS:
        raise ValueError(f"{owner}: method must be one of {list(METHODS)}, got {method!r}")
    if int(num_child) < 1:
        raise ValueError(f"{owner}: num_child must be at least 1 (a comparison of num_child + 1 documents), got "
                         f"{num_child!r}")
    if int(k) < 1:
        raise ValueError(f"{owner}: k must be at least 1, got {k!r}")
