"""Prompt templates as data: every verbatim template of the pointwise (pyterrier_t5, FollowIR's and InfoSearch's reranking code) and listwise (rank_llm) rerankers,
of IFIR's INSTFOL judge (IFIR_JUDGE_PROMPTS.md), and the promptable dense retrievers' query/passage strings and BEIR
prompts (§6, §9), in one place.

``{query}`` is the composed query+instruction string (:mod:`pyterrier_instruct.instructions`), ``{text}`` the document
text. Every template is filled by :func:`fill` (one pass), so braces inside a query or document are safe. Tests compare each string byte for byte with the normative JSON literals of MODELS.md (and the judge prompts with
``tests/data/ifir_judge_prompts.json``).
"""
from __future__ import annotations

import functools
import re
from typing import Dict, NamedTuple, Optional, Tuple

from .instructions import QuerySlot


class TrueFalse(NamedTuple):
    """A true/false prompt: the template and the two answer words whose logits are compared. The token id is
    ``tokenizer.encode(word)[0]`` for seq2seq models (``▁true`` for T5) and ``get_vocab()[word]`` for causal LMs
    (``true``, no ``▁``), as in the references (pyterrier_t5, FollowIR's ``rerank.py``). ``query_slot``: where the
    instruction goes in the ``{query}`` slot (default: appended, an empty one dropped); a template that names
    ``{instruction}`` itself pairs with ``QuerySlot("{query}")``."""
    template: str
    true_token: str
    false_token: str
    query_slot: QuerySlot = QuerySlot()


