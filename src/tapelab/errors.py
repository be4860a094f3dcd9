"""One hierarchy for the errors tapelab raises on purpose, each with a message that says what happened
and what to do. Imports nothing (floor 1).

- `UsageError`: the input or set-up of a command cannot be used (an argument, a course folder, a
  gradebook URL, a roster, a pyproject.toml table); nothing was done. Exit status 2.
- `InfraError`: the grading machinery failed (a kernel that did not start, a malformed result); no fault
  of the student's, and a rerun may succeed. Exit status 1.
- `SubmissionError`: one submission cannot be graded as sent (unreadable, too large); it ends as that
  input's status in the report and the run goes on, so it never reaches a command's exit status.

Each concrete class keeps the builtin it always was (`ValueError`, `RuntimeError`, `KeyError`) as a
second base, so code that caught that goes on catching it. A command catches `TapelabError` once and
exits with the class's `exit_code`.
"""
from __future__ import annotations

__all__ = ["InfraError", "SubmissionError", "TapelabError", "UsageError"]


class TapelabError(Exception):
    """Base of every error tapelab raises on purpose."""

    exit_code = 1

    def __str__(self) -> str:  # the message as written, also for KeyError subclasses (which quote it)
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class UsageError(TapelabError):
    """The command's input or set-up cannot be used: fix it (the message says how) and rerun."""

    exit_code = 2


class InfraError(TapelabError):
    """The grading machinery failed, not the student's code: rerun (the message says what else to do)."""

    exit_code = 1


class SubmissionError(TapelabError):
    """One submission cannot be graded as sent: its input ends with a status, the run goes on."""
