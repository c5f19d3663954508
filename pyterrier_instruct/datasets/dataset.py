"""``InstructDataset``: one benchmark as a PyTerrier dataset (what ``pt.get_dataset('instruct:…')`` returns).

The folder is located and the files are read on first use. Topics keep ``qid, query, instruction, base_qid, variant``
(PyTerrier's irds wrapper would drop all but ``qid, query``: PyTerrier ``datasets/_irds.py``, ``get_topics(variant)``).
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Dict, Iterator, List, Literal, Optional, Union

import pandas as pd
import pyterrier as pt

from ._bench import ALIASES, Benchmark, select_variant
from .registry import Entry
from .._progress import tqdm as progress_bar


class CorpusIter:
    """The iterator :meth:`InstructDataset.get_corpus_iter` returns: the documents, plus ``source``, the call that
    opens the dataset they come from (``"pti.load_dataset('instruct-mini')"``), by which an index built from them names
    its corpus (``pti.BM25``'s ``repr`` and provenance)."""

    def __init__(self, docs: Iterator[Dict[str, str]], source: str):
        self._docs, self.source = docs, source

    def __iter__(self) -> "CorpusIter":
        return self

    def __next__(self) -> Dict[str, str]:
        return next(self._docs)


class InstructDataset(pt.datasets.Dataset):
    """A benchmark read from a local folder in its released layout.

    Creating one reads nothing: the folder is located (``$PYTERRIER_INSTRUCT_DATA``, the cache, a pinned download; see
    :mod:`.source`) on first use (``get_topics``, ``get_qrels``, ``get_corpus_iter``, ``text_loader``, ``path``, …), as
    ``ir_datasets.load`` and PyTerrier's ``irds:`` datasets do; a missing copy raises ``DataError`` then.

    Args:
        name: the dataset id (``followir/robust04``, ``infosearch/audience``, ``ifir/fiqa``, …).
        path: the folder holding the files; None to locate it on first use.
        entry: the registry entry (layout family, hub repository, revision, standard measure).
        provenance: where the files came from, recorded with every result (filled when the folder is located).
        qrels_mapping: FollowIR only: ``'as-named'`` reads ``qrels_og`` as og; ``'swapped'`` reads it as changed
            (mteb 1.7's loader fills og from ``qrels_changed``). The loader asserts that og has more relevant documents
            than changed either way.
        download: allow the pinned download when no local copy is found (never with ``HF_HUB_OFFLINE``).
    """

    def __init__(self, name: str, path: Union[str, Path, None], entry: Entry,
                 provenance: Optional[Dict[str, str]] = None, qrels_mapping: str = "as-named", *,
                 download: bool = True):
        self.name = name
        self.entry = entry
        self.measure = entry.measure
        self.qrels_mapping = qrels_mapping
        self.download = download
        self._given = None if path is None else Path(path)
        self._path = self._given
        self._provenance = None if provenance is None else dict(provenance)

    def locate(self) -> Path:
        """The folder holding the files, located now if not yet (``DataError`` naming the places tried and the download
        command when there is no local copy)."""
        if self._path is None:
            from .readers import resolve
            _, folder, provenance = resolve(self.name, None, download=self.download)
            self._path = Path(folder)
            self._provenance = self._provenance or provenance
        return self._path

    @property
    def path(self) -> Path:
        return self.locate()

    @property
    def provenance(self) -> Dict[str, str]:
        """Where the files are: name, folder, hub repository, the revision the id pins (``pinned_revision``) and the one
        read (``revision``: None for a local folder whose revision is not recorded, then ``content_sha256`` of its
        files); locates the folder."""
        folder = self.locate()
        if self._provenance is not None and "repo_id" in self._provenance and self._provenance.get("revision") is None \
                and "content_sha256" not in self._provenance:  # a local folder of unrecorded revision: what was read
            from .source import content_hash
            self._provenance["content_sha256"] = content_hash(folder)
        out = dict(self._provenance or {"name": self.name, "path": str(folder)})
        if self.entry.family in ("bundled", "followir", "followir-mteb", "mfollowir"):
            out["qrels_mapping"] = self.qrels_mapping
        return out

    def _fingerprint_(self) -> str:
        """The fingerprint protocol: the name, qrels mapping and the revision of the folder (its files' content)."""
        from .._fingerprint import path_revision
        revision = path_revision(str(self.path))
        return f"InstructDataset({self.name!r}, qrels_mapping={self.qrels_mapping!r}, revision={revision!r})"

    def __repr__(self) -> str:
        where = f", path={str(self._path)!r}" if self._path is not None else ""
        return f"InstructDataset({self.name!r}{where})"

    @cached_property
    def bench(self) -> Benchmark:
        from .readers import read_benchmark
        return read_benchmark(self.entry, self.path, self.qrels_mapping)

    @property
    def variants(self):
        return self.bench.variants

    def _select(self, frame: pd.DataFrame, variant: Optional[str]) -> pd.DataFrame:
        return select_variant(frame, variant, self.bench.variants, ALIASES, self.name).copy()

    # -- PyTerrier dataset API ---------------------------------------------------------------------
    def get_topics(self, variant: Optional[str] = None) -> pd.DataFrame:
        """``qid, query, instruction, base_qid, variant``: every instance (``None`` or ``'paired'``), or one variant
        (``'og'``, ``'changed'``, ``'reversed'``; ``'ori'``/``'ins'``/``'rev'``; IFIR ``'0'``–``'3'`` or ``'level0'``…).
        ``'base'`` gives one row per base query with its ``instruction_<variant>`` columns (paired benchmarks)."""
        if variant == "base":
            if self.bench.base_topics is None:
                raise ValueError(f"{self.name} has no paired base topics; use get_topics() or a variant")
            return self.bench.base_topics.copy()
        return self._select(self.bench.topics, variant)

    def get_qrels(self, variant: Optional[str] = None) -> pd.DataFrame:
        """``qid, docno, label, base_qid, variant`` keyed like the topics; labels are ints."""
        return self._select(self.bench.qrels, variant)

    def get_results(self, variant: Optional[str] = None) -> pd.DataFrame:
        """The benchmark's fixed candidate lists as a run ``qid, docno, score, rank`` in **file order**
        (``score = -rank``, so any re-sort by score keeps the file order the p-MRR tie-break relies on)."""
        cands = self.bench.candidates
        if cands is None:
            raise ValueError(f"{self.name} defines no candidate lists (full retrieval over the corpus); "
                             f"retrieve with a first stage, e.g. pti.BM25 over ds.get_corpus_iter()")
        qids = set(self.get_topics(variant)["qid"])
        run = cands[cands["qid"].isin(qids)].reset_index(drop=True)
        run["rank"] = run.groupby("qid", sort=False).cumcount().astype("int64")
        run["score"] = 0.0 - run["rank"].astype("float64")
        return run[["qid", "docno", "score", "rank"]]

    def get_corpus_iter(self, verbose: bool = True) -> Iterator[Dict[str, str]]:
        """Streams ``{docno, title, text}`` from the corpus file (nothing is held in memory), with a progress bar
        unless ``verbose=False``; the iterator's ``source`` names this dataset (:class:`CorpusIter`)."""
        def docs():
            it = iter(self.bench.corpus)
            if verbose:
                it = progress_bar(it, desc=f"{self.name} corpus", unit="d")
            for docno, title, text in it:
                yield {"docno": docno, "title": title, "text": text}
        return CorpusIter(docs(), self.source_call())

    def source_call(self) -> str:
        """The call that opens this dataset: ``pti.load_dataset('<id>')``, with ``path=`` for an explicit folder."""
        from .registry import DATASETS
        if self.name not in DATASETS:  # a local folder in the FollowIR layout, opened by its path
            return f"pti.load_dataset({str(self._given)!r})"
        bundled = DATASETS[self.name].repo_id is None
        path = "" if self._given is None or bundled else f", path={str(self._given)!r}"
        return f"pti.load_dataset({self.name!r}{path})"

    def get_corpus_lang(self) -> Optional[str]:
        return {"fas": "fa", "rus": "ru", "zho": "zh"}.get(self.entry.lang, "en")

    def get_topics_lang(self) -> Optional[str]:
        return "en"

    def text_loader(self, fields: Union[List[str], str, Literal["*"]] = "*", *, verbose: bool = True) -> pt.Transformer:
        """``R → R``: attaches the requested document fields (``title``, ``text``) by docno, reading only those
        documents; usable as ``pt.text.get_text(ds, 'text')``. ``verbose`` is pyterrier's ``text_loader`` protocol
        (``pt.text.get_text`` passes it): the lookup is one read of the requested documents, with no bar to show."""
        from .candidates import TextLoader
        del verbose
        return TextLoader(self, fields)

    # -- benchmark extras --------------------------------------------------------------------------
    def candidates(self, fields: Union[List[str], str, Literal["*"]] = "*") -> pt.Transformer:
        """``Q → R``: each input query's fixed candidates in file order with the document fields attached; every
        input column (``instruction`` …) is kept."""
        from .candidates import Candidates
        return Candidates(self, fields)

    def changed_docs(self) -> pd.DataFrame:
        """FollowIR's changed-document set C_q (``qid`` = base qid, ``docno``): ``qrel_diff`` when the layout has it,
        else the documents whose label differs between the og and changed qrels."""
        if self.bench.changed is None:
            raise ValueError(f"{self.name} has no changed-document lists (only FollowIR-style benchmarks do)")
        return self.bench.changed.copy()

    def excluded_ids(self) -> pd.DataFrame:
        """Each query's excluded documents (BRIGHT's ``excluded_ids``, the ``"N/A"`` placeholder dropped) as ``qid,
        docno``; empty for a dataset without exclusions. Not in the qrels: ``ds.exclude()`` removes them from a run."""
        if self.bench.excluded is None:
            return pd.DataFrame({"qid": [], "docno": []}, dtype=object)
        return self.bench.excluded.copy()

    def exclude(self) -> pt.Transformer:
        """``R → R``: removes each query's excluded documents from its ranking (BRIGHT's official rule; idempotent). Put
        it at the end of each system evaluated on BRIGHT (``system >> ds.exclude()``), as BRIGHT's ``run.py`` removes
        them before scoring; a no-op for a dataset without exclusions."""
        from .candidates import Exclude
        return Exclude(self)

    def partitions(self) -> pd.DataFrame:
        """The InfoSearch gold/negative partition per instance (``qid`` = base qid, ``docno``, ``role``)."""
        if "reversed" not in self.bench.variants:
            raise ValueError(f"{self.name} has no og/changed/reversed qrels to partition (InfoSearch only)")
        from ..measures import infosearch_partition
        q = self.bench.qrels
        og, ch = (q[q["variant"] == v].assign(qid=lambda f: f["base_qid"]) for v in ("og", "changed"))
        return infosearch_partition(og, ch)

    def official_evaluate(self, run: pd.DataFrame) -> Dict[str, float]:
        """The benchmark's own scoring of ``run`` (``qid, docno, score``) under its own rules, with its own measure
        names: mteb's for LIMIT and R2MED (queries absent from the run skipped), freshstack's for FreshStack (nuggets;
        absent queries count 0), crumb_eval's for CRUMB (MaxP for its three tasks, intended form), BRIGHT-PRO's
        weighted aspects (absent queries skipped). See docs/data.md; ``pt.Experiment`` with ``ds.measure`` gives the
        per-query form."""
        if self.bench.official is None:
            raise ValueError(f"{self.name} has no official scoring rule of its own here; use pt.Experiment with "
                             f"its measure {self.measure!r}")
        return self.bench.official(run)

    def document_qrels(self) -> pd.DataFrame:
        """CRUMB's ``full_document_qrels`` (``qid, docno, label``): what a MaxP run (``ds.maxp()``) is scored
        against."""
        if "document" not in self.bench.judgements:
            raise ValueError(f"{self.name} has no document qrels (CRUMB only)")
        return self.bench.judgements["document"].copy()

    def maxp(self) -> pt.Transformer:
        """``R → R``: CRUMB's MaxP, a passage run → its documents, each with its best passage's score."""
        from .candidates import MaxP
        return MaxP()

    def aspects(self) -> pd.DataFrame:
        """BRIGHT-PRO's aspects: ``aspect_id, qid, content, weight, supporting_docs`` (the qid of the query whose gold
        documents carry it)."""
        if "aspects" not in self.bench.judgements:
            raise ValueError(f"{self.name} has no aspects (BRIGHT-PRO only)")
        return self.bench.judgements["aspects"].copy()

    def nugget_qrels(self) -> pd.DataFrame:
        """FreshStack's per-nugget judgements ``nugget_id, qid, docno, label`` (``get_qrels()`` sums them per query)."""
        if "nuggets" not in self.bench.judgements:
            raise ValueError(f"{self.name} has no nugget judgements (FreshStack only)")
        return self.bench.judgements["nuggets"].copy()

    def info(self) -> Dict[str, object]:
        """Counts, notes of the reader (layout, qrels mapping, dropped instances) and provenance."""
        b = self.bench
        return {"name": self.name, "variants": list(b.variants), "topics": len(b.topics),
                "base_queries": int(b.topics["base_qid"].nunique()), "qrels": len(b.qrels),
                "candidates": None if b.candidates is None else len(b.candidates), **b.notes,
                "provenance": self.provenance}
