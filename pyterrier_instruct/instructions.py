"""The instruction data model: one place for joining instructions to queries and for paired topics.

Topics carry ``qid, query, instruction``; a missing ``instruction`` column means the empty
instruction. The instruction is never baked into ``query`` at load time: stages that only read
``query`` get it through :class:`~pyterrier_instruct.rewrite.FoldInstruction`, which keeps the original query as ``query_0``.

Paired evaluation (FollowIR, InfoSearch) gives each instruction variant of a base query its own qid
``<base_qid>-<variant>`` (the mteb convention), in topics, runs and qrels alike, with ``base_qid``
and ``variant`` columns beside it.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Mapping, Optional, Tuple

import numpy as np
import pandas as pd

from .prompts import MXBAI_V2, QWEN3_EMBEDDING_QUERY, QWEN3_RERANKER_COMPOSER, fill

#: Suffixes of the paired-evaluation variants, in canonical order.
VARIANTS: Tuple[str, ...] = ("og", "changed", "reversed")

#: The ``append`` composer: instruction after the query, stripped, so an empty instruction gives the query itself (the
#: FollowIR repository, mteb's reranking evaluators, the InfoSearch repository ``eval.py``, IFIR App. B).
DEFAULT_COMPOSER = "{query} {instruction}"


def compose(query: str, instruction: Optional[str] = "", composer: str = DEFAULT_COMPOSER) -> str:
    """Joins a query and an instruction with ``composer`` (a format string over ``{query}`` and ``{instruction}``, or the
    name of a rule in :data:`COMPOSERS`), stripped.

    With the default composer an empty (or ``None``) instruction reproduces ``query.strip()``.
    """
    check_composer(composer, "compose")
    if composer in COMPOSERS and composer != "append":
        return COMPOSERS[composer](query, instruction)
    composer = DEFAULT_COMPOSER if composer == "append" else composer
    return composer.format(query=query, instruction=instruction or "").strip()


#: TART-FLAN-T5's composer as FollowIR ran it (FollowIR repository, TART evaluation): ``"{query} [SEP] {instruction}"``,
#: an empty instruction replaced by :data:`TART_EMPTY_INSTRUCTION`.
TART_COMPOSER = "{query} [SEP] {instruction}"
TART_EMPTY_INSTRUCTION = "Retrieve news paper paragraph to answer this question"
#: InstructIR's native order, as its data stores the instructed queries (InstructIR repository; mteb's InstructIR task).
INSTRUCTIR_COMPOSER = "{instruction} [SEP] {query}"


def _question_mark(query: str) -> str:
    """``"?"`` unless the stripped query ends in ``.``, ``?`` or ``!`` (or is empty, where the reference fails)."""
    q = query.strip()
    return "" if not q or q[-1] in ".?!" else "?"


def compose_mteb(query: str, instruction: Optional[str] = "") -> str:
    """mteb's default for bi-encoders on instruction-retrieval tasks: ``f"{query.strip()} {instruction}".strip()``."""
    return f"{str(query).strip()} {instruction or ''}".strip()


def compose_promptriever(query: str, instruction: Optional[str] = "") -> str:
    """Promptriever/RepLLaMA, the tevatron fork's ``format_query`` (Promptriever repository) without its ``"query:  "``
    prefix: ``q.strip() + "?" (unless it ends in .?!) + " " + p.strip()``; an empty instruction gives ``q.strip()``."""
    q, p = str(query).strip(), (instruction or "").strip()
    return f"{q}{_question_mark(q)} {p}" if p else q


def compose_promptriever_mteb(query: str, instruction: Optional[str] = "") -> str:
    """Promptriever as mteb runs it (mteb's Promptriever model wrapper, FollowIR and InstructIR tasks): ``f"{q}{'?' if ...} {i}".strip()``, the ``?``
    added even when the instruction is empty, the query itself not stripped first."""
    q = str(query)
    return f"{q}{_question_mark(q)} {instruction or ''}".strip()


def compose_qwen3_reranker(query: str, instruction: Optional[str] = "") -> str:
    """Qwen3-Reranker's ``"<Instruct>: {instruction}\\n<Query>: {query}"`` (QwenLM/Qwen3-Embedding README,
    ``format_instruction``), nothing stripped; the caller replaces an empty instruction by the model's default."""
    return fill(QWEN3_RERANKER_COMPOSER, instruction=instruction or "", query=query)


