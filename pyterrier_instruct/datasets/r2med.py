"""R2MED layout (``R2MED/<Task>``, 8 hub repositories; Zhang et al. 2025, arXiv 2505.14558; github R2MED/R2MED
``src/eval_BM25.py``; mteb ``tasks/retrieval/eng/r2_med_retrieval.py``). Full retrieval: no candidate lists.

jsonl files at the repository root (card ``configs:`` ``corpus``, ``query``, ``qrels``; the GitHub README's
``qrels.txt`` is not what the card, the demo folder or ``eval_BM25.py`` read)::

    corpus.jsonl    id, text
    query.jsonl     id, text, doc_id (gold ids), answer, body_system
    qrels.jsonl     q_id, p_id, score (1)

Topics: ``qid`` = ``id``, ``query`` = ``text``, ``instruction`` = ``""`` (R2MED's per-model task prompts live in its
``src/instrcution.py``; set one with ``pti.SetInstruction``). Qrels from ``qrels.jsonl`` (``int(score)``, as mteb).
Official score: ``ndcg_at_10`` (:func:`.scoring.mteb_scores`: queries absent from the run are skipped, as
``eval_BM25.py`` and mteb average over pytrec_eval's scored queries).
"""
from __future__ import annotations

from pathlib import Path

from ._bench import Benchmark, check_known_queries, layout
from ._files import DataError, check_unique, qrels_frame, read_jsonl
from .docstore import DocStore
from .limit import plain_topics, with_keys

K_VALUES = (1, 3, 5, 10, 20, 100, 1000)  # mteb AbsTaskRetrieval's default k_values


def read(path: Path, task: str) -> Benchmark:
    path = Path(path)
    qfile, rfile, cfile = path / "query.jsonl", path / "qrels.jsonl", path / "corpus.jsonl"
    for f in (qfile, rfile, cfile):
        if not f.is_file():
            hint = " (this release has qrels.txt; R2MED's card and code read qrels.jsonl)" \
                if f == rfile and (path / "qrels.txt").is_file() else ""
            raise DataError(f"missing R2MED file {f}{hint}: expected corpus.jsonl, query.jsonl, qrels.jsonl at the "
                            f"root of the R2MED/{task} snapshot")
    rows = read_jsonl(qfile, ["id", "text"])
    topics = plain_topics([r["id"] for r in rows], [r["text"] for r in rows])
    check_unique(topics["qid"], str(qfile), "query id")
    judged = read_jsonl(rfile, ["q_id", "p_id", "score"])
    qrels = qrels_frame([r["q_id"] for r in judged], [r["p_id"] for r in judged], [r["score"] for r in judged],
                        str(rfile))
    check_known_queries(qrels, topics["qid"], str(rfile), str(qfile))
    from .scoring import mteb_scores
    return Benchmark(topics=topics, qrels=with_keys(qrels), corpus=DocStore(cfile, id_field="id"), variants=(),
                     official=lambda run: mteb_scores(qrels, run, K_VALUES), notes={"layout": "r2med", "task": task})


@layout("r2med")
def _read_entry(entry, folder, qrels_mapping: str = "as-named"):
    return read(folder, entry.task)
