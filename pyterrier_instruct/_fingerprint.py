"""Content fingerprints: what an on-disk cache keys on, so that a change of configuration, model weights or data never
reuses a stale entry.

:func:`fingerprint` describes a transformer (or any configuration value) as canonical text, walking pipelines:

- an object that implements the protocol, a ``_fingerprint_()`` method returning its canonical text (so this module
  imports nothing of the package): this package's transformers, backends and models
  (:class:`~pyterrier_instruct._config.Configured`): the class and its
  resolved constructor arguments (``verbose`` left out), each described recursively; an argument naming a model
  (``model_name_or_path``, ``base_model``, ``model``, ``tokenizer``) adds the model's revision (:func:`model_revision`);
  classes whose output depends on an index or a dataset add its revision (``_fingerprint_parts``);
- PyTerrier's operators (``>>``, ``+``, ``%``, ``**``, ``|``, ``&``, ``^``, ``*``) and the transformers of
  pyterrier_pisa and pyterrier_dr: the class, its public attributes and its ``pt.inspect.subtransformers``; an index
  (a ``pt.Artifact``) by its path and revision (:func:`index_revision`);
- a benchmark (:class:`~pyterrier_instruct.datasets.InstructDataset`, also through ``_fingerprint_()``) by its name,
  qrels mapping and the revision of its folder (:func:`path_revision`);
- plain values (numbers, strings, tuples, lists, dicts, enums, dataclasses, arrays, frames) by value.

Anything else cannot be fingerprinted and raises :class:`NotFingerprintable`: a function (``pt.apply.*``, a
:class:`~pyterrier_instruct.backends.FunctionBackend`'s callable) or a transformer class of another package, whose
output may change with state its ``repr`` does not show. Callers then ask for an explicit key.

Revisions are cheap to compute and never read file contents beyond a few bytes of metadata:

- a model in the Hugging Face cache (``…/snapshots/<commit>/`` or a hub id whose ``refs/main`` is cached): the commit;
- a local folder or file: the name, size and modification time (ns) of every file below it (through symlinked
  files and sub-folders), so copying or re-saving the weights changes it (a recomputation, never a stale hit);
- an index: its metadata file (``pt_meta.json`` of pyterrier artifacts, ``meta.json`` of
  :class:`~pyterrier_instruct.dense.index.EmbeddingIndex`, Lucene's ``segments_N``) by content, size and time, not
  the files a retriever derives lazily on first use (PISA's per-scorer ``.bmw`` data).

Code is not part of a fingerprint: after upgrading this package (or editing a model class) remove stored results
whose scores the change affects.
"""
from __future__ import annotations

import dataclasses
import enum
import glob
import hashlib
import os
import re
from pathlib import Path, PurePath
from typing import Dict, Iterable, Optional

import numpy as np
import pandas as pd

#: constructor arguments that name a model (hub id or local path): their revision joins the fingerprint
MODEL_ARGS = ("model_name_or_path", "base_model", "model", "tokenizer")
#: packages whose transformers are fingerprinted from public attributes and subtransformers
KNOWN_PACKAGES = ("pyterrier._ops", "pyterrier.transformer", "pyterrier_pisa", "pyterrier_dr.flex")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class NotFingerprintable(TypeError):
    """``part`` (within the object being fingerprinted) has no content fingerprint, for ``reason``."""

    def __init__(self, part: str, reason: str):
        super().__init__(f"{part}: {reason}")
        self.part, self.reason = part, reason


