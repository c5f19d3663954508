"""CRUMB layout (``jfkback/crumb``; Killingback & Zamani 2025, arXiv 2509.07253; github jfkback/crumb @ c3f1c27
``README.md`` and ``crumb_eval/src/crumb_eval/eval/eval.py``). Full retrieval: no candidate lists.

jsonl files, one folder per task (the card's ``configs:``; the folder is the task's name except ``paper_retrieval``,
whose folder is ``scientific_paper/``)::

    <dir>/eval/query_labels.jsonl   query_id, query_content, instruction (may be null), passage_qrels,
    <dir>/val/query_labels.jsonl    passage_binary_qrels, full_document_qrels ([{id, label}] each), use_max_p, metadata
    <dir>/passage_corpus.jsonl      document_id, document_content, parent_id, metadata
    <dir>/full_document_corpus.jsonl   (the 5 two-collection tasks; the 3 others' documents are the passages)

Topics: ``qid`` = ``query_id``, ``query`` = ``query_content``, ``instruction`` = the row's ``instruction`` (``""`` for
null). Qrels: ``passage_qrels`` (``full_document_qrels`` for ``/full-doc``) as released, judged-0 rows kept, labels
truncated with ``int()`` as crumb_eval does (``score_to_int``). ``ds.document_qrels()`` = ``full_document_qrels``.

Official scoring (crumb_eval ``compute_metrics``): ir_measures ``calc_aggregate`` of ``nDCG@10, nDCG@5, P@10, P@5,
R@10, RR, R@1000, R@100, RR@10``; P, R and RR on the binary qrels (``passage_binary_qrels`` for ``paper_retrieval``, the
graded ones elsewhere: ``HAS_BINARY_QRELS``), nDCG on the graded ones. **MaxP** for the passage runs of
``clinical_trial``, ``set_operation_entity_retrieval`` and ``tip_of_the_tongue`` (``USE_MAX_P``): each document gets its
best passage's score and the run is scored against ``full_document_qrels``. The released ``modify_run_for_max_p``
keeps the passage's own id (``<document_id>:<n>``), so against document qrels every metric is 0; here the passage is
renamed to its document (the part before the last ``:``; crumb_eval splits at the first), which is what the README
describes ("documents are aggregated by their maximum scoring chunk").
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import pandas as pd

from ._bench import Benchmark, layout
from ._files import DataError, check_unique, read_jsonl
from .docstore import DocStore
from .limit import with_keys

TASKS = ("clinical_trial", "code_retrieval", "legal_qa", "paper_retrieval", "set_operation_entity_retrieval",
         "stack_exchange", "theorem_retrieval", "tip_of_the_tongue")
SINGLE_COLLECTION = ("code_retrieval", "paper_retrieval", "theorem_retrieval")  # crumb README.md:108-111
USE_MAX_P = ("clinical_trial", "set_operation_entity_retrieval", "tip_of_the_tongue")  # eval.py:39-43
HAS_BINARY_QRELS = ("paper_retrieval",)  # eval.py:45-47
FOLDER = {"paper_retrieval": "scientific_paper"}
QUERY_FIELDS = ("query_id", "query_content", "passage_qrels", "full_document_qrels")
#: crumb_eval's default metrics (eval.py:340-351) as ir_measures names; binary: P, R, RR; graded: nDCG
MEASURES = ("nDCG@10", "nDCG@5", "P@10", "P@5", "R@10", "RR", "R@1000", "R@100", "RR@10")


def folder_of(task: str) -> str:
    return FOLDER.get(task, task)


def _qrels(rows, column: str, where: str) -> pd.DataFrame:
    out = []
    for n, r in enumerate(rows, 1):
        judged = r.get(column) or []
        if not isinstance(judged, list) or any(not isinstance(x, dict) or "id" not in x or "label" not in x
                                               for x in judged):
            raise DataError(f"{where}:{n}: {column} of query {r['query_id']!r} must be a list of {{id, label}}, "
                            f"got {judged!r}")
        labels: Dict[str, int] = {}
        for x in judged:
            labels[str(x["id"])] = int(float(x["label"]))  # crumb_eval score_to_int: int() truncates
        out += [(str(r["query_id"]), d, lab) for d, lab in labels.items()]
    frame = pd.DataFrame(out, columns=["qid", "docno", "label"])
    return frame.astype({"qid": object, "docno": object, "label": "int64"})


def maxp(run: pd.DataFrame) -> pd.DataFrame:
    """A passage run → a document run: each document (the passage id before its last ``:``) with its best passage's
    score, ranked by score; other columns are dropped."""
    docs = run.assign(docno=run["docno"].astype(str).str.rsplit(":", n=1).str[0])
    best = docs.groupby(["qid", "docno"], sort=False)["score"].max().reset_index()
    best = best.sort_values(["qid", "score"], ascending=[True, False], kind="stable").reset_index(drop=True)
    best["rank"] = best.groupby("qid").cumcount().astype("int64")
    return best


def official_scores(graded: pd.DataFrame, binary: pd.DataFrame, run: pd.DataFrame, use_maxp: bool) -> Dict[str, float]:
    """crumb_eval's ``compute_metrics`` on ``run`` (``qid, docno, score``), MaxP first when ``use_maxp``."""
    import ir_measures
    from .scoring import _check_run
    run = _check_run(run)
    if use_maxp:
        run = maxp(run)
    r = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    out: Dict[str, float] = {}
    for qrels, names in ((binary, [m for m in MEASURES if not m.startswith("nDCG")]),
                         (graded, [m for m in MEASURES if m.startswith("nDCG")])):
        q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        agg = ir_measures.calc_aggregate([ir_measures.parse_measure(m) for m in names], q, r)
        out.update({str(m): float(v) for m, v in agg.items()})
    return {m: out[m] for m in MEASURES}


