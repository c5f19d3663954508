"""Content fingerprints: the one identity of everything this package keeps on disk (score and retrieval caches, saved
runs, the dense index, the call store), so that a change of configuration, model weights, data or user code never
reuses a stale entry (the rows of ARCHITECTURE.md and docs/caching.md say what each store keys on).

:func:`fingerprint` describes a transformer (or any configuration value) as canonical text, walking pipelines: an
object with a ``_fingerprint_()`` method by what it returns (this module imports no class of the package):
:class:`~pyterrier_instruct._config.Configured` by class and resolved constructor arguments (``verbose`` left out),
model arguments (:data:`MODEL_ARGS`, a class's ``_weights``) adding :func:`model_revision`, an index or dataset the
output depends on its revision (``_fingerprint_parts``); a benchmark by name, qrels mapping and :func:`path_revision`;
PyTerrier's operators, ``pt.apply`` and pyterrier_pisa / pyterrier_dr transformers by class, public attributes and
``pt.inspect.subtransformers``; an index (a ``pt.Artifact``) by :func:`index_revision`, never its path; a function
by its code (bytecode, constants, names), defaults, closure and the globals it reads (modules by name and version),
the same in every process (no ids or addresses), a recursion named, not walked twice; plain values (numbers, strings,
containers, enums, dataclasses, arrays, frames) by value. Anything else raises :class:`NotFingerprintable` naming
the part: a C function (reach it through its module, ``np.log``), a callable object or a foreign transformer class,
whose output may change with state its ``repr`` does not show; callers then ask for an explicit key.

Revisions describe content, never where it lies (a copy gives the same revision): weights (:func:`model_revision`)
wherever :func:`~pyterrier_instruct._hub.weights_folder` finds them, ``digest:<16 hex>`` over the relative names and
SHA-256 of the files that decide the output (a LoRA adapter adds its base's); a file's SHA-256 from the Hugging Face
cache's blob name, else hashed once per ``(real path, size, mtime_ns, inode)`` and remembered in :class:`FileDigests`
(a 14 GB checkpoint is read again only after it changed); an index by its recorded corpus digest and metadata files,
or without a record by its files (not those a retriever derives lazily).

Code is not part of a fingerprint for the package's own classes (a module is named by its version): after editing the
package or a model class, remove stored results whose scores the change affects. User functions are, by their code.
"""
from __future__ import annotations

import contextvars
import dataclasses
import dis
import enum
import functools
import glob
import hashlib
import os
import re
import sys
import time
import types
from pathlib import PurePath
from typing import Dict, Iterable, Optional

import numpy as np
import pandas as pd

from . import _hub
from ._store import SqliteStore

#: constructor arguments that name a model (hub id or local path): their revision joins the fingerprint
MODEL_ARGS = ("model_name_or_path", "base_model", "model", "tokenizer")
#: packages whose transformers are fingerprinted from public attributes and subtransformers
KNOWN_PACKAGES = ("pyterrier._ops", "pyterrier.transformer", "pyterrier.apply_base", "pyterrier_pisa",
                  "pyterrier_dr.flex")
#: files below a model or data folder that never decide an output: documentation and images, training state
SKIPPED = re.compile(r".*\.(md|png|jpe?g|gif|svg|pdf|lock)|optimizer\.pt|scheduler\.pt|rng_state.*\.pth"
                     r"|trainer_state\.json|training_args\.bin|checkpoint-\d+", re.IGNORECASE)
#: seconds after its last change during which a file's digest is not remembered (it may change again within the same
#: modification-time tick, as git's "racily clean" entries)
SETTLE_S = 2.0
_SHA256 = re.compile(r"[0-9a-f]{64}")


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


# -- file digests ---------------------------------------------------------------------------------
class FileDigests(SqliteStore):
    """The remembered SHA-256 of files, keyed by ``(real path, size, mtime_ns, inode)`` (a ``pt.Artifact`` under
    ``$PYTERRIER_INSTRUCT_CACHE``, else ``$XDG_CACHE_HOME/pyterrier_instruct`` or ``~/.cache/pyterrier_instruct``)."""
    ARTIFACT_TYPE = "file_digests"
    SCHEMA = ("CREATE TABLE IF NOT EXISTS digests (path TEXT, size INTEGER, mtime_ns INTEGER, inode INTEGER, "
              "sha256 TEXT NOT NULL, PRIMARY KEY (path, size, mtime_ns, inode))")


_MEMO: Dict[tuple, str] = {}
_STORES: Dict[str, FileDigests] = {}


