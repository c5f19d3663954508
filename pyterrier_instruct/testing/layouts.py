"""Miniature benchmarks in the exact released layouts (file names, formats, field names, id conventions), written by
:func:`write` under ``<root>/<owner>/<repo>/``, where ``$PYTERRIER_INSTRUCT_DATA`` makes ``pti.load_dataset(...)`` read
them without a download. Synthetic and tiny, but with every property the loaders rely on. The tests write them once per
session (``tests/conftest.py``); ``python -m pyterrier_instruct.testing.layouts DIR`` writes them under ``DIR``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

#: hand-written miniatures copied as they are (BEIR scifact)
BUNDLED = Path(__file__).parent / "data"

WORDS = {
    "dams": "dam river fish salmon migration spawning reservoir hydro",
    "antibiotics": "antibiotic livestock resistance bacteria farm veterinary drug",
    "reefs": "coral reef bleaching ocean warming fish marine heat",
    "vaccines": "vaccine immunity trial dose antibody virus clinical",
}


def _docs(topic: str, n: int = 6):
    w = WORDS[topic].split()
    return [(f"{topic[:3].upper()}-{i}_0", f"{w[i % len(w)].title()} report {i}",
             " ".join(w[(i + j) % len(w)] for j in range(3 + i)) + f" study number {i} of {topic}.")
            for i in range(n)]


def _write_jsonl(path: Path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def _write_tsv(path: Path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join(str(x) for x in r) + "\n")


def _write_parquet(path: Path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path, index=False)


# -- FollowIR ------------------------------------------------------------------------------------
FOLLOWIR = [("301", "dams", "How do dams affect fish?", "Relevant documents report observed effects of dams on fish.",
             "Relevant documents report observed effects of dams on salmon only, not forecasts."),
            ("302", "antibiotics", "Does farm antibiotic use cause resistance?",
             "Relevant documents link livestock antibiotic use to resistant bacteria.",
             "Relevant documents link livestock antibiotic use to resistant bacteria found in people."),
            ("303", "reefs", "What bleaches coral reefs?", "Relevant documents describe causes of coral bleaching.",
             "Relevant documents describe ocean warming as a cause of coral bleaching, measured in the field.")]


def followir_tables():
    corpus, queries, og, ch, top = [], [], [], [], []
    for qid, topic, q, i_og, i_ch in FOLLOWIR:
        docs = _docs(topic)
        corpus += [{"_id": d, "title": t, "text": x} for d, t, x in docs]
        queries.append({"_id": qid, "text": q, "instruction_og": i_og, "instruction_changed": i_ch,
                        "keywords": f"{topic} keywords", "short_query": f"short {topic}"})
        labels_og = [2, 1, 1, 0, 0, 0]
        labels_ch = [2, 0, 1, 0, 0, 0]  # document 1 stops being relevant under the changed instruction
        for (d, _, _), a, b in zip(docs, labels_og, labels_ch):
            og.append((qid, d, float(a)))
            ch.append((qid, d, float(b)))
        order = [3, 0, 5, 1, 4, 2]  # candidate order is not docno order
        top += [(qid, docs[i][0]) for i in order]
    return corpus, queries, og, ch, top


def followir_original(path: Path):
    corpus, queries, og, ch, top = followir_tables()
    _write_jsonl(path / "corpus.jsonl", corpus)
    _write_jsonl(path / "queries.jsonl", queries)
    for name, rows in (("qrels_og", og), ("qrels_changed", ch)):
        _write_jsonl(path / name / "test.jsonl", [{"query-id": q, "corpus-id": d, "score": s} for q, d, s in rows])
        _write_tsv(path / name / "test.tsv", ["query-id", "corpus-id", "score"], [(q, d, int(s)) for q, d, s in rows])
    _write_jsonl(path / "top_ranked.jsonl", [{"qid": q, "pid": p} for q, p in top])
    scores = {}
    for q, p in top:
        scores.setdefault(q, {})[p] = 0.0
    (path / "empty_scores.json").write_text(json.dumps(scores, indent=2))


def followir_mteb(path: Path, suffix: str = "", corpus=None, queries=None, og=None, ch=None, top=None, mteb_org=False):
    if corpus is None:
        corpus, queries, og, ch, top = followir_tables()
    s = suffix

    def shard(config, split):
        folder = config if mteb_org else f"{config}{s}"
        return path / folder / f"{split}-00000-of-00001.parquet"
    idc = "id" if mteb_org else "_id"
    _write_parquet(shard("corpus", "test" if mteb_org else "corpus"),
                   [{idc: c["_id"], "title": c["title"], "text": c["text"]}
                                                                      for c in corpus])
    qrows, irows = [], []
    for q in queries:
        for v in ("og", "changed"):
            row = {idc: f"{q['_id']}-{v}", "text": q["text"]}
            if mteb_org:
                row["instruction"] = q[f"instruction_{v}"]
            qrows.append(row)
            irows.append({"query-id": f"{q['_id']}-{v}", "instruction": q[f"instruction_{v}"]})
    _write_parquet(shard("queries", "test" if mteb_org else "queries"), qrows)
    if not mteb_org:
        _write_parquet(shard("instruction", "instruction"), irows)
    qrels = ([{"query-id": f"{q}-og", "corpus-id": d, "score": int(x) if mteb_org else x} for q, d, x in og]
             + [{"query-id": f"{q}-changed", "corpus-id": d, "score": int(x) if mteb_org else x} for q, d, x in ch])
    qfolder = "qrels" if mteb_org else ("default" if s else "data")
    qfile = ("test" if mteb_org else "default") + "-00000-of-00001.parquet"
    _write_parquet(path / (qfolder + ("" if mteb_org else s)) / qfile, qrels)
    lists = {}
    for q, p in top:
        lists.setdefault(q, []).append(p)
    _write_parquet(shard("top_ranked", "test" if mteb_org else "top_ranked"),
                   [{"query-id": f"{q}-{v}", "corpus-ids": ps} for q, ps in lists.items() for v in ("og", "changed")])
    diff = {}
    for (q, d, a), (_, _, b) in zip(og, ch):
        if a != b:
            diff.setdefault(q, []).append(d)
    _write_parquet(path / ("qrel_diff" + ("" if mteb_org else s)) / "qrel_diff-00000-of-00001.parquet",
                   [{"query-id": q, "corpus-ids": ds} for q, ds in diff.items()])


MFOLLOWIR = {
    "fas": [("f1", "سد و ماهی", "اسناد مرتبط اثر سد بر ماهی را گزارش می‌کنند.",
             "اسناد مرتبط فقط اثر سد بر ماهی آزاد را گزارش می‌کنند.")],
    "rus": [("r1", "Как плотины влияют на рыбу?", "Релевантные документы сообщают о влиянии плотин на рыбу.",
             "Релевантные документы сообщают о влиянии плотин только на лосося.")],
    "zho": [("z1", "水坝如何影响鱼类？", "相关文件报告水坝对鱼类的影响。", "相关文件只报告水坝对鲑鱼的影响。")],
}


def mfollowir(path: Path):
    for lang, topics in MFOLLOWIR.items():
        corpus, queries, og, ch, top = [], [], [], [], []
        for qid, q, i_og, i_ch in topics:
            docs = [(f"{lang}-{qid}-{i}", "", f"{q} {i_og if i < 3 else ''} {i}") for i in range(5)]
            corpus += [{"_id": d, "title": t, "text": x} for d, t, x in docs]
            queries.append({"_id": qid, "text": q, "instruction_og": i_og, "instruction_changed": i_ch})
            for (d, _, _), a, b in zip(docs, [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]):
                og.append((qid, d, float(a)))
                ch.append((qid, d, float(b)))
            top += [(qid, docs[i][0]) for i in (4, 2, 0, 3, 1)]
        followir_mteb(path, f"-{lang}", corpus, queries, og, ch, top)


# -- InfoSearch ----------------------------------------------------------------------------------
INFOSEARCH = {
    "Audience-v1": ("audience", ["Layman", "Expert"]),
    "Clarity-v1": ("keyword", ["first keyword", "second keyword"]),
    "Format-v1": ("format", ["Stackoverflow Post", "Code Snippet", "Official Manual"]),
    "Language-v1": ("language", ["Chinese", "English"]),
    "Length-v1": ("length", ["Sentence", "Paragraph", "Article"]),
    "Source-v1": ("source", ["Blog", "Forum Post", "News Article"]),
}


def infosearch(path: Path, repo: str):
    dim, conditions = INFOSEARCH[repo]
    corpus, queries, qrels, scores = [], {"og": [], "changed": [], "reversed": []}, [], {}
    qrels = {"og": [], "changed": [], "reversed": []}
    for core in range(2):
        topic = list(WORDS)[core]
        cond_docs = [(f"{dim}-{core}-{c}", f"{topic} {cond}",
                      f"{WORDS[topic]} written as {cond}" + (" 中文" if cond == "Chinese" else ""))
                     for c, cond in enumerate(conditions)]
        negs = [(f"{dim}-{core}-n{c}", "", f"{WORDS[topic]} unrelated {c}") for c in range(2)]
        corpus += [{"_id": d, "title": t, "text": x} for d, t, x in cond_docs + negs]
        for c, cond in enumerate(conditions):
            qid = f"{dim}{core}_{c}"
            queries["og"].append({"_id": qid, "text": f"What about {topic}?", "instruction_og": "",
                                  "instruction_changed": f"I want a {cond}.",
                                  "instruction_reversed": f"What about {topic}? I do not want a {cond}."})
            for c2, (d, _, _) in enumerate(cond_docs):
                qrels["og"].append((qid, d, 1))
                qrels["changed"].append((qid, d, 1 if c2 == c else 0))
                qrels["reversed"].append((qid, d, 0 if c2 == c else 1))
            scores[qid] = {d: 0.0 for d, _, _ in reversed(cond_docs + negs)}
    if dim == "keyword":  # an instance without og qrels: dropped by the loader, as by the reference
        queries["og"].append({"_id": "keyword9_0", "text": "What about nothing?", "instruction_og": "",
                              "instruction_changed": "I want a keyword.", "instruction_reversed": "Not a keyword."})
        scores["keyword9_0"] = {corpus[0]["_id"]: 0.0}
    _write_jsonl(path / "corpus.jsonl", corpus)
    _write_jsonl(path / "queries.jsonl", queries["og"])
    for v, rows in qrels.items():
        score = (lambda s: str(s)) if dim == "format" else float  # early InfoSearch files had "score": "3"
        if dim == "length":
            _write_tsv(path / f"qrels_{v}" / "test.tsv", ["query-id", "corpus-id", "score"], rows)
        else:
            _write_jsonl(path / f"qrels_{v}" / "test.jsonl",
                         [{"query-id": q, "corpus-id": d, "score": score(s)} for q, d, s in rows])
    (path / "empty_scores.json").write_text(json.dumps(scores, indent=2))


# -- IFIR ----------------------------------------------------------------------------------------
IFIR = {"fiqa": 3, "scifact_open": 3, "nfcorpus": 1, "aila": 3, "fire": 1, "pm": 3, "cds": 1}


def ifir_raw(path: Path):
    for subset, levels in IFIR.items():
        folder = path / subset
        corpus, data, qrows, qrels = [], [], [], []
        for b, topic in enumerate(list(WORDS)[:2]):
            docs = _docs(topic, 7)
            docs = [(f"{subset}-{d}", t if subset != "fire" else None, x) for d, t, x in docs]
            corpus += [({"_id": d, "text": x} if t is None else {"_id": d, "title": t, "text": x}) for d, t, x in docs]
            base = f"{subset}{b}"
            insts = ([{"level": lv, "instruction": f"Find {topic} evidence at level {lv}.", "rel": list(range(4 - lv))}
                      for lv in (1, 2, 3)] if levels == 3 else
                     [{"level": 0, "instruction": f"Find {topic} evidence for a patient.", "rel": [0, 2]}])
            data.append({"_id": base, "text": f"What is known about {topic}?",
                         "corpus": [{"_id": d, "text": x} for d, _, x in docs[:5]], "instructions": insts})
            qrows.append({"_id": f"{base}_0", "text": f"What is known about {topic}?"})
            for inst in insts:
                lv = inst["level"] or 1
                qrows.append({"_id": f"{base}_{lv}", "text": f"What is known about {topic}? {inst['instruction']}"})
                qrels += [(f"{base}_{lv}", docs[i][0], 1) for i in inst["rel"]]
        corpus.append({"_id": f"{subset}-empty", "title": "", "text": ""})  # empty text: not indexed
        _write_jsonl(folder / f"{subset}-corpus.jsonl", corpus)
        _write_jsonl(folder / f"{subset}-query.jsonl", qrows)
        _write_tsv(folder / f"{subset}-qrel.tsv", ["query-id", "corpus-id", "score"], qrels)
        (folder / "test_data.json").write_text(json.dumps(data, indent=1))


def ifir_mteb(path: Path):
    corpus, queries, ins, qrels = [], [], [], []
    for b, topic in enumerate(list(WORDS)[:2]):
        docs = _docs(topic, 5)
        corpus += [{"_id": f"fire-{d}", "title": t, "text": x} for d, t, x in docs]
        queries.append({"_id": f"fire{b}", "text": f"What is known about {topic}?"})
        ins.append({"query-id": f"fire{b}", "instruction": f"Find {topic} evidence in court records."})
        qrels += [{"query-id": f"fire{b}", "corpus-id": f"fire-{docs[i][0]}", "score": 1} for i in (0, 1)]
    _write_jsonl(path / "corpus.jsonl", corpus)
    _write_jsonl(path / "queries.jsonl", queries)
    _write_jsonl(path / "instructions.jsonl", ins)
    _write_jsonl(path / "qrels" / "test.jsonl", qrels)


# -- InstructIR ----------------------------------------------------------------------------------
def instructir_rows():
    corpus, queries, qrels = [], [], []
    for base, topic in (("1078446", "dams"), ("52", "vaccines")):
        w = WORDS[topic]
        corpus.append({"_id": f"{base}0", "title": "", "text": f"{w} general background."})
        for n in range(1, 7):
            pid = f"9{base}_{n}"
            corpus.append({"_id": pid, "title": "", "text": f"{w} revised passage for reader {n}."})
            queries.append({"_id": f"{base}_{n}", "query": f"{topic} definition",
                            "instruction": f"I am reader number {n} and I want {topic} facts."})
            qrels.append((f"{base}_{n}", pid, 1))
    return corpus, queries, qrels


def instructir(path: Path):
    corpus, queries, qrels = instructir_rows()
    _write_jsonl(path / "corpus.jsonl", corpus)
    _write_jsonl(path / "queries.jsonl", [{"_id": q["_id"], "text": f"{q['instruction']} [SEP] {q['query']}",
                                           "metadata": {"origin_query": q["query"]}} for q in queries])
    _write_tsv(path / "qrels" / "test.tsv", ["qid", "pid", "score"], qrels)


def instructir_mteb(path: Path):
    corpus, queries, qrels = instructir_rows()
    _write_parquet(path / "corpus" / "corpus-00000-of-00001.parquet", corpus)
    _write_parquet(path / "queries" / "queries-00000-of-00001.parquet",
                   [{"_id": q["_id"], "text": q["query"]} for q in queries])
    _write_parquet(path / "instruction" / "instruction-00000-of-00001.parquet",
                   [{"query-id": q["_id"], "instruction": q["instruction"]} for q in queries])
    _write_parquet(path / "data" / "test-00000-of-00001.parquet",
                   [{"query-id": q, "corpus-id": d, "score": s} for q, d, s in qrels])


# -- BRIGHT, MAIR, NevIR -------------------------------------------------------------------------
BRIGHT_LONG = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
               "pony")
BRIGHT_MATH = ("leetcode", "aops", "theoremqa_theorems", "theoremqa_questions")
BRIGHT_TOPICS = ["dams", "antibiotics", "reefs", "vaccines"]


def _bright_ids(task: str, i: int, long: bool = False) -> str:
    if task in ("leetcode", "pony"):
        return f"{task}/{'page' if long else 'doc'}_{i}.txt"
    if task == "theoremqa_theorems":
        return str(i)
    return f"{task}_{BRIGHT_TOPICS[i % 4]}/{'Page' if long else 'Passage'}_{i}.txt"


def _bright_qid(task: str, n: int) -> str:
    return {"theoremqa_questions": f"TheoremQA_xinyi/q_{n}.json",
            "aops": f"aops_2019_AMC_12A_Problems/Problem_{n}"}.get(task, str(n))


def bright(path: Path):
    """xlangai/BRIGHT: examples/, documents/, long_documents/ parquet configs, one split per task. The math tasks carry
    excluded_ids (real corpus ids on query 0, ["N/A"] on the others), as BRIGHT's leetcode/aops/theoremqa do."""
    for task in BRIGHT_LONG + BRIGHT_MATH:
        docs = [{"id": _bright_ids(task, i), "content": " ".join(WORDS[BRIGHT_TOPICS[i % 4]].split()[: 3 + i % 4])
                 + f" {task} passage {i}."} for i in range(8)]
        long_docs = [{"id": _bright_ids(task, i, True), "content": WORDS[BRIGHT_TOPICS[i]] + f" {task} page {i}."}
                     for i in range(4)]
        examples = []
        for n, topic in enumerate(BRIGHT_TOPICS[:3]):
            excluded = [_bright_ids(task, n + 4)] if task in BRIGHT_MATH and n == 0 else ["N/A"]
            examples.append({"query": f"A {task} question about {WORDS[topic].split()[0]} and "
                                      f"{WORDS[topic].split()[1]}?\nDetails follow.",
                             "reasoning": f"Think about {topic}.", "id": _bright_qid(task, n), "excluded_ids": excluded,
                             "gold_ids_long": [long_docs[n]["id"]] if task in BRIGHT_LONG else [],
                             "gold_ids": [docs[n]["id"]] + ([docs[n + 4]["id"]] if task not in BRIGHT_MATH else []),
                             "gold_answer": f"the {topic} answer"})
        _write_parquet(path / "examples" / f"{task}-00000-of-00001.parquet", examples)
        _write_parquet(path / "documents" / f"{task}-00000-of-00001.parquet", docs)
        if task in BRIGHT_LONG:
            _write_parquet(path / "long_documents" / f"{task}-00000-of-00001.parquet", long_docs)


