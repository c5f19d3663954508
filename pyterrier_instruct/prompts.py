"""Prompt templates as data: every verbatim template of the pointwise (MODELS.md §2–§3.4) and listwise (§5) rerankers,
in one place.

``{query}`` is the composed query+instruction string (:mod:`pyterrier_instruct.instructions`), ``{text}`` the document
text. Templates are filled by plain substitution (one pass, ``str.replace``), so braces inside a query or document are
safe. Tests compare each string byte for byte with the normative JSON literals of MODELS.md.
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional


class TrueFalse(NamedTuple):
    """A true/false prompt: the template and the two answer words whose logits are compared. The token id is
    ``tokenizer.encode(word)[0]`` for seq2seq models (``▁true`` for T5) and ``get_vocab()[word]`` for causal LMs
    (``true``, no ``▁``), as in the references (MODELS §2, §3)."""
    template: str
    true_token: str
    false_token: str


PROMPTS: Dict[str, TrueFalse] = {
    # monoT5 (MODELS §2): no trailing space; the tokenizer appends </s>.
    'monot5': TrueFalse(
        "Query: {query} Document: {text} Relevant:",
        'true', 'false'),
    # FollowIR-7B (§3.1): literal <s> plus the tokenizer's BOS (two BOS tokens, kept for parity); trailing space.
    'followir_7b': TrueFalse(
        "<s> [INST] You are an expert Google searcher, whose job is to determine if the following document is relevant to the query (true/false). Answer using only one word, one of those two choices.\n\nQuery: {query}\nDocument: {text}\nRelevant (only output one word, either \"true\" or \"false\"): [/INST] ",
        'true', 'false'),
    # Mistral-7B-Instruct-v0.2 as in the FollowIR repository (§3.2).
    'mistral_followir': TrueFalse(
        "<s>[INST] You are an expert Google searcher, whose job is to determine if the following document is relevant to the query (true/false).\nQuery: {query}\nDocument: {text}\nRelevant (either \"true\" or \"false\"): [/INST]",
        'true', 'false'),
    # Mistral-7B-Instruct-v0.2 as in the InfoSearch repository: 24 spaces of indentation on lines 2-4 (§3.2).
    'mistral_infosearch': TrueFalse(
        "<s>[INST] You are an expert Google searcher, whose job is to determine if the following document is relevant to the query (true/false).\n                        Query: {query}\n                        Document: {text}\n                        Relevant (either \"true\" or \"false\"): [/INST]",
        'true', 'false'),
    # Llama-2 chat template (§3.3), chosen by the reference for model names containing 'chat'.
    'llama_chat': TrueFalse(
        "<s>[INST] <<SYS>>\nYou are an expert at finding information. Determine if the following document is relevant to the query (true/false).\n<</SYS>>Query: {query}\nDocument: {text}\nRelevant: [/INST]",
        'true', 'false'),
    # plain Llama template (§3.3, InfoSearch's Llama-3.1-8B-Instruct): trailing space after 'Relevant:'.
    'llama': TrueFalse(
        "Determine if the following document is relevant to the query (true/false).\n\nQuery: {query}\nDocument: {text}\nRelevant: ",
        'true', 'false'),
    # FLAN-T5 yes/no (§3.4).
    'flan_t5': TrueFalse(
        "Is the following passage relevant to the query?\nQuery: {query}\nPassage: {text}",
        'yes', 'no'),
    # GritLM reranker (§3.4): note the missing space in 'query.Only'.
    'gritlm': TrueFalse(
        "<|user|>\nRank the passage based on its relevance to the search query (true/false) {query}.\n\n{text}\n\nSearch Query: {query}.\n\nDetermine the passage's relevance to the search query.Only respond with true or false, do not say any other word or explain.\n<|assistant|>\n",
        'true', 'false'),
}
PROMPTS['mt5_mmarco'] = TrueFalse(PROMPTS['monot5'].template, 'yes', 'no')  # mT5 mMARCO checkpoints (§2)


def render(template: str, query: str, text: str) -> str:
    """Fills ``{query}`` and ``{text}`` in one pass (a ``{text}`` inside the query is not substituted again)."""
    head, sep, tail = template.partition("{text}")
    if not sep:
        raise ValueError(f"template has no {{text}} placeholder: {template!r}")
    return head.replace("{query}", query) + text + tail.replace("{query}", query)


# -- listwise (MODELS §5) ---------------------------------------------------------------------------------------------

class Listwise(NamedTuple):
    """A listwise ranking prompt. Single-turn presets send ``[system, user]`` with user = ``prefix + "\\n"`` + one
    ``body`` line per passage + ``suffix``; ``multi_turn`` presets (RankGPT) send the prefix, then one user/assistant
    exchange per passage (``body`` / ``ack``), then the suffix. ``{num}``, ``{query}``, ``{example}``, ``{rank}`` and
    ``{passage}`` are filled by plain substitution. ``mask_query``: rewrite ``[<digits>]`` in the query too (passages
    always). ``chat_template``: a Jinja template used only when the checkpoint's tokenizer has none.
    ``budget_window``: the passage word limit starts at ``300 × budget_window / window length`` (rank_llm's open
    models use 20; RankGPT uses the reranker's window size, ``None``)."""
    system: str
    prefix: str
    body: str
    suffix: str
    example: str = "[2] > [1]"
    multi_turn: bool = False
    opening: str = ""
    ack: str = ""
    mask_query: bool = True
    chat_template: Optional[str] = None
    budget_window: Optional[int] = 20


_RANKLLM_PREFIX = "I will provide you with {num} passages, each indicated by a numerical identifier []. Rank the passages based on their relevance to the search query: {query}.\n"
_RANKLLM_SUFFIX = "Search Query: {query}.\nRank the {num} passages above based on their relevance to the search query. All the passages should be included and listed using identifiers, in descending order of relevance. The output format should be [] > [], e.g., {example}, Only respond with the ranking results, do not say any word or explain."
#: fastchat's ``vicuna_v1.1`` conversation (system, ``USER: … ASSISTANT:``), which rank_llm used for RankVicuna.
VICUNA_CHAT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] + ' ' }}"
    "{% elif m['role'] == 'user' %}{{ 'USER: ' + m['content'] + ' ' }}"
    "{% else %}{{ 'ASSISTANT: ' + m['content'] + eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")