def read(path: Path, task: str, split: str = "eval", full_doc: bool = False) -> Benchmark:
    path = Path(path)
    base = path / folder_of(task)
    qfile = base / split / "query_labels.jsonl"
    if not qfile.is_file():
        config = "evaluation_queries" if split == "eval" else "validation_queries"
        raise DataError(f"missing CRUMB file {qfile} (config {config}, split {task}; the folder of paper_retrieval is "
                        "scientific_paper/)")
    rows = read_jsonl(qfile, QUERY_FIELDS)
    qids = pd.Series([str(r["query_id"]) for r in rows], dtype=object)
    check_unique(qids, str(qfile), "query_id")
    empty = pd.Series([""] * len(qids), dtype=object)
    topics = pd.DataFrame({"qid": qids, "query": pd.Series([r["query_content"] for r in rows], dtype=object),
                           "instruction": pd.Series([r.get("instruction") or "" for r in rows], dtype=object),
                           "base_qid": qids, "variant": empty})
    document = _qrels(rows, "full_document_qrels", str(qfile))
    passage = _qrels(rows, "passage_qrels", str(qfile))
    graded = document if full_doc else passage
    binary: Optional[pd.DataFrame] = None
    if task in HAS_BINARY_QRELS and not full_doc:
        binary = _qrels(rows, "passage_binary_qrels", str(qfile))
    if binary is None or len(binary) == 0:
        binary = graded
    name = "full_document_corpus.jsonl" if full_doc and task not in SINGLE_COLLECTION else "passage_corpus.jsonl"
    cfile = base / name
    if not cfile.is_file():
        raise DataError(f"missing CRUMB corpus {cfile} (config {'full_document' if full_doc else 'passage'}_corpus, "
                        f"split {task})")
    use_maxp = task in USE_MAX_P and not full_doc
    score_graded, score_binary = (document, document) if use_maxp else (graded, binary)
    return Benchmark(topics=topics, qrels=with_keys(graded), variants=(),
                     corpus=DocStore(cfile, id_field="document_id", text_field="document_content"),
                     official=lambda run: official_scores(score_graded, score_binary, run, use_maxp),
                     judgements={"document": document, "binary": binary},
                     notes={"layout": "crumb", "task": task, "split": split,
                            "collection": "full_document" if full_doc else "passage", "maxp": use_maxp})


@layout("crumb")
def _read_entry(entry, folder, qrels_mapping: str = "as-named"):
    split, full_doc = (entry.split or "eval/passage").split("/")
    return read(folder, entry.task, split, full_doc == "full-doc")