PROMPTS: Dict[str, TrueFalse] = {
    # monoT5 (pyterrier_t5, castorini's pygaggle): no trailing space; the tokenizer appends </s>.
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

# -- Qwen3-Reranker (QwenLM/Qwen3-Embedding at f4ad0c4, README "Reranker Model / Transformers Usage") -----------------
# The reference writes prefix + "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}" + suffix: the template
# names {instruction} in its own line, {query} is the query alone, as given (``QuerySlot("verbatim")``).
# The prompt of the official vLLM example differs (\n\n between fields, <|im_end|>\n twice) and is not used.
#: The default instruction of the Qwen3-Reranker/-Embedding README and model cards (their examples/ scripts and mteb use
#: "Given the user query, retrieval the relevant passages" instead).
QWEN3_DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
PROMPTS['qwen3_reranker'] = TrueFalse(
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {text}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    'yes', 'no', QuerySlot("verbatim"))
#: Qwen3-Embedding's query string (README "Embedding Model / Transformers Usage", ``get_detailed_instruct``): no space after
#: ``Query:``; documents carry no prefix. A dense query template naming ``{instruction}``
#: (``query_slot=QuerySlot("verbatim")``).
QWEN3_EMBEDDING_QUERY = "Instruct: {instruction}\nQuery:{query}"

# -- mxbai-rerank-v2 (AnswerDotAI rerankers 0.10.0, rerankers/models/mxbai_v2.py; mixedbread-ai/mxbai-rerank) ------------
# ids = prefix + [instruction + "\n"] query + "\n" + document + "\n" + task + suffix; score = logit("1") - logit("0").
# The query part (``instruction: ...\nquery: ...``) is the query slot's rule ``instructions.COMPOSERS['mxbai_v2']``.
MXBAI_V2 = {
    "prefix": "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\n",
    "suffix": "<|im_end|>\n<|im_start|>assistant\n",
    "task": "You are a search relevance expert who evaluates how well documents match search queries. For each query-document pair, carefully analyze the semantic relationship between them, then provide your binary relevance judgment (0 for not relevant, 1 for relevant).\nRelevance:",
    "sep": "\n",
    "document": "document: {text}",
    "true_token": "1",
    "false_token": "0",
}


class Reasoning(NamedTuple):
    """A reasoning reranker's prompt (raw text, no chat template): ``template`` over ``{query}``/``{text}`` opens the
    reasoning; generation ends at one of ``stop``; an unfinished reasoning is closed with ``forced`` (over ``{prompt}``
    and the cleaned ``{reasoning}``) and one step restricted to the two answer tokens follows. ``true_token`` and
    ``false_token`` are texts whose first token is the answer (a leading space: ``" true"``)."""
    template: str
    stop: Tuple[str, ...]
    forced: str
    true_token: str
    false_token: str


#: rank1 (Weller et al., 2025; orionw/rank1 at 30585c2f3166b3df03e3b8f2d496d6dc5db68a9b, ``rank1.py``: ``return_prompt``,
#: the ``SamplingParams`` stop strings, ``_fix_incomplete_responses``' forced prompt, the ``" true"``/``" false"`` ids).
RANK1 = Reasoning(
    "Determine if the following passage is relevant to the query. Answer only with 'true' or 'false'.\nQuery: {query}\nPassage: {text}\n<think>",
    ("</think> true", "</think> false"),
    "{prompt}\n{reasoning}\n</think>",
    " true", " false")


@functools.lru_cache(maxsize=64)
def _slots(names: Tuple[str, ...]):
    return re.compile(r"\{(" + "|".join(map(re.escape, names)) + r")\}")


def fill(template: str, **values) -> str:
    """Replaces each ``{name}`` given in ``values`` in one pass (a placeholder inside an inserted value is never
    substituted again; placeholders not given stay as they are). Every template of the package is filled this way."""
    if not values:
        return template
    return _slots(tuple(sorted(values))).sub(lambda m: str(values[m.group(1)]), template)


def render(template: str, query: str, text: str, instruction: Optional[str] = None) -> str:
    """Fills a pointwise template's ``{query}`` and ``{text}`` (and its ``{instruction}``, when given), in one pass."""
    if "{text}" not in template:
        raise ValueError(f"template has no {{text}} placeholder: {template!r}")
    if instruction is None:
        return fill(template, query=query, text=text)
    return fill(template, query=query, text=text, instruction=instruction)


# -- listwise: rank_llm's prompts (castorini/rank_llm), by version ---------------------------------------------------

class Listwise(NamedTuple):
    """A listwise ranking prompt. Single-turn presets send ``[system, user]`` with user = ``prefix + "\\n"`` + one
    ``body`` line per passage + ``suffix``; ``multi_turn`` presets (RankGPT) send the prefix, then one user/assistant
    exchange per passage (``body`` / ``ack``), then the suffix. ``{num}``, ``{query}``, ``{example}``, ``{rank}`` and
    ``{passage}`` are filled by plain substitution. ``mask_query``: rewrite ``[<digits>]`` in the query too (passages
    always). ``chat_template``: a Jinja template used only when the checkpoint's tokenizer has none.
    ``budget_window``: the passage word limit starts at ``300 × budget_window / window length`` (rank_llm <= 0.25: its
    open models use 20; RankGPT the reranker's window size, ``None``). ``fixed_words``: every window starts at 300
    words whatever its length (rank_llm 0.26 ``create_prompt``: ``max_length = self._max_passage_words``).
    ``alpha``: passages are identified by letters ``[A]``, ``[B]``, … instead of numbers (rank_llm ``use_alpha``:
    ``chr(64 + rank)``)."""
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
    fixed_words: bool = False
    query_slot: QuerySlot = QuerySlot("rank_llm")
    alpha: bool = False


_RANKLLM_SYSTEM = "You are RankLLM, an intelligent assistant that can rank passages based on their relevancy to the query"
_RANKLLM_PREFIX = "I will provide you with {num} passages, each indicated by a numerical identifier []. Rank the passages based on their relevance to the search query: {query}.\n"
_RANKLLM_SUFFIX = "Search Query: {query}.\nRank the {num} passages above based on their relevance to the search query. All the passages should be included and listed using identifiers, in descending order of relevance. The output format should be [] > [], e.g., {example}, Only respond with the ranking results, do not say any word or explain."
_RANKLLM_026_SUFFIX = "Search Query: {query}.\nRank the {num} passages above based on their relevance to the search query. All the passages should be included and listed using identifiers, in descending order of relevance. The output format should be [] > [], e.g., {example}, Answer concisely and directly and only respond with the ranking results, do not say any word or explain."
#: fastchat's ``vicuna_v1.1`` conversation (system, ``USER: … ASSISTANT:``): what rank_llm used for RankVicuna (fastchat
#: in <= 0.20; in 0.26 ``VllmHandler.get_tokenizer`` sets this template for any model path containing ``rank_vicuna``).
VICUNA_CHAT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] + ' ' }}"
    "{% elif m['role'] == 'user' %}{{ 'USER: ' + m['content'] + ' ' }}"
    "{% else %}{{ 'ASSISTANT: ' + m['content'] + eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")