MAIR_TASKS = ("DD_2015", "DD_2016", "DD_2017", "FairRanking_2021", "FairRanking_2022")


def mair(path: Path):
    """MAIR-Bench/MAIR-Queries and MAIR-Bench/MAIR-Docs downloaded into one folder: <Task>/queries.jsonl,
    <Task>/docs.jsonl. Graded labels; FairRanking_2021 stores integer ids (as some MAIR tasks do)."""
    for k, task in enumerate(MAIR_TASKS):  # each task rotates the topics, so that tasks differ
        ints = task == "FairRanking_2021"
        docs = [{"id": 100 + i if ints else f"{task.lower()}-d{i}",
                 "doc": " ".join(WORDS[BRIGHT_TOPICS[(i + k) % 4]].split()[(i + k) % 3:]) + f" document {i}."}
                for i in range(8)]
        queries = []
        rotated = BRIGHT_TOPICS[k % 4:] + BRIGHT_TOPICS[:k % 4]
        for n, topic in enumerate(rotated[:3]):
            reader = ["student", "journalist", "farmer"][n]
            queries.append({"qid": f"{task}-{n}", "instruction": f"Find documents on {topic} useful to a {reader}.",
                            "query": WORDS[topic].split()[0] + " " + WORDS[topic].split()[2],
                            "labels": [{"id": docs[n]["id"], "score": 2}, {"id": docs[n + 4]["id"], "score": 1}]})
        _write_jsonl(path / task / "queries.jsonl", queries)
        _write_jsonl(path / task / "docs.jsonl", docs)


