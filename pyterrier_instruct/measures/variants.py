"""Standard ir_measures measures on one instruction variant: :data:`OG`, :data:`Changed`, :data:`Reversed`
(``OG(AP@1000)``: AP on the ``-og`` run against the ``-og`` qrels, reported under the instance's ``-og`` qid)."""
from __future__ import annotations

import ir_measures
import pandas as pd
from ir_measures import measures

from ..instructions import paired_qid
from ._provider import EMPTY_RUN, PairedMeasure, register_measure, unpaired


def _parse(name: str, where: str) -> measures.Measure:
    try:
        return ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError) as err:
        raise ValueError(f"{where}({name!r}): {name!r} is not a measure ir_measures can read ({err}); write it as "
                         f"'AP@1000', 'nDCG@10' or 'P(rel=2)@10' (a cutoff is an integer: check for a letter O "
                         f"typed for a zero)") from None


class _OnVariant(PairedMeasure):
    """A standard ir_measures measure evaluated on one variant's run against that variant's qrels only,
    reported under the instance's ``-og`` qid (so it shares the qid space of the paired measures).

    Its name is ``OG(AP@1000)``: the inner measure's name, which is also what equality and hashing compare.
    """
    VARIANT = "og"
    SUPPORTED_PARAMS = {
        "measure": measures.ParamInfo(dtype=measures.Measure, required=True, desc="the measure to evaluate"),
    }

    def __call__(self, measure=None, **kwargs):
        if measure is not None:
            kwargs["measure"] = _parse(measure, self.NAME) if isinstance(measure, str) else measure
        return super().__call__(**kwargs)

    def __repr__(self):
        inner = self.params.get("measure")
        return self.NAME if inner is None else f"{self.NAME}({inner!r})"

    def unit(self, qid):
        return None  # one value per qid

    def paired_impl(self, qrels: pd.DataFrame, run: pd.DataFrame, cache: dict):
        inner, v = self.params["measure"], self.VARIANT
        q, r = self.variants(qrels, run, cache)
        part_qrels = q.get(v)
        if part_qrels is None:
            raise unpaired(repr(self), (v,), q)
        part_run = r.get(v, EMPTY_RUN)
        part_qrels = part_qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        part_run = part_run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        for metric in ir_measures.iter_calc([inner], part_qrels, part_run):
            yield paired_qid(metric.query_id, "og"), metric.value


class _OG(_OnVariant):
    """A standard measure on the ``-og`` variant (FollowIR's headline MAP/nDCG; InfoSearch "Ori")."""
    __name__, VARIANT = "OG", "og"


OG = register_measure(_OG())


class _Changed(_OnVariant):
    """A standard measure on the ``-changed`` variant against the changed qrels (InfoSearch "Ins")."""
    __name__, VARIANT = "Changed", "changed"


Changed = register_measure(_Changed())


class _Reversed(_OnVariant):
    """A standard measure on the ``-reversed`` variant against the reversed qrels (InfoSearch "Rev")."""
    __name__, VARIANT = "Reversed", "reversed"


Reversed = register_measure(_Reversed())