def digest(text: str, n: int = 16) -> str:
    """The first ``n`` hex digits of SHA-256 of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def _stable(text: str) -> str:
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def _class(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


# -- revisions ------------------------------------------------------------------------------------
def _files(root: str) -> Iterable[str]:
    if os.path.isfile(root):
        yield root
        return
    seen = {os.path.realpath(root)}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):  # a symlinked sub-folder is part of the data
        real = {d: os.path.realpath(os.path.join(dirpath, d)) for d in dirnames}
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and real[d] not in seen)  # no link cycles
        seen.update(real[d] for d in dirnames)
        for name in sorted(filenames):
            if not name.startswith(".") and not name.endswith(".lock"):
                yield os.path.join(dirpath, name)


def path_revision(path: str) -> str:
    """A local file or folder: ``files:<16 hex>`` over every file's relative name, size and modification time, or
    ``commit:<hash>`` for a snapshot folder of the Hugging Face cache; ``absent`` when nothing is there."""
    path = os.path.abspath(os.fspath(path))
    parts = Path(path).parts
    if "snapshots" in parts:
        i = parts.index("snapshots")
        if i + 1 < len(parts) and _COMMIT.fullmatch(parts[i + 1]):
            return f"commit:{parts[i + 1]}"
    if not os.path.exists(path):
        return "absent"
    stats = []
    for f in _files(path):
        st = os.stat(f)
        stats.append(f"{os.path.relpath(f, path)}\t{st.st_size}\t{st.st_mtime_ns}")
    return "files:" + digest("\n".join(stats))


def _hub_cache() -> Optional[str]:
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    return constants.HF_HUB_CACHE


def model_revision(name_or_path: str) -> Optional[str]:
    """The revision of a model: a local path by :func:`path_revision`; a hub id by the commit its cached ``main``
    points to; ``None`` for a name that is neither (not downloaded yet, or an API model name)."""
    name = os.fspath(name_or_path)
    if os.path.exists(name):
        return path_revision(name)
    if name.count("/") == 1 and not name.startswith((".", "/")):
        cache = _hub_cache()
        ref = os.path.join(cache, "models--" + name.replace("/", "--"), "refs", "main") if cache else None
        if ref and os.path.isfile(ref):
            with open(ref, encoding="utf-8") as f:
                return "commit:" + f.read().strip()
    return None


def index_revision(path: Optional[str]) -> str:
    """An index folder by its metadata (see the module docstring); ``absent`` before it is built."""
    if path is None:
        return "memory"
    path = os.fspath(path)
    marks = [os.path.join(path, n) for n in ("pt_meta.json", "meta.json")] + sorted(glob.glob(os.path.join(path, "segments_*")))
    marks = [m for m in marks if os.path.isfile(m)]
    if not marks:
        return "absent" if not os.path.exists(path) or not os.listdir(path) else path_revision(path)
    h = hashlib.sha256()
    for m in marks:
        st = os.stat(m)
        h.update(f"{os.path.basename(m)}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
        if st.st_size <= 1 << 16:
            with open(m, "rb") as f:
                h.update(f.read())
    return "index:" + h.hexdigest()[:16]


def dataset_revision(dataset) -> str:
    """A benchmark (:class:`~pyterrier_instruct.datasets.InstructDataset`): its files' revision."""
    return path_revision(str(dataset.path))


# -- fingerprints ---------------------------------------------------------------------------------
def fingerprint(obj) -> str:
    """Canonical text describing ``obj``'s configuration, model and data revisions (see the module docstring).

    Raises:
        NotFingerprintable: a part of ``obj`` (named in the message) cannot be described by content.
    """
    return _fp(obj)


def _safe_repr(obj) -> str:
    try:
        return repr(obj)
    except Exception:  # noqa: BLE001 - only used to name the part in an error
        return f"<{type(obj).__name__}>"


def describe(obj, parts: Dict[str, object]) -> str:
    """``module.Class(name=<fingerprint>, …)`` over ``parts``; an argument naming a model (:data:`MODEL_ARGS`) adds its
    revision. What a ``_fingerprint_()`` method usually returns."""
    return _call(obj, parts)