def _remembered(key: tuple, value: Optional[str] = None) -> Optional[str]:
    """Reads (or, with ``value``, writes) the on-disk memo; a cache folder that cannot be written only costs hashing."""
    root = os.environ.get("PYTERRIER_INSTRUCT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "pyterrier_instruct")
    store = _STORES.setdefault(root, FileDigests(os.path.join(root, "file-digests")))
    try:
        if value is not None:
            return store.insert("digests", ("path", "size", "mtime_ns", "inode", "sha256"), [(*key, value)])
        rows = store.select_in("SELECT sha256 FROM digests WHERE path = ? AND size = ? AND mtime_ns = ? "
                               "AND inode IN {keys}", key[3:], extra=key[:3])
        return rows[0][0] if rows else None
    except Exception:  # noqa: BLE001 - a read-only or broken cache folder
        return None


def file_sha256(path: str) -> str:
    """The SHA-256 (hex) of a file's content: a Hugging Face cache blob's name where the file links to a blob named by
    it, else remembered per ``(real path, size, mtime_ns, inode)`` (see the module docstring), else read."""
    real = os.path.realpath(path)
    if os.path.basename(os.path.dirname(real)) == "blobs" and _SHA256.fullmatch(os.path.basename(real)):
        return os.path.basename(real)
    st = os.stat(real)
    key = (real, st.st_size, st.st_mtime_ns, st.st_ino)
    settled = time.time_ns() - st.st_mtime_ns > SETTLE_S * 1e9
    found = _MEMO.get(key) or (_remembered(key) if settled else None)
    if found is None:
        h = hashlib.sha256()
        with open(real, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        found = h.hexdigest()
        if settled:
            _remembered(key, found)
    if settled:
        _MEMO[key] = found
    return found


# -- revisions ------------------------------------------------------------------------------------
def _files(root: str, skip=lambda name: False) -> Iterable[str]:
    if os.path.isfile(root):
        yield root
        return
    seen = {os.path.realpath(root)}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):  # a symlinked sub-folder is part of the data
        real = {d: os.path.realpath(os.path.join(dirpath, d)) for d in dirnames}
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not SKIPPED.fullmatch(d)
                             and real[d] not in seen)  # no link cycles
        seen.update(real[d] for d in dirnames)
        for name in sorted(filenames):
            if not name.startswith(".") and not SKIPPED.fullmatch(name) and not skip(name):
                yield os.path.join(dirpath, name)


def path_revision(path: str, skip=lambda name: False) -> str:
    """A local file or folder by content: ``digest:<16 hex>`` over every file's relative name and SHA-256
    (:func:`file_sha256`; the files of :data:`SKIPPED` and those ``skip(name)`` names left out), so a copy has the same
    revision; ``absent`` when nothing is there."""
    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        return "absent"
    return "digest:" + digest("\n".join(f"{os.path.relpath(f, path)}\t{file_sha256(f)}" for f in _files(path, skip)))


def model_revision(name_or_path: str) -> Optional[str]:
    """The revision of the weights a model argument loads, wherever :func:`~pyterrier_instruct._hub.weights_folder`
    finds them: :func:`path_revision` of the folder (a LoRA adapter adds ``+ <its base's revision>``); ``None`` for a
    name whose weights are not here (not downloaded yet, or an API model name)."""
    folder = _hub.weights_folder(os.fspath(name_or_path))
    if folder is None:
        return None
    revision = path_revision(folder)
    base = _hub.adapter_base(folder)
    return revision if base is None else f"{revision} + {base}@{model_revision(base)}"


def _lucene_or_pisa_derived(name: str) -> bool:
    return ".bmw" in name or name.startswith(("write.lock", "segments.gen"))


def index_revision(path: Optional[str]) -> str:
    """An index folder by its content, never its path (see the module docstring): ``index:<16 hex>`` over the corpus
    record and metadata files, or over every file but those derived lazily; ``absent`` before it is built."""
    if path is None:
        return "memory"
    path = os.fspath(path)
    if not os.path.isdir(path) or not os.listdir(path):
        return "absent"
    records = [os.path.join(path, "corpus.json"), os.path.normpath(path) + ".corpus.json"]  # PISA inside, Lucene beside
    marks = [m for m in [os.path.join(path, "pt_meta.json"), os.path.join(path, "meta.json")] if os.path.isfile(m)]
    if any(os.path.isfile(r) for r in records):
        marks += [r for r in records if os.path.isfile(r)]
    elif os.path.isfile(os.path.join(path, "meta.json")) or glob.glob(os.path.join(path, "segments_*")):
        marks += sorted(glob.glob(os.path.join(path, "segments_*")))  # Lucene's commit point names every segment's id
    else:
        return "index:" + digest(path_revision(path, _lucene_or_pisa_derived) + "".join(_read(m) for m in marks))
    return "index:" + digest("".join(f"{os.path.basename(m)}\n{_read(m)}\n" for m in marks))


