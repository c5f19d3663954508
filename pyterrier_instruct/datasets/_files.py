"""Readers for the released file formats (jsonl, json, tsv, parquet folders). Every error names the file (and the line:
bad JSON, a missing field, a byte that is not UTF-8).

Only pandas and the standard library are imported here; pyarrow is imported when a parquet file is read.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

import pandas as pd


class DataError(ValueError):
    """A benchmark file is missing, malformed or inconsistent; the message names the file and the problem."""


@contextmanager
def open_data(path: Path, binary: bool = False):
    """``path`` opened for reading (text, or bytes with ``binary``), decompressing a ``.gz`` file (BEIR's hub copies are
    ``*.jsonl.gz``); a corrupt ``.gz`` file, noticed while reading, is a :class:`DataError` naming it."""
    path = Path(path)
    if path.suffix != ".gz":
        with open(path, "rb") if binary else open(path, encoding="utf-8") as f:
            yield f
        return
    try:
        with gzip.open(path, "rb") if binary else gzip.open(path, "rt", encoding="utf-8") as f:
            yield f
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: not a readable gzip file ({e})") from None


def not_utf8(path: Path, lineno, raw: bytes, error: UnicodeDecodeError, offset: Optional[int]) -> DataError:
    """The error for a byte of ``raw`` (line ``lineno`` of ``path``, None when unknown, starting at byte ``offset`` of
    the file) that is not UTF-8: where it is and how to fix the file."""
    path = Path(path)
    at = f"column {error.start + 1}" + (f", byte offset {offset + error.start}" if offset is not None else "")
    stream = " of the decompressed stream" if path.suffix == ".gz" and offset is not None else ""
    name = path.name
    where = f"{path}:{lineno}" if lineno is not None else f"{path} (the line at byte offset {offset})"
    return DataError(f"{where}: byte 0x{raw[error.start]:02x} ({at}{stream}) is not valid UTF-8; the benchmark files "
                     f"must be UTF-8 text: re-encode the file from the encoding it was written in, e.g. "
                     f"`iconv -f latin1 -t utf-8 {name} > {name}.utf8` and move it back over {name}")


def decode_line(raw: bytes, path: Path, lineno, offset: Optional[int]) -> str:
    """``raw`` (one line of ``path``) as text; a byte that is not UTF-8 is a :class:`DataError` (:func:`not_utf8`)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise not_utf8(path, lineno, raw, e, offset) from None


def read_text(path: Path) -> str:
    """A whole file as text: a missing file or a byte that is not UTF-8 is a :class:`DataError` (line and offset)."""
    if not Path(path).is_file():
        raise DataError(f"missing file {path}")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        start = raw.rfind(b"\n", 0, e.start) + 1
        end = raw.find(b"\n", e.start)
        line = raw[start:end if end >= 0 else len(raw)]
        err = UnicodeDecodeError(e.encoding, line, e.start - start, e.end - start, e.reason)
        raise not_utf8(path, raw.count(b"\n", 0, e.start) + 1, line, err, start) from None


def _unique_keys(pairs: list) -> dict:
    row = dict(pairs)
    if len(row) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _DuplicateKey(dup)
    return row


class _DuplicateKey(ValueError):
    pass


def parse_json(text: str, where: str):
    """``text`` parsed as JSON, or a :class:`DataError` naming ``where`` (``file:line``): invalid JSON, an object with a
    key twice (readers would disagree on its value: the first is read by a fast scan, the last by a parser) or nesting
    too deep to parse."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not valid JSON ({e.msg})") from None
    except _DuplicateKey as e:
        raise DataError(f"{where}: the key {e.args[0]!r} occurs twice in one object; keep one") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to parse (deeper than Python's recursion limit)") from None


def iter_jsonl(path: Path, required: Sequence[str] = ()) -> Iterator[dict]:
    """Rows of a jsonl (or jsonl.gz) file, one dict per non-empty line; a missing field, bad line or byte that is not
    UTF-8 names file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"missing file {path}")
    with open_data(path, binary=True) as f:
        offset = 0
        for lineno, raw in enumerate(f, 1):
            line = decode_line(raw, path, lineno, offset)
            offset += len(raw)
            if not line.strip():
                continue
            row = parse_json(line, f"{path}:{lineno}")
            missing = [k for k in required if k not in row]
            if missing:
                raise DataError(f"{path}:{lineno}: missing field(s) {missing}; found {sorted(row)}")
            yield row