# RankGPT's multi-turn prompt (Sun et al. 2023; sunnweiwei/RankGPT ``rank_gpt.py`` get_prefix_prompt/get_post_prompt,
# as rank_llm's SafeOpenai sent it in 2024): a space before the line breaks, passages masked, the query not.
_RANK_GPT = Listwise(
    "You are RankGPT, an intelligent assistant that can rank passages based on their relevancy to the query.",
    "I will provide you with {num} passages, each indicated by number identifier []. \nRank the passages based on their relevance to query: {query}.",
    "[{rank}] {passage}",
    "Search Query: {query}. \nRank the {num} passages above based on their relevance to the search query. The passages should be listed in descending order using identifiers. The most relevant passages should be listed first. The output format should be [] > [], e.g., {example}. Only response the ranking results, do not say any word or explain.",
    example="[1] > [2]", multi_turn=True, opening="Okay, please provide the passages.",
    ack="Received passage [{rank}].", mask_query=False, budget_window=None)

LISTWISE: Dict[str, Listwise] = {
    # RankZephyr as rank_llm <= 0.20 ran it (checked against 0.20.3; ``rerank/listwise/rank_listwise_os_llm.py``
    # ``_add_prefix_prompt``/``_add_post_prompt``): the template the RankZephyr checkpoint was trained and first
    # evaluated with (Pradeep et al. 2023, and InfoSearch's runs). No final period in the system message,
    # variable_passages=True example, a blank line after the prefix.
    'rank_zephyr': Listwise(_RANKLLM_SYSTEM, _RANKLLM_PREFIX, "[{rank}] {passage}\n", _RANKLLM_SUFFIX),
    # rank_llm 0.26.0 ``rerank/prompt_templates/rank_zephyr_template.yaml`` (used by ZephyrReranker and VicunaReranker):
    # no blank line after the prefix, "Answer concisely and directly", every window starts at 300 words.
    'rank_llm_0.26': Listwise(_RANKLLM_SYSTEM, _RANKLLM_PREFIX[:-1], "[{rank}] {passage}\n", _RANKLLM_026_SUFFIX,
                              fixed_words=True),
    # RankVicuna as rank_llm <= 0.20 ran it (VicunaReranker): fastchat's default vicuna system message,
    # variable_passages=False example.
    'rank_vicuna': Listwise(
        "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, detailed, and polite answers to the user's questions.",
        _RANKLLM_PREFIX, "[{rank}] {passage}\n", _RANKLLM_SUFFIX, example="[4] > [2]", chat_template=VICUNA_CHAT_TEMPLATE),
    'rank_gpt': _RANK_GPT,
    # rank_llm 0.26.0 ``rerank/prompt_templates/rank_gpt_template.yaml`` (SafeOpenai): no space before the line breaks,
    # the query masked too, every window starts at 300 words.
    'rank_gpt_0.26': _RANK_GPT._replace(prefix=_RANK_GPT.prefix.replace(" \n", "\n"),
                                        suffix=_RANK_GPT.suffix.replace(" \n", "\n"),
                                        mask_query=True, fixed_words=True),
    # FIRST (Reddy et al. 2024, castorini/first_mistral): rank_llm 0.26.0 ``rerank/prompt_templates/
    # rank_zephyr_alpha_template.yaml`` (the template of its FIRST configurations, ``server/flask/api.py``): the 0.26
    # RankZephyr prompt with letters for identifiers.
    'first': Listwise(_RANKLLM_SYSTEM, _RANKLLM_PREFIX[:-1].replace("a numerical", "an alphabetical"), "[{rank}] {passage}\n",
                      _RANKLLM_026_SUFFIX, example="[B] > [A]", fixed_words=True, alpha=True),
    # ReasonRank (Liu et al. 2025, liuwenhan/reasonrank-7B/-32B): rank_llm 0.26.0 ``rerank/prompt_templates/
    # reasonrank_template.yaml``: a <think>/<answer> system message, "The format of the answer should be".
    'reasonrank': Listwise(
        "You are RankLLM, an intelligent assistant that can rank passages based on their relevance to the query. Given a query and a passage list, you first thinks about the reasoning process in the mind and then provides the answer (i.e., the reranked passage list). The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, respectively, i.e., <think> reasoning process here </think> <answer> answer here </answer>.",
        _RANKLLM_PREFIX[:-1], "[{rank}] {passage}\n",
        "Search Query: {query}.\nRank the {num} passages above based on their relevance to the search query. All the passages should be included and listed using identifiers, in descending order of relevance. The format of the answer should be [] > [], e.g., {example}.",
        fixed_words=True),
}


