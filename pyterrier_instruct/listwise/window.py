"""The sliding-window schedule and the permutation parser of rank_llm (``rerank/listwise/listwise_rankllm.py``
``sliding_windows``/``receive_permutation``, ``response_utils.clean_ranking_response``), as pure functions."""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import List, Sequence, Tuple

_NON_DIGIT = re.compile(r"[^0-9]")
_BRACKETED = re.compile(r"\[(\d+)\]")
_WELL_FORMED = re.compile(r"\s*\[\d+\](\s*>\s*\[\d+\])*\s*")
_WELL_FORMED_ALPHA = re.compile(r"\s*\[[A-Z]\](\s*>\s*\[[A-Z]\])*\s*")
#: rank_llm 0.26 ``clean_ranking_response``'s ``fake_numbers_map``: superscript, subscript, circled, negative circled,
#: full-width and digit-comma digits read as ASCII digits before parsing.
_FAKE_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉①②③④⑤⑥⑦⑧⑨❶❷❸❹❺❻❼❽❾０１２３４５６７８９🄀🄁🄂🄃🄄🄅🄆🄇🄈🄉",
                             "0123456789012345678912345678912345678901234567890123456789")


def check_window(window_size: int, stride: int, depth: int) -> None:
    """Rejects the settings that hang or silently skip documents in rank_llm (PR #444: stride <= 0)."""
    for name, value in (("window_size", window_size), ("stride", stride), ("depth", depth)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if stride > window_size:
        raise ValueError(f"stride ({stride}) must not exceed window_size ({window_size}): documents between windows "
                         "would never be compared")


def windows(n: int, window_size: int = 20, stride: int = 10, depth: int = 100) -> List[Tuple[int, int]]:
    """The ``[start, end)`` windows rank_llm's ``sliding_windows`` visits for ``n`` candidates, back to front.

    rank_end = min(depth, n). When the window is longer than rank_end it shrinks to rank_end (rank_llm would
    otherwise visit no window at all when ``n == window_size - stride``). 100/20/10 gives 9 windows:
    [80,100), [70,90), …, [0,20).
    """
    check_window(window_size, stride, depth)
    end = min(depth, n)
    size = min(window_size, end)
    start, out = end - size, []
    while end > 0 and start + stride != 0:
        start = max(start, 0)
        out.append((start, end))
        end, start = end - stride, start - stride
    return out


def mask_numbers(text: str) -> str:
    """``[12]`` → ``(12)``, so identifiers in the prompt are unambiguous (rank_llm ``_replace_number``)."""
    return _BRACKETED.sub(r"(\1)", text)


def parse_permutation(answer: str, size: int, alpha: bool = False) -> Tuple[List[int], Tuple[str, ...]]:
    """The window order (0-based) read from a model's answer, repaired as rank_llm 0.26 ``receive_permutation`` does:
    a ``</think>`` block is skipped; superscript, subscript, circled and full-width digits (``[²] > [¹]``) and other
    Unicode decimal digits are read as digits; non-digits → spaces; ints − 1 (``[0000000002]`` is 2); duplicates
    dropped (first kept); out-of-range dropped; missing indices appended in their original order. Returns the order
    and the problems found (empty for a clean ``[a] > [b] > …``):
    ``'no_ranking'``, ``'format'``, ``'duplicate'``, ``'out_of_range'``, ``'missing'``. ``alpha``: letter
    identifiers (rank_llm ``use_alpha``): every letter ``c`` reads as the number ``ord(c) - 64`` and everything else,
    digits included, as a space (so ``[AB]`` is 12)."""
    problems = []
    answer = answer.rpartition("</think>")[2]  # a reasoning model's thoughts are not the ranking (rank_llm >= 2025)
    if not answer.isascii():
        answer = answer.translate(_FAKE_DIGITS)
        answer = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in answer)
    well_formed = (_WELL_FORMED_ALPHA if alpha else _WELL_FORMED).fullmatch(answer)
    if alpha:
        answer = "".join(str(ord(c) - 64) if c.isalpha() else " " for c in answer)
    tokens = _NON_DIGIT.sub(" ", answer).split()
    if not tokens:
        problems.append("no_ranking")
    elif not well_formed:
        problems.append("format")
    # leading zeros do not count; an absurdly long number is out of range (int() of it would be slow)
    ids = [int(t) - 1 if len(t.lstrip("0")) <= 9 else size for t in tokens]
    seen, order = set(), []
    for i in ids:
        if i not in seen:
            seen.add(i)
            order.append(i)
    if len(order) < len(ids):
        problems.append("duplicate")
    in_range = [i for i in order if 0 <= i < size]
    if len(in_range) < len(order):
        problems.append("out_of_range")
    missing = [i for i in range(size) if i not in seen]
    if missing and tokens:
        problems.append("missing")
    return in_range + missing, tuple(problems)


def reorder(items: Sequence, order: Sequence[int]) -> list:
    """``items`` permuted by ``order`` (a permutation of ``range(len(items))``)."""
    return [items[i] for i in order]


class Stats(Counter):
    """Counts over a reranker's lifetime: ``windows``, ``backend_calls``, ``clean`` answers and each repair kind."""

    def record(self, problems: Sequence[str]) -> None:
        self["windows"] += 1
        if problems:
            self["repaired"] += 1
            self.update(problems)
        else:
            self["clean"] += 1
