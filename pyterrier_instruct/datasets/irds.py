"""ir_datasets registration: every plugin dataset as ``instruct/<name>`` (done by ``import pyterrier_instruct``).

The objects are light: files are located (:mod:`.source`) and read on first access. Prefer
``pt.get_dataset('instruct:<name>')``, whose topics keep ``instruction, base_qid, variant``. Scored documents are the
candidate lists with ``score = -rank``. Metadata counts: recorded for a pinned release (:data:`RECORDED_COUNTS`), else
of a local copy, else ``{"count": None}``. (No ``from __future__ import annotations`` here: PyTerrier's text loader
reads the document fields whose annotation *is* ``str``.)
"""

from typing import Dict, Iterator, NamedTuple, Optional

import ir_datasets
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, BaseScoredDocs, GenericScoredDoc, TrecQrel
from ir_datasets.indices import Docstore
from ir_datasets.util import MetadataComponent, MetadataProvider

from .readers import UnknownDatasetError, unknown_dataset_message
from .registry import DATASETS, FULL_RETRIEVAL, irds_id

NAMESPACE = "instruct"
_PATTERN = False  # the unknown-id pattern is registered once
_QREL_DEFS = {0: "not relevant", 1: "relevant", 2: "highly relevant (graded benchmarks)"}


class InstructDoc(NamedTuple):
    doc_id: str
    title: str
    text: str

    def default_text(self) -> str:
        return f"{self.title} {self.text}".strip()


class InstructQuery(NamedTuple):
    """A topic as ``queries_iter()`` yields it: :class:`QueryText`'s fields, then the instruction and the pairing."""
    query_id: str
    query: str
    instruction: str
    base_qid: str
    variant: str

    def default_text(self) -> str:
        return self.query


class QueryText(NamedTuple):
    """The query type ``queries_cls()`` declares: ``query_id`` and the text ``query`` (the first two fields of every
    :class:`InstructQuery`).

    PyTerrier's ``irds:`` wrapper reads no default-text declaration: ``IRDSDataset.get_topics()`` renames the text field
    to ``query`` only when the declared type has exactly one besides ``query_id``, and otherwise prints "There are
    multiple query fields available" on every call. Declared this way,
    ``pt.get_dataset('irds:instruct/…').get_topics()`` prints nothing and still carries ``instruction``, ``base_qid``
    and ``variant`` (the frame is built from the yielded topics). ir_datasets' ``export`` command writes the declared
    fields; iterate ``queries_iter()`` for all five.
    """
    query_id: str
    query: str

    def default_text(self) -> str:
        return self.query


class _Lazy:
    """Opens the dataset's files on first use and keeps the parsed benchmark."""

    def __init__(self, name: str):
        self.name = name
        self._bench = None

    def bench(self):
        if self._bench is None:
            from .readers import read_benchmark, resolve
            entry, folder, _ = resolve(self.name)
            self._bench = read_benchmark(entry, folder)
        return self._bench

    def local(self) -> bool:
        """Whether the files are here (bundled, ``$PYTERRIER_INSTRUCT_DATA``, the cache) and read, not downloaded."""
        if self._bench is not None:
            return True
        from .readers import DataError, resolve
        try:
            resolve(self.name, download=False)
            self.bench()
        except DataError:  # absent, or a folder that lacks this id's files
            return False
        return True

    def count(self, etype: str) -> Optional[int]:
        b = self.bench()
        frame = {"docs": b.corpus, "queries": b.topics, "qrels": b.qrels, "scoreddocs": b.candidates}.get(etype)
        return None if frame is None else len(frame)


class _Docstore(Docstore):
    def __init__(self, lazy: _Lazy):
        super().__init__(InstructDoc, "doc_id")
        self._lazy = lazy

    def get_many_iter(self, doc_ids):
        corpus = self._lazy.bench().corpus
        wanted = [str(d) for d in doc_ids]
        found = corpus.get_many([d for d in wanted if d in corpus])
        for docno, (title, text) in found.items():
            yield InstructDoc(docno, title, text)


