"""The registry entries of the 2025–26 benchmarks (plain data; :mod:`.registry` adds them to ``DATASETS``).

- ``limit``, ``limit/small``: hub ``orionweller/LIMIT`` / ``orionweller/LIMIT-small`` at the revisions mteb's
  ``LIMITRetrieval`` / ``LIMITSmallRetrieval`` pin (mteb 2.26 ``tasks/retrieval/eng/limit_retrieval.py``).
- ``r2med/<Task>`` (the hub repository's name: ``r2med/Biology``, ``r2med/Medical-Sciences`` …): hub ``R2MED/<Task>`` at
  the revisions mteb's ``R2MED*Retrieval`` tasks pin (``r2_med_retrieval.py``); query counts: R2MED ``README.md``.
- ``crumb/<task>`` (passages; ``/full-doc`` for the 5 two-collection tasks; ``/validation``): hub ``jfkback/crumb`` at
  ``adc97d85`` (the data upload ``6b286eb`` with a later card edit), CRUMB's split names (github jfkback/crumb).
- ``bright-pro/<task>`` (the 7 StackExchange tasks): hub ``ya-ir/BRIGHT-PRO`` (the repository BRIGHT-PRO's code loads,
  github echo0715/BRIGHT-PRO ``retrieval/evaluation/alpha-ndcg-evaluation.py``), main branch (no pin published); sizes
  from its ``agentic_retrieval/scripts_evaluation/dataset_eval.json``.
- ``multiconir/<domain>`` (Tasks 2&3 file), ``/task1``, ``/len512``, ``/len1024`` (Task 4): github
  ``EIT-NLP/MultiConIR`` @ 26b6504 ``datasets/`` (not on the hub: a clone is read, never downloaded).
- ``freshstack/<topic>``: hub ``freshstack/queries-oct-2024`` + ``freshstack/corpus-oct-2024`` (freshstack 0.0.6
  ``datasets/data_loader.py``), main branch (no pin published).
"""
from __future__ import annotations

from typing import Dict

from .entry import Entry

LIMIT = {"limit": ("orionweller/LIMIT", "48142cc741b04d0b4af370ade7e8b42430382670", "50,000"),
         "limit/small": ("orionweller/LIMIT-small", "ff4a8f2476ae77476c1912f1f3cb5bb5f2d766d4", "46")}
#: task: (revision mteb pins, queries (R2MED README), documents)
R2MED = {
    "Biology": ("8b9fec2db9eda4b5742d03732213fbaee8169556", 103, "57,359"),
    "Bioinformatics": ("6021fce366892cbfd7837fa85a4128ea93315e18", 77, "47,473"),
    "Medical-Sciences": ("1b48911514c80bf9182222d99752ad75e23b4b47", 88, "34,810"),
    "MedXpertQA-Exam": ("b457ea43db9ae5db74c3a3e5be0a213d0f85ac3a", 97, "61,379"),
    "MedQA-Diag": ("78b585990279cc01a493f876c1b0cf09557fba57", 118, "56,250"),
    "PMC-Treatment": ("53c489a44a3664ba352c07550b72b4525a5968d5", 150, "28,954"),
    "PMC-Clinical": ("812829522f7eaa407ef82b96717be85788a50f7e", 114, "60,406"),
    "IIYi-Clinical": ("974abbc9bc281c3169180a6aa5d7586cfd2f5877", 129, "10,449"),
}
FRESHSTACK_QUERIES, FRESHSTACK_CORPUS = "freshstack/queries-oct-2024", "freshstack/corpus-oct-2024"
#: topic: (queries, documents), a third-party summary of the paper's table (UNVERIFIED against the files)
FRESHSTACK = {"langchain": (203, "49,514"), "yolo": (57, "27,207"), "laravel": (184, "52,351"),
              "angular": (129, "117,288"), "godot": (99, "25,482")}


CRUMB = ("jfkback/crumb", "adc97d85cd0c641d4fc48ff8dc1019d51ebbb88f")
CRUMB_SINGLE = ("code_retrieval", "paper_retrieval", "theorem_retrieval")
CRUMB_TASKS = ("clinical_trial", "code_retrieval", "legal_qa", "paper_retrieval", "set_operation_entity_retrieval",
               "stack_exchange", "theorem_retrieval", "tip_of_the_tongue")