NEVIR_SPLITS = {"test": 4, "validation": 2, "train": 2}


def nevir_rows(split: str):
    rows = []
    for n in range(NEVIR_SPLITS[split]):
        topic = BRIGHT_TOPICS[n % 4]
        w = WORDS[topic].split()
        q1 = f"Which {w[0]} did not affect {w[1]}?"
        rows.append({"id": f"{10 + n}-{n % 3}" if split == "test" else f"{split[:2]}{n}-1", "WorkerId": f"W{n}",
                     "q1": q1, "q2": q1 if n == 3 else f"Which {w[0]} affected {w[1]}?",
                     "doc1": f"The {w[0]} did not affect the {w[1]} or the {w[2]}.",
                     "doc2": f"The {w[0]} affected the {w[1]} but not the {w[2]}."})
    return rows


def nevir(path: Path):
    """orionweller/NevIR: one jsonl per split (id, WorkerId, q1, q2, doc1, doc2); pair 13-0 of test has q1 == q2."""
    for split in NEVIR_SPLITS:
        _write_jsonl(path / f"{split}.jsonl", nevir_rows(split))


def nevir_mteb(path: Path):
    """orionweller/NevIR-mteb: corpus.jsonl and queries.jsonl over every split, qrels/ and top_ranked/ per split."""
    corpus, queries = [], []
    for split in NEVIR_SPLITS:
        qrels, ranked = [], []
        for r in nevir_rows(split):
            for i in (1, 2):
                corpus.append({"_id": f"{r['id']}_doc{i}", "text": r[f"doc{i}"]})
                queries.append({"_id": f"{r['id']}_q{i}", "text": r[f"q{i}"]})
                qrels.append({"query-id": f"{r['id']}_q{i}", "corpus-id": f"{r['id']}_doc{i}", "score": 1.0})
                ranked.append({"query-id": f"{r['id']}_q{i}", "corpus-ids": [f"{r['id']}_doc1", f"{r['id']}_doc2"]})
        _write_jsonl(path / "qrels" / f"{split}.jsonl", qrels)
        _write_jsonl(path / "top_ranked" / f"{split}.jsonl", ranked)
    _write_jsonl(path / "corpus.jsonl", corpus)
    _write_jsonl(path / "queries.jsonl", queries)


