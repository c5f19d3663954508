"""The fixed candidate pool of a benchmark as a first stage (``Q → R``), and the text loader (``R → R``)."""
from __future__ import annotations

import pandas as pd
import pyterrier as pt

from ..instructions import split_qids


def _attach_text(frame: pd.DataFrame, dataset, text_field: str) -> None:
    docs = dataset._docs
    missing = [d for d in pd.unique(frame["docno"]) if d not in docs]
    if missing:
        raise KeyError(f"docno(s) {missing[:5]} are not in the corpus of {dataset.name!r}")
    frame["title"] = [docs[d]["title"] for d in frame["docno"]]
    frame[text_field] = [docs[d]["text"] for d in frame["docno"]]


class _DatasetStage(pt.Transformer):
    """A transformer bound to a dataset's corpus: identity is (class, dataset path, text field)."""

    def __init__(self, dataset, text_field: str = "text"):
        self.dataset = dataset
        self.text_field = text_field

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dataset.name!r})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and (other.dataset.path, other.text_field) == (self.dataset.path, self.text_field)

    def __hash__(self) -> int:
        return hash((type(self).__name__, str(self.dataset.path), self.text_field))


class TextLoader(_DatasetStage):
    """Attaches ``title`` and the text field to a result frame from the dataset's corpus (``R → R``),
    e.g. ``bm25 % 100 >> ds.text_loader() >> reranker``. Rows, order and other columns are kept."""
    schematic = {"label": "Text"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp)
        out = inp.copy()
        if len(out) == 0:
            out["title"] = pd.Series(dtype=object)
            out[self.text_field] = pd.Series(dtype=object)
            return out
        _attach_text(out, self.dataset, self.text_field)
        return out

    def fuse_rank_cutoff(self, k: int):
        return pt.RankCutoff(k) >> self


class Candidates(_DatasetStage):
    """Returns each input query's benchmark candidates in file order (score 0, rank = file position).

    Every input column is kept (so ``instruction`` flows on to the reranker); ``title`` and the text
    field are attached from the dataset's corpus. Queries are matched on ``base_qid`` when present,
    else on the qid with its ``-og``/``-changed`` suffix removed.
    """
    schematic = {"label": "Candidates"}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp)
        extra = ["docno", "title", self.text_field, "score", "rank"]
        base = inp.drop(columns=[c for c in extra if c in inp.columns])
        if len(base) == 0:
            out = base.copy()
            for c, dtype in zip(extra, [object, object, object, "float64", "int64"]):
                out[c] = pd.Series(dtype=dtype)
            return out
        key = base["base_qid"].astype(str) if "base_qid" in base.columns else split_qids(base["qid"])[0]
        cands = self.dataset._candidates.rename(columns={"qid": "_key"})
        out = base.assign(_key=key.to_numpy()).merge(cands, on="_key", how="inner", sort=False).drop(columns="_key")
        _attach_text(out, self.dataset, self.text_field)
        out["score"] = 0.0
        out["rank"] = out.groupby("qid", sort=False).cumcount().astype("int64")
        return out
