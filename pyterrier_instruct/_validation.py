"""Input validation errors that say how to fix the pipeline.

``bm25 >> reranker`` fails because a first stage returns ``qid, docno, score, rank`` without the document text.
PyTerrier's ``InputValidationError`` lists the missing columns; :func:`text_hint` re-raises it as
:class:`MissingTextError` (a subclass, with the same ``modes``, so ``pt.inspect`` and ``except
pt.validate.InputValidationError`` still work) whose message adds the fix: a text loader between the stages.
"""
from __future__ import annotations

import contextlib

import pyterrier as pt

from .errors import MissingTextError


def lacks_text(err: pt.validate.InputValidationError, text_field: str) -> bool:
    """Some mode failed only for want of the text: the frame has docnos (a result frame), not ``text_field``."""
    return any(text_field in m.missing_columns and "docno" not in m.missing_columns and not m.extra_columns
               for m in err.modes)


@contextlib.contextmanager
def text_hint(text_field: str):
    """Wraps a ``pt.validate`` block: an ``InputValidationError`` caused by a missing ``text_field`` on a result frame
    becomes a :class:`MissingTextError` naming the text loader to add; any other error is left as it is."""
    try:
        yield
    except pt.validate.InputValidationError as err:
        if isinstance(err, MissingTextError) or not lacks_text(err, text_field):
            raise
        raise MissingTextError(err.args[0], err.modes, text_field) from None
