"""The instruction data model: one place for joining instructions to queries and for paired topics.

Topics carry ``qid, query, instruction``; a missing ``instruction`` column means the empty instruction. The instruction
is never baked into ``query`` at load time: stages that only read ``query`` get it through
:class:`~pyterrier_instruct.rewrite.FoldInstruction`, which keeps the original query as ``query_0``. An
instruction-aware stage reads the prompt view (:func:`query_instructions`: the query unfolded, its one default
instruction applied) and fills its template's ``{query}`` slot with :meth:`QuerySlot.frame`, the one function that
joins a query and an instruction.

Paired evaluation (FollowIR, InfoSearch) gives each instruction variant of a base query its own qid
``<base_qid>-<variant>`` (the mteb convention), in topics, runs and qrels alike, with ``base_qid``
and ``variant`` columns beside it.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Mapping, NamedTuple, Optional, Tuple

import numpy as np
import pandas as pd

#: Suffixes of the paired-evaluation variants, in canonical order.
VARIANTS: Tuple[str, ...] = ("og", "changed", "reversed")

#: The default composer: instruction after the query, stripped, so an empty instruction gives the query itself (the
#: FollowIR repository, mteb's reranking evaluators, the InfoSearch repository ``eval.py``, IFIR App. B).
DEFAULT_COMPOSER = "{query} {instruction}"

#: TART-FLAN-T5's composer as FollowIR ran it (FollowIR repository, TART evaluation): ``"{query} [SEP] {instruction}"``,
#: an empty instruction replaced by :data:`TART_EMPTY_INSTRUCTION`.
TART_COMPOSER = "{query} [SEP] {instruction}"
TART_EMPTY_INSTRUCTION = "Retrieve news paper paragraph to answer this question"
#: InstructIR's native order, as its data stores the instructed queries (InstructIR repository; mteb's InstructIR task).
INSTRUCTIR_COMPOSER = "{instruction} [SEP] {query}"
#: E5-Mistral as FollowIR ran it (FollowIR repository ``models/e5/evaluate_e5.py``): the instruction that replaces an
#: empty one (appended like any instruction).
E5_EMPTY_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


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
    """Promptriever as mteb runs it (mteb's Promptriever model wrapper, FollowIR and InstructIR tasks): ``f"{q}{'?' if
    ...} {i}".strip()``, the ``?`` added even when the instruction is empty, the query itself not stripped first."""
    q = str(query)
    return f"{q}{_question_mark(q)} {instruction or ''}".strip()


def compose_rank_llm(query: str, instruction: Optional[str] = "") -> str:
    """rank_llm's listwise prompts: ``f"{query} {instruction}".strip()``, and the query exactly as given (not stripped:
    rank_llm passes ``query.text``) when the instruction is empty or blank."""
    instruction = instruction or ""
    return f"{query} {instruction}".strip() if instruction.strip() else str(query)


def compose_mxbai_v2(query: str, instruction: Optional[str] = "") -> str:
    """mxbai-rerank-v2's query part (AnswerDotAI rerankers 0.10.0, ``MxBaiV2Ranker._prepare_batch``): ``"query:
    {query}"``, preceded by ``"instruction: {instruction}\\n"`` when the instruction is non-empty; nothing stripped."""
    text = f"query: {query}"
    return f"instruction: {instruction}\n{text}" if instruction else text


def compose_verbatim(query: str, instruction: Optional[str] = "") -> str:
    """The query exactly as given, nothing stripped: the ``{query}`` slot of a template that places ``{instruction}``
    itself (Qwen3-Reranker, Qwen3-Embedding, whose reference code formats the raw query)."""
    return str(query)


def _format(composer: str) -> Callable[[str, Optional[str]], str]:
    return lambda query, instruction: composer.format(query=query, instruction=instruction or "").strip()


def compose_rank1(query: str, instruction: Optional[str] = "") -> str:
    """rank1's rule (orionw/rank1 ``rank1.py``, ``predict``): ``f"{query} {instruction}".strip()``, or ``query.strip()``
    when the query and the instruction are the same text (stripped)."""
    q, i = str(query), instruction or ""
    return q.strip() if q.strip() == i.strip() else f"{q} {i}".strip()


#: Joining rules that are functions rather than format strings, by name; ``composer=<name>`` uses them.
COMPOSERS: Dict[str, Callable[[str, Optional[str]], str]] = {
    "append": _format(DEFAULT_COMPOSER),
    "mteb": compose_mteb,
    "promptriever": compose_promptriever,
    "promptriever_mteb": compose_promptriever_mteb,
    "rank_llm": compose_rank_llm,
    "mxbai_v2": compose_mxbai_v2,
    "verbatim": compose_verbatim,
    "rank1": compose_rank1,
}