# == IFIR INSTFOL judge prompts (IFIR_JUDGE_PROMPTS §2-§4) ============================================================
# The 15 judge messages of IFIR's INSTFOL, verbatim from the IFIR repository (src/utils/llm_metrics/GEval/prompts.py,
# GEvalPrompts, commit b97b2035d7d5a81996a36b8f3851fc461fa22d22; unchanged since the initial commit). Grammar slips,
# skipped criterion numbers and borrowed example reasons are data, not typos; four lines end in spaces (scifact_open3
# and nfcorpus line 8, fire lines 1-2); every message ends with "JSON:" and one newline. Only {instruction} and
# {corpus} are placeholders (every other brace is the example JSON): fill them with render_ifir_judge, never
# str.format. aila2/aila3 are the corrected templates (paper Figure 8); IFIR_JUDGE_CODE_BUG records what the
# repository sends instead (its double-brace f-string bug), reproduced only with ifir_code_bug=True.

#: IFIR subsets with one judge prompt per instruction level (the repository's "reason datasets": name + level digit).
IFIR_MULTI_LEVEL = ("fiqa", "scifact_open", "pm", "aila")
#: IFIR subsets with one instruction per query (stored as level 0, read as level 1) and one prompt named by the subset.
IFIR_SINGLE_LEVEL = ("nfcorpus", "fire", "cds")