LIMIT_PEOPLE = ["Geneva Durben", "Olinda Posso", "Ada Quill", "Bo Ren", "Cy Tan", "Di Vo"]
LIMIT_LIKES = ["Quokkas", "Birch Trees", "Jazz", "Chess"]


def limit(path: Path, small: bool = False):
    """orionweller/LIMIT(-small): BEIR/mteb jsonl at the root; names (with spaces) as document ids, 2 relevant per
    query; each person likes two things, query_<n> asks who likes thing n (the full corpus adds 2 distractors)."""
    people = LIMIT_PEOPLE[:4] if small else LIMIT_PEOPLE
    likes = {p: (LIMIT_LIKES[i % 4], LIMIT_LIKES[(i + 1) % 4]) for i, p in enumerate(people)}
    _write_jsonl(path / "corpus.jsonl", [{"_id": p, "title": "", "text": f"{p} likes {a} and {b}."}
                                         for p, (a, b) in likes.items()])
    _write_jsonl(path / "queries.jsonl", [{"_id": f"query_{n}", "text": f"Who likes {t}?"}
                                          for n, t in enumerate(LIMIT_LIKES)])
    _write_jsonl(path / "qrels.jsonl", [{"query-id": f"query_{n}", "corpus-id": p, "score": 1}
                                        for n, t in enumerate(LIMIT_LIKES) for p in people[:4] if t in likes[p]])


