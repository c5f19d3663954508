"""``BiEncoder``: one configurable instruction-aware bi-encoder, itself a PyTerrier transformer (stages in
:mod:`.stages`, families in :mod:`.families`).

As pyterrier_dr's ``BiEncoder``, the input decides: a result frame is reranked (:meth:`~BiEncoder.scorer`), a query
frame gets ``query_vec``, a document frame ``doc_vec``. The query side fills ``query_template`` with the composed
query+instruction; queries are deduplicated on the final string, passage vectors cached per exact passage string
(:class:`.cache.DocCache`). ``stats`` counts forward passes and encoded strings.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import pyterrier as pt

from ..instructions import COMPOSERS, QuerySlot, query_slot as query_slot_arg
from .. import prompts as T
from ..base import InstructReranker, check_text
from .._torch import check_batch_size
from .._validation import text_hint
from .._progress import tqdm as progress_bar
from .cache import DocCache, EncodeStats, VectorCache
from .encoder import PADDING_SIDES, POOLINGS, Embedder


def _distinct(strings: Sequence[str]):
    """(position of each string among the distinct ones, the distinct strings in first-seen order); hashing, no
    fixed-width copy of long texts."""
    codes, uniq = pd.factorize(pd.Series(list(strings), dtype=object), sort=False)
    return codes, np.asarray(uniq, dtype=object)


class BiEncoder(InstructReranker):
    """An instruction-aware bi-encoder: configuration, encoding, caches, and the PyTerrier stages built on them.

    As a transformer it dispatches on its input (pyterrier_dr's ``BiEncoder.transform``): ``R → R`` reranks (every
    column kept, the first-stage ``score`` kept as ``score_0``, new ``score`` and ``rank``), ``Q → Q`` adds
    ``query_vec``, ``D → D`` adds ``doc_vec``; an empty input gives the shaped empty output without loading the model.

    Args:
        model_name_or_path: hub id or local folder; a LoRA adapter (``adapter_config.json``) is merged into its base.
        base_model: the adapter's base model (default: the adapter's ``base_model_name_or_path``), e.g. a local copy.
        query_template, passage_template: see :mod:`pyterrier_instruct.prompts`.
        query_slot: how the instruction joins the query (:class:`~pyterrier_instruct.instructions.QuerySlot`).
        instruction: the instruction used where the input has none (no column, NaN/None or blank).
        pooling: ``'eos'``, ``'last'``, ``'mean'`` or ``'cls'`` (:mod:`.encoder`); normalize: L2-normalise (cosine).
        max_length, query_max_length, passage_max_length: token limits (``None``: the tokenizer's, else 512).
        padding_side, add_special_tokens, strip: tokenizer settings (see :mod:`.encoder`).
        batch_size: rows per forward pass; ``None``: the device's measured best (docs/performance.md).
        device, dtype (``'auto'``: bf16 on GPU, fp32 on CPU), verbose: the usual.
        text_field, title_field: document columns (the title is used when its column is present).
        doc_cache, cache_dir: passage vectors in memory, or on disk in a :class:`.cache.VectorCache` (docs/dense.md).
    """

    def __init__(self, model_name_or_path: str, *, base_model: Optional[str] = None, query_template: str = "{query}",
                 passage_template: str = "{doc}", query_slot: QuerySlot = QuerySlot(), instruction: str = "",
                 pooling: str = "mean", normalize: bool = True, max_length: Optional[int] = 512,
                 query_max_length: Optional[int] = None, passage_max_length: Optional[int] = None,
                 padding_side: str = "right", add_special_tokens: bool = True, strip: bool = True,
                 batch_size: Optional[int] = None, device: Optional[str] = None, dtype="auto", text_field: str = "text",
                 title_field: Optional[str] = "title", doc_cache: bool = True, cache_dir: Optional[str] = None,
                 verbose: bool = True):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if padding_side not in PADDING_SIDES:
            raise ValueError(f"padding_side must be one of {PADDING_SIDES}, got {padding_side!r}")
        query_slot = query_slot_arg(query_slot, type(self).__name__)
        if query_slot.composer not in COMPOSERS and "{instruction}" not in query_slot.composer:
            raise ValueError(f"{type(self).__name__}: composer must be one of {sorted(COMPOSERS)} or a template with "
                             f"{{query}} and {{instruction}}, got {query_slot.composer!r}")
        for n in (max_length, query_max_length, passage_max_length):
            if n is not None and int(n) < 2:
                raise ValueError(f"token limits must be at least 2, got {n!r}")
        batch_size = check_batch_size(batch_size)
        self.model_name_or_path, self.base_model = str(model_name_or_path), base_model
        self.query_template = T.check(query_template, ("query", "instruction"), "query_template")
        if "{query}" not in self.query_template:
            raise ValueError(f"query_template must use {{query}}; got {query_template!r}")
        self.passage_template = T.check(passage_template, ("title", "text", "doc"), "passage_template")
        self.query_slot, self.instruction = query_slot, instruction
        self.pooling, self.normalize, self.padding_side = pooling, bool(normalize), padding_side
        self.max_length = max_length
        self.query_max_length, self.passage_max_length = query_max_length, passage_max_length
        self.add_special_tokens, self.strip, self.batch_size = bool(add_special_tokens), bool(strip), batch_size
        self.device, self.dtype, self.text_field, self.title_field = device, dtype, text_field, title_field
        self.doc_cache, self.cache_dir, self.verbose = bool(doc_cache), cache_dir, verbose
        self.stats = EncodeStats()
        self._embedder: Optional[Embedder] = None
        self._cache: Optional[DocCache] = None

    _lazy = ("_embedder", "_cache")
    schematic = {"label": "BiEncoder"}

    # -- the transformer ---------------------------------------------------------------------------
    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        with text_hint(self.text_field), pt.validate.any(inp) as v:
            v.result_frame(extra_columns=["query", "instruction", self.text_field], mode="scorer")
            v.result_frame(extra_columns=["query", self.text_field], mode="scorer")
            v.query_frame(extra_columns=["query", "instruction"], mode="query_encoder")
            v.query_frame(extra_columns=["query"], mode="query_encoder")
            v.document_frame(extra_columns=[self.text_field], mode="doc_encoder")
        if v.mode == "query_encoder":
            return self.encode_query_frame(inp)
        if v.mode == "doc_encoder":
            return self.encode_doc_frame(inp)
        return super().transform(inp)

    def _score(self, view: pd.DataFrame) -> np.ndarray:
        """Dot product (cosine when normalised) of the composed query+instruction and passage vectors; distinct
        queries are encoded once per call, passages through the document cache."""
        q = self.encode_queries(self._query_strings(view))
        d = self.encode_passages(self.passage_strings(view))
        return np.einsum("ij,ij->i", q, d).astype("float64")

    def encode_query_frame(self, inp: pd.DataFrame) -> pd.DataFrame:
        """``inp`` (queries) with ``query_vec`` (float32) added; nothing is loaded for an empty frame."""
        out = inp.copy()
        out["query_vec"] = list(self.encode_queries(self.query_strings(out))) if len(out) else []
        return out

    def encode_doc_frame(self, inp: pd.DataFrame) -> pd.DataFrame:
        """``inp`` (documents) with ``doc_vec`` (float32) added, through the document cache (``doc_cache=False`` for a
        corpus larger than memory); nothing is loaded for an empty frame."""
        out = inp.copy()
        out["doc_vec"] = list(self.encode_passages(self.passage_strings(out))) if len(out) else []
        return out

    # -- identity ------------------------------------------------------------------------------
    def doc_key(self) -> str:
        """Everything a passage vector depends on: an index or on-disk cache records it and refuses another."""
        keys = ("base_model", "passage_template", "pooling", "normalize", "max_length", "passage_max_length",
                # padding moves absolute positions
                "add_special_tokens", "strip", "dtype", "padding_side", "title_field")
        return repr((self.model_name_or_path,) + tuple(getattr(self, k) for k in keys))

    def revision(self) -> Optional[str]:
        """The weights' revision (:func:`~pyterrier_instruct._fingerprint.model_revision`: a LoRA adapter's adds its
        base's; ``base_model=`` adds that one's), which the on-disk passage cache and an index record; None while a hub
        model is not downloaded."""
        from .._fingerprint import model_revision
        revisions = [model_revision(m) for m in (self.model_name_or_path, self.base_model) if m]
        return None if None in revisions else " + ".join(revisions)

    def _fingerprint_parts(self) -> dict:
        return {**super()._fingerprint_parts(), "revision": self.revision()}

    # -- strings -------------------------------------------------------------------------------
    def query_strings(self, df: pd.DataFrame) -> np.ndarray:
        """The exact string encoded for each row (``query`` + optional ``instruction`` columns)."""
        return self._query_strings(self.prompt_view(df))

    def _query_strings(self, view: pd.DataFrame) -> np.ndarray:
        """``query_template`` filled per row of a prompt view: ``{query}`` by ``query_slot``, ``{instruction}`` (where
        the template places it itself, as Qwen3-Embedding's) by the instruction."""
        return np.array([self._finish(T.fill(self.query_template, query=q, instruction=i))
                         for q, i in zip(self.query_slot.frame(view), view["instruction"])], dtype=object)

    def passage_strings(self, df: pd.DataFrame) -> np.ndarray:
        """The exact string encoded for each document row (``text`` + optional ``title`` columns)."""
        check_text(df, [self.text_field], type(self).__name__)
        text = df[self.text_field].fillna("").astype(str)
        has_title = bool(self.title_field) and self.title_field in df.columns
        empty = pd.Series("", index=df.index, dtype=object)
        title = df[self.title_field].fillna("").astype(str) if has_title else empty
        docs = (title + " " + text).str.strip() if has_title else text  # mteb's text: (title + " " + text).strip()
        return np.array([self._finish(T.fill(self.passage_template, title=a.strip(), text=b.strip(), doc=d))
                         for a, b, d in zip(title, text, docs)], dtype=object)

    def _finish(self, s: str) -> str:
        return s.strip() if self.strip else s

    # -- encoding ------------------------------------------------------------------------------
    def embedder(self) -> Embedder:
        """The loaded model (loads it on first call)."""
        if self._embedder is None:
            self._embedder = Embedder(self.model_name_or_path, base_model=self.base_model, pooling=self.pooling,
                                      normalize=self.normalize, padding_side=self.padding_side,
                                      add_special_tokens=self.add_special_tokens, batch_size=self.batch_size,
                                      device=self.device, dtype=self.dtype, stats=self.stats)
        return self._embedder

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    def _limit(self, specific: Optional[int]) -> int:
        return int(specific or self.max_length or self.embedder().model_max_length)

    def encode_queries(self, strings: Sequence[str]) -> np.ndarray:
        """Vectors of final query strings (:meth:`query_strings`), each distinct string encoded once."""
        inv, uniq = _distinct(strings)
        self.stats.query_texts += len(uniq)
        return self._embed(uniq, self._limit(self.query_max_length), "queries")[inv]

    def encode_passages(self, strings: Sequence[str], fill_cache: bool = True, progress: bool = True) -> np.ndarray:
        """Vectors of final passage strings (:meth:`passage_strings`), each distinct string once; with ``doc_cache``
        cached vectors are reused and (``fill_cache``) new ones kept. ``progress=False``: no bar of its own (a caller
        encoding chunk by chunk shows one over the whole)."""
        inv, uniq = _distinct(strings)
        limit = self.passage_max_length
        if not self.doc_cache:
            self.stats.passage_texts += len(uniq)
            return self._embed(uniq, self._limit(limit), "passages", progress)[inv]
        store = self._doc_store()
        hits, cached = store.lookup(uniq)
        self.stats.cache_hits += len(hits)
        if len(hits) == len(uniq):
            return cached[inv]
        missing = np.setdiff1d(np.arange(len(uniq)), hits)
        self.stats.passage_texts += len(missing)
        new = self._embed(uniq[missing], self._limit(limit), "passages", progress)
        vectors = np.empty((len(uniq), new.shape[1]), dtype=np.float32)
        vectors[missing] = store.add(uniq[missing], new) if fill_cache else new
        if len(hits):
            vectors[hits] = cached
        return vectors[inv]

    def _embed(self, texts: np.ndarray, limit: int, what: str, progress: bool = True) -> np.ndarray:
        embedder = self.embedder()
        bar = progress_bar(total=len(texts), desc=f"{type(self).__name__} {what}", unit="text",
                      disable=not (self.verbose and progress) or not len(texts))
        try:
            return embedder.embed(list(texts), limit, bar)
        finally:
            bar.close()

    def _doc_store(self) -> DocCache:
        if self._cache is None:
            revision = self.revision() if self.cache_dir is not None else None
            if self.cache_dir is not None and revision is None:  # a hub model not downloaded yet: fetch its revision
                self.embedder()
                revision = self.revision() or "unresolved"
            store = None if self.cache_dir is None else VectorCache(self.cache_dir)
            self._cache = DocCache(store, self.doc_key(), revision)
        return self._cache

    # -- explicit PyTerrier stages (pyterrier_dr's model/stage split) -----------------------------
    def query_encoder(self):
        """``Q → Q`` + ``query_vec``."""
        from .stages import QueryEncoder, built_by
        return built_by(QueryEncoder(self), self, "query_encoder")

    def doc_encoder(self):
        """``D → D`` + ``doc_vec`` (through the document cache)."""
        from .stages import DocEncoder, built_by
        return built_by(DocEncoder(self), self, "doc_encoder")

    def scorer(self):
        """``R → R``: reranks candidates (``qid, query, [instruction,] docno, text``) by the vectors' dot product."""
        from .stages import DenseScorer, built_by
        return built_by(DenseScorer(self), self, "scorer")

    def indexer(self, path: Optional[str] = None, **kwargs):
        """An :class:`.index.EmbeddingIndexer` over ``{docno, text[, title]}`` dicts (``overwrite``, ``chunk_size``);
        for pyterrier-dr's FlexIndex write ``model >> pyterrier_dr.FlexIndex(path).indexer()``."""
        from .index import EmbeddingIndexer
        return EmbeddingIndexer(self, path, **kwargs)

    def index(self, corpus_iter, path: Optional[str] = None, **kwargs):
        """Encodes a corpus once into an :class:`.index.EmbeddingIndex` (on disk at ``path``, else in memory)."""
        return self.indexer(path, **kwargs).index(corpus_iter)

    def retriever(self, index=None, num_results: int = 1000, corpus=None):
        """``Q → R``: exact inner-product top-``num_results`` over an :class:`.index.EmbeddingIndex` (or its path).
        ``corpus``: a callable returning ``{docno, text[, title]}`` dicts (e.g. ``dataset.get_corpus_iter``) from which
        an index not built yet (in memory when ``index`` is None) is built on the first non-empty call, reading vectors
        already in the document cache. For pyterrier-dr's FlexIndex write ``model >>
        pyterrier_dr.FlexIndex(path).np_retriever()``."""
        from .index import EmbeddingIndex
        from .stages import DenseRetriever, built_by
        if index is None and corpus is None:
            raise ValueError("retriever needs an index (an EmbeddingIndex or its path), or corpus= a callable "
                             "returning the documents")
        stage = DenseRetriever(self, index if isinstance(index, EmbeddingIndex) else EmbeddingIndex(index), num_results,
                               corpus)
        given = {"num_results": num_results} if num_results != 1000 else {}
        given.update({"corpus": corpus} if corpus is not None else {})
        return built_by(stage, self, "retriever", *(() if index is None else (index,)), **given)
