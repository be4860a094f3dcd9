"""Keep TensorFlow's Python log lines and Python warnings off stderr while checker code runs.

nbgrader scores a test cell that writes to stderr as zero, so a correct answer must stay silent
even when running it makes Keras warn or TensorFlow log; the text is kept for feedback.
"""
from __future__ import annotations

import logging
import warnings

__all__ = ["Quiet"]


class Quiet(logging.Handler):
    """Context manager: collect the `tensorflow` logger's records and all warnings in `lines`."""

    def __enter__(self) -> "Quiet":
        self.lines: list[str] = []
        self._logger = logging.getLogger("tensorflow")
        self._saved = (self._logger.handlers[:], self._logger.propagate)
        self._logger.handlers, self._logger.propagate = [self], False
        self._warnings = warnings.catch_warnings(record=True)
        self._caught = self._warnings.__enter__()
        warnings.simplefilter("always")
        return self

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def __exit__(self, *exc) -> None:
        self._warnings.__exit__(*exc)
        self.lines += [str(w.message) for w in self._caught]
        self._logger.handlers, self._logger.propagate = self._saved