R2MED_TASKS = ("Biology", "Bioinformatics", "Medical-Sciences", "MedXpertQA-Exam", "MedQA-Diag", "PMC-Treatment",
               "PMC-Clinical", "IIYi-Clinical")


def r2med(path: Path, task: str):
    """R2MED/<Task>: corpus.jsonl (id, text), query.jsonl (id, text, doc_id, answer, body_system), qrels.jsonl
    (q_id, p_id, score); ids as in the released Biology files (BRIGHT-style paths, queries "0", "1", …)."""
    docs = [{"id": f"{t}_paper/{t}_{i}.txt", "text": " ".join(WORDS[t].split()[i:i + 4]) + f" ({task})"}
            for t in BRIGHT_TOPICS for i in range(2)]
    gold = {str(n): [docs[2 * n]["id"], docs[2 * n + 1]["id"]] if n < 2 else [docs[2 * n]["id"]] for n in range(4)}
    _write_jsonl(path / "corpus.jsonl", docs)
    _write_jsonl(path / "query.jsonl", [{"id": q, "text": f"A patient asks about {BRIGHT_TOPICS[int(q)]}.", "doc_id": g,
                                         "answer": "", "body_system": ""} for q, g in gold.items()])
    _write_jsonl(path / "qrels.jsonl", [{"q_id": q, "p_id": d, "score": 1} for q, g in gold.items() for d in g])