LISTWISE: Dict[str, Listwise] = {
    # RankZephyr as rank_llm's ZephyrReranker ran it in 2024 (InfoSearch): no final period in the system message,
    # variable_passages=True example, a blank line after the prefix.
    'rank_zephyr': Listwise(
        "You are RankLLM, an intelligent assistant that can rank passages based on their relevancy to the query",
        _RANKLLM_PREFIX, "[{rank}] {passage}\n", _RANKLLM_SUFFIX),
    # rank_llm >= mid-2025: no blank line after the prefix, a different closing sentence; the CLI's system message.
    'rankllm_2025': Listwise(
        "You are RankLLM, an intelligent assistant that can rank passages based on their relevancy to the query.",
        _RANKLLM_PREFIX[:-1], "[{rank}] {passage}\n",
        "Search Query: {query}.\nRank the {num} passages above based on their relevance to the search query. All the passages should be included and listed using identifiers, in descending order of relevance. The output format should be [] > [], e.g., {example}, Answer concisely and directly and only respond with the ranking results, do not say any word or explain."),
    # RankVicuna (rank_llm VicunaReranker, 2024): fastchat's default vicuna system message, variable_passages=False.
    'rank_vicuna': Listwise(
        "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, detailed, and polite answers to the user's questions.",
        _RANKLLM_PREFIX, "[{rank}] {passage}\n", _RANKLLM_SUFFIX, example="[4] > [2]", chat_template=VICUNA_CHAT_TEMPLATE),
    # RankGPT multi-turn (rank_llm SafeOpenai, 2024; MODELS §5.7): passages masked, the query not.
    'rank_gpt': Listwise(
        "You are RankGPT, an intelligent assistant that can rank passages based on their relevancy to the query.",
        "I will provide you with {num} passages, each indicated by number identifier []. \nRank the passages based on their relevance to query: {query}.",
        "[{rank}] {passage}",
        "Search Query: {query}. \nRank the {num} passages above based on their relevance to the search query. The passages should be listed in descending order using identifiers. The most relevant passages should be listed first. The output format should be [] > [], e.g., {example}. Only response the ranking results, do not say any word or explain.",
        example="[1] > [2]", multi_turn=True, opening="Okay, please provide the passages.", ack="Received passage [{rank}].",
        mask_query=False, budget_window=None),
}
