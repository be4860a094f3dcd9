"""Intentional non-finite values: the `-inf` of an attention mask, a NaN a loss masks out on purpose.

An op is *allowed* to make NaN or Inf when its type is listed (`"Log"`), its user line is listed
(`"model.py:42"`, a file name or the end of a path, then the line), or it ran inside
`with allow_non_finite():`. The context manager is plain Python: under `tf.function` it only marks the
ops diagnose replays eagerly, and costs nothing in the compiled step.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterable, Iterator

__all__ = ["Allowlist", "allow_non_finite", "inside_allowed"]

_STATE = threading.local()


@contextmanager
def allow_non_finite() -> Iterator[None]:
    """Ops run inside this block may make NaN or Inf on purpose: diagnose never names them as the producer."""
    _STATE.depth = getattr(_STATE, "depth", 0) + 1
    try:
        yield
    finally:
        _STATE.depth -= 1


def inside_allowed() -> bool:
    """Whether the current thread is inside `allow_non_finite()`."""
    return getattr(_STATE, "depth", 0) > 0


class Allowlist:
    """Op types and user lines whose non-finite outputs are intended."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        if isinstance(entries, str):
            entries = [entries]
        self.kinds: set[str] = set()
        self.lines: list[tuple[str, int]] = []
        for entry in entries:
            path, _, line = str(entry).rpartition(":")
            if path and line.isdigit():
                self.lines.append((path, int(line)))
            elif ":" in str(entry) or not str(entry):
                raise ValueError(f"allow entry {entry!r} is neither an op type (`'Log'`) nor `'file.py:LINE'`")
            else:
                self.kinds.add(str(entry))

    def covers(self, op) -> bool:
        """Whether `op` (a recorded `Op`) may make non-finite values: listed, or run inside the context manager."""
        if op.allowed or op.kind in self.kinds:
            return True
        return any(loc.lineno == line and (loc.filename == path or loc.filename.endswith("/" + path.lstrip("/")))
                   for loc in op.trail for path, line in self.lines)