FRESHSTACK_TOPICS = ("langchain", "yolo", "laravel", "angular", "godot")


def freshstack(root: Path):
    """freshstack/queries-oct-2024 and freshstack/corpus-oct-2024 (UNVERIFIED file names: parquet shards of split
    ``test``/``train`` under ``<topic>/``); nugget ids ``<query_id>_<n>``; query 7812 has a document supporting two
    nuggets (summed label 2) and a judged-0 document; in langchain the other query is 78, a prefix of 7812 (freshstack's
    ``nuggets_to_query_qrels`` gives 7812's nuggets to 78 as well), elsewhere 5903."""
    for topic in FRESHSTACK_TOPICS:
        docs = [{"_id": f"{topic}/src/file{i}.py_0_{100 * i}", "title": f"file{i}.py",
                 "text": " ".join(WORDS[BRIGHT_TOPICS[i % 4]].split()[: 3 + i % 3])} for i in range(8)]
        d = [x["_id"] for x in docs]
        other = "78" if topic == "langchain" else "5903"
        nuggets = {"7812": [(d[:2], [d[5]]), ([d[1], d[2]], []), ([d[3]], [])], other: [([d[4]], [d[6]]), ([d[7]], [])]}
        rows = [{"query_id": int(q), "query_title": f"How to use {topic} {q}?", "query_text": f"Body of question {q}.",
                 "answer_text": "Use it.",
                 "nuggets": [{"_id": f"{q}_{n}", "text": f"nugget {n}", "relevant_corpus_ids": r,
                              "non_relevant_corpus_ids": nr} for n, (r, nr) in enumerate(ns)]}
                for q, ns in nuggets.items()]
        _write_parquet(root / "queries-oct-2024" / topic / "test-00000-of-00001.parquet", rows)
        _write_parquet(root / "corpus-oct-2024" / topic / "train-00000-of-00001.parquet", docs)