def check_composer(composer, owner: str) -> str:
    """``composer`` if it is a rule name of :data:`COMPOSERS` or a format string with a ``{query}`` field, else a
    ValueError naming ``owner``'s ``composer`` parameter."""
    if not isinstance(composer, str) or (composer not in COMPOSERS and "{query}" not in composer):
        raise ValueError(f"{owner}: composer must be one of {sorted(COMPOSERS)} or a format string with a {{query}} "
                         f"field (and usually {{instruction}}), got {composer!r}")
    return composer


class QuerySlot(NamedTuple):
    """Where a template's instruction goes: the template's ``{query}`` slot is filled with ``composer`` over the query
    and the instruction (a format string over ``{query}`` and ``{instruction}``, the result stripped, or the name of a
    rule in :data:`COMPOSERS`); an empty instruction drops out with its separator (``"{query} {instruction}"`` gives the
    query, stripped). What replaces a missing or blank instruction is the stage's ``instruction=`` (TART, E5-Mistral,
    Qwen3's default task): :func:`query_instructions` applies it, once, before any slot is filled.

    A template that names ``{instruction}`` itself (e.g. ``"<Instruct>: {instruction}\\n<Query>: {query}"``) pairs with
    ``QuerySlot("verbatim")``: its ``{instruction}`` is filled with the same instruction.
    """
    composer: str = DEFAULT_COMPOSER

    def frame(self, view: pd.DataFrame) -> np.ndarray:
        """The ``{query}`` slot's text for every row of a prompt view (:func:`query_instructions`): the one place a
        query and its instruction are joined."""
        queries, instructions = view["query"].astype(str), view["instruction"].astype(str)
        if self.composer == DEFAULT_COMPOSER:  # vectorised fast path for the common composer
            return (queries + " " + instructions).str.strip().to_numpy(dtype=object)
        rule = COMPOSERS.get(self.composer) or _format(self.composer)
        return np.array([rule(q, i) for q, i in zip(queries, instructions)], dtype=object)


def query_slot(value, owner: str) -> QuerySlot:
    """A checked :class:`QuerySlot` from a ``query_slot=`` argument (a QuerySlot, or a composer: a format string or rule
    name); errors name ``owner``."""
    slot = value if isinstance(value, QuerySlot) else QuerySlot(value)
    check_composer(slot.composer, owner)
    return slot


def compose(query: str, instruction: Optional[str] = "", composer: str = DEFAULT_COMPOSER) -> str:
    """Joins a query and an instruction with ``composer`` (a format string over ``{query}`` and ``{instruction}``, or
    the name of a rule in :data:`COMPOSERS`), stripped.

    With the default composer an empty (or ``None``) instruction reproduces ``query.strip()``.
    """
    view = pd.DataFrame({"query": [query], "instruction": [instruction or ""]}, dtype=object)
    return query_slot(composer, "compose").frame(view)[0]


#: The column :class:`~pyterrier_instruct.rewrite.FoldInstruction` adds: the query it produced. A row whose ``query``
#: still equals it carries a folded query, and its unfolded query is ``query_0``.
FOLDED = "folded_query"


def folded_rows(df: pd.DataFrame) -> np.ndarray:
    """A boolean mask: the rows whose ``query`` is (still) the one FoldInstruction folded, ``query_0`` beside it."""
    if FOLDED not in df.columns or "query_0" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return (df["query"].astype(str) == df[FOLDED].astype(str)).to_numpy() & df["query_0"].notna().to_numpy()


def query_instructions(df: pd.DataFrame, default: str = "") -> pd.DataFrame:
    """The prompt view: ``df`` as every instruction-aware stage, dense model and cache reads it, built once per call;
    the one place the rules of the instruction data model apply:

    - ``instruction``: the row's, or ``default`` (the stage's ``instruction=``) where it is missing, NaN/None or blank
      (or the column is absent): one default for every way of having no instruction;
    - ``query``: the query the model reads; a row :class:`~pyterrier_instruct.rewrite.FoldInstruction` folded (its
      ``query`` still :data:`FOLDED`) reads its unfolded ``query_0``, so the instruction is never joined twice:
      ``FoldInstruction() >> bm25 >> reranker`` scores as
      ``FoldInstruction() >> bm25 >> pt.rewrite.reset() >> reranker``.
    """
    given = df["instruction"].fillna("").astype(str) if "instruction" in df.columns else pd.Series("", index=df.index)
    out = df.assign(instruction=given.where(given.str.strip() != "", default).to_numpy(dtype=object))
    folded = folded_rows(df)
    if folded.any():
        out["query"] = np.where(folded, df["query_0"].astype(object).to_numpy(), df["query"].to_numpy())
    return out


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
