"""What the instructor sees while a run works: a line for each step from the first second.

On a terminal, a one-line bar (count, rate, ETA) is redrawn for each notebook; elsewhere (a log, CI,
a pipe) each finished notebook is a line of its own. `say` prints a line in both cases (course
set-up, discovery), so a long first run is never silent.

Labels carry student ids: they are shown through `tapelab.outside.printable` (escape sequences, carriage
returns, line separators as `\\x1b`, `\\r`, `\\u2028`), so no name can move the cursor or rewrite the terminal.
"""
from __future__ import annotations

import sys
import time

from tapelab.outside import printable

__all__ = ["Progress"]


class Progress:
    def __init__(self, total: int = 0, stream=None, width: int = 28):
        self.total, self.done, self.width = total, 0, width
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.drawn = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream never stops grading
            pass

    def say(self, message: str) -> None:
        """A line of its own (below the bar on a terminal)."""
        self._write(("\n" if self.drawn else "") + f"tapelab grade: {printable(message)}\n")
        self.drawn = False

    def begin(self, total: int) -> None:
        self.total, self.done, self.start = total, 0, time.monotonic()

    def advance(self, label: str = "") -> None:
        self.done += 1
        label = printable(label)
        if not self.tty:
            self._write(f"[{self.done}/{self.total}] {label}\n")
            return
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        filled = int(self.width * self.done / self.total) if self.total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        self._write(f"\r[{bar}] {self.done}/{self.total}  {rate * 60:5.1f}/min  "
                    f"ETA {int(eta) // 60:d}:{int(eta) % 60:02d}  {label[:48]:<48}")
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self._write("\n")
            self.drawn = False