IFIR_JUDGE: Dict[str, str] = {
    # FiQA level 1 (scale 0-1): 'There is 1 relevant levels', criteria numbered 1, 4, a science example reason.
    'fiqa1': 'Given an instruction: {instruction},\nand an answer to the query: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 1 relevant levels to evaluate the answer regarding the instruction:\n1. Relevant to the instruction.\n\nEvaluation Criteria:\n1. If the answer meets the instruction in first level, the score is 1;\n4. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 1.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with research field and research topics."\n}\n**\n\nJSON:\n',
    # FiQA level 2 (0-2): criteria numbered 1, 2, 4.
    'fiqa2': 'Given an instruction: {instruction},\nand an answer to the query: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 2 relevant levels to evaluate the answer regarding the instruction:\n1. Relevant to the instruction.\n2. Totally match the instruction, aligned with the personal financial status in the instruction.\n\nEvaluation Criteria:\n1. If the answer only meets the instruction in first level, the score is 1;\n2. If the answer meets the instruction in first and second levels, the score is 2;\n4. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 2.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with research field and research topics."\n}\n**\n\nJSON:\n',
    # FiQA level 3 (0-3).
    'fiqa3': 'Given an instruction: {instruction},\nand an answer to the query: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 3 relevant levels to evaluate the answer regarding the instruction:\n1. Relevant to the instruction.\n2. Aligned with the personal financial status in the instruction.\n3. Totally match the instruction, including the personal financial goals and financial status.\n\nEvaluation Criteria:\n1. If the answer only meets the instruction in first level, the score is 1;\n2. If the answer meets the instruction in first and second levels, the score is 2;\n3. If the answer meets the instruction with all three levels, the score is 3.\n4. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 3.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with research field and research topics."\n}\n**\n\nJSON:\n',
    # SciFact-open level 1 (0-1): says 2 levels, lists one.
    'scifact_open1': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 2 relevant levels to evaluate the corpus regarding the instruction:\n1. Totally match the instruction. Including theme relevance, for example, the research field and research topics;\n\nEvaluation Criteria:\n1. If the corpus meets the instruction in first level, the score is 1;\n2. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 1.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with research field and research topics."\n}\n**\n\nJSON:\n',
    # SciFact-open level 2 (0-2).
    'scifact_open2': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 2 relevant levels to evaluate the corpus regarding the instruction:\n1. Theme relevance, for example, the research field and research topics;\n2. Totally match the instruction. Including relationship, for example, support or refute the claim;\n\nEvaluation Criteria:\n1. If the corpus only meets the instruction in first level, the score is 1;\n2. If the corpus meets the instruction in first and second levels, the score is 2;\n3. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 2.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with research field and research topics."\n}\n**\n\nJSON:\n',
    # SciFact-open level 3 (0-3): line 8 ends with 1 space.
    'scifact_open3': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 3 relevant levels to evaluate the corpus regarding the instruction:\n1. Theme relevance, for example, the research field and research topics;\n2. Relationship, for example, support or refute the claim;\n3. Totally match the instruction. \n\nEvaluation Criteria:\n1. If the corpus only meets the instruction in first level, the score is 1;\n2. If the corpus meets the instruction in first and second levels, the score is 2;\n3. If the corpus meets instruction with all three levels, the score is 3.\n4. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 3.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with research field and research topics."\n}\n**\n\nJSON:\n',
    # TREC-PM level 1 (0-1): criteria numbered 1, 3.
    'pm1': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 1 relevant levels of the corpus:\n1. Matching the instruction, including disease information.\n\nEvaluation Criteria:\n1. If the corpus only meets the instructions in first level, the score is 1;\n3. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 1.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with disease information."\n}\n**\n\nJSON:\n',
    # TREC-PM level 2 (0-2).
    'pm2': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 2 relevant levels of the corpus:\n1. Disease information.\n2. Totally match the instruction, including patient\'s demographics, especially age and gender;\n\nEvaluation Criteria:\n1. If the corpus only meets the instructions in first level, the score is 1;\n2. If the corpus meets the instruction in first and second levels, the score is 2;\n3. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 2.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with disease information."\n}\n**\n\nJSON:\n',
    # TREC-PM level 3 (0-3).
    'pm3': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 3 relevant levels of the corpus:\n1. Disease information.\n2. Patient\'s demographics, especially age and gender;\n3. Totally match the instruction, including the family medical history and treatment history of the patient and other information.\n\nEvaluation Criteria:\n1. If the corpus only meets the instructions in first level, the score is 1;\n2. If the corpus meets the instruction in first and second levels, the score is 2;\n3. If the corpus meets all three levels, the score is 3.\n4. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 3.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with disease information."\n}\n**\n\nJSON:\n',
    # AILA level 1 (0-1): 'There are 1 relevant levels'.
    'aila1': 'Given an instruction: {instruction},\nand a prior case: {corpus},\nplease evaluate the prior case according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere are 1 relevant levels to evaluate the case regarding the instruction:\n1. The prior case is similar to the one in the instruction.\n\nEvaluation Criteria:\n1. If the prior case meets the instruction at the first level, the score is 1.\n2. If the prior case does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 1.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No additional words or explanations are needed.\nPlease think step by step about the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only matches the instruction in terms of research field and research topics."\n}\n**\n\nJSON:\n',
    # AILA level 2 (0-2), corrected: the repository sends {corpus} literally (IFIR_JUDGE_CODE_BUG).
    'aila2': 'Given an instruction: {instruction},\nand a prior case: {corpus},\nplease evaluate the prior case according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere are 2 relevant levels to evaluate the case regarding the instruction:\n1. The prior case is similar to the one in the instruction.\n2. The prior case totally matches the instruction, satisfing the instruction at the \'plaintiff\' or \'defendant\' beneficial level.\n\nEvaluation Criteria:\n1. If the prior case only meets the instruction at the first level, the score is 1.\n2. If the prior case meets the instruction at the first and second levels, the score is 2.\n3. If the prior case does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 2.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No additional words or explanations are needed.\nPlease think step by step about the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only matches the instruction in terms of research field and research topics."\n}\n**\n\nJSON:\n',
    # AILA level 3 (0-3), corrected: the repository sends both placeholders literally; = paper Figure 8's user text.
    'aila3': 'Given an instruction: {instruction},\nand a prior case: {corpus},\nplease evaluate the prior case according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere are 3 relevant levels to evaluate the case regarding the instruction:\n1. The prior case is similar to the one in the instruction.\n2. The prior case satisfies the instruction at the \'plaintiff\' or \'defendant\' beneficial level.\n3. The prior case totally matches the instruction, including the detailed requirements in the instruction.\n\nEvaluation Criteria:\n1. If the prior case only meets the instruction at the first level, the score is 1.\n2. If the prior case meets the instruction at the first and second levels, the score is 2.\n3. If the prior case meets the instruction at all three levels, the score is 3.\n4. If the prior case does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 3.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No additional words or explanations are needed.\nPlease think step by step about the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only matches the instruction in terms of research field and research topics."\n}\n**\n\nJSON:\n',
    # NFCorpus, single level (0-3): line 8 ends with 1 space.
    'nfcorpus': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 3 relevant levels to evaluate the corpus regarding the instruction:\n1. Research fields and research topics;\n2. Research objectives;\n3. Totally match the instruction. \n\nEvaluation Criteria:\n1. If the corpus only meets the instruction in first level, the score is 1;\n2. If the corpus meets the instruction in first and second levels, the score is 2;\n3. If the corpus meets instruction with all three levels, the score is 3.\n4. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 3.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with research field and research topics."\n}\n**\n\nJSON:\n',
    # FIRE, single level (0-3): line 1 ends with 2 spaces, line 2 with 1; unindented example JSON.
    'fire': 'Given a prior case combined with a query: {instruction},  \nand a corpus: {corpus}, \nplease evaluate the corpus according to the query and Evaluation Criteria, and return a JSON object with the score and reason.\n\nThere are 3 relevant levels of the corpus:\n\n1. Similar to the prior case in the query.\n2. Partially helps with the query.\n3. Totally matches the query.\n\nEvaluation Criteria:\n\n1. If the corpus only meets the query at the first level, the score is 1.\n2. If the corpus meets the query at the first and second levels, the score is 2.\n3. If the corpus meets all three levels, the score is 3.\n4. If the corpus does not meet any of the levels, the score is 0.\nPlease give a score between 0 and 3.\n\n**\nIMPORTANT: Please make sure to only return the result in JSON format, with the "score" and "reason" keys. No additional words or explanations are needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n"score": 1,\n"reason": "The corpus only matches the instruction with disease information."\n}\n**\n\nJSON:\n',
    # TREC-CDS, single level (0-3).
    'cds': 'Given an instruction: {instruction},\nand a corpus: {corpus},\nPlease evaluate the corpus according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.\n\nThere is 3 relevant levels of the corpus:\n1. Disease information.\n2. Patient\'s demographics, especially age and gender;\n3. Totally match the instruction.\n\nEvaluation Criteria:\n1. If the corpus only meets the instructions in first level, the score is 1;\n2. If the corpus meets the instruction in first and second levels, the score is 2;\n3. If the corpus meets all three levels, the score is 3.\n4. If the corpus does not meet any of the levels, the score is 0.\n\nPlease give a score between 0 and 3.\n\n**\nIMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No words or explanation is needed.\nPlease think step by step of the reason and give the score according to the Evaluation Criteria.\n\nExample JSON:\n{\n    "score": 1,\n    "reason": "The corpus only match the instruction with disease information."\n}\n**\n\nJSON:\n',
}

