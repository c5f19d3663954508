"""ir_datasets registration: every plugin dataset as ``instruct/<name>`` (done by ``import pyterrier_instruct``).

The registered objects are light: the folder is located and the files are read on first access, from
``$PYTERRIER_INSTRUCT_DATA``, the cache or (online) a pinned download — see :mod:`.source`. Queries carry
``query, instruction, base_qid, variant``; with PyTerrier, prefer ``pt.get_dataset('instruct:<name>')``,
whose topics keep these columns (the ``irds:`` wrapper keeps only ``qid, query`` for a variant).
Scored documents are the benchmark's candidate lists with ``score = -rank`` so that any sort by score
reproduces the file order. (No ``from __future__ import annotations`` here: PyTerrier's text loader reads the
document fields whose annotation *is* ``str``.)
"""

from typing import Dict, Iterator, NamedTuple, Optional

import ir_datasets
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, BaseScoredDocs, GenericScoredDoc, TrecQrel
from ir_datasets.indices import Docstore

from .readers import UnknownDatasetError, unknown_dataset_message
from .registry import DATASETS, FULL_RETRIEVAL, irds_id

NAMESPACE = "instruct"
_PATTERN = False  # the unknown-id pattern is registered once
_QREL_DEFS = {0: "not relevant", 1: "relevant", 2: "highly relevant (graded benchmarks)",
              -100: "excluded (BRIGHT excluded_ids: removed from the query's ranking before scoring)"}


class InstructDoc(NamedTuple):
    doc_id: str
    title: str
    text: str

    def default_text(self) -> str:
        return f"{self.title} {self.text}".strip()


class InstructQuery(NamedTuple):
    """One topic as ``queries_iter()`` yields it: the two fields of :class:`QueryText`, then the instruction and the pairing."""
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

    PyTerrier's ``irds:`` wrapper reads no default-text declaration: ``IRDSDataset.get_topics()`` renames the text field to
    ``query`` only when the declared type has exactly one besides ``query_id``, and otherwise prints "There are multiple
    query fields available" on every call. Declared this way, ``pt.get_dataset('irds:instruct/…').get_topics()`` prints
    nothing and still carries ``instruction``, ``base_qid`` and ``variant`` (the frame is built from the yielded
    topics). ir_datasets' ``export`` command writes the declared fields; iterate ``queries_iter()`` for all five.
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


class UnknownIrdsDatasetError(UnknownDatasetError, KeyError):
    """``ir_datasets.load('instruct/<typo>')``: a ``KeyError`` as ir_datasets raises for unknown ids, with the closest ids."""

    def __str__(self) -> str:
        return str(self.args[0])


def _unknown(name: str, groups) -> None:
    raise UnknownIrdsDatasetError(unknown_dataset_message(groups[0], f"{NAMESPACE}/", given=f"{NAMESPACE}/{groups[0]}"))


def register() -> None:
    """Registers every id of :data:`DATASETS` (idempotent), and an ``instruct/…`` pattern that is tried only for an id not
    registered: it raises the did-you-mean error instead of ir_datasets' bare ``KeyError``."""
    global _PATTERN
    if not _PATTERN:
        ir_datasets.registry.register_pattern(rf"^{NAMESPACE}/(.+)$", _unknown)
        _PATTERN = True
    langs = {"fas": "fa", "rus": "ru", "zho": "zh"}
    for name, entry in DATASETS.items():
        rid = irds_id(name)
        if rid in ir_datasets.registry:
            continue
        lazy = _Lazy(name)
        parts = [_Docs(lazy, langs.get(entry.lang, "en")), _Queries(lazy), _Qrels(lazy)]
        if entry.family not in FULL_RETRIEVAL:
            parts.append(_ScoredDocs(lazy))
        ir_datasets.registry.register(rid, ir_datasets.Dataset(*parts))
