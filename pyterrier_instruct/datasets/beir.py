"""BEIR layout (Thakur et al. 2021), for Promptriever's BEIR prompt study (§4.3, Table 10). Full retrieval.

The official zips and the hub copies (``BeIR/<name>`` + ``BeIR/<name>-qrels``, jsonl gzipped) share one layout. Topics
are the queries judged in the split, in ``queries.jsonl`` order, with an empty ``instruction`` (a prompt goes there);
the ``dev`` split reads ``qrels/dev.tsv``, or ``qrels/train.tsv`` where none exists (SciFact; ``info()`` says which).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._bench import layout, Benchmark, check_known_queries
from ._files import DataError, check_unique, first_existing, read_jsonl, read_qrels_tsv
from .docstore import DocStore

#: The qrels files tried for a split, in order (Promptriever §4.3: the validation split, else the train split).
SPLIT_FILES = {"dev": ("dev", "train")}


def _one_of(path: Path, stem: str) -> Path:
    found = first_existing(path, [f"{stem}.jsonl", f"{stem}.jsonl.gz"])
    if found is None:
        raise DataError(f"{path}: missing {stem} file: neither {stem}.jsonl nor {stem}.jsonl.gz exists (BEIR layout)")
    return found


def qrels_file(path: Path, split: str) -> Path:
    """``qrels/<split>.tsv`` (for ``dev``: ``dev.tsv``, else ``train.tsv``); a missing file names what was tried."""
    tried = [Path(path) / "qrels" / f"{s}.tsv" for s in SPLIT_FILES.get(split, (split,))]
    for f in tried:
        if f.is_file():
            return f
    where = f"{tried[0]} does not exist" if len(tried) == 1 else "neither " + " nor ".join(map(str, tried)) + " exists"
    raise DataError(f"missing qrels for the {split} split: {where} (BEIR layout)")


def _with_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """``base_qid`` = ``qid`` and an empty ``variant``: each BEIR query is its own base query (strings as object)."""
    return frame.assign(base_qid=frame["qid"], variant=pd.Series([""] * len(frame), dtype=object, index=frame.index))


def read(path: Path, split: str = "test") -> Benchmark:
    path = Path(path)
    corpus = DocStore(_one_of(path, "corpus"))
    qfile = _one_of(path, "queries")
    rfile = qrels_file(path, split)
    rows = read_jsonl(qfile, ["_id", "text"])
    queries = pd.DataFrame({"qid": pd.Series([str(r["_id"]) for r in rows], dtype=object),
                            "query": pd.Series([r["text"] for r in rows], dtype=object)})
    check_unique(queries["qid"], str(qfile), "query _id")
    qrels = read_qrels_tsv(rfile)
    check_known_queries(qrels, queries["qid"], str(rfile), str(qfile))
    topics = queries[queries["qid"].isin(set(qrels["qid"]))].reset_index(drop=True)
    topics = _with_keys(topics.assign(instruction=pd.Series([""] * len(topics), dtype=object)))
    qrels = _with_keys(qrels.astype({"qid": object, "docno": object}))
    read_split = rfile.stem
    notes = {"layout": "beir", "split": read_split, "qrels_file": rfile.relative_to(path).as_posix()}
    if read_split != split:
        notes["split_fallback"] = f"no qrels/{split}.tsv: the {read_split} split is used (Promptriever §4.3)"
    return Benchmark(topics=topics, qrels=qrels, corpus=corpus, variants=(), notes=notes)


@layout("beir")
def _read_entry(entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    return read(folder, entry.split or "test")