class _Docs(BaseDocs):
    def __init__(self, lazy: _Lazy, lang: Optional[str]):
        self._lazy, self._lang = lazy, lang

    def docs_iter(self) -> Iterator[InstructDoc]:
        for docno, title, text in self._lazy.bench().corpus:
            yield InstructDoc(docno, title, text)

    def docs_cls(self):
        return InstructDoc

    def docs_store(self, field: str = "doc_id"):
        return _Docstore(self._lazy)

    def docs_count(self) -> int:
        return len(self._lazy.bench().corpus)

    def docs_namespace(self) -> str:
        return NAMESPACE

    def docs_lang(self) -> Optional[str]:
        return self._lang


class _Queries(BaseQueries):
    def __init__(self, lazy: _Lazy):
        self._lazy = lazy

    def queries_iter(self) -> Iterator[InstructQuery]:
        t = self._lazy.bench().topics
        for row in zip(t["qid"], t["query"], t["instruction"], t["base_qid"], t["variant"]):
            yield InstructQuery(*row)

    def queries_cls(self):
        return QueryText

    def queries_namespace(self) -> str:
        return NAMESPACE

    def queries_lang(self) -> str:
        return "en"


class _Qrels(BaseQrels):
    def __init__(self, lazy: _Lazy):
        self._lazy = lazy

    def qrels_iter(self) -> Iterator[TrecQrel]:
        q = self._lazy.bench().qrels
        for qid, docno, label in zip(q["qid"], q["docno"], q["label"]):
            yield TrecQrel(qid, docno, int(label), "0")

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self) -> Dict[int, str]:
        return _QREL_DEFS


class _ScoredDocs(BaseScoredDocs):
    def __init__(self, lazy: _Lazy):
        self._lazy = lazy

    def scoreddocs_iter(self) -> Iterator[GenericScoredDoc]:
        c = self._lazy.bench().candidates
        rank = c.groupby("qid", sort=False).cumcount()
        for qid, docno, r in zip(c["qid"], c["docno"], rank):
            yield GenericScoredDoc(qid, docno, 0.0 - r)


#: BRIGHT per task as mteb's ``BrightRetrieval`` states it (mteb @ 7a86af3 ``BrightRetrieval.json``): ``num_samples``
#: (documents + queries), ``num_relevant_docs``, ``average_relevant_docs_per_query``.
BRIGHT_STATS = {
    "biology": (57462, 374, 3.6310679611650487), "earth_science": (121365, 609, 5.25),
    "economics": (50323, 823, 7.990291262135922), "psychology": (52936, 742, 7.346534653465347),
    "robotics": (62062, 553, 5.475247524752476), "stackoverflow": (107198, 819, 7.0),
    "sustainable_living": (60900, 604, 5.592592592592593), "pony": (8006, 2519, 22.491071428571427),
    "leetcode": (414074, 262, 1.8450704225352113), "aops": (188113, 524, 4.7207207207207205),
    "theoremqa_theorems": (23904, 126, 1.9384615384615385), "theoremqa_questions": (188207, 469, 2.2878048780487803),
}
#: BRIGHT's long documents (mteb @ 8533fc5 ``BrightLongRetrieval.json``): documents, queries, relevant documents.
BRIGHT_LONG_STATS = {
    "biology": (524, 103, 134), "earth_science": (601, 116, 187), "economics": (516, 103, 109),
    "psychology": (512, 101, 116), "robotics": (508, 101, 106), "stackoverflow": (1858, 117, 129),
    "sustainable_living": (554, 108, 129), "pony": (577, 112, 769),
}


def _bright_counts(samples: int, relevant: int, average: float) -> Dict[str, int]:
    queries = round(relevant / average)
    if abs(relevant / queries - average) > 1e-9:
        raise ValueError(f"BRIGHT statistics: {relevant} / {average} is not a whole number of queries")
    return {"docs": samples - queries, "queries": queries, "qrels": relevant}


