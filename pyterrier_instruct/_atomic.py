"""Files and folders replaced whole: a reader (or a process started after a kill or a full disk) finds the old one or
the new one, never a truncated mix."""
from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import sys
import uuid
from typing import Iterator, Optional


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
    """A :mod:`filelock` lock at ``path``, acquired: waits up to ``timeout`` seconds (None: as long as it takes; the lock
    of a killed process is released by the system), then TimeoutError naming ``what`` and the lock file."""
    from filelock import FileLock, Timeout
    held = FileLock(path, timeout=-1 if timeout is None else float(timeout))
    try:
        held.acquire()
    except Timeout:
        raise TimeoutError(f"{what} is being written by another process (it holds {path}), still after {timeout:g} s: wait for "
                           "it to finish (lock_timeout=None waits as long as it takes), or write to another path") from None
    return held


@contextlib.contextmanager
def replaced_folder(path: str, *, lock_timeout: Optional[float] = None, what: Optional[str] = None) -> Iterator[str]:
    """Builds a folder that replaces ``path`` whole: yields a temporary sibling (``<path>.<pid>-<random>.partial``) to
    write into; when the block ends without an error the sibling takes ``path``'s place, otherwise it is removed and
    ``path`` is left as it was. Under a lock at ``<path>.lock``, so a second builder waits (or, after ``lock_timeout``
    seconds, gets a TimeoutError naming the path). Partial siblings of killed builders are removed first.

    The swap is one atomic rename where ``path`` does not exist yet, else an atomic exchange (Linux ``renameat2``
    ``RENAME_EXCHANGE``) of the two folders; where that call is missing, ``path`` is first renamed to
    ``<path>.<pid>-<random>.old`` and a kill between the two renames leaves the previous folder there, which the next
    build puts back. The old folder is removed after the swap: a reader that holds its files open (or memory-mapped)
    keeps reading them."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    held = lock(path + ".lock", lock_timeout, what or path)
    try:
        _sweep_siblings(path)
        tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial"
        os.mkdir(tmp)
        try:
            yield tmp
            _fsync_tree(tmp)
            old = _swap_in(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        held.release()


def _sweep_siblings(path: str) -> None:
    """Under the lock: partial builds of killed builders are removed; a previous folder set aside by a kill between the
    two renames of the fallback swap is put back when ``path`` is missing."""
    for sibling in glob.glob(glob.escape(path) + ".*.partial"):
        shutil.rmtree(sibling, ignore_errors=True)
    olds = sorted(glob.glob(glob.escape(path) + ".*.old"), key=os.path.getmtime)
    if olds and not os.path.exists(path):
        os.rename(olds.pop(), path)
    for old in olds:
        shutil.rmtree(old, ignore_errors=True)


def _fsync_tree(folder: str) -> None:
    for root, _, files in os.walk(folder):
        for name in files:
            fsync_file(os.path.join(root, name))
        fsync_dir(root)


def _swap_in(tmp: str, path: str) -> Optional[str]:
    """Puts ``tmp`` at ``path``; returns where the previous folder now is (to remove), or None."""
    parent = os.path.dirname(path)
    if not os.path.lexists(path):
        os.rename(tmp, path)
        fsync_dir(parent)
        return None
    if _exchange(tmp, path):
        fsync_dir(parent)
        return tmp  # the exchange left the previous folder under the temporary name
    old = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:8]}.old"
    os.rename(path, old)
    os.rename(tmp, path)
    fsync_dir(parent)
    return old


def _exchange(a: str, b: str) -> bool:
    """Swaps two paths atomically with Linux ``renameat2(..., RENAME_EXCHANGE)``; False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (38, 22, 95):  # ENOSYS, EINVAL, EOPNOTSUPP: a kernel or file system without it
        return False
    raise OSError(errno, f"renameat2(RENAME_EXCHANGE) of {a} and {b}: {os.strerror(errno)}")
