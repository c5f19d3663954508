"""INSTFOL@K over runs (IFIR paper §4.1, App. B; the IFIR repository's ``GEval``): judge the top-K passages of the
no-instruction run (qid ``<base>_0`` or the base qid) and of the instruction run (``<base>_<level>``) of every
(query, level) with the level's prompt, then apply :mod:`pyterrier_instruct.measures.instfol`.

The judge's instruction is ``query + " " + instruction`` for both runs; the document is ``title + " " + text`` (or
``text``). At most 2 × K judge calls per (query, level); a pair judged before (either run, another level, system or
evaluation) is judged once.
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

import pandas as pd

from ..measures.ifir import top_k
from ..measures.instfol import PER_QUERY_COLUMNS, InstfolResult, instfol_query, instfol_summary
from ..measures._runs import TIES, run_frame
from ..prompts import ifir_judge_prompt
from .judge import IFIRJudge, JudgeItem


def level_topics(topics: pd.DataFrame) -> pd.DataFrame:
    """``qid, base_qid, level, query, instruction`` of every topic row: from the ``base_qid``/``variant`` columns of
    the IFIR loader, else from qids ``<base>_<level>``."""
    missing = [c for c in ("qid", "query", "instruction") if c not in topics.columns]
    if missing:
        raise ValueError(f"INSTFOL topics lack column(s) {missing}; found {list(topics.columns)}")
    qid = topics["qid"].astype(str)
    if "base_qid" in topics.columns and "variant" in topics.columns:
        base, level = topics["base_qid"].astype(str), topics["variant"].astype(str)
    else:
        parts = qid.str.rsplit("_", n=1)
        if not (parts.str.len() == 2).all():
            bad = qid[parts.str.len() != 2].iloc[0]
            raise ValueError(f"INSTFOL topics need base_qid/variant columns or qids '<base>_<level>'; got qid {bad!r}")
        base, level = parts.str[0], parts.str[1]
    return pd.DataFrame({"qid": qid.to_numpy(), "base_qid": base.to_numpy(), "level": level.to_numpy(),
                         "query": topics["query"].astype(str).to_numpy(),
                         "instruction": topics["instruction"].fillna("").astype(str).to_numpy()})


def no_instruction_topics(topics: pd.DataFrame) -> pd.DataFrame:
    """The no-instruction topics of an IFIR topic frame: its level-0 rows, or (layouts without level 0, e.g. mteb's)
    one row ``<base>_0`` per base query with its query text and an empty instruction."""
    lv = level_topics(topics)
    zero = topics[(lv["level"] == "0").to_numpy()]
    if len(zero):
        return zero.copy()
    first = lv.drop_duplicates("base_qid")
    return pd.DataFrame({"qid": first["base_qid"] + "_0", "query": first["query"], "instruction": "",
                         "base_qid": first["base_qid"], "variant": "0"}).reset_index(drop=True)


def doc_texts(docs, docnos: Sequence[str]) -> Dict[str, str]:
    """``{docno: text}`` for ``docnos`` (``title + " " + text`` when a title is non-empty) from: a ``{docno: text}`` or
    ``{docno: (title, text)}`` / ``{docno: {"title", "text"}}`` mapping; a frame with ``docno``, ``text`` (and
    ``title``); a plugin dataset or DocStore (only these documents are read); or anything with ``get_corpus_iter()``."""
    wanted = list(dict.fromkeys(str(d) for d in docnos))
    found: Dict[str, Tuple[str, str]] = {}
    if isinstance(docs, Mapping):
        for d in wanted:
            if d in docs:
                v = docs[d]
                found[d] = (str(v.get("title") or ""), str(v.get("text") or "")) if isinstance(v, Mapping) else \
                    (str(v[0] or ""), str(v[1] or "")) if isinstance(v, (tuple, list)) else ("", str(v))
    elif isinstance(docs, pd.DataFrame):
        if "docno" not in docs.columns or "text" not in docs.columns:
            raise ValueError(f"INSTFOL docs frame needs columns docno and text (title optional): {list(docs.columns)}")
        part = docs[docs["docno"].astype(str).isin(set(wanted))]
        titles = part["title"] if "title" in part.columns else pd.Series([""] * len(part), index=part.index)
        found = {str(d): (str(t) if isinstance(t, str) else "", str(x) if isinstance(x, str) else "")
                 for d, t, x in zip(part["docno"], titles, part["text"])}
    else:
        store = docs if hasattr(docs, "get_many") else getattr(getattr(docs, "bench", None), "corpus", None)
        if store is not None:
            have = [d for d in wanted if d in store]
            found = {d: (t or "", x or "") for d, (t, x) in store.get_many(have).items()}
        elif hasattr(docs, "get_corpus_iter"):
            need = set(wanted)
            for doc in docs.get_corpus_iter():
                if str(doc["docno"]) in need:
                    found[str(doc["docno"])] = (str(doc.get("title") or ""), str(doc.get("text") or ""))
        else:
            raise TypeError("INSTFOL docs must be a mapping, a frame, a dataset or a DocStore, got "
                            f"{type(docs).__name__}")
    missing = [d for d in wanted if d not in found]
    if missing:
        raise ValueError(f"INSTFOL: {len(missing)} retrieved document(s) have no text in docs, e.g. {missing[:5]}")
    return {d: (f"{t} {x}" if t else x) for d, (t, x) in found.items()}


def _top_lists(run, k: int, ties: str, name: str) -> Dict[str, List[str]]:
    frame, _ = run_frame(run, name)
    top = top_k(frame, k, ties)
    return {str(q): list(g["docno"]) for q, g in top.groupby("qid", sort=False)}


def instfol(run_q, run_inst, topics: pd.DataFrame, docs, judge: IFIRJudge, *, dataset: str, k: int = 20,
            ties: str = "docno", scale: float = 100.0) -> InstfolResult:
    """INSTFOL@k of one IFIR subset.

    Args:
        run_q: the no-instruction run (``qid, docno, score``; qids ``<base>_0`` or the base qids).
        run_inst: the instruction run over the level qids ``<base>_<level>`` (one run over all topics may be both).
        topics: the subset's topics (``qid, query, instruction``); every row of level ≥ 1 is one (query, level).
        docs: document texts (see :func:`doc_texts`), e.g. the dataset itself.
        judge: an :class:`~pyterrier_instruct.evaluation.judge.IFIRJudge`.
        dataset: the IFIR subset key (``fiqa``, ``aila``, …; ``ifir/`` prefix allowed), which picks the judge prompts.
        k: the cut-off (20 in every IFIR table); ties: the top-k tie-break (``docno`` descending or ``input`` order).

    Returns an :class:`~pyterrier_instruct.measures.instfol.InstfolResult` (per query and level, per level, the
    dataset value ×``scale``, the judge's counters and settings; docs/measures.md).
    """
    if not isinstance(judge, IFIRJudge):
        raise TypeError(f"judge must be an IFIRJudge, got {type(judge).__name__}")
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    dataset = str(dataset)
    dataset = dataset[len("ifir/"):] if dataset.startswith("ifir/") else dataset
    lv = level_topics(topics)
    levels = lv[lv["level"] != "0"].drop_duplicates("qid")
    if len(levels) == 0:
        raise ValueError("INSTFOL: the topics have no instruction level (only level 0 rows)")
    prompts = {lvl: ifir_judge_prompt(dataset, lvl) for lvl in levels["level"].unique()}
    top_q, top_i = _top_lists(run_q, int(k), ties, "run_q"), _top_lists(run_inst, int(k), ties, "run_inst")
    zero = dict(zip(lv.loc[lv["level"] == "0", "qid"], lv.loc[lv["level"] == "0", "base_qid"]))
    by_base: Dict[str, List[str]] = {}
    for qid, docnos in top_q.items():  # a level-0 qid or the base qid itself
        by_base.setdefault(zero.get(qid, qid), docnos)
    plan = []
    for row in levels.itertuples(index=False):
        instruction = f"{row.query} {row.instruction}"
        plan.append((row, instruction, by_base.get(row.base_qid, []), top_i.get(row.qid, [])))
    texts = doc_texts(docs, [d for _, _, q, i in plan for d in q + i])
    items = [JudgeItem(prompts[row.level], instruction, d, texts[d]) for row, instruction, q, i in plan for d in q + i]
    judged = iter(judge.judge(items))
    rows = []
    for row, instruction, q, i in plan:
        q_scores = [next(judged).score for _ in q]
        i_scores = [next(judged).score for _ in i]
        value = instfol_query(q_scores, i_scores)
        rows.append({"dataset": dataset, "qid": row.qid, "base_qid": row.base_qid, "level": row.level,
                     "prompt": judge.prompt_id(prompts[row.level]), **value})
    per_query = pd.DataFrame(rows, columns=PER_QUERY_COLUMNS)
    return instfol_summary(per_query, k=int(k), scale=scale, judge=dict(judge.last), settings=judge.settings())