#: Paper Figure 8's system line, attested for AILA only. The repository sends no system message (the default);
#: ``IFIRJudge(system_prompt=True)`` adds it to the aila prompts for paper fidelity.
IFIR_JUDGE_SYSTEM: Dict[str, str] = {"aila": 'You are an expert in legal domain.'}

#: The placeholders the IFIR repository leaves as literal text (``{{instruction}}``/``{{corpus}}`` in an f-string):
#: aila2 never shows the judge the passage, aila3 neither the passage nor the instruction (IFIR_JUDGE_PROMPTS §3).
IFIR_JUDGE_CODE_BUG: Dict[str, Tuple[str, ...]] = {"aila2": ("corpus",), "aila3": ("instruction", "corpus")}


def ifir_judge_prompt(dataset: str, level) -> str:
    """The judge prompt name of an IFIR subset and instruction level: ``fiqa`` + level 2 → ``fiqa2``; the single-level
    subsets (nfcorpus, fire, cds) have one prompt whatever the level (their instruction is level 0 in the raw files and
    level 1 in the loaded topics)."""
    dataset = str(dataset)
    dataset = dataset[len("ifir/"):] if dataset.startswith("ifir/") else dataset
    if dataset in IFIR_SINGLE_LEVEL:
        if str(level) not in ("0", "1"):
            raise ValueError(f"IFIR subset {dataset!r} has one instruction level (0 or 1), got level {level!r}")
        return dataset
    if dataset not in IFIR_MULTI_LEVEL:
        raise ValueError(f"unknown IFIR subset {dataset!r}; expected one of {IFIR_MULTI_LEVEL + IFIR_SINGLE_LEVEL}")
    if str(level) not in ("1", "2", "3"):
        raise ValueError(f"IFIR subset {dataset!r} has judge prompts for levels 1-3, got level {level!r}")
    return f"{dataset}{level}"


