"""What a run costs in model calls, read from the call store (:class:`~pyterrier_instruct.calls.CallStore`).

Every look-up a backend with ``store=`` makes goes through :meth:`CallStore.through`, which reports the keys it
looked up and those it computed to :func:`observe`. A :func:`metered` block sums, over the distinct calls looked up
inside it, the stored ``prompt``/``completion``/``reasoning`` tokens and latency: a rerun answered from the store
shows the original cost, with ``new_calls`` 0. In ``pt.Experiment`` the same figures per query are the measures
:data:`Calls`, :data:`Tokens` and :func:`Cost` (beside PyTerrier's ``mrt``), attributed to the system the experiment
is running.
"""
from __future__ import annotations

import contextlib
from typing import Dict, Iterator, List, Mapping, Optional, Sequence

from ir_measures import measures

from .._experiment_context import active
from ._provider import PairedMeasure, register_measure

#: the figures :meth:`Meter.usage` returns
FIGURES = ("calls", "new_calls", "prompt_tokens", "completion_tokens", "reasoning_tokens", "seconds")


class Meter:
    """The calls looked up while it is open (:func:`metered`): per store, the distinct keys, and the calls computed."""

    def __init__(self):
        self.stores: Dict[str, object] = {}
        self.keys: Dict[str, set] = {}
        self.new_calls = 0

    def saw(self, store, keys: Sequence[str], new: int) -> None:
        path = str(store.path)
        self.stores.setdefault(path, store)
        self.keys.setdefault(path, set()).update(keys)
        self.new_calls += new

    def usage(self) -> Dict[str, float]:
        """``calls`` (distinct calls looked up, stored), ``new_calls`` (computed in the block), token sums and
        ``seconds`` (the stored latency of those calls: what they took when they were made)."""
        out = dict.fromkeys(FIGURES, 0)
        out["seconds"] = 0.0
        for path, keys in self.keys.items():
            rows = self.stores[path].select_in(
                "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(reasoning_tokens), SUM(latency) "
                "FROM calls WHERE key IN {keys}", sorted(keys))
            for row in rows:  # one row per chunk of keys
                for name, value in zip(("calls", "prompt_tokens", "completion_tokens", "reasoning_tokens", "seconds"),
                                       row):
                    out[name] += value or 0
        out["new_calls"] = self.new_calls
        return out


_METERS: List[Meter] = []


@contextlib.contextmanager
def metered() -> Iterator[Meter]:
    """``with metered() as m: ...; m.usage()``: the calls made or read back inside the block."""
    meter = Meter()
    _METERS.append(meter)
    try:
        yield meter
    finally:
        _METERS.remove(meter)


def observe(store, keys: Sequence[str], new: int) -> None:
    """Called by :meth:`CallStore.through` with the keys of a batch and the number of calls it computed and stored."""
    for meter in _METERS:
        meter.saw(store, keys, new)
    experiment = active()
    if experiment is not None and experiment.system is not None:
        experiment.meters.setdefault(experiment.system, Meter()).saw(store, keys, new)


def dollars(usage: Mapping[str, float], prices: Mapping[str, float]) -> float:
    """US dollars of ``usage`` under ``prices``: ``{"prompt": $, "completion": $}`` per million tokens, and
    ``"reasoning"`` when reasoning tokens are billed apart from the completion (default: counted in it, as the APIs
    that report them do)."""
    unknown = sorted(set(prices) - {"prompt", "completion", "reasoning"})
    if unknown or "prompt" not in prices or "completion" not in prices:
        raise ValueError(f"prices: give 'prompt' and 'completion' (and optionally 'reasoning') in USD per million "
                         f"tokens, got {sorted(prices)}")
    total = usage["prompt_tokens"] * prices["prompt"] + usage["completion_tokens"] * prices["completion"]
    if "reasoning" in prices:
        total += usage["reasoning_tokens"] * prices["reasoning"]
    return total / 1e6


def usage_columns(usage: Mapping[str, float], prices: Optional[Mapping[str, float]] = None) -> Dict[str, float]:
    """A cost table's columns: the :data:`FIGURES` (``seconds`` as ``call_seconds``), ``usd`` with ``prices``."""
    out = {("call_seconds" if k == "seconds" else k): (round(v, 3) if k == "seconds" else int(v))
           for k, v in usage.items()}
    if prices is not None:
        out["usd"] = round(dollars(usage, prices), 6)
    return out


class _CostMeasure(PairedMeasure):
    """Base of :data:`Calls`, :data:`Tokens` and :func:`Cost` (each defines ``figure(usage)``): the experiment's
    system's figure divided evenly over the queries it ranked, so ``pt.Experiment``'s mean is the figure per query."""
    SUPPORTED_PARAMS: dict = {}

    def unit(self, qid):
        return None

    def paired_impl(self, qrels, run, cache):
        experiment = active()
        if experiment is None or experiment.system is None:
            raise ValueError(f"{self}: a cost measure reads the calls of the system pt.Experiment is running; use it "
                             "inside pt.Experiment (not ir_measures.calc_aggregate on a run)")
        meter = experiment.meters.get(experiment.system, Meter())
        qids = list(dict.fromkeys(run["qid"].astype(str)))
        value = self.figure(meter.usage()) / max(1, len(qids))
        return [(q, value) for q in qids]


class _Calls(_CostMeasure):
    """Model calls per query (distinct calls the system needed, read from its backend's ``store=``)."""
    __name__ = "Calls"
    PRETTY_NAME = "model calls per query"
    SHORT_DESC = "Distinct backend calls per query, stored or computed (the call store's rows)."

    def figure(self, usage):
        return float(usage["calls"])


class _Tokens(_CostMeasure):
    """Tokens per query: ``kind='all'`` (prompt + completion; the default), ``'prompt'``, ``'completion'``,
    ``'reasoning'``."""
    __name__ = "Tokens"
    PRETTY_NAME = "tokens per query"
    SHORT_DESC = "Prompt and completion tokens per query, from the call store."
    SUPPORTED_PARAMS = {"kind": measures.ParamInfo(dtype=str, choices=["all", "prompt", "completion", "reasoning"],
                                                   default="all", desc="which tokens")}

    def figure(self, usage):
        kind = self.params.get("kind", "all")
        if kind == "all":
            return float(usage["prompt_tokens"] + usage["completion_tokens"])
        return float(usage[f"{kind}_tokens"])


class _Cost(_CostMeasure):
    """US dollars per query under a price table (:func:`Cost`)."""
    __name__ = "Cost"
    PRETTY_NAME = "US dollars per query"
    SHORT_DESC = "Dollars per query: stored tokens × prices per million tokens."
    SUPPORTED_PARAMS = {name: measures.ParamInfo(dtype=float, desc=f"USD per million {name} tokens")
                        for name in ("prompt", "completion", "reasoning")}

    def figure(self, usage):
        return dollars(usage, dict(self.params))


Calls = register_measure(_Calls())
Tokens = register_measure(_Tokens())
_COST = register_measure(_Cost())


def Cost(prices: Mapping[str, float]):  # noqa: N802 - a measure's name, as ir_measures spells them
    """The measure of US dollars per query under ``prices`` (``{"prompt": $, "completion": $}`` per million tokens,
    optionally ``"reasoning"``; :func:`dollars`): ``pt.Experiment(..., [nDCG@10, pti.Cost({...}), "mrt"])``."""
    dollars(dict.fromkeys(FIGURES, 0), prices)  # the table checked now
    return _COST(**{k: float(v) for k, v in prices.items()})