CRUMB_TASKS = ("clinical_trial", "code_retrieval", "legal_qa", "paper_retrieval", "set_operation_entity_retrieval",
               "stack_exchange", "theorem_retrieval", "tip_of_the_tongue")
CRUMB_SINGLE = ("code_retrieval", "paper_retrieval", "theorem_retrieval")
CRUMB_MAXP = ("clinical_trial", "set_operation_entity_retrieval", "tip_of_the_tongue")


def crumb(path: Path):
    """jfkback/crumb: ``<dir>/{eval,val}/query_labels.jsonl``, ``<dir>/passage_corpus.jsonl`` and, for the
    two-collection tasks, ``<dir>/full_document_corpus.jsonl`` (``<dir>`` = the task, ``scientific_paper`` for
    paper_retrieval). Three documents of two passages (``<doc>:<n>``); float labels (2.0, 1.0, judged 0.0); query q2's
    instruction is null; paper_retrieval has binary qrels that differ from its graded ones."""
    for task in CRUMB_TASKS:
        base = path / ("scientific_paper" if task == "paper_retrieval" else task)
        docs = [f"{task[:3].upper()}{i:05d}" for i in range(3)]
        topic = BRIGHT_TOPICS[CRUMB_TASKS.index(task) % 4]
        passages = [{"document_id": f"{d}:{n}", "document_content": f"{WORDS[topic]} part {n} of {d}", "parent_id": d,
                     "metadata": "{}"} for d in docs for n in range(2)]
        single = task in CRUMB_SINGLE
        full = [{"document_id": d, "document_content": f"{WORDS[topic]} document {d}", "parent_id": None,
                 "metadata": "{}"} for d in docs]
        _write_jsonl(base / "passage_corpus.jsonl", passages)
        if not single:
            _write_jsonl(base / "full_document_corpus.jsonl", full)
        for split in ("eval", "val"):
            rows = []
            for q, (a, b) in (("q1", (0, 1)), ("q2", (1, 2))):
                pq = [{"id": f"{docs[a]}:1", "label": 2.0}, {"id": f"{docs[b]}:0", "label": 1.0},
                      {"id": f"{docs[b]}:1", "label": 0.0}]
                fq = [{"id": docs[a], "label": 2.0}, {"id": docs[b], "label": 1.0}]
                if single:
                    pq, fq = pq[:2], pq[:2]
                binary = [{"id": f"{docs[a]}:1", "label": 1.0}] if task == "paper_retrieval" else []
                rows.append({"query_id": f"{split}-{q}", "query_content": f"Find {topic} {q}",
                             "instruction": None if q == "q2" else f"Find relevant {task} documents",
                             "passage_qrels": pq, "passage_binary_qrels": binary, "full_document_qrels": fq,
                             "use_max_p": task in CRUMB_MAXP, "metadata": "{}"})
            _write_jsonl(base / split / "query_labels.jsonl", rows)