def render_ifir_judge(name: str, instruction: str, corpus: str, *, ifir_code_bug: bool = False) -> str:
    """The judge message ``IFIR_JUDGE[name]`` with ``{instruction}`` and ``{corpus}`` replaced in one pass (values
    inserted unchanged: a ``{corpus}`` inside the instruction is not substituted again). ``ifir_code_bug=True`` leaves
    the placeholders of :data:`IFIR_JUDGE_CODE_BUG` as literal text, byte for byte what the IFIR repository sends."""
    if name not in IFIR_JUDGE:
        raise ValueError(f"unknown IFIR judge prompt {name!r}; known: {sorted(IFIR_JUDGE)}")
    literal = IFIR_JUDGE_CODE_BUG.get(name, ()) if ifir_code_bug else ()
    values = {"instruction": str(instruction), "corpus": str(corpus)}
    return fill(IFIR_JUDGE[name], **{k: v for k, v in values.items() if k not in literal})


# -- promptable dense retrievers (Promptriever's tevatron fork, mteb, IFIR's code) -----------------------------------------------------------
# A query string is a query template filled with the *composed* query+instruction (the joining rules are functions in
# :mod:`pyterrier_instruct.instructions`); a passage string is a passage template filled with ``{title}`` and
# ``{text}`` (each stripped) or ``{doc}`` (``(title + " " + text).strip()``, the default document text).

#: Promptriever / RepLLaMA, tevatron fork (``"query: " + " " + ...``, ``"passage: " + " " + ...``): two spaces after the
#: colon; with an empty title the passage has three (``"passage:   {text}"``). Filled strings are stripped.
PROMPTRIEVER_QUERY = "query:  {query}"
PROMPTRIEVER_PASSAGE = "passage:  {title} {text}"
#: Promptriever as mteb runs it (FollowIR, InstructIR): ``"passage:  " + doc_text``, not stripped.
PROMPTRIEVER_MTEB_PASSAGE = "passage:  {doc}"

