"""Keep TensorFlow's log lines and Python warnings off stderr while checker code runs.

nbgrader scores a test cell that writes to stderr as zero, so a correct answer must stay silent
even when running it makes Keras warn or TensorFlow log; the text is kept for feedback.

TensorFlow logs from two places: its Python `tensorflow` logger, and its C++ runtime, which writes
to file descriptor 2 directly (`W tensorflow/core/...` lines, `tf.print`). Redirecting `sys.stderr`
cannot catch the second kind, so `Quiet` also points fd 2 at a temporary file while it is active.
In a kernel this is what ipykernel's own capture relies on: it `dup2`s a pipe onto fd 2 and a
thread forwards what arrives there to the cell's stderr stream (OutStream's `watchfd`); while
`Quiet` holds fd 2 nothing reaches that pipe, and on exit fd 2 is the pipe again.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings

from tapelab.tf_log import tf_log_messages

__all__ = ["Quiet", "StderrFd"]

_FD = 2


class StderrFd:
    """Context manager: point file descriptor 2 at a temporary file; `lines` holds what was written.

    Robust to an exception inside the block (fd 2 is restored in `__exit__`), to nesting (each
    level saves and restores the fd 2 it found), and to fd 2 being closed on entry (it is closed
    again on exit).
    """

    def __enter__(self) -> "StderrFd":
        self.lines: list[str] = []
        _flush_python_stderr()  # text written before the block goes where it was meant to
        self._file = tempfile.TemporaryFile()
        try:
            self._saved: int | None = os.dup(_FD)
        except OSError:  # fd 2 is closed: C writes would fail anyway; capture them, then close it again
            self._saved = None
        os.dup2(self._file.fileno(), _FD)
        return self

    def __exit__(self, *exc) -> None:
        _flush_python_stderr()  # a terminal's sys.stderr writes to fd 2: keep the block's text in the block
        try:
            if self._saved is None:
                os.close(_FD)
            else:
                os.dup2(self._saved, _FD)
                os.close(self._saved)
        finally:
            self._file.seek(0)
            text = self._file.read().decode("utf-8", errors="replace")
            self._file.close()
            self.lines = [line for line in text.splitlines() if line.strip()]


def _flush_python_stderr() -> None:
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # no stderr, or a closed one: nothing to flush
        pass


class Quiet:
    """Context manager: collect the `tensorflow` logger's records (tapelab.tf_log), all warnings and
    whatever reaches file descriptor 2 in `lines` (in that order)."""

    def __enter__(self) -> "Quiet":
        self._stack = contextlib.ExitStack()
        self._logged = self._stack.enter_context(tf_log_messages())
        self._caught = self._stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        self._fd = self._stack.enter_context(StderrFd())
        self.lines: list[str] = self._logged
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._stack.__exit__(*exc)
        finally:
            self.lines = self._logged + [str(w.message) for w in self._caught] + self._fd.lines
