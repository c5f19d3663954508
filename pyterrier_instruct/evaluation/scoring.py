"""The arithmetic of IFIR's INSTFOL judge (IFIR paper §4.1 and App. B; the IFIR repository's
``src/utils/llm_metrics/GEval/``): an LLM scores one (instruction, passage) pair with the dataset- and level-specific
prompt, and the document's score is the probability-weighted score token.

Matches the IFIR repository's ``GEval/geval.py`` (``top_logprobs=10`` as its code, not the paper's 5): the request, the
JSON parse, the score position (the first token equal to the parsed score), the 0–5 digit filter (probability >= 1 %)
and the dropped judgements are listed step by step in docs/measures.md, as is ``mode='direct'`` (HF only: the answer
prefilled up to the score, one forward pass per document; a cheaper local judge, not the reference procedure).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from ..backends.base import Generation

#: A candidate score token counts when its probability is at least this (the IFIR code's ``np.log(0.01)`` cut).
MIN_PROB = 0.01
#: The score values a candidate token may take (the IFIR code accepts 0–5, whatever the prompt's scale).
SCORE_VALUES = (0, 1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Judgement:
    """A judged document. ``score`` is the weighted score, ``None`` when the judgement counts as failed (``status``
    ``'failed'``: the request failed; ``'no_candidates'``: no digit candidate survived the filter). ``status`` is
    ``'ok'``, ``'unparsed'`` (the answer was not JSON: ŝ = 0, kept) or ``'no_score_token'`` (no generated token
    equals ŝ: 0.0, kept) otherwise. ``parsed`` = ŝ, ``position`` = the score token's index in the answer,
    ``candidates`` = that position's ``(token, logprob)`` pairs, ``cached`` = read from the cache, ``model`` = the model
    id the server said answered (HTTP backends)."""
    score: Optional[float]
    status: str
    parsed: Optional[str] = None
    answer: str = ""
    position: Optional[int] = None
    candidates: Tuple[Tuple[str, float], ...] = ()
    cached: bool = False
    model: Optional[str] = None


def parse_judge_answer(text: Optional[str]) -> Tuple[dict, bool]:
    """``(parsed JSON object, parsed?)`` as the IFIR code's ``content2json``: the text from the first ``{`` to the last
    ``}`` (a ``}`` is appended when only ``{`` occurs); ``None``, invalid JSON or a non-object give
    ``({"score": 0, "reason": ""}, False)``."""
    fallback = {"score": 0, "reason": ""}
    if text is None:
        return fallback, False
    start, end = text.find("{"), text.rfind("}") + 1
    if end == 0 and start != -1:
        text, end = text + "}", len(text) + 1
    body = text[start:end] if start != -1 and end != 0 else ""
    try:
        parsed = json.loads(body)
    except ValueError:
        return fallback, False
    return (parsed, True) if isinstance(parsed, dict) else (fallback, False)


def answer_score(parsed: dict) -> str:
    """ŝ as the text the score token must equal: ``str(score)`` when it is all decimal digits, else ``'0'`` (a missing
    score, ``2.5``, ``-1``, ``"two"``, ``true``)."""
    score = parsed.get("score")
    text = str(0 if score is None else score)
    return text if text.isdigit() and text.isdecimal() else "0"


def weighted_candidates(candidates: Iterable[Tuple[str, float]], min_prob: float = MIN_PROB) -> float:
    """Σ v·P(v) / Σ P(v) over the candidates ``(token, logprob)`` whose token is decimal digits of value 0–5 and whose
    logprob is ≥ ln(``min_prob``), probabilities of equal values summed; NaN when none is kept."""
    cut = math.log(min_prob)
    probs: Dict[int, float] = {}
    for token, logprob in candidates:
        if logprob < cut or not token.isdecimal():
            continue
        value = int(token)
        if value in SCORE_VALUES:
            probs[value] = probs.get(value, 0.0) + math.exp(logprob)
    if not probs:
        return math.nan
    return sum(v * p for v, p in probs.items()) / sum(probs.values())


def weighted_judge_score(generation: Generation, min_prob: float = MIN_PROB) -> Judgement:
    """The IFIR code's weighted score of one judge answer (steps 2–6 of the module docstring)."""
    parsed, ok = parse_judge_answer(generation.text)
    target = answer_score(parsed)
    position = next((i for i, t in enumerate(generation.tokens) if t == target), None)
    if position is None:
        return Judgement(0.0, "no_score_token" if ok else "unparsed", target, generation.text, model=generation.model)
    candidates = tuple(generation.top_logprobs[position])
    value = weighted_candidates(candidates, min_prob)
    if math.isnan(value):
        return Judgement(None, "no_candidates", target, generation.text, position, candidates, model=generation.model)
    return Judgement(value, "ok" if ok else "unparsed", target, generation.text, position, candidates,
                     model=generation.model)


def direct_judgement(probs: Dict[str, float], min_prob: float = MIN_PROB) -> Judgement:
    """``mode='direct'``: the weighted score over the next-token probabilities of the score tokens."""
    candidates = tuple((t, math.log(p) if p > 0 else -math.inf) for t, p in probs.items())
    value = weighted_candidates(candidates, min_prob)
    return Judgement(None if math.isnan(value) else value, "no_candidates" if math.isnan(value) else "ok", None, "", 0,
                     candidates)


def judgement_of_record(record: dict, min_prob: float = MIN_PROB) -> Judgement:
    """A stored judgement; the score is recomputed from the stored candidates with ``min_prob``."""
    candidates = tuple((str(t), float(lp)) for t, lp in record.get("candidates") or ())
    position, status = record.get("position"), record.get("status", "ok")
    if position is None:
        score: Optional[float] = 0.0
    else:
        value = weighted_candidates(candidates, min_prob)
        score = None if math.isnan(value) else value
        if score is None:
            status = "no_candidates"
        elif status == "no_candidates":
            status = "ok"
    return Judgement(score, status, record.get("parsed"), record.get("answer", ""), position, candidates, cached=True,
                     model=record.get("served_model"))
