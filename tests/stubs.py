"""Shared test doubles, from the public :mod:`pyterrier_instruct.testing`: a chat-completions server on 127.0.0.1 and a
copy of a tiny model with a chat template; OpenAI's request rules for reasoning models (`openai_api`); a passage encoder
whose vectors name their documents (`TaggedEncoder`)."""
import json

from pyterrier_instruct.testing.models import ZEPHYR_TEMPLATE, with_chat_template  # noqa: F401
from pyterrier_instruct.testing.server import ChatServer  # noqa: F401


#: OpenAI's reasoning models as the chat-completions API serves them: the ``reasoning_effort`` values each accepts, the
#: first being its default (the API reference's ``reasoning_effort``: models before gpt-5.1 default to ``medium`` and do
#: not take ``none``; gpt-5.1 defaults to ``none``; o-series take low/medium/high)
REASONING_EFFORTS = {"gpt-5": ("medium", "minimal", "low", "high"), "gpt-5-mini": ("medium", "minimal", "low", "high"),
                     "gpt-5.1": ("none", "low", "medium", "high"), "o3-mini": ("medium", "low", "high"),
                     "o4-mini": ("medium", "low", "high")}


def _refused(param: str, message: str, code: str):
    return 400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def openai_api(answer, reasoning_cost: int = 64):
    """``answer`` behind the request checks OpenAI's chat-completions API makes (its error bodies verbatim): on a
    reasoning model (:data:`REASONING_EFFORTS`) ``max_tokens`` is refused (``max_completion_tokens`` instead), an effort
    the model does not take is refused, and, unless the effort is ``none``, a ``temperature``/``top_p`` other than 1 and
    ``logprobs``/``top_logprobs`` are refused; such a model spends ``reasoning_cost`` completion tokens reasoning
    (``usage.completion_tokens_details.reasoning_tokens``) and answers nothing, ``finish_reason: length``, when
    ``max_completion_tokens`` leaves no room for the answer after them (the answer is cut at the limit). Other models
    refuse ``reasoning_effort``."""
    def serve(body):
        efforts = REASONING_EFFORTS.get(body["model"])
        if efforts is None:
            if "reasoning_effort" in body:
                return _refused("reasoning_effort",
                                "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
                                "unsupported_parameter")
            return answer(body)
        if "max_tokens" in body:
            return _refused("max_tokens", "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                          "'max_completion_tokens' instead.", "unsupported_parameter")
        effort = body.get("reasoning_effort", efforts[0])
        if effort not in efforts:
            return _refused("reasoning_effort",
                            f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this "
                            f"model. Supported values are: "
                            f"{', '.join(repr(e) for e in efforts[1:] + efforts[:1])}.",
                            "unsupported_value")
        if effort != "none":
            for name in ("temperature", "top_p"):
                if name in body and body[name] != 1:
                    return _refused(name, f"Unsupported value: '{name}' does not support {body[name]:g} with this "
                                          "model. Only the default (1) value is supported.", "unsupported_value")
            for name in ("logprobs", "top_logprobs"):
                if name in body:
                    return _refused(name, f"Unsupported parameter: '{name}' is not supported with this model.",
                                    "unsupported_parameter")
        status, payload = answer(body)
        thinking = 0 if effort == "none" else reasoning_cost
        if status == 200:
            payload = json.loads(json.dumps(payload))
            choice = payload["choices"][0]
            written = len(choice["message"]["content"] or "")  # a token per character, enough for the budget check
            limit = body.get("max_completion_tokens")
            if limit is not None and limit < thinking + written:  # cut at the limit, reasoning first
                thinking, written = min(thinking, limit), max(0, limit - thinking)
                choice["message"]["content"], choice["finish_reason"] = choice["message"]["content"][:written], "length"
                if not written:
                    choice["logprobs"] = None
            payload["usage"] = {"completion_tokens": thinking + written,
                                "completion_tokens_details": {"reasoning_tokens": thinking}}
        return status, payload
    return serve


class TaggedEncoder:
    """A stand-in passage encoder whose vector holds its own document's tag and number (``'A17'`` → ``[65, 17, 0, …]``,
    ``dim`` float32s: 1024 = 4 KiB a row), so any docno/vector mismatch in an index shows. ``delay`` seconds per chunk
    widen the window a kill can land in. What :class:`~pyterrier_instruct.dense.index.EmbeddingIndexer` and
    ``scale.dense.build_index`` call, nothing more."""
    text_field, title_field, verbose = "text", "title", False

    def __init__(self, dim: int = 1024, delay: float = 0.0):
        self.dim, self.delay = dim, delay

    def __repr__(self) -> str:
        return f"TaggedEncoder(dim={self.dim})"

    def passage_strings(self, frame):
        return frame["text"].astype(str).to_numpy()

    def encode_passages(self, strings, fill_cache=False, progress=False):
        import time

        import numpy as np
        time.sleep(self.delay)
        out = np.zeros((len(strings), self.dim), dtype=np.float32)
        out[:, 0] = [ord(s[0]) for s in strings]
        out[:, 1] = [int(s[1:]) for s in strings]
        return out

    def doc_key(self) -> str:
        return f"tagged-{self.dim}"

    def revision(self) -> str:
        return "tagged"

    def index(self, corpus_iter, path=None, **kwargs):
        from pyterrier_instruct.dense.index import EmbeddingIndexer
        return EmbeddingIndexer(self, path, **kwargs).index(corpus_iter)


def tagged_corpus(tag: str, n: int, start: int = 0):
    """``n`` documents ``{docno: f"{tag}{i}", text: f"{tag}{i}"}``."""
    return [{"docno": f"{tag}{i}", "text": f"{tag}{i}"} for i in range(start, start + n)]


def tagged_rows(index) -> list:
    """The docnos of an index whose rows disagree with their vector (empty: every row consistent)."""
    import numpy as np
    vectors = np.asarray(index.vectors)
    return [d for d, v in zip(index.docnos, vectors) if d != f"{chr(int(v[0]))}{int(v[1])}"]
