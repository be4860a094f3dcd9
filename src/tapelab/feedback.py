"""What a student reads: check outcomes as exceptions, and rich display objects.

A failed check raises a subclass of AssertionError so that nbgrader scores the cell as failed.
In IPython the traceback is replaced by the message alone: the checker's own frames are noise.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

__all__ = ["Feedback", "Incorrect", "NotAttempted", "Message", "install_ipython_handler"]


class Feedback(AssertionError):
    """A check that did not pass; the message is written for the student.

    `cause` is the code of the established mistake in `tapelab.causes` (None when the checker could not
    establish one, e.g. a bare mismatch); it travels with the message to nbgrader and class insight.
    """

    title = "Not yet"

    def __init__(self, message: str, cause: str | None = None):
        super().__init__(message)
        if cause is not None:
            from tapelab.causes import cause as lookup
            lookup(cause)  # an unknown code is the checker's bug: fail loudly, in tests
        self.cause = cause


class Incorrect(Feedback):
    """The answer runs but is wrong; the message names the mistake."""

    title = "Incorrect"


class NotAttempted(Feedback):
    """The answer cell still holds the stub."""

    title = "Not attempted"


_STYLES = {
    "correct": ("#e6f4ea", "#1e7e34", "Correct"),
    "hint": ("#fff8e1", "#8a6d00", "Hint"),
    "solution": ("#e8f0fe", "#1a4fa0", "Solution"),
}


@dataclass(frozen=True)
class Message:
    """A coloured box in JupyterLab, plain text in a terminal or in nbgrader's output."""

    kind: str
    text: str
    code: str = ""

    def __repr__(self) -> str:
        label = _STYLES[self.kind][2]
        body = f"{label}: {self.text}"
        return f"{body}\n\n{self.code}" if self.code else body

    def _repr_html_(self) -> str:
        background, colour, label = _STYLES[self.kind]
        code = f"<pre style='margin:6px 0 0 0'>{html.escape(self.code)}</pre>" if self.code else ""
        return (
            f"<div style='background:{background};border-left:4px solid {colour};padding:6px 10px'>"
            f"<b style='color:{colour}'>{label}:</b> {_inline_code(self.text)}{code}</div>"
        )


def _inline_code(text: str) -> str:
    """Turn `backticks` into <code> for the HTML form."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _show_feedback(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler: show the title and message, without checker frames.

    IPython discards what a handler returns, so the handler displays the error itself; the
    kernel then sends an ordinary error output, which nbgrader scores as a failed test.
    """
    red, reset = "\x1b[31;1m", "\x1b[0m"
    stb = [f"{red}{value.title}:{reset} {value}"]
    shell._showtraceback(etype, value, stb)
    return stb


def install_ipython_handler() -> None:
    """Show Feedback exceptions as messages in IPython; a no-op outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with every kernel
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((Feedback,), _show_feedback)
