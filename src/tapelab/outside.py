"""Text that came from outside (arguments, student ids, roster names, file names, student output): one
printable form for every plain-text surface, one normal form for every comparison. Imports nothing of tapelab.

`printable` is what a terminal message, a log line, a CSV cell or a plain-text export shows: a control
character, a bidi override or any other invisible character becomes its escape (`\\x1b`, `\\u202e`), a byte
that was not UTF-8 (kept as a surrogate by `surrogateescape`) becomes `\\xNN`. Nothing of it can move a
cursor, retitle a terminal, reorder a line or end a record. HTML pages escape on their own and do not use it.

`normal` is the form in which ids are compared: NFC, so an NFD `José` (what macOS file names and some
shells give) is the same student as the NFC one grading stored.
"""
from __future__ import annotations

import unicodedata

__all__ = ["normal", "printable"]


def _escape(char: str) -> str:
    if "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8
        return char.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
    return char.encode("unicode_escape").decode("ascii")


def printable(text: object, limit: int | None = None) -> str:
    """`text` (made a str) with every character that is not printable shown as its escape; cut after
    `limit` characters with a note of the length."""
    text = text if isinstance(text, str) else str(text)
    cut = text if limit is None else text[:limit]
    out = "".join(c if c.isprintable() else _escape(c) for c in cut)
    return out if len(cut) == len(text) else f"{out}... ({len(text)} characters)"


def normal(text: str) -> str:
    """The form ids are stored and compared in (Unicode NFC)."""
    return unicodedata.normalize("NFC", text)
