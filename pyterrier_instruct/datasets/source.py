"""Where a dataset's files are, in this order: ``path=`` (a local snapshot of the hub repository),
``$PYTERRIER_INSTRUCT_DATA/<owner>/<repo>`` (or ``…/<repo>``, ``…/<dataset name>``), the cache
``$IR_DATASETS_HOME/instruct/<owner>/<repo>@<revision>``, then a download of the pinned revision with
``huggingface_hub`` (never when ``HF_HUB_OFFLINE`` is set). BEIR and MAIR take two repositories into one folder.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

from .._hub import hub_cli, hub_unreachable
from ._files import DataError
from .catalog import companion
from .catalog26 import NOT_ON_HUB
from .registry import BEIR_URL, Entry, qrels_repo

ENV_ROOT = "PYTERRIER_INSTRUCT_DATA"


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() not in ("", "0", "false", "no")


def cache_root() -> Path:
    home = os.environ.get("IR_DATASETS_HOME") or os.path.join(os.path.expanduser("~"), ".ir_datasets")
    return Path(home) / "instruct"


def cache_dir(entry: Entry) -> Path:
    folder = cache_root() / f"{entry.repo_id}@{entry.revision or 'main'}"
    return folder / entry.task if companion(entry) else folder  # MAIR: a folder per task (each downloads its own files)


def _with_subdir(folder: Path, entry: Entry) -> Path:
    if entry.subdir and (folder / entry.subdir).is_dir():
        return folder / entry.subdir
    return folder


def candidates(name: str, entry: Entry) -> List[Path]:
    out = []
    root = os.environ.get(ENV_ROOT)
    if root:
        root_p = Path(root).expanduser()
        if entry.repo_id:
            out += [root_p / entry.repo_id, root_p / entry.repo_id.split("/", 1)[1]]
        out.append(root_p / name)
    if entry.repo_id:
        out.append(cache_dir(entry))
    return out


def how_to_get(name: str, entry: Entry) -> str:
    rev = f" --revision {entry.revision}" if entry.revision else ""
    if entry.family in NOT_ON_HUB:  # MultiConIR: a GitHub repository
        return (f"{NOT_ON_HUB[entry.family]}, then pass path=<folder>/{entry.subdir or ''} (or set {ENV_ROOT} to the "
                f"folder that holds {entry.repo_id}/)")
    if qrels_repo(entry):
        beir = entry.repo_id.split("/", 1)[1]
        return (f"download {BEIR_URL.format(name=beir)} and unzip it (the folder {beir}/), or run "
                f"`{hub_cli()} download --repo-type dataset {entry.repo_id}{rev} --local-dir <folder>` and "
                f"`{hub_cli()} download --repo-type dataset {qrels_repo(entry)}{rev} --local-dir <folder>/qrels`; "
                f"then pass path=<folder> (or set {ENV_ROOT} to the folder that holds {beir}/)")
    if companion(entry):
        other, allow, sub = companion(entry)
        include = " ".join(f"--include '{a}'" for a in entry.allow)
        return (f"`{hub_cli()} download --repo-type dataset {entry.repo_id}{rev} {include} --local-dir <folder>` and "
                f"`{hub_cli()} download --repo-type dataset {other} {' '.join(f'--include {a!r}' for a in allow)} "
                f"--local-dir <folder>{'/' + sub if sub else ''}`"
                f"{f' (the second into <folder>/{sub})' if sub else ' (both into the same folder)'}, then pass "
                f"path=<folder> (or set {ENV_ROOT} to the folder that holds {entry.repo_id.split('/', 1)[1]}/)")
    return (f"{hub_cli()} download --repo-type dataset {entry.repo_id}{rev} --local-dir <folder>, then pass "
            f"path=<folder> (or set {ENV_ROOT} to the folder that holds {entry.repo_id.split('/', 1)[1]}/)")


def locate(name: str, entry: Entry, path: Optional[str] = None, download: bool = True) -> Path:
    """The local folder holding ``name``'s files (downloading the pinned revision if allowed and online)."""
    if path is not None:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise DataError(f"{name}: the data folder {folder} does not exist"
                            + (f"; get the data with: {how_to_get(name, entry)}" if entry.repo_id else ""))
        return _with_subdir(folder, entry)
    tried = candidates(name, entry)
    for folder in tried:
        if folder.is_dir():
            return _with_subdir(folder, entry)
    where = ", ".join(str(t) for t in tried) or "(no candidate folders)"
    if not download or offline() or entry.family in NOT_ON_HUB:
        reason = "it is not on the hub" if entry.family in NOT_ON_HUB else \
            "HF_HUB_OFFLINE is set" if offline() else "downloading is disabled"
        raise DataError(f"{name}: no local copy found (looked in {where}) and {reason}. "
                        f"Get the data with: {how_to_get(name, entry)}")
    try:
        unreachable = hub_unreachable()
        if unreachable:  # at once, instead of huggingface_hub's retries
            raise ConnectionError(unreachable)
        folder = _download(entry)
    except ImportError:
        raise
    except Exception as err:  # huggingface_hub's HTTP/connection errors (httpx or requests): one clear DataError
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise DataError(f"{name}: no local copy found (looked in {where}) and the download of {entry.repo_id} failed "
                        f"({type(err).__name__}: {first}). Offline, set HF_HUB_OFFLINE=1 to skip the download. "
                        f"Get the data with: {how_to_get(name, entry)}") from None
    return _with_subdir(folder, entry)


def read_revision(folder: Path, entry: Entry) -> Optional[str]:
    """The revision of ``entry.repo_id`` the files in ``folder`` are, as far as it is recorded: the pinned one for this
    package's own download (the cache folder), the commit ``hf download --local-dir`` wrote into
    ``.cache/huggingface/download/*.metadata``, else None (a folder put together by hand: see :func:`content_hash`)."""
    folder = Path(folder).resolve()
    cache = cache_dir(entry).resolve()
    if folder == cache or cache in folder.parents:
        return entry.revision or "main (unpinned)"
    for root in (folder, folder.parent):
        meta = root / ".cache" / "huggingface" / "download"
        for marker in sorted(meta.rglob("*.metadata")) if meta.is_dir() else []:
            commit = marker.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0].strip()
            if commit:
                return commit
    return None


def content_hash(folder: Path) -> str:
    """``sha256:<hex>`` over every file under ``folder`` (relative name and bytes, in name order; ``.cache/`` left
    out): what was read from a local folder whose revision is not recorded."""
    import hashlib
    folder = Path(folder)
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and ".cache" not in p.relative_to(folder).parts):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return "sha256:" + h.hexdigest()


def _download(entry: Entry) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ImportError("downloading datasets needs huggingface_hub: pip install 'pyterrier-instruct[hf]'") from None
    target = cache_dir(entry)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    snapshot_download(entry.repo_id, repo_type="dataset", revision=entry.revision, local_dir=str(tmp),
                      allow_patterns=list(entry.allow) or None)
    if qrels_repo(entry):  # BEIR: the qrels repository's test/dev/train.tsv go to qrels/, as in the official zip
        snapshot_download(qrels_repo(entry), repo_type="dataset", revision=entry.revision, local_dir=str(tmp / "qrels"),
                          allow_patterns=["*.tsv"])
    if companion(entry):  # MAIR: the documents repository into the same folder; FreshStack: the corpus into a subfolder
        other, allow, sub = companion(entry)
        snapshot_download(other, repo_type="dataset", revision=None, local_dir=str(tmp / sub) if sub else str(tmp),
                          allow_patterns=list(allow))
    tmp.rename(target)
    return target
