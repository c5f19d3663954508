"""InfoSearch layout (InfoSearch repository task files, the hub cards): ``jianqunZ/{Audience,…,Source}-v1``.

``queries.jsonl`` has one row per instance with ``instruction_og``/``_changed``/``_reversed`` (one ``_id`` for all three
modes), ``qrels_{og,changed,reversed}/`` (scores may be numeric strings), ``empty_scores.json`` the candidates shared by
the three modes (docs/data.md). As the reference loader does, instances without og qrels are dropped (``notes``).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..instructions import paired_qrels, paired_topics
from ._bench import (layout, Benchmark, candidates_from_scores, check_known_queries, check_same_judged,
                     expand_candidates, require_candidates, require_instructions)
from ._files import DataError, check_unique, first_existing, read_json, read_jsonl, read_qrels_jsonl, read_qrels_tsv
from .docstore import DocStore

VARIANTS = ("og", "changed", "reversed")


def read(path: Path) -> Benchmark:
    path = Path(path)
    qfile = path / "queries.jsonl"
    rows = read_jsonl(qfile, ["_id", "text", "instruction_og", "instruction_changed", "instruction_reversed"])
    base = pd.DataFrame({"qid": [str(r["_id"]) for r in rows], "query": [r["text"] for r in rows],
                         **{f"instruction_{v}": [r[f"instruction_{v}"] or "" for r in rows] for v in VARIANTS}})
    check_unique(base["qid"], str(qfile), "query _id")
    require_instructions(base, ["instruction_changed", "instruction_reversed"], str(qfile))

    qrels, where = {}, {}
    for v in VARIANTS:
        found = first_existing(path, [f"qrels_{v}/test.jsonl", f"qrels_{v}/test.tsv"])
        if found is None:
            raise DataError(f"missing qrels config 'qrels_{v}': neither {path / f'qrels_{v}' / 'test.jsonl'} nor "
                            "test.tsv exists")
        qrels[v] = read_qrels_jsonl(found) if found.suffix == ".jsonl" else read_qrels_tsv(found)
        where[v] = str(found)
        check_known_queries(qrels[v], base["qid"], where[v], str(qfile))
    for v in ("changed", "reversed"):
        check_same_judged(qrels["og"], qrels[v], where["og"], where[v])

    judged = set(qrels["og"]["qid"])
    dropped = base[~base["qid"].isin(judged)]["qid"].tolist()
    base = base[base["qid"].isin(judged)].reset_index(drop=True)
    qrels = {v: q[q["qid"].isin(judged)].reset_index(drop=True) for v, q in qrels.items()}

    sfile = path / "empty_scores.json"
    cands = candidates_from_scores(read_json(sfile), str(sfile))
    require_candidates(cands, str(sfile))
    check_known_queries(cands, set(base["qid"]) | set(dropped), str(sfile), str(qfile))
    cands = cands[cands["qid"].isin(judged)].reset_index(drop=True)

    topics = paired_topics(base, VARIANTS)
    return Benchmark(topics=topics, qrels=paired_qrels(qrels), corpus=DocStore(path / "corpus.jsonl"),
                     variants=VARIANTS, candidates=expand_candidates(cands, topics), base_topics=base,
                     notes={"layout": "infosearch", "dropped_without_og_qrels": dropped})


@layout("infosearch")
def _read_entry(entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    return read(folder)