def bright_pro(path: Path, tasks=("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow",
                                  "sustainable_living")):
    """ya-ir/BRIGHT-PRO in yale-nlp/Bright-Pro's file names (``<config>/<task>.parquet``). Query 0 has gold documents
    of aspects a1 (two documents, weight 3) and a2 (weight 1); query 1 one of a1 (weight 2) and an excluded id; query
    2 has no gold ids; document ids keep BRIGHT's form plus an added extraction passage."""
    for task in tasks:
        d = [f"{t}_page/{t}_{i}.txt" for t in BRIGHT_TOPICS for i in range(2)] + [f"{task}-0/extraction_0.txt"]
        aspect = {d[0]: f"{task}-0-a1", d[8]: f"{task}-0-a1", d[1]: f"{task}-0-a2", d[2]: f"{task}-1-a1"}
        _write_parquet(path / "documents" / f"{task}.parquet",
                       [{"id": x, "content": f"{WORDS[BRIGHT_TOPICS[i % 8 // 2]]} {i}", "aspect": aspect.get(x)}
                        for i, x in enumerate(d)])
        _write_parquet(path / "aspects" / f"{task}.parquet",
                       [{"id": a, "content": f"aspect {a}", "weight": w, "supporting_docs": [x for x in aspect
                                                                                              if aspect[x] == a]}
                        for a, w in ((f"{task}-0-a1", 3), (f"{task}-0-a2", 1), (f"{task}-1-a1", 2))])
        _write_parquet(path / "examples" / f"{task}.parquet", [
            {"id": "0", "query": f"Why do {task} dams fail?", "gold_ids": [d[0], d[8], d[1]], "excluded_ids": ["N/A"],
             "gold_ids_long": [], "reasoning": "", "gold_answer": ""},
            {"id": "1", "query": "Which antibiotic?", "gold_ids": [d[2]], "excluded_ids": [d[3]], "gold_ids_long": [],
             "reasoning": "", "gold_answer": ""},
            {"id": "2", "query": "No gold here", "gold_ids": [], "excluded_ids": ["N/A"], "gold_ids_long": [],
             "reasoning": "", "gold_answer": ""}])


def multiconir(path: Path):
    """EIT-NLP/MultiConIR ``datasets/``: two rows per CSV (an unnamed index column first, as pandas writes it), the
    file and folder names with their spaces and '&' (UNVERIFIED contents: the columns the evaluation code reads)."""
    from pyterrier_instruct.datasets.multiconir import DOMAINS, file_of
    for domain in DOMAINS:
        for kind in ("task1", "task23", "len512", "len1024"):
            rows = []
            for r in range(2):
                w = WORDS[BRIGHT_TOPICS[r]].split()
                row = {f"Query{i}": f"Find a {domain} item with " + ", ".join(w[:i % 7 + 1]) + f" ({i})"
                       for i in range(1, 11)}
                row.update(Natural_Query10=f"I want a {domain} item about {' '.join(w[:5])}", Positive=" ".join(w),
                           **{f"HN{k}": " ".join(w[: max(1, 8 - k)]) + f" hn{k}" for k in range(1, 11)})
                rows.append(row)
            target = path / "datasets" / file_of(kind, domain)
            target.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(rows).to_csv(target)


#: the owners (top-level folders) :func:`write` replaces
OWNERS = ("jhu-clsp", "jianqunZ", "songtingyu", "kaist-ai", "mteb", "if-ir", "xlangai", "MAIR-Bench", "orionweller",
          "BeIR", "R2MED", "freshstack", "jfkback", "ya-ir", "EIT-NLP")


def write(root) -> Path:
    """Writes every miniature under ``root`` (each owner's folder replaced whole) and returns ``root``."""
    root = Path(root)
    for owner in OWNERS:
        shutil.rmtree(root / owner, ignore_errors=True)
    for n in ("robust04", "news21", "core17"):
        followir_original(root / "jhu-clsp" / f"{n}-instructions")
        followir_mteb(root / "jhu-clsp" / f"{n}-instructions-mteb")
    followir_mteb(root / "mteb" / "Robust04InstructionRetrieval", mteb_org=True)
    mfollowir(root / "jhu-clsp" / "mFollowIR-parquet-mteb")
    for repo in INFOSEARCH:
        infosearch(root / "jianqunZ" / repo, repo)
    ifir_raw(root / "songtingyu" / "IFIR")
    ifir_mteb(root / "if-ir" / "fire")
    instructir(root / "kaist-ai" / "InstructIR")
    instructir_mteb(root / "mteb" / "InstructIR-mteb")
    bright(root / "xlangai" / "BRIGHT")
    mair(root / "MAIR-Bench" / "MAIR-Queries")
    nevir(root / "orionweller" / "NevIR")
    nevir_mteb(root / "orionweller" / "NevIR-mteb")
    limit(root / "orionweller" / "LIMIT")
    limit(root / "orionweller" / "LIMIT-small", small=True)
    for task in R2MED_TASKS:
        r2med(root / "R2MED" / task, task)
    freshstack(root / "freshstack")
    crumb(root / "jfkback" / "crumb")
    bright_pro(root / "ya-ir" / "BRIGHT-PRO")
    multiconir(root / "EIT-NLP" / "MultiConIR")
    shutil.copytree(BUNDLED / "BeIR", root / "BeIR")
    return root


if __name__ == "__main__":
    import sys
    write(sys.argv[1] if len(sys.argv) > 1 else ".")