def compose_qwen3_embedding(query: str, instruction: Optional[str] = "") -> str:
    """Qwen3-Embedding's ``f"Instruct: {task}\\nQuery:{query}"`` (QwenLM/Qwen3-Embedding README,
    ``get_detailed_instruct``), nothing stripped; the caller replaces an empty instruction by the model's default."""
    return fill(QWEN3_EMBEDDING_QUERY, instruction=instruction or "", query=query)


def compose_mxbai_v2(query: str, instruction: Optional[str] = "") -> str:
    """mxbai-rerank-v2's query part (AnswerDotAI rerankers 0.10.0, ``MxBaiV2Ranker._prepare_batch``): ``"query: {query}"``,
    preceded by ``"instruction: {instruction}\\n"`` when the instruction is non-empty; nothing stripped."""
    text = fill(MXBAI_V2["query"], query=query)
    return fill(MXBAI_V2["instruction"], instruction=instruction) + MXBAI_V2["sep"] + text if instruction else text


def compose_rank1(query: str, instruction: Optional[str] = "") -> str:
    """rank1's rule (orionw/rank1 ``rank1.py``, ``predict``): ``f"{query} {instruction}".strip()``, or ``query.strip()``
    when the query and the instruction are the same text (stripped)."""
    q, i = str(query), instruction or ""
    return q.strip() if q.strip() == i.strip() else f"{q} {i}".strip()


#: Joining rules that are functions rather than format strings, by name; ``composer=<name>`` uses them.
COMPOSERS: Dict[str, Callable[[str, Optional[str]], str]] = {
    "append": compose,
    "mteb": compose_mteb,
    "promptriever": compose_promptriever,
    "promptriever_mteb": compose_promptriever_mteb,
    "qwen3_reranker": compose_qwen3_reranker,
    "qwen3_embedding": compose_qwen3_embedding,
    "mxbai_v2": compose_mxbai_v2,
    "rank1": compose_rank1,
}

#: E5-Mistral as FollowIR ran it (FollowIR repository ``models/e5/evaluate_e5.py``): the instruction that replaces an
#: empty one (appended like any instruction).
E5_EMPTY_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


def check_composer(composer, owner: str) -> str:
    """``composer`` if it is a rule name of :data:`COMPOSERS` or a format string with a ``{query}`` field, else a
    ValueError naming ``owner``'s ``composer`` parameter."""
    if not isinstance(composer, str) or (composer not in COMPOSERS and "{query}" not in composer):
        raise ValueError(f"{owner}: composer must be one of {sorted(COMPOSERS)} or a format string with a {{query}} field "
                         f"(and usually {{instruction}}), got {composer!r}")
    return composer


def compose_frame(df: pd.DataFrame, composer: str = DEFAULT_COMPOSER, default_instruction: str = "",
                  empty_instruction: Optional[str] = None) -> np.ndarray:
    """The composed string for every row of ``df`` (``query`` + optional ``instruction`` columns);
    ``composer`` is a format string or the name of a rule in :data:`COMPOSERS`; ``empty_instruction`` replaces
    empty instructions (TART, E5-Mistral as run for FollowIR)."""
    check_composer(composer, "compose_frame")
    instructions = instructions_of(df, default_instruction)
    if empty_instruction is not None:
        instructions = instructions.where(instructions.str.strip() != "", empty_instruction)
    composer = DEFAULT_COMPOSER if composer == "append" else composer
    if composer in COMPOSERS:
        rule = COMPOSERS[composer]
        return np.array([rule(q, i) for q, i in zip(df["query"].astype(str), instructions)], dtype=object)
    if composer == DEFAULT_COMPOSER:  # vectorised fast path for the common composer
        return (df["query"].astype(str) + " " + instructions).str.strip().to_numpy(dtype=object)
    return np.array([compose(q, i, composer) for q, i in zip(df["query"], instructions)], dtype=object)


def instructions_of(df: pd.DataFrame, default: str = "") -> pd.Series:
    """The ``instruction`` column of ``df`` with missing values (or a missing column) as ``default``."""
    if "instruction" not in df.columns:
        return pd.Series(default, index=df.index, dtype=object)
    return df["instruction"].fillna(default).astype(str)


def paired_qid(base_qid: str, variant: str) -> str:
    """``"305", "og"`` → ``"305-og"``."""
    return f"{base_qid}-{variant}"


