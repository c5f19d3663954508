"""What an index was built from: a digest of its corpus (every document's docno and the fields the index reads, in
order), recorded when the index is built and compared when the index is opened again with a corpus, so an index of
another corpus (documents added, removed, edited or reordered) is refused instead of answering with stale docnos."""
from __future__ import annotations

import hashlib
import json
import logging
import os
from typing import Dict, Iterable, Iterator, Optional, Sequence

log = logging.getLogger(__name__)

#: the file an index folder records its corpus digest in (PISA; Lucene: beside its folder; dense: ``meta.json``)
RECORD = "corpus.json"


class CorpusChanged(ValueError):
    """An index was built from another corpus than the one given now."""


class CorpusDigest:
    """Iterates ``docs`` unchanged while hashing each document's ``docno`` and ``fields`` (absent fields read as
    empty); :attr:`value` is ``<count>:<32 hex digits>`` once the iteration is complete."""

    def __init__(self, docs: Iterable[Dict], fields: Sequence[str]):
        self.docs, self.fields = docs, tuple(f for f in fields if f)
        self._hash, self.count, self.done = hashlib.sha256(), 0, False

    def __iter__(self) -> Iterator[Dict]:
        for doc in self.docs:
            values = [str(doc.get("docno", ""))] + ["" if doc.get(f) is None else str(doc.get(f)) for f in self.fields]
            self._hash.update(json.dumps(values, ensure_ascii=False).encode("utf-8") + b"\n")
            self.count += 1
            yield doc
        self.done = True

    @property
    def value(self) -> str:
        return f"{self.count}:{self._hash.hexdigest()[:32]}"


def corpus_digest(docs: Iterable[Dict], fields: Sequence[str]) -> str:
    digest = CorpusDigest(docs, fields)
    for _ in digest:
        pass
    return digest.value


def record_path(folder: str, inside: bool = True) -> str:
    """``folder/corpus.json``, or ``folder.corpus.json`` beside it for an index format that owns its folder (Lucene)."""
    return os.path.join(folder, RECORD) if inside else os.path.normpath(folder) + "." + RECORD


def record(folder: str, digest: CorpusDigest, inside: bool = True) -> None:
    """Writes the digest to :func:`record_path` (only after a complete iteration)."""
    if digest.done:
        from ._atomic import write_json
        write_json(record_path(folder, inside), {"corpus": digest.value, "fields": list(digest.fields)})


def recorded(folder: str, inside: bool = True) -> Optional[str]:
    try:
        with open(record_path(folder, inside), encoding="utf-8") as f:
            return json.load(f).get("corpus")
    except (OSError, ValueError, AttributeError):
        return None


def check(what: str, built: Optional[str], docs: Iterable[Dict], fields: Sequence[str], fix: str) -> None:
    """Compares the digest ``built`` recorded for the index ``what`` with the corpus ``docs``; :class:`CorpusChanged`
    naming both (document counts and digests) and ``fix`` when they differ. An index without a record (built by an
    older version or another tool) cannot be compared: a warning says so."""
    if built is None:
        log.warning("%s records no digest of the corpus it was built from, so it cannot be checked against the corpus "
                    "given; if that corpus changed, %s", what, fix)
        return
    now = corpus_digest(docs, fields)
    if now != built:
        count_then, count_now = built.split(":")[0], now.split(":")[0]
        change = (f"{count_then} documents then, {count_now} now" if count_then != count_now
                  else f"the same {count_now} documents in number, but their ids, text or order differ")
        raise CorpusChanged(f"{what} was built from another corpus than the one given ({change}; digest {built} vs "
                            f"{now}): its results would name documents of the old corpus; {fix}")
