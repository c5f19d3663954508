"""Files replaced whole: a reader (or a process started after a kill or a full disk) finds the old file or the new one,
never a truncated mix."""
from __future__ import annotations

import json
import os
import uuid


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


def write_json(path: str, value, indent: int = 1) -> None:
    """``value`` as JSON, written with :func:`write_text`."""
    write_text(path, json.dumps(value, indent=indent))