def _read(file: str) -> str:
    with open(file, "rb") as f:
        return f.read(1 << 20).decode("latin-1")


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
        sha = hashlib.sha256(np.ascontiguousarray(obj).tobytes()).hexdigest()[:16]
        return f"ndarray({obj.dtype}, {obj.shape}, {sha})"
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return f"{type(obj).__name__}({digest(obj.to_csv())})"
    if isinstance(obj, types.ModuleType):
        return f"module({obj.__name__!r}, {_module_version(obj)})"
    if isinstance(obj, type):
        return f"class({obj.__module__}.{obj.__qualname__}, {_module_version(sys.modules.get(obj.__module__), obj)})"
    if isinstance(obj, types.FunctionType):
        return _function(obj)
    if isinstance(obj, functools.partial):
        return f"functools.partial({_fp(obj.func)}, args={_fp(obj.args)}, keywords={_fp(obj.keywords)})"
    if getattr(obj, "_same_output_as", None) is not None:  # pti.on_ray(x): where x runs, not what it computes
        return _fp(obj._same_output_as)
    if callable(getattr(type(obj), "_fingerprint_", None)):  # the protocol: the object describes itself
        return obj._fingerprint_()
    if isinstance(obj, pt.Artifact):
        return f"{_class(obj)}(revision={index_revision(str(obj.path))!r})"
    if isinstance(obj, pt.Transformer):
        return _transformer(obj)
    if dataclasses.is_dataclass(obj):
        return describe(obj, {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, types.MethodType):
        return f"{_fp(obj.__self__)}.{obj.__name__}"  # a bound method: its object says what it does
    if callable(obj) and not hasattr(obj, "__code__") and hasattr(obj, "__name__"):
        raise NotFingerprintable(_stable(_safe_repr(obj)), "a C function has no code to read; call it through its "
                                 "module (np.log, math.sqrt) so that the module's name and version describe it")
    raise NotFingerprintable(_stable(_safe_repr(obj)), f"a {type(obj).__name__} has no content fingerprint (give its "
                             "class a _fingerprint_() method returning what decides its behaviour)")


@functools.lru_cache(maxsize=None)
def _distributions() -> Dict[str, list]:
    from importlib import metadata
    return metadata.packages_distributions()


def _module_version(module, of=None) -> str:
    """A module's version: its distribution's, Python's for the standard library, else its source file's digest."""
    from importlib import metadata
    name = getattr(module, "__name__", None)
    top = (name or "").partition(".")[0]
    if top in sys.stdlib_module_names or top == "builtins":
        return f"python {sys.version_info[0]}.{sys.version_info[1]}"
    for dist in _distributions().get(top, []):
        return f"{dist}=={metadata.version(dist)}"
    file = getattr(module, "__file__", None)
    if file and os.path.isfile(file):
        return f"sha256:{file_sha256(file)[:16]}"
    raise NotFingerprintable(_stable(_safe_repr(of if of is not None else module)),
                             f"the module {name!r} has no version and no source file to describe it")


_WALKING: contextvars.ContextVar = contextvars.ContextVar("fingerprint_functions", default=())


def _function(fn: types.FunctionType) -> str:
    """A Python function by its code, defaults, closure and the globals it reads (see the module docstring)."""
    if id(fn) in _WALKING.get():  # recursion: the function is being described further up
        return f"function({fn.__qualname__!r}, recursive)"
    token = _WALKING.set(_WALKING.get() + (id(fn),))
    try:
        code = fn.__code__
        names = sorted(set(_global_names(code)))
        parts = {"defaults": dict(enumerate(fn.__defaults__ or ())), "kwdefaults": fn.__kwdefaults__ or {},
                 "closure": {n: c.cell_contents if _filled(c) else "<empty cell>"
                             for n, c in zip(code.co_freevars, fn.__closure__ or ())},
                 "globals": {n: fn.__globals__[n] for n in names if n in fn.__globals__}}
        try:  # each value by its text, a long one (a captured table) by the digest of its text
            text = ", ".join([f"code={_code_digest(code)}"] + [f"{k}={{{', '.join(sorted(_entries(d)))}}}"
                                                              for k, d in parts.items() if d])
        except NotFingerprintable as e:
            raise NotFingerprintable(e.part, f"{e.reason}; read by the function {fn.__qualname__}") from None
    finally:
        _WALKING.reset(token)
    return f"function({fn.__qualname__!r}, {text})"


def _entries(values: dict, width: int = 200) -> Iterable[str]:
    for name, value in values.items():
        text = _fp(value)
        yield f"{name!r}: {text if len(text) <= width else f'<sha256:{digest(text)}>'}"


def _filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _global_names(code: types.CodeType) -> Iterable[str]:
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
            yield ins.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _code_digest(code: types.CodeType) -> str:
    """The bytecode, constants (nested code objects recursively), names and signature shape: the same in every
    process running the same Python (no line numbers, ids or addresses)."""
    def const(c) -> str:
        if isinstance(c, types.CodeType):
            return "code:" + _code_digest(c)
        if isinstance(c, tuple):
            return "(" + ",".join(const(v) for v in c) + ")"
        if isinstance(c, frozenset):
            return "{" + ",".join(sorted(const(v) for v in c)) + "}"
        return repr(c)
    return digest("\n".join([code.co_code.hex(), repr(code.co_names), ";".join(const(c) for c in code.co_consts),
                             repr((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
                                   code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]))]))