#: E5-instruct model-card form (mteb ``E5_INSTRUCTION = "Instruct: {instruction}\nQuery: "``); ``{task}`` is fixed per model.
E5_QUERY = "Instruct: {task}\nQuery: {query}"
#: The task description of the E5 model card and of FollowIR's E5 run.
E5_DEFAULT_TASK = "Given a web search query, retrieve relevant passages that answer the query"
#: IFIR's E5-Mistral prompt (the IFIR evaluation code); the typos are part of the reference input.
IFIR_E5_TASK = "Give a query, retrieval relevant passages"

#: The 10 BEIR prompts of Promptriever Table 10, verbatim, in table order (5 and 10 have no final period).
BEIR_PROMPTS: Tuple[str, ...] = (
    "Be careful when assigning relevance as your job is on the line and I will give you a 1000 dollar tip.",
    "Think carefully about these conditions when determining relevance.",
    "A relevant document should also provide a clear and concise explanation, avoiding unnecessary complexity or ambiguity. When in doubt, prioritize documents that provide a clear, direct, and specific answer to the query.",
    "A document that meets these criteria is considered relevant, while a document that does not meet these criteria is considered non-relevant.",
    "A relevant document should focus solely on providing a clear and accurate answer to the query, without distracting or unnecessary information",
    "A document is relevant if it helps to answer the query. Surface relevant documents only.",
    "Relevant documents are those that are topically related, answer the given question, or otherwise provide insight on the input. Think step by step about whether a document is relevant for this question.",
    "Find relevant documents to the query. Use strict criteria when evaluating relevance: a relevant document here should provide direct information to either fully answer the query, or provide useful information towards answering it. Avoid only topically relevant documents.",
    "When judging the relevance of a document, focus on the pragmatics of the query and consider irrelevant any documents for which the user would have used a different query.",
    "Think carefully about relevance",
)

#: The placeholders a dense query/passage template may use.
FIELDS = ("query", "title", "text", "doc", "task")


def placeholders(template: str, fields: Tuple[str, ...] = FIELDS) -> Tuple[str, ...]:
    """The placeholders of ``fields`` that ``template`` uses, in order of first appearance."""
    return tuple(dict.fromkeys(_slots(tuple(sorted(fields))).findall(template)))


def check(template: str, allowed: Tuple[str, ...], what: str) -> str:
    """``template`` if it uses at least one of ``allowed`` and no other placeholder, else a ValueError."""
    used = placeholders(template)
    if not used or any(p not in allowed for p in used):
        raise ValueError(f"{what} must use {' or '.join('{' + a + '}' for a in allowed)} (and nothing else); got {template!r}")
    return template


#: Preset styles: (query template, its query slot, passage template, strip filled strings).
PROMPTRIEVER_STYLES: Dict[str, Tuple[str, QuerySlot, str, bool]] = {
    "tevatron": (PROMPTRIEVER_QUERY, QuerySlot("promptriever"), PROMPTRIEVER_PASSAGE, True),
    "mteb": (PROMPTRIEVER_QUERY, QuerySlot("promptriever_mteb"), PROMPTRIEVER_MTEB_PASSAGE, False),
    # IFIR (its evaluation code): the same prefixes before the plain ``query + " " + instruction``, no ``?`` (max length 1024 there).
    "ifir": (PROMPTRIEVER_QUERY, QuerySlot(), PROMPTRIEVER_MTEB_PASSAGE, False),
}

#: InF-Embed's query slots (InF-IR paper §5 and its code): the code's order (default), the paper's ``<Instruction> <Query>``, and the
#: code's ``Instruct:`` option (``f"Instruct: {instruction}\nQuery: {query} ".strip()``).
INF_EMBED_SLOTS: Dict[str, QuerySlot] = {
    "code": QuerySlot("{query} {instruction}"),
    "paper": QuerySlot("{instruction} {query}"),
    "instruct": QuerySlot("Instruct: {instruction}\nQuery: {query} "),
}


__all__ = ["PROMPTS", "LISTWISE", "IFIR_JUDGE", "BEIR_PROMPTS", "TrueFalse", "Listwise"]