def _fp(obj) -> str:
    import pyterrier as pt
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return repr(obj)
    if isinstance(obj, enum.Enum):
        return f"{type(obj).__qualname__}.{obj.name}"
    if isinstance(obj, PurePath):
        return repr(str(obj))
    if isinstance(obj, (list, tuple)):
        return "[" + ", ".join(_fp(v) for v in obj) + "]"
    if isinstance(obj, (set, frozenset)):
        return "{" + ", ".join(sorted(_fp(v) for v in obj)) + "}"
    if isinstance(obj, dict):
        return "{" + ", ".join(sorted(f"{_fp(k)}: {_fp(v)}" for k, v in obj.items())) + "}"
    if isinstance(obj, np.ndarray):
        return f"ndarray({obj.dtype}, {obj.shape}, {hashlib.sha256(np.ascontiguousarray(obj).tobytes()).hexdigest()[:16]})"
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return f"{type(obj).__name__}({digest(obj.to_csv())})"
    if getattr(obj, "_same_output_as", None) is not None:  # pti.on_ray(x): where x runs, not what it computes
        return _fp(obj._same_output_as)
    if callable(getattr(type(obj), "_fingerprint_", None)):  # the protocol: the object describes itself
        return obj._fingerprint_()
    if isinstance(obj, pt.Artifact):
        return f"{_class(obj)}({str(obj.path)!r}, revision={index_revision(str(obj.path))!r})"
    if isinstance(obj, pt.Transformer):
        return _transformer(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _call(obj, {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if callable(obj) and hasattr(obj, "__self__") and hasattr(obj, "__name__") and not isinstance(obj.__self__, type):
        return f"{_fp(obj.__self__)}.{obj.__name__}"  # a bound method: its object says what it does
    if callable(obj):
        raise NotFingerprintable(_stable(_safe_repr(obj)), "a function's behaviour (its code and the values it reads) has no fingerprint")
    raise NotFingerprintable(_stable(_safe_repr(obj)), f"a {type(obj).__name__} has no content fingerprint")


def _call(obj, parts: Dict[str, object]) -> str:
    args = []
    for k, v in parts.items():
        text = _fp(v)
        revision = model_revision(v) if k in MODEL_ARGS and isinstance(v, (str, PurePath)) else None
        if revision is not None:
            text += f"@{revision}"
        args.append(f"{k}={text}")
    return f"{_class(obj)}({', '.join(args)})"


def _transformer(t) -> str:
    import pyterrier as pt
    module = type(t).__module__
    if module.startswith("pyterrier.apply"):
        raise NotFingerprintable(_stable(_safe_repr(t)), "pt.apply wraps a function, whose behaviour (its code and the values "
                                 "it reads) has no fingerprint")
    if not any(module == p or module.startswith(p + ".") for p in KNOWN_PACKAGES):
        raise NotFingerprintable(_stable(_safe_repr(t)), f"{_class(t)} is not a transformer of this package, PyTerrier's operators, "
                                 "pyterrier_pisa or pyterrier_dr, so its settings cannot be read")
    try:
        children = pt.inspect.subtransformers(t)
    except Exception:  # noqa: BLE001 - a class that cannot list its children is described by its attributes
        children = {}
    parts = {k: v for k, v in vars(t).items() if not k.startswith("_") and k not in children and k != "verbose"}
    parts.update(children)
    return _call(t, dict(sorted(parts.items())))


# -- explaining a refused reuse -------------------------------------------------------------------
_OPEN, _CLOSE = "([{", ")]}"


def _argument_at(text: str, i: int) -> tuple:
    """The ``(start, end)`` of the innermost argument (``name=value`` or a list item) of a fingerprint around index ``i``."""
    depth, start = 0, 0
    for k in range(min(i, len(text)) - 1, -1, -1):
        c = text[k]
        if c in _CLOSE:
            depth += 1
        elif c in _OPEN:
            if depth == 0:
                start = k + 1
                break
            depth -= 1
        elif c == "," and depth == 0:
            start = k + 1
            break
    depth, end = 0, len(text)
    for k in range(start, len(text)):
        c = text[k]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if depth == 0:
                end = k
                break
            depth -= 1
        elif c == "," and depth == 0:
            end = k
            break
    return start, end


def differing_part(old: str, new: str, width: int = 160) -> str:
    """What differs between two fingerprints, for a message that refuses a reuse: the innermost argument that differs,
    as ``name=old → name=new`` (each cut to ``width`` characters); ``""`` when they are equal."""
    if old == new:
        return ""
    i = 0
    while i < min(len(old), len(new)) and old[i] == new[i]:
        i += 1
    a, b = _argument_at(old, i), _argument_at(new, i)
    cut = lambda s: s if len(s) <= width else s[:width - 1] + "…"  # noqa: E731
    return f"{cut(old[a[0]:a[1]].strip())} → {cut(new[b[0]:b[1]].strip())}"
