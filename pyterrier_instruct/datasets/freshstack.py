"""FreshStack layout (``freshstack/queries-oct-2024`` + ``freshstack/corpus-oct-2024``; Thakur et al. 2025, arXiv
2504.13128; freshstack 0.0.6 ``datasets/data_loader.py``, ``datasets/util.py``). Full retrieval: no candidate lists.

One config per topic (``langchain``, ``yolo``, ``laravel``, ``angular``, ``godot``), queries in split ``test``, the
corpus in split ``train``. The file names inside a config are UNVERIFIED (parquet or jsonl shards under
``<topic>/`` are read, those of the named split when the names carry one). The corpus repository is read from
``corpus-oct-2024/`` inside the queries folder (where this package downloads it) or beside it
(``<root>/freshstack/corpus-oct-2024``)::

    queries-oct-2024/<topic>/test-*.parquet   query_id, query_title, query_text, answer_text,
                                              nuggets: [{_id ("<query_id>_<n>"), text, relevant_corpus_ids,
                                                         non_relevant_corpus_ids}]
    corpus-oct-2024/<topic>/train-*.parquet   _id, title, text

Topics: ``qid`` = ``query_id``, ``query`` = ``query_title + " " + query_text`` (freshstack's), ``instruction`` = ``""``.
Nugget judgements (``ds.nugget_qrels()``): ``relevant_corpus_ids`` → 1, then ``non_relevant_corpus_ids`` → 0 (a later 0
overwrites a 1, as freshstack's loader). ``get_qrels()``: per query and document the **sum** over the query's nuggets
(freshstack ``nuggets_to_query_qrels``; judged-0 rows kept). freshstack finds a query's nuggets by the prefix of their
ids (``nugget_id.startswith(query_id)``, so query ``12`` would also collect nugget ``123_0``); here a nugget belongs
to the query row that lists it. Official scores: :func:`.scoring.freshstack_scores`.
"""
from __future__ import annotations

from pathlib import Path
from typing import List

import pandas as pd

from ._bench import Benchmark, layout
from ._files import DataError, check_unique, read_jsonl
from .docstore import DocStore
from .limit import plain_topics, with_keys

CORPUS = "corpus-oct-2024"
QUERY_COLUMNS = ("query_id", "query_title", "query_text", "nuggets")
NUGGET_FIELDS = ("_id", "relevant_corpus_ids", "non_relevant_corpus_ids")


def _shards(folder: Path, split: str, what: str) -> List[Path]:
    files = sorted(folder.glob("*.parquet")) or sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    named = [f for f in files if f.name.startswith(split)]
    if not files:
        raise DataError(f"missing FreshStack {what}: no parquet or jsonl files in {folder} (UNVERIFIED layout: "
                        f"expected the {split!r} split's shards of the config under <topic>/)")
    return named or files


def _corpus_folder(path: Path, topic: str) -> Path:
    for root in (path / CORPUS, path.parent / CORPUS):
        if (root / topic).is_dir():
            return root / topic
    raise DataError(f"missing FreshStack corpus {path / CORPUS / topic} (nor {path.parent / CORPUS / topic}): download "
                    f"freshstack/{CORPUS}'s {topic}/ into {path / CORPUS}")


def _queries(files: List[Path]) -> pd.DataFrame:
    if files[0].suffix == ".jsonl":
        return pd.DataFrame([r for f in files for r in read_jsonl(f, QUERY_COLUMNS)])
    import pyarrow.parquet as pq
    df = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    missing = [c for c in QUERY_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{files[0]}: missing column(s) {missing}; found {list(df.columns)} (UNVERIFIED layout)")
    return df


def read(path: Path, topic: str) -> Benchmark:
    path = Path(path)
    files = _shards(path / topic, "test", f"queries of {topic}")
    where = str(files[0])
    df = _queries(files)
    qids = [str(q) for q in df["query_id"]]
    topics = plain_topics(qids, [f"{t or ''} {x}" for t, x in zip(df["query_title"], df["query_text"])])
    check_unique(topics["qid"], where, "query_id")
    rows = []
    for qid, nuggets in zip(qids, df["nuggets"]):
        if nuggets is None or isinstance(nuggets, (str, dict)):
            raise DataError(f"{where}: nuggets of query {qid!r} must be a list of {{_id, text, relevant_corpus_ids, "
                            f"non_relevant_corpus_ids}}, got {type(nuggets).__name__}")
        for nugget in nuggets:
            missing = [k for k in NUGGET_FIELDS if k not in nugget]
            if missing:
                raise DataError(f"{where}: a nugget of query {qid!r} lacks {missing}; found {sorted(nugget)}")
            labels = {str(d): 1 for d in nugget["relevant_corpus_ids"]}
            labels.update({str(d): 0 for d in nugget["non_relevant_corpus_ids"]})
            rows += [(str(nugget["_id"]), qid, d, lab) for d, lab in labels.items()]
    nuggets = pd.DataFrame(rows, columns=["nugget_id", "qid", "docno", "label"]).astype(
        {"nugget_id": object, "qid": object, "docno": object, "label": "int64"})
    qrels = nuggets.groupby(["qid", "docno"], sort=False)["label"].sum().reset_index()
    corpus_files = _shards(_corpus_folder(path, topic), "train", f"corpus of {topic}")
    first = corpus_files[0]
    if first.suffix == ".jsonl" and len(corpus_files) > 1:
        raise DataError(f"{first.parent}: {len(corpus_files)} jsonl corpus files; one corpus.jsonl (or parquet shards) "
                        "expected (UNVERIFIED layout)")
    corpus = DocStore(first) if first.suffix == ".jsonl" else \
        DocStore(first.parent, pattern="train*.parquet" if first.name.startswith("train") else "*.parquet")
    from .scoring import freshstack_scores
    return Benchmark(topics=topics, qrels=with_keys(qrels.astype({"label": "int64"})), corpus=corpus, variants=(),
                     official=lambda run: freshstack_scores(nuggets, run), judgements={"nuggets": nuggets},
                     notes={"layout": "freshstack", "topic": topic, "nuggets": int(nuggets["nugget_id"].nunique())})


@layout("freshstack")
def _read_entry(entry, folder, qrels_mapping: str = "as-named"):
    return read(folder, entry.task)