def split_qid(qid: str) -> Tuple[str, Optional[str]]:
    """``"305-og"`` → ``("305", "og")``; a qid without a known variant suffix → ``(qid, None)``."""
    base, sep, variant = str(qid).rpartition("-")
    if sep and variant in VARIANTS:
        return base, variant
    return str(qid), None


def split_qids(qids: pd.Series) -> Tuple[pd.Series, pd.Series]:
    """Vectorised :func:`split_qid`: (base_qid, variant) series; variant is NaN where absent.

    Splits each distinct qid once (a run repeats its qid on every row).
    """
    codes, uniques = pd.factorize(qids.astype(str))
    uniques = pd.Series(uniques, dtype=object)
    parts = uniques.str.rsplit("-", n=1, expand=True)
    if parts.shape[1] < 2:
        base, variant = uniques, pd.Series(np.nan, index=uniques.index, dtype=object)
    else:
        has = parts[1].isin(VARIANTS)
        base, variant = parts[0].where(has, uniques), parts[1].where(has, np.nan)
    return (pd.Series(base.to_numpy(dtype=object)[codes], index=qids.index, dtype=object),
            pd.Series(variant.to_numpy(dtype=object)[codes], index=qids.index, dtype=object))


def paired_topics(topics: pd.DataFrame, variants: Iterable[str] = ("og", "changed")) -> pd.DataFrame:
    """Builds paired topics from a frame with ``instruction_<variant>`` columns.

    Input: ``qid, query, instruction_og, instruction_changed[, instruction_reversed]``.
    Output: one row per (query, variant) with ``qid=<qid>-<variant>``, ``query``, ``instruction``,
    ``base_qid`` and ``variant``, ordered by base query then variant (group-contiguous).
    """
    variants = list(variants)
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r}; expected one of {VARIANTS}")
    missing = [c for c in ["qid", "query"] + [f"instruction_{v}" for v in variants] if c not in topics.columns]
    if missing:
        raise KeyError(f"paired_topics: topics frame lacks column(s) {missing}; found {list(topics.columns)}")
    keep = [c for c in topics.columns if c not in ("qid", "query") and not c.startswith("instruction_")]
    frames = []
    for order, v in enumerate(variants):
        f = pd.DataFrame({
            "qid": topics["qid"].astype(str) + f"-{v}",
            "query": topics["query"].values,
            "instruction": topics[f"instruction_{v}"].fillna("").astype(str).values,
            "base_qid": topics["qid"].astype(str).values,
            "variant": v,
        })
        for c in keep:
            f[c] = topics[c].values
        f["_pos"] = np.arange(len(f))
        f["_order"] = order
        frames.append(f)
    out = pd.concat(frames, ignore_index=True).sort_values(["_pos", "_order"], kind="stable")
    return out.drop(columns=["_pos", "_order"]).reset_index(drop=True)


def paired_qrels(qrels: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Builds paired qrels from per-variant qrels frames.

    ``qrels`` maps a variant (``"og"``, ``"changed"``, ``"reversed"``) to a ``qid, docno, label``
    frame keyed by base qid. The output is keyed by ``<qid>-<variant>`` with ``base_qid`` and
    ``variant`` columns; labels stay integers.
    """
    frames = []
    for v, q in qrels.items():
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r}; expected one of {VARIANTS}")
        missing = [c for c in ("qid", "docno", "label") if c not in q.columns]
        if missing:
            raise KeyError(f"paired_qrels: qrels for variant {v!r} lack column(s) {missing}; found {list(q.columns)}")
        frames.append(pd.DataFrame({
            "qid": q["qid"].astype(str) + f"-{v}",
            "docno": q["docno"].astype(str).values,
            "label": q["label"].astype("int64").values,
            "base_qid": q["qid"].astype(str).values,
            "variant": v,
        }))
    return pd.concat(frames, ignore_index=True)


def variant_frame(df: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The rows of a paired frame (topics, run or qrels) that belong to ``variant``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    _, variants = split_qids(df["qid"])
    return df[(variants == variant).to_numpy()].reset_index(drop=True)


def by_variant(df: pd.DataFrame) -> Dict[str, pd.DataFrame]:
    """Splits a paired frame (topics, run or qrels) into ``{variant: rows keyed by base qid}``, row order kept."""
    base, variants = split_qids(df["qid"])
    out = {}
    for v in VARIANTS:
        mask = (variants == v).to_numpy()
        if mask.any():
            part = df[mask].copy()
            part["qid"] = base[mask].to_numpy()
            out[v] = part.reset_index(drop=True)
    return out
