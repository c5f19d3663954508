"""Corpus access without loading the corpus: streaming iteration, and lookup of only the requested docnos.

A jsonl corpus is indexed once (docno → byte offset, one pass reading only ids into memory) and each
lookup seeks to the requested lines; a parquet corpus is read with an ``_id in (…)`` filter. A ``.jsonl.gz`` corpus
(BEIR's hub copies) is read the same way through :mod:`gzip`: offsets are positions in the decompressed stream, and a
lookup, which visits the requested lines in file order, decompresses once up to the last of them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ._files import DataError, decode_line, open_data, parquet_files, parse_json

Doc = Tuple[str, str, str]  # docno, title, text


def _known(store, docnos: Iterable[str]) -> List[str]:
    """The requested docnos as strings, each once, in order; one ``store`` lacks is a ``KeyError`` naming the corpus."""
    wanted = list(dict.fromkeys(str(d) for d in docnos))
    missing = store.missing(wanted)
    if missing:
        raise KeyError(f"docno(s) {missing[:5]} are not in the corpus {store.path}"
                       + (f" ({len(missing)} in all)" if len(missing) > 5 else ""))
    return wanted


class DocStore:
    """The documents of a benchmark: ``_id``, optional ``title``, ``text`` per row.

    Args:
        path: a jsonl or jsonl.gz file, or a folder of parquet shards.
        skip_empty: leave out documents whose text is empty (IFIR does so when indexing).
        id_field, text_field: the row's id and text fields when the layout names them otherwise (MAIR ``id``/``doc``,
            BRIGHT ``id``/``content``); ids are read as strings.
        pattern: the shards of a parquet folder that belong to this corpus (BRIGHT keeps every task's in one folder).
    """

    def __init__(self, path: Path, skip_empty: bool = False, *, id_field: str = "_id", text_field: str = "text",
                 pattern: str = "*.parquet"):
        self.path, self.pattern = Path(path), pattern
        self.skip_empty = skip_empty
        self.id_field, self.text_field = id_field, text_field
        self._id_prefix = b'{"' + id_field.encode() + b'": "'
        self.is_parquet = self.path.is_dir()
        if not self.path.exists():
            raise DataError(f"missing corpus {self.path}")
        self._offsets: Optional[Dict[str, int]] = None

    def __repr__(self) -> str:
        return f"DocStore({str(self.path)!r})"

    # -- iteration -----------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Doc]:
        rows = self._iter_parquet() if self.is_parquet else self._iter_jsonl()
        for doc in rows:
            if self.skip_empty and not doc[2].strip():
                continue
            yield doc

    def _iter_jsonl(self) -> Iterator[Doc]:
        with open_data(self.path, binary=True) as f:
            offset = 0
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    yield self._parse(line, lineno, offset)
                offset += len(line)

    def _parse(self, line: bytes, lineno, offset: int) -> Doc:
        """One corpus line; ``lineno`` (None when read by offset) and ``offset`` locate it in errors."""
        where = f"{self.path}:{lineno}" if lineno is not None else f"{self.path} (the line at byte offset {offset})"
        row = parse_json(decode_line(line, self.path, lineno, offset), where)
        if self.id_field not in row or self.text_field not in row:
            raise DataError(f"{where}: a corpus row needs {self.id_field} and {self.text_field}; found {sorted(row)}")
        return str(row[self.id_field]), row.get("title") or "", row[self.text_field] or ""

    def _dataset(self):
        import pyarrow.dataset as pads
        return pads.dataset([str(f) for f in parquet_files(self.path, self.pattern)], format="parquet")

    def _columns(self, ds) -> Tuple[str, Optional[str]]:
        names = ds.schema.names
        id_col = "_id" if "_id" in names else "id" if "id" in names else None
        if id_col is None or self.text_field not in names:
            raise DataError(f"{self.path}: a corpus needs columns _id (or id) and {self.text_field}; found {names}")
        return id_col, ("title" if "title" in names else None)

    def _iter_parquet(self, batch_size: int = 4096) -> Iterator[Doc]:
        ds = self._dataset()
        id_col, title_col = self._columns(ds)
        cols = [id_col, self.text_field] + ([title_col] if title_col else [])
        for batch in ds.to_batches(columns=cols, batch_size=batch_size):
            d = batch.to_pydict()
            titles = d[title_col] if title_col else [""] * len(d[id_col])
            for docno, title, text in zip(d[id_col], titles, d[self.text_field]):
                yield str(docno), title or "", text or ""

    # -- lookup --------------------------------------------------------------------------------
    def _index(self) -> Dict[str, int]:
        """docno → byte offset (jsonl) or row number (parquet); duplicates are an error."""
        if self._offsets is None:
            offsets: Dict[str, int] = {}
            if self.is_parquet:
                ds = self._dataset()
                id_col, _ = self._columns(ds)
                ids = (str(x) for b in ds.to_batches(columns=[id_col]) for x in b.column(0).to_pylist())
                positions: Iterable[Tuple[str, int]] = ((i, n) for n, i in enumerate(ids))
            else:
                positions = self._jsonl_positions()
            for docno, pos in positions:
                if docno in offsets:
                    raise DataError(f"{self.path}: duplicate document id {docno!r}")
                offsets[docno] = pos
            self._offsets = offsets
        return self._offsets

    def _jsonl_positions(self) -> Iterator[Tuple[str, int]]:
        """One pass over the file; a line starting ``{"_id": "…"`` (the released files) yields its id without
        parsing the document, any other line is parsed as JSON."""
        with open_data(self.path, binary=True) as f:
            pos, lineno = 0, 0
            for line in f:
                lineno += 1
                if line.startswith(self._id_prefix):
                    end = line.find(b'"', len(self._id_prefix))
                    docno = line[len(self._id_prefix):end]
                    # else parsed below (errors name the column; an id field twice is an error, as when iterating)
                    if end > 0 and b"\\" not in docno and docno.isascii() and line.count(self._id_prefix[1:-3]) == 1:
                        yield docno.decode("ascii"), pos
                        pos += len(line)
                        continue
                if line.strip():
                    yield self._parse(line, lineno, pos)[0], pos
                pos += len(line)

    def __len__(self) -> int:
        return len(self._index())

    def __contains__(self, docno: str) -> bool:
        return docno in self._index()

    def missing(self, docnos: Iterable[str]) -> List[str]:
        index = self._index()
        return [d for d in dict.fromkeys(docnos) if d not in index]

    def get_many(self, docnos: Sequence[str]) -> Dict[str, Tuple[str, str]]:
        """``{docno: (title, text)}`` for the requested docnos only; unknown docnos are an error."""
        wanted = _known(self, docnos)
        if not wanted:
            return {}
        if self.is_parquet:
            import pyarrow.compute as pc
            ds = self._dataset()
            id_col, title_col = self._columns(ds)
            cols = [id_col, self.text_field] + ([title_col] if title_col else [])
            d = ds.to_table(columns=cols, filter=pc.field(id_col).isin(wanted)).to_pydict()
            titles = d[title_col] if title_col else [""] * len(d[id_col])
            return {str(i): (t or "", x or "") for i, t, x in zip(d[id_col], titles, d[self.text_field])}
        index = self._index()
        out = {}
        with open_data(self.path, binary=True) as f:
            for docno in sorted(wanted, key=index.__getitem__):
                f.seek(index[docno])
                _, title, text = self._parse(f.readline(), None, index[docno])
                out[docno] = (title, text)
        return out


class MemoryDocStore:
    """A corpus held in memory (``{docno: (title, text)}``), for layouts whose documents sit inside the query rows
    (NevIR's original files); the same interface as :class:`DocStore`."""

    skip_empty = False

    def __init__(self, docs: Dict[str, Tuple[str, str]], path: Path):
        self.docs, self.path = dict(docs), Path(path)

    def __repr__(self) -> str:
        return f"MemoryDocStore({str(self.path)!r}, {len(self.docs)} documents)"

    def __iter__(self) -> Iterator[Doc]:
        for docno, (title, text) in self.docs.items():
            yield docno, title, text

    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, docno: str) -> bool:
        return docno in self.docs

    def missing(self, docnos: Iterable[str]) -> List[str]:
        return [d for d in dict.fromkeys(docnos) if d not in self.docs]

    def get_many(self, docnos: Sequence[str]) -> Dict[str, Tuple[str, str]]:
        return {d: self.docs[d] for d in _known(self, docnos)}
