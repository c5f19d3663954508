"""What Setwise and Rank-R1 share (ielab/llm-rankers ``SetwiseLlmRanker``, which ``RankR1SetwiseLlmRanker`` subclasses):
the passage and query text cut to a token length as the reference's ``truncate`` (``convert_tokens_to_string`` of the
first ``length`` tokens, 0.0.2 ``setwise.py:309-310``), each query's first-stage list sorted by
:mod:`~pyterrier_instruct.setwise.sort` with the comparisons of all queries batched, and the reference's −rank
scores."""
from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

from ..base import InstructReranker, first_stage_lists, warn_unparsed
from ..instructions import QuerySlot
from . import sort


class SetwiseBase(InstructReranker, family=False):
    """Subclasses set ``method``, ``num_child``, ``k``, ``query_length``, ``passage_length``, ``text_field``,
    ``title_field``, ``instruction``, ``verbose`` and implement ``_tokenizer()`` and ``_compare(items)``: one winner
    position per ``(query, [passage texts])``."""
    #: where the instruction goes: after the (cut) query; with no instruction, the cut query exactly as the reference
    #: passes it (a trailing space of the cut kept)
    query_slot = QuerySlot("rank_llm")
    #: what a run's unparsed answers are counted against (``stats``), what they lacked and what was done instead, for
    #: the one warning per run (:func:`~pyterrier_instruct.base.warn_unparsed`)
    ANSWERS, UNPARSED = "comparisons_asked", "named no passage label"
    UNPARSED_THEN = "the comparison's first passage was taken as the winner"

    def _setup(self, method: str, num_child: int, k: int, query_length: Optional[int],
               passage_length: Optional[int]) -> None:
        sort.check(method, num_child, k, type(self).__name__)
        for name, value in (("query_length", query_length), ("passage_length", passage_length)):
            if value is not None and int(value) < 1:
                raise ValueError(f"{type(self).__name__}: {name} must be a positive number of tokens or None, got "
                                 f"{value!r}")
        self.method, self.num_child, self.k = method, int(num_child), int(k)
        self.query_length, self.passage_length = query_length, passage_length
        self.stats: Counter = Counter()
        #: comparisons per qid of the last frame (the reference's ``total_compare`` of each query)
        self.comparisons: Dict[str, int] = {}

    def _tokenizer(self):  # pragma: no cover - abstract
        raise NotImplementedError  # abstract

    def _compare(self, items: List[tuple]) -> List[int]:  # pragma: no cover - abstract
        raise NotImplementedError  # abstract

    def truncate(self, text: str, length: Optional[int]) -> str:
        """The reference's ``truncate``: the first ``length`` tokens of ``text`` as a string (``None``: uncut)."""
        if length is None:
            return text
        tok = self._tokenizer()
        return tok.convert_tokens_to_string(tok.tokenize(text)[:int(length)])

    def passages(self, df: pd.DataFrame) -> List[str]:
        """``"{title} {text}"`` (llm-rankers ``run.py``; the text alone for no title), cut to ``passage_length``."""
        text = df[self.text_field].astype(str)
        if self.title_field and self.title_field in df.columns:
            title = df[self.title_field].fillna("").astype(str)
            text = text.where(title == "", title + " " + text)
        return [self.truncate(t, self.passage_length) for t in text]

    def queries(self, view: pd.DataFrame) -> List[str]:
        """The query of each row of a prompt view (:meth:`prompt_view`) cut to ``query_length`` tokens, then composed
        with the row's instruction by ``query_slot``."""
        queries = view["query"].astype(str)
        cut = {q: self.truncate(q, self.query_length) for q in pd.unique(queries)}
        return self.query_slot.frame(view.assign(query=queries.map(cut))).tolist()

    def _score(self, work: pd.DataFrame):
        arrays, codes, qids = first_stage_lists(work)
        lists = [a.tolist() for a in arrays]
        qids = list(qids[codes[[lst[0] for lst in lists]]])
        firsts = [lst[0] for lst in lists]
        queries = self.queries(work.iloc[firsts])
        per_qid = pd.Series(self.queries(work)).groupby(codes).nunique()
        if (per_qid > 1).any():
            raise ValueError(f"{type(self).__name__}: qid {qids[int(per_qid.idxmax())]!r} has rows with different "
                             "query/instruction text; a setwise comparison needs one query per qid")
        texts = self.passages(work)
        orders = [list(lst) for lst in lists]
        sorts = [sort.SORTS[self.method](order, self.num_child, self.k) for order in orders]
        bar = self._tqdm(None, total=len(lists), unit="query")
        self._begin(work, lists)
        invalid, answers = self.stats["invalid"], self.stats[self.ANSWERS]

        def compare(asked):
            wins = self._compare([(q, queries[q], [texts[d] for d in docs], docs) for q, docs in asked])
            self.stats["comparisons_asked"] += len(asked)
            return wins

        try:
            counts = sort.run(sorts, compare, self._skipped)
        finally:
            bar.update(len(lists))
            bar.close()
        warn_unparsed(self, self.stats["invalid"] - invalid, self.stats[self.ANSWERS] - answers, self.UNPARSED,
                      self.UNPARSED_THEN)
        self.comparisons = dict(zip(map(str, qids), counts))
        self.stats["comparisons"] += sum(counts)
        self.stats["queries"] += len(lists)
        out = np.empty(len(work), dtype="float64")
        for order, lst in zip(orders, lists):
            for d, s in sort.scores(order, lst, self.k).items():
                out[d] = s
        return self._finish(out)

    def _begin(self, work: pd.DataFrame, lists: List[List[int]]) -> None:
        """Called once per frame before the sorts start (Rank-R1 seeds its per-query shuffles here)."""

    def _skipped(self, q: int, docs: List[int]) -> None:
        """Told of a comparison of one document or none, not asked of the model (Rank-R1 still draws its shuffle)."""

    def _finish(self, scores: np.ndarray):
        return scores