#: ``{name: {entity type: count}}`` of the releases whose content is pinned and whose counts are stated: the bundled
#: miniatures (checked in ``tests/test_user_warnings.py``), BRIGHT, and ``nevir/mteb`` (mteb @ 3c28f71 ``NevIR.json``).
RECORDED_COUNTS: Dict[str, Dict[str, int]] = {
    "instruct-mini": {"docs": 280, "queries": 20, "qrels": 560, "scoreddocs": 560},
    "infosearch-mini": {"docs": 20, "queries": 36, "qrels": 108, "scoreddocs": 180},
    "nevir/mteb": {"docs": 5112, "queries": 2766, "qrels": 2766, "scoreddocs": 2 * 2766},
    **{f"bright/{task}": _bright_counts(*stats) for task, stats in BRIGHT_STATS.items()},
    **{f"bright/{task}-long": dict(zip(("docs", "queries", "qrels"), stats))
       for task, stats in BRIGHT_LONG_STATS.items()},
    # LIMIT at mteb's pins: the card's num_examples (mteb descriptive_stats LIMIT{,Small}Retrieval.json)
    "limit": {"docs": 50000, "queries": 1000, "qrels": 2000},
    "limit/small": {"docs": 46, "queries": 1000, "qrels": 2000},
}

#: the metadata of an entity type whose count is not known here: a ``count`` key with no number, as ir_datasets' own
#: ``_count`` returns when nothing is known (``ir_datasets/util/metadata.py:31-44``, "may also return None")
UNKNOWN: Dict[str, None] = {"count": None}


class _Metadata(MetadataProvider):
    """ir_datasets' metadata of the ``instruct/…`` ids: :data:`RECORDED_COUNTS`, else the counts of a local copy, else
    :data:`UNKNOWN` (a ``count`` of ``None``: never a guess, never a download)."""

    def __init__(self):
        super().__init__(dict)
        self.lazy: Dict[str, _Lazy] = {}

    def get_metadata(self, dsid: str, entity_type) -> Dict[str, Optional[int]]:
        etype = ir_datasets.EntityType(entity_type).value
        name = dsid[len(NAMESPACE) + 1:]
        recorded = RECORDED_COUNTS.get(name, {}).get(etype)
        if recorded is not None:
            return {"count": recorded}
        lazy = self.lazy.get(name)
        if lazy is None or not lazy.local():
            return dict(UNKNOWN)
        count = lazy.count(etype)
        return dict(UNKNOWN) if count is None else {"count": count}


METADATA = _Metadata()


class UnknownIrdsDatasetError(UnknownDatasetError, KeyError):
    """``ir_datasets.load('instruct/<typo>')``: a ``KeyError`` as ir_datasets raises, naming the closest ids."""

    def __str__(self) -> str:
        return str(self.args[0])


def _unknown(name: str, groups) -> None:
    raise UnknownIrdsDatasetError(unknown_dataset_message(groups[0], f"{NAMESPACE}/", given=f"{NAMESPACE}/{groups[0]}"))


def register() -> None:
    """Registers every id of :data:`DATASETS` (idempotent), and an ``instruct/…`` pattern that is tried only for an id
    not registered: it raises the did-you-mean error instead of ir_datasets' bare ``KeyError``."""
    global _PATTERN
    if not _PATTERN:
        ir_datasets.registry.register_pattern(rf"^{NAMESPACE}/(.+)$", _unknown)
        _PATTERN = True
    langs = {"fas": "fa", "rus": "ru", "zho": "zh"}
    for name, entry in DATASETS.items():
        rid = irds_id(name)
        if rid in ir_datasets.registry:
            continue
        lazy = METADATA.lazy[name] = _Lazy(name)
        parts = [_Docs(lazy, langs.get(entry.lang, "en")), _Queries(lazy), _Qrels(lazy)]
        if entry.family not in FULL_RETRIEVAL:
            parts.append(_ScoredDocs(lazy))
        dataset = ir_datasets.Dataset(*parts)
        ir_datasets.registry.register(rid, ir_datasets.Dataset(MetadataComponent(rid, dataset, METADATA), dataset))