def describe(obj, parts: Dict[str, object]) -> str:
    """``module.Class(name=<fingerprint>, …)`` over ``parts``; an argument naming a model (:data:`MODEL_ARGS`, or the
    class's ``_weights``) adds its revision. What a ``_fingerprint_()`` method usually returns."""
    weights = getattr(obj, "_weights", MODEL_ARGS)
    args = []
    for k, v in parts.items():
        text = _fp(v)
        revision = model_revision(v) if k in weights and isinstance(v, (str, PurePath)) else None
        if revision is not None:
            text += f"@{revision}"
        args.append(f"{k}={text}")
    return f"{_class(obj)}({', '.join(args)})"


def _transformer(t) -> str:
    import pyterrier as pt
    module = type(t).__module__
    if not any(module == p or module.startswith(p + ".") for p in KNOWN_PACKAGES):
        raise NotFingerprintable(_stable(_safe_repr(t)), f"{_class(t)} is not a transformer of this package, "
                                 "PyTerrier's operators or pt.apply, pyterrier_pisa or pyterrier_dr, so its settings "
                                 "cannot be read")
    try:
        children = pt.inspect.subtransformers(t)
    except Exception:  # noqa: BLE001 - a class that cannot list its children is described by its attributes
        children = {}
    parts = {k: v for k, v in vars(t).items()
             if not k.startswith("_") and k not in children and k not in ("verbose", "label")}
    parts.update(children)
    return describe(t, dict(sorted(parts.items())))


# -- explaining a refused reuse -------------------------------------------------------------------
_OPEN, _CLOSE = "([{", ")]}"


def _scan(text: str, start: int = 0):
    """``(index, char, depth)`` of every character of ``text`` from ``start`` outside string literals, ``depth``
    counted from ``start`` (brackets inside quoted strings, and escaped quotes, are text)."""
    depth, quote, k = 0, None, start
    while k < len(text):
        c = text[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        else:
            if c in _CLOSE:
                depth -= 1
            yield k, c, depth
            if c in _OPEN:
                depth += 1
        k += 1


def _argument_at(text: str, i: int) -> tuple:
    """The ``(start, end)`` of the innermost argument (``name=value``, a list item or a dict entry) of a fingerprint
    around index ``i`` (a bracket or comma inside a quoted string is part of a value), and the index of the bracket
    that opens its container (-1 at the top)."""
    opened = []
    for k, c, _ in _scan(text):
        if k >= i:
            break
        if c in _OPEN:
            opened.append(k)
        elif c in _CLOSE and opened:
            opened.pop()
    start = opened[-1] + 1 if opened else 0
    end = len(text)
    for k, c, depth in _scan(text, start):
        if depth < 0 or (depth == 0 and c == ","):
            if k < i:
                start = k + 1
                continue
            end = k
            break
    return start, end, opened[-1] if opened else -1


def differing_part(old: str, new: str, width: int = 160) -> str:
    """What differs between two fingerprints, for a message that refuses a reuse: the innermost argument that differs,
    as ``name=old → name=new`` (e.g. ``k=10 → k=20``, ``model_name_or_path='x'@digest:aaa → …@digest:bbb`` in
    full), each cut to ``width`` characters; ``""`` when they are equal."""
    if old == new:
        return ""
    i = 0
    while i < min(len(old), len(new)) and old[i] == new[i]:
        i += 1
    a, b = _argument_at(old, i), _argument_at(new, i)
    while old[a[0]:a[1]] == new[b[0]:b[1]] and min(a[2], b[2]) >= 0:  # an argument added or removed: its container
        a, b = _argument_at(old, a[2]), _argument_at(new, b[2])
    cut = lambda s: s if len(s) <= width else s[:width - 1] + "…"  # noqa: E731
    return f"{cut(old[a[0]:a[1]].strip())} → {cut(new[b[0]:b[1]].strip())}"
