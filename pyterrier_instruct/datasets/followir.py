"""FollowIR and mFollowIR layouts (FollowIR paper §3, the hub dataset cards, mteb's FollowIR and mFollowIR tasks).

The original ``jhu-clsp/{robust04,news21,core17}-instructions`` jsonl files (``queries.jsonl`` with ``instruction_og``
and ``instruction_changed``, ``qrels_og/``, ``qrels_changed/``, ``top_ranked.jsonl``) and the mteb v2 parquet shards
(``-og``/``-changed`` query ids, ``instruction/``, ``qrel_diff/``; mFollowIR in ``{config}-{lang}`` folders).
Layouts: docs/data.md.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import pandas as pd

from ..instructions import paired_qrels, paired_topics, split_qids
from ._bench import (layout, Benchmark, check_known_queries, check_og_has_more_relevant, check_same_judged,
                     explode_lists, expand_candidates, candidates_from_scores, in_topic_order, require_candidates,
                     require_instructions)
from ._files import (DataError, check_unique, first_existing, read_json, read_jsonl, read_parquet, read_qrels_jsonl,
                     read_qrels_parquet, read_qrels_tsv)
from .docstore import DocStore

MAPPINGS = ("as-named", "swapped")


def is_original_layout(path: Path) -> bool:
    return (Path(path) / "queries.jsonl").is_file()


def _qrels_file(path: Path, config: str):
    found = first_existing(path, [f"{config}/test.jsonl", f"{config}/test.tsv"])
    if found is None:
        raise DataError(f"missing qrels config {config!r}: neither {path / config / 'test.jsonl'} nor test.tsv exists")
    return found, (read_qrels_jsonl(found) if found.suffix == ".jsonl" else read_qrels_tsv(found))


def _mapped(qrels: Dict[str, pd.DataFrame], where: Dict[str, str], mapping: str):
    if mapping not in MAPPINGS:
        raise ValueError(f"qrels_mapping must be one of {MAPPINGS}, got {mapping!r}")
    if mapping == "swapped":
        return {"og": qrels["changed"], "changed": qrels["og"]}, {"og": where["changed"], "changed": where["og"]}
    return qrels, where


def _check_pair(qrels: Dict[str, pd.DataFrame], where: Dict[str, str]) -> Dict[str, float]:
    check_same_judged(qrels["og"], qrels["changed"], where["og"], where["changed"])
    return check_og_has_more_relevant(qrels["og"], qrels["changed"], where["og"], where["changed"])


def read_original(path: Path, qrels_mapping: str = "as-named") -> Benchmark:
    """The original jsonl layout (also the bundled ``instruct-mini``)."""
    path = Path(path)
    qfile = path / "queries.jsonl"
    rows = read_jsonl(qfile, ["_id", "text", "instruction_og", "instruction_changed"])
    base = pd.DataFrame({
        "qid": [str(r["_id"]) for r in rows], "query": [r["text"] for r in rows],
        "instruction_og": [r["instruction_og"] or "" for r in rows],
        "instruction_changed": [r["instruction_changed"] or "" for r in rows]})
    for extra in ("keywords", "short_query"):
        if rows and all(extra in r for r in rows):
            base[extra] = [r[extra] or "" for r in rows]
    check_unique(base["qid"], str(qfile), "query _id")
    require_instructions(base, ["instruction_og", "instruction_changed"], str(qfile))

    qrels, where = {}, {}
    for v in ("og", "changed"):
        f, qrels[v] = _qrels_file(path, f"qrels_{v}")
        where[v] = str(f)
        check_known_queries(qrels[v], base["qid"], where[v], str(qfile))
    qrels, where = _mapped(qrels, where, qrels_mapping)
    stats = _check_pair(qrels, where)

    top = first_existing(path, ["top_ranked.jsonl", "empty_scores.json"])
    if top is None:
        raise DataError(f"missing candidate lists: neither {path / 'top_ranked.jsonl'} nor "
                        f"{path / 'empty_scores.json'} exists")
    if top.suffix == ".jsonl":
        cand = read_jsonl(top, ["qid", "pid"])
        cands = pd.DataFrame({"qid": [str(r["qid"]) for r in cand], "docno": [str(r["pid"]) for r in cand]},
                             dtype=object)
    else:
        cands = candidates_from_scores(read_json(top), str(top))
    require_candidates(cands, str(top))
    check_unique(cands["qid"] + "\t" + cands["docno"], str(top), "candidate (query, document)")

    topics = paired_topics(base, ("og", "changed"))
    from ..measures import changed_docs
    return Benchmark(
        topics=topics, qrels=paired_qrels(qrels), corpus=DocStore(path / "corpus.jsonl"), variants=("og", "changed"),
        candidates=expand_candidates(cands, topics), changed=changed_docs(qrels["og"], qrels["changed"]),
        base_topics=base, notes={"layout": "followir-original", "qrels_mapping": qrels_mapping, **stats})


def _folder(path: Path, names, lang: Optional[str]) -> Optional[Path]:
    suffix = f"-{lang}" if lang else ""
    return first_existing(path, [f"{n}{suffix}" for n in names])


def read_mteb(path: Path, lang: Optional[str] = None, qrels_mapping: str = "as-named") -> Benchmark:
    """The mteb v2 parquet layout (``-og``/``-changed`` suffixed ids, ``qrel_diff``); ``lang`` selects the
    ``{config}-{lang}`` folders of mFollowIR."""
    path = Path(path)

    def need(names):
        found = _folder(path, names, lang)
        if found is None:
            suffix = f"-{lang}" if lang else ""
            raise DataError(f"missing config folder {path / (names[0] + suffix)} (mteb layout"
                            f"{', language ' + lang if lang else ''})")
        return found

    qdir = need(["queries"])
    queries = read_parquet(qdir, ["_id", "text"], aliases={"id": "_id"})
    queries["_id"] = queries["_id"].astype(str)
    check_unique(queries["_id"], str(qdir), "query _id")
    base_qid, variant = split_qids(queries["_id"])
    bad = variant.isna() | ~variant.isin(["og", "changed"])
    if bad.any():
        raise DataError(f"{qdir}: query id {queries['_id'][bad].iloc[0]!r} lacks the -og/-changed suffix of this "
                        "layout")
    idir = _folder(path, ["instruction", "instructions"], lang)
    if idir is not None:
        ins = read_parquet(idir, ["query-id", "instruction"])
        ins["query-id"] = ins["query-id"].astype(str)
        check_unique(ins["query-id"], str(idir), "instruction query-id")
        unknown = ~ins["query-id"].isin(set(queries["_id"]))
        if unknown.any():
            raise DataError(f"{idir}: instruction for query {ins['query-id'][unknown].iloc[0]!r}, which is not in "
                            f"{qdir}")
        instruction = queries["_id"].map(dict(zip(ins["query-id"], ins["instruction"])))
        where_ins = str(idir)
    elif "instruction" in queries.columns:
        instruction, where_ins = queries["instruction"], str(qdir)
    else:
        raise DataError(f"missing instructions: no {path / 'instruction'} folder and no instruction column in {qdir}")
    topics = pd.DataFrame({"qid": queries["_id"].to_numpy(), "query": queries["text"].to_numpy(),
                           "instruction": instruction.fillna("").astype(str).to_numpy(),
                           "base_qid": base_qid.to_numpy(), "variant": variant.to_numpy()})
    require_instructions(topics, ["instruction"], where_ins)

    rdir = need(["default", "data", "qrels"])
    judged = read_qrels_parquet(rdir)
    check_known_queries(judged, topics["qid"], str(rdir), str(qdir))
    jb, jv = split_qids(judged["qid"])
    qrels = {v: judged[(jv == v).to_numpy()].assign(qid=jb[(jv == v).to_numpy()].to_numpy()).reset_index(drop=True)
             for v in ("og", "changed")}
    where = {"og": f"{rdir} (-og rows)", "changed": f"{rdir} (-changed rows)"}
    qrels, where = _mapped(qrels, where, qrels_mapping)
    stats = _check_pair(qrels, where)

    tdir = need(["top_ranked"])
    cands = explode_lists(read_parquet(tdir, ["query-id", "corpus-ids"]), "query-id", "corpus-ids", str(tdir))
    require_candidates(cands, str(tdir))
    check_known_queries(cands, topics["qid"], str(tdir), str(qdir))
    check_unique(cands["qid"] + "\t" + cands["docno"], str(tdir), "candidate (query, document)")
    cands = in_topic_order(cands, topics)

    ddir = _folder(path, ["qrel_diff"], lang)
    if ddir is not None:
        changed = explode_lists(read_parquet(ddir, ["query-id", "corpus-ids"]), "query-id", "corpus-ids", str(ddir))
        check_known_queries(changed, topics["base_qid"], str(ddir), str(qdir))
    else:
        from ..measures import changed_docs
        changed = changed_docs(qrels["og"], qrels["changed"])
    base = (topics.pivot(index="base_qid", columns="variant", values="instruction")
            .reindex(pd.unique(topics["base_qid"])).add_prefix("instruction_").reset_index()
            .rename(columns={"base_qid": "qid"}))
    base.insert(1, "query", topics.drop_duplicates("base_qid")["query"].to_numpy())
    base.columns.name = None
    return Benchmark(
        topics=topics, qrels=paired_qrels(qrels), corpus=DocStore(need(["corpus"])), variants=("og", "changed"),
        candidates=cands, changed=changed, base_topics=base,
        notes={"layout": "mteb" + (f"-{lang}" if lang else ""), "qrels_mapping": qrels_mapping,
               "changed_docs": "qrel_diff" if ddir is not None else "qrels", **stats})


#: The files of the original layout, in the order they are checked (docs/data.md lists their fields).
ORIGINAL_FILES = ("queries.jsonl", "corpus.jsonl", "qrels_og/test.jsonl", "qrels_changed/test.jsonl",
                  "top_ranked.jsonl")


def read(path: Path, lang: Optional[str] = None, qrels_mapping: str = "as-named",
         expected: Optional[str] = None) -> Benchmark:
    """Either layout, detected from the files (``queries.jsonl`` → original, else mteb parquet). ``expected="original"``
    (a registered original-layout id): a folder with neither layout's queries is reported as missing the original
    layout's files."""
    if lang is None and is_original_layout(path):
        return read_original(path, qrels_mapping)
    if expected == "original" and _folder(Path(path), ["queries"], lang) is None:
        missing = [f for f in ORIGINAL_FILES if not (Path(path) / f).is_file()]
        raise DataError(f"{path} holds no FollowIR files: expected the original FollowIR layout (as in the hub "
                        f"repository: {', '.join(ORIGINAL_FILES)}; docs/data.md lists their fields); missing: "
                        f"{', '.join(missing)}. A copy of the mteb layout (queries/, corpus/, … parquet folders) is "
                        f"also read")
    return read_mteb(path, lang, qrels_mapping)


@layout("bundled", "followir")
def _read_original_entry(entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    return read(folder, qrels_mapping=qrels_mapping, expected="original" if entry.repo_id else None)


@layout("followir-mteb", "mfollowir")
def _read_mteb_entry(entry, folder: Path, qrels_mapping: str = "as-named") -> Benchmark:
    return read_mteb(folder, entry.lang, qrels_mapping)