#: task: (queries, documents, aspects) of BRIGHT-PRO's dataset_eval.json
BRIGHT_PRO = {"biology": (103, "59,683", 392), "earth_science": (116, "123,732", 433),
              "economics": (103, "52,411", 373), "psychology": (101, "54,913", 350), "robotics": (101, "63,999", 341),
              "stackoverflow": (117, "109,260", 361), "sustainable_living": (108, "63,410", 390)}

MULTICONIR = ("EIT-NLP/MultiConIR", "26b65045703bc23585401c09e129d34744717b6d")
MULTICONIR_DOMAINS = ("books", "movies", "people", "medical", "legal")
#: families read from a GitHub clone, never from the hub: family → how to get the files
NOT_ON_HUB = {"multiconir": "git clone https://github.com/EIT-NLP/MultiConIR <folder> && git -C <folder> checkout "
                            f"{MULTICONIR[1]}"}


def entries() -> Dict[str, Entry]:
    out: Dict[str, Entry] = {}
    for name, (repo, rev, docs) in LIMIT.items():
        out[name] = Entry("limit", repo, rev, "R@2", f"1,000 queries, {docs} docs, 2 relevant per query", "CC-BY-4.0",
                          allow=("corpus.jsonl", "queries.jsonl", "qrels.jsonl", "README.md"))
    for task, (rev, queries, docs) in R2MED.items():
        out[f"r2med/{task}"] = Entry("r2med", f"R2MED/{task}", rev, "nDCG@10", f"{queries} queries, {docs} docs",
                                     "CC-BY-4.0", allow=("corpus.jsonl", "query.jsonl", "qrels.jsonl", "README.md"),
                                     task=task)
    for topic, (queries, docs) in FRESHSTACK.items():
        out[f"freshstack/{topic}"] = Entry(
            "freshstack", FRESHSTACK_QUERIES, None, "alpha-nDCG@10", f"{queries} queries, {docs} docs (UNVERIFIED)",
            "CC-BY-SA-4.0", allow=(f"{topic}/*", "README.md"), task=topic)
    for task, (queries, docs, aspects) in BRIGHT_PRO.items():
        out[f"bright-pro/{task}"] = Entry(
            "bright-pro", "ya-ir/BRIGHT-PRO", None, "alpha-nDCG@25",
            f"{queries} queries, {docs} docs, {aspects} aspects",
            "MIT (yale-nlp/Bright-Pro card; ya-ir/BRIGHT-PRO UNVERIFIED)",
            allow=(f"examples/{task}*", f"documents/{task}*", f"aspects/{task}*", "README.md"), task=task)
    for domain in MULTICONIR_DOMAINS:
        for kind, suffix, measure, what in (("task23", "", "Change Rate", "Tasks 2&3: Query10 + Natural_Query10"),
                                            ("task1", "/task1", "Query10_WinRate", "Task 1: Query1-Query10"),
                                            ("len512", "/len512", "Positive_vs_HN1", "Task 4: 512-token documents"),
                                            ("len1024", "/len1024", "Positive_vs_HN1", "Task 4: 1024-token documents")):
            out[f"multiconir/{domain}{suffix}"] = Entry(
                "multiconir", MULTICONIR[0], MULTICONIR[1], measure,
                f"{what}, 11 candidates per row (row counts UNVERIFIED)", "Apache-2.0", subdir="datasets",
                split=kind, task=domain)
    for task in CRUMB_TASKS:
        folder = "scientific_paper" if task == "paper_retrieval" else task
        for coll in ("passage",) + (() if task in CRUMB_SINGLE else ("full-doc",)):
            for split, suffix in (("eval", ""), ("val", "/validation")):
                name = f"crumb/{task}{'/full-doc' if coll == 'full-doc' else ''}{suffix}"
                corpus = "passage_corpus" if coll == "passage" or task in CRUMB_SINGLE else "full_document_corpus"
                maxp = " (MaxP)" if coll == "passage" and task in ("clinical_trial", "set_operation_entity_retrieval",
                                                                   "tip_of_the_tongue") else ""
                out[name] = Entry("crumb", CRUMB[0], CRUMB[1], "nDCG@10",
                                  f"{'evaluation' if split == 'eval' else 'validation'} queries, {corpus}{maxp} "
                                  f"(sizes UNVERIFIED)", "CC-BY-NC-4.0",
                                  allow=(f"{folder}/{split}/*", f"{folder}/{corpus}.jsonl", "README.md"),
                                  split=f"{split}/{coll}", task=task)
    return out
