"""``Entry``: the registry record of one dataset id (:mod:`.registry`, :mod:`.catalog`); plain data."""
from __future__ import annotations

from typing import NamedTuple, Optional, Tuple


class Entry(NamedTuple):
    family: str  # layout reader: bundled, followir, followir-mteb, mfollowir, infosearch, ifir, instructir, beir
    repo_id: Optional[str]      # hub dataset repository (None: bundled with the package)
    revision: Optional[str]     # pinned commit; None = the repository's main branch (no usable pin published)
    measure: str                # the benchmark's standard retrieval measure
    size: str                   # published size (the paper's dataset table or the hub card)
    licence: str
    subdir: Optional[str] = None    # folder inside the repository (IFIR subsets)
    lang: Optional[str] = None      # mFollowIR language of the {config}-{lang} folders
    allow: Tuple[str, ...] = ()     # files to download
    split: Optional[str] = None     # BEIR: the qrels split read (test; dev = qrels/dev.tsv, else qrels/train.tsv)
    task: Optional[str] = None      # BRIGHT / MAIR: the task (BRIGHT key, MAIR task folder)