def read_jsonl(path: Path, required: Sequence[str] = ()) -> List[dict]:
    return list(iter_jsonl(path, required))


def read_json(path: Path):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None


def parquet_files(folder: Path, pattern: str = "*.parquet") -> List[Path]:
    """The parquet shards of one config folder (``{config}/{split}-00000-of-00001.parquet`` …), in name order;
    ``pattern`` picks one split's shards where a folder holds several (BRIGHT: ``biology-*.parquet``)."""
    folder = Path(folder)
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not files:
        raise DataError(f"missing parquet files in {folder}")
    return files


def read_parquet(folder: Path, required: Sequence[str] = (), aliases: Optional[Dict[str, str]] = None) -> pd.DataFrame:
    """All shards of a config folder as one frame, file order kept. ``aliases`` maps an alternative
    column name to the expected one (e.g. ``{"id": "_id"}`` for the mteb-org copies)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        raise ImportError("reading parquet layouts needs pyarrow: pip install pyarrow") from None
    files = parquet_files(folder)
    df = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    for alt, name in (aliases or {}).items():
        if name not in df.columns and alt in df.columns:
            df = df.rename(columns={alt: name})
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{folder}: missing column(s) {missing}; found {list(df.columns)}")
    return df


def labels(values, where: str) -> pd.Series:
    """Relevance labels as int64 from floats or numeric strings (early InfoSearch files had ``"score": "3"``)."""
    s = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce")
    if s.isna().any():
        bad = list(values)[int(s.isna().to_numpy().argmax())]
        raise DataError(f"{where}: relevance score {bad!r} is not a number")
    if ((s % 1) != 0).any():
        raise DataError(f"{where}: relevance scores must be whole numbers, got {s[(s % 1) != 0].iloc[0]!r}")
    return s.astype("int64")


def qrels_frame(qids, docnos, scores, where: str) -> pd.DataFrame:
    """A ``qid, docno, label`` frame (strings, int labels); a repeated (qid, docno) pair is an error."""
    df = pd.DataFrame({"qid": pd.Series(list(qids), dtype=object).astype(str),
                       "docno": pd.Series(list(docnos), dtype=object).astype(str)})
    df["label"] = labels(scores, where).to_numpy()
    dup = df.duplicated(["qid", "docno"])
    if dup.any():
        row = df[dup].iloc[0]
        raise DataError(f"{where}: duplicate judgement for query {row.qid!r}, document {row.docno!r}")
    return df


def read_qrels_jsonl(path: Path) -> pd.DataFrame:
    rows = read_jsonl(path, ["query-id", "corpus-id", "score"])
    return qrels_frame([r["query-id"] for r in rows], [r["corpus-id"] for r in rows], [r["score"] for r in rows],
                       str(path))


def read_qrels_tsv(path: Path) -> pd.DataFrame:
    """BEIR qrels tsv: a header line (``query-id corpus-id score``; InstructIR ``qid pid score``), then one
    tab-separated ``query, document, score`` row per judgement."""
    rows = [r for r in csv.reader(io.StringIO(read_text(path), newline=""), delimiter="\t") if r]
    if rows and (len(rows[0]) < 3 or pd.to_numeric(pd.Series([rows[0][2]]), errors="coerce").isna().iloc[0]):
        rows = rows[1:]  # a header line (query-id/corpus-id/score, qid/pid/score, …)
    bad = next((i for i, r in enumerate(rows) if len(r) < 3), None)
    if bad is not None:
        raise DataError(f"{path}: line {bad + 2} has {len(rows[bad])} column(s); expected query-id, corpus-id, score")
    return qrels_frame([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], str(path))


def read_qrels_parquet(folder: Path) -> pd.DataFrame:
    df = read_parquet(folder, ["query-id", "corpus-id", "score"])
    return qrels_frame(df["query-id"], df["corpus-id"], df["score"], str(folder))


def check_unique(ids: pd.Series, where: str, what: str = "id") -> None:
    dup = ids.duplicated()
    if dup.any():
        raise DataError(f"{where}: duplicate {what} {ids[dup].iloc[0]!r}")


def first_existing(folder: Path, names: Sequence[str]) -> Optional[Path]:
    for name in names:
        p = Path(folder) / name
        if p.exists():
            return p
    return None
