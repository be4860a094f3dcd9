"""A one-line progress bar on stderr (count, rate, ETA), shown only when stderr is a terminal.

Labels carry student ids: characters that are not printable (escape sequences, carriage returns,
line separators) are shown as `?`, so no name can move the cursor or rewrite the terminal.
"""
from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    def __init__(self, total: int, stream=None, width: int = 28):
        self.total, self.done, self.width = total, 0, width
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)()) and total > 0
        self.start = time.monotonic()

    def advance(self, label: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        filled = int(self.width * self.done / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        label = "".join(c if c.isprintable() else "?" for c in label)
        line = (f"\r[{bar}] {self.done}/{self.total}  {rate * 60:5.1f}/min  "
                f"ETA {int(eta) // 60:d}:{int(eta) % 60:02d}  {label[:40]:<40}")
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
