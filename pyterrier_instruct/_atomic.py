"""Files and folders replaced whole: a reader (or a process started after a kill or a full disk) finds the old one or
the new one, never a truncated mix."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import uuid
from typing import Dict, Iterator, List, Optional


def write_text(path: str, text: str) -> None:
    """``text`` written to ``path`` atomically: a temporary file next to it, flushed to disk, then renamed over it."""
    tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def written(path: str) -> Iterator[str]:
    """A temporary path beside ``path`` with the same extension (for writers that read the format from it, e.g.
    ``savefig``): what the block writes there replaces ``path`` whole once flushed to disk; an error removes it."""
    root, ext = os.path.splitext(path)
    tmp = f"{root}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial{ext}"
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json(path: str, value, indent: int = 1) -> None:
    """``value`` as JSON, written with :func:`write_text`."""
    write_text(path, json.dumps(value, indent=indent))


def fsync_file(path: str) -> None:
    """Flushes a written file's data to disk (before the rename that publishes it)."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def fsync_dir(path: str) -> None:
    """Makes a rename or a new entry in the folder ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def lock(path: str, timeout: Optional[float], what: str):
    """A :mod:`filelock` lock at ``path``, acquired: waits up to ``timeout`` seconds (None: as long as it takes; the
    lock of a killed process is released by the system), then TimeoutError naming ``what`` and the lock file."""
    from filelock import FileLock, Timeout
    held = FileLock(path, timeout=-1 if timeout is None else float(timeout))
    try:
        held.acquire()
    except Timeout:
        raise TimeoutError(f"{what} is being written by another process (it holds {path}), still after {timeout:g} s: "
                           "wait for it to finish (lock_timeout=None waits indefinitely), or write elsewhere") from None
    return held


#: the names of the folders :func:`replaced_folder` makes beside ``path``, after ``<path>.``: a build in progress
#: (``<pid>-<8 hex>.partial``) and the previous folder set aside by a swap (``<pid>-<8 hex>.old``)
_OWN = r"\.\d+-[0-9a-f]{8}\.(partial|old)"


def _beside(path: str, kind: str) -> str:
    return f"{path}.{os.getpid()}-{uuid.uuid4().hex[:8]}.{kind}"


@contextlib.contextmanager
def replaced_folder(path: str, *, lock_timeout: Optional[float] = None, what: Optional[str] = None) -> Iterator[str]:
    """Builds a folder that replaces ``path`` whole: yields a temporary sibling (``<path>.<pid>-<8 hex>.partial``) to
    write into; when the block ends without an error the sibling takes ``path``'s place, otherwise it is removed and
    ``path`` is left as it was. Under a lock at ``<path>.lock``, so a second builder waits (or, after ``lock_timeout``
    seconds, gets a TimeoutError naming the path).

    The swap is two renames: ``path`` to ``<path>.<pid>-<8 hex>.old``, then the sibling to ``path``; the old folder is
    removed after it (a reader that holds its files open, or memory-mapped, keeps reading them). Between the two renames
    ``path`` is missing: :func:`settled` waits for the builder (or, after a kill there, puts the previous folder back).
    Before and after each build, under the lock, what killed builders of ``path`` left is removed: exactly the two
    names above, never a sibling index such as ``<path>.stemmed`` or its build in progress."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    held = lock(path + ".lock", lock_timeout, what or path)
    try:
        _sweep(path)
        tmp = _beside(path, "partial")
        os.mkdir(tmp)
        yield tmp
        _fsync_tree(tmp)
        if os.path.lexists(path):
            os.rename(path, _beside(path, "old"))
        os.rename(tmp, path)
        fsync_dir(os.path.dirname(path))
    finally:
        _sweep(path)  # this build's partial after an error, or the old folder after the swap (put back if it failed)
        held.release()


def settled(path: str) -> str:
    """``path`` as a reader should find it: where :func:`replaced_folder` set the previous folder aside and ``path`` is
    missing (its builder is between the two renames, or was killed there), waits for the lock and puts it back."""
    path = os.path.abspath(path)
    if not os.path.lexists(path) and _own_siblings(path)["old"]:
        held = lock(path + ".lock", None, path)
        try:
            _sweep(path)
        finally:
            held.release()
    return path


def _own_siblings(path: str) -> Dict[str, List[str]]:
    """The folders :func:`replaced_folder` made beside ``path`` (names matched whole by :data:`_OWN`), by kind."""
    parent, own = os.path.dirname(path), re.compile(re.escape(os.path.basename(path)) + _OWN)
    found: Dict[str, List[str]] = {"partial": [], "old": []}
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(parent):
            match = own.fullmatch(name)
            if match:
                found[match.group(1)].append(os.path.join(parent, name))
    return found


def _sweep(path: str) -> None:
    """Under the lock of ``path`` (so no live builder owns them): a previous folder set aside by a swap that did not
    finish is put back where ``path`` is missing; partial builds and other set-aside folders are removed (an old one
    renamed to a partial name first, so that a kill while removing it never leaves part of a folder under ``.old``)."""
    found = _own_siblings(path)
    if found["old"] and not os.path.lexists(path):
        back = max(found["old"], key=os.path.getmtime)
        os.rename(back, path)
        found["old"].remove(back)
    for old in found["old"]:
        doomed = _beside(path, "partial")
        os.rename(old, doomed)
        found["partial"].append(doomed)
    for folder in found["partial"]:
        shutil.rmtree(folder, ignore_errors=True)


def _fsync_tree(folder: str) -> None:
    for root, _, files in os.walk(folder):
        for name in files:
            fsync_file(os.path.join(root, name))
        fsync_dir(root)


def _remove_folder(path: str, pid: int) -> None:
    if os.getpid() == pid:  # not from a forked child that inherited the exit hook
        shutil.rmtree(path, ignore_errors=True)
        if os.path.isfile(path + ".lock"):  # the lock file replaced_folder leaves beside it
            os.remove(path + ".lock")


def temporary_folder(prefix: str) -> str:
    """A new folder in the system's temporary directory, removed when the process that made it exits (a killed
    process leaves it)."""
    import atexit
    import tempfile
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(_remove_folder, path, os.getpid())
    return path
