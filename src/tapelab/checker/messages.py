"""What a student reads: check outcomes as exceptions, and one rich display for every outcome.

A failed check raises a subclass of AssertionError so that nbgrader scores the cell as failed. In
IPython a custom exception handler shows the failure as the same styled box as Correct, Hint and
Solution (a `Message`), then lets the kernel send a one-line plain error output: nbgrader gives a
cell with an error output no points, and the checker's own frames are noise to a student.

Every `Message` is HTML for JupyterLab and plain text for terminals and nbgrader (tapelab's feedback
pages drop JSON outputs); a failure's box also carries `MIME` JSON ({outcome, exercise, cause,
cause_title, message, expected, actual}) for tools that read notebooks, such as class insight.
Correct, Hint and Solution boxes render as they always have (the solutions' stored outputs, which
nbval compares, stay valid), except a Correct box with `tapelab lint` notes: it lists them, says the
grade is unchanged, and carries the JSON too, with the findings under `lint`.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from tapelab.causes import cause as lookup_cause

__all__ = ["Feedback", "Incorrect", "NotAttempted", "Message", "MIME", "install_ipython_handler", "show"]

MIME = "application/vnd.tapelab.feedback+json"


class Feedback(AssertionError):
    """A check that did not pass; the message is written for the student.

    `cause` is the code of the established mistake in `tapelab.causes` (None when the checker could not
    establish one, e.g. a bare mismatch); it travels with the message to nbgrader and class insight.
    `expected` and `actual`, when given, are short renderings of the two values the message compares,
    shown side by side. `exercise` is the exercise number, filled in by `Exercise.check`.
    """

    title = "Not yet"
    kind = "incorrect"
    findings: tuple = ()  # the `tapelab lint` findings that established `cause` (tapelab.checker.lint_facts), if any
    # For a failure that wraps the student's error: what raised and where, before any general explanation of it
    # (tapelab.checker.tf_errors), so that a checker that knows more can say it instead. "" otherwise.
    observed: str = ""

    def __init__(self, message: str, cause: str | None = None, *, expected: str | None = None,
                 actual: str | None = None):
        super().__init__(message)
        if cause is not None:
            lookup_cause(cause)  # an unknown code is the checker's bug: fail loudly, in tests
        self.cause = cause
        self.expected, self.actual = expected, actual
        self.exercise: str | None = None

    def box(self) -> "Message":
        """The box a student sees for this failure."""
        return Message(self.kind, str(self), exercise=self.exercise, cause=self.cause,
                       expected=self.expected, actual=self.actual, lint=self.findings)

    def status_line(self) -> str:
        """The plain line of the cell's error output, under the box: says why the cell is marked failed."""
        which = f": exercise {self.exercise}" if self.exercise else ""
        return f"{self.title}{which}. This cell shows as an error until its check says Correct."


class Incorrect(Feedback):
    """The answer runs but is wrong; the message names the mistake."""

    title = "Incorrect"


class NotAttempted(Feedback):
    """The answer cell still holds the stub."""

    title = "Not attempted"
    kind = "not-attempted"


# kind -> (background, accent, label)
_STYLES = {
    "correct": ("#e6f4ea", "#1e7e34", "Correct"),
    "task": ("#f3e5f5", "#6a1b9a", "Task"),
    "hint": ("#fff8e1", "#8a6d00", "Hint"),
    "solution": ("#e8f0fe", "#1a4fa0", "Solution"),
    "incorrect": ("#fdecea", "#b3261e", "Incorrect"),
    "not-attempted": ("#f1f3f4", "#5f6368", "Not attempted"),
}
_FAILURES = ("incorrect", "not-attempted")
# A value in the side-by-side table keeps its line breaks and wraps at spaces; a word is cut only when
# it alone is wider than its column.
_PRE = "margin:0;white-space:pre-wrap;overflow-wrap:break-word;word-break:normal"


@dataclass(frozen=True)
class Message:
    """A styled box in JupyterLab, plain text in a terminal or in nbgrader's output; a failure also
    carries tapelab's JSON (outcome, exercise, cause) for tools that read notebooks."""

    kind: str
    text: str
    code: str = ""
    exercise: str | None = None
    cause: str | None = None
    expected: str | None = None
    actual: str | None = None
    # `tapelab lint` findings (tapelab.lint.Finding): on a failure, the one that established its cause; on
    # Correct, pitfalls shown as notes that do not change the grade
    lint: tuple = ()

    def __repr__(self) -> str:
        lines = [f"{_STYLES[self.kind][2]}: {self.text}"]
        if self._compares():
            lines += [f"  expected:    {self.expected}", f"  your answer: {self.actual}"]
        lines += [f"  {note}" for note in self._notes()]
        if self.code:
            lines += ["", self.code]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        background, colour, label = _STYLES[self.kind]
        code = f"<pre style='margin:6px 0 0 0'>{html.escape(self.code)}</pre>" if self.code else ""
        marks = ""
        if self.kind in _FAILURES:  # a page or a test can find the outcome and its cause in the box itself
            marks = f" data-tapelab-outcome='{self.kind}'"
            marks += f" data-tapelab-cause='{html.escape(self.cause)}'" if self.cause else ""
        style = f"background:{background};border-left:4px solid {colour};padding:6px 10px"
        style += ";overflow-wrap:break-word" if self.kind in _FAILURES else ""
        notes = "".join(f"<div style='margin:4px 0 0 0'>{_inline_code(n)}</div>" for n in self._notes())
        return (
            f"<div{marks} style='{style}'>"
            f"<b style='color:{colour}'>{label}:</b> {_inline_code(self.text)}{self._side_by_side()}{code}{notes}</div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """IPython's hook: every form at once, so the notebook stores each of them."""
        bundle: dict[str, Any] = {"text/plain": repr(self), "text/html": self._repr_html_()}
        if self.kind in _FAILURES or self.lint:
            bundle[MIME] = self.data()
        return bundle

    def data(self) -> dict[str, Any]:
        """The JSON form: the outcome, the exercise, the cause code and its catalogue title, the message; and,
        when there are any, the lint findings (rule number, cause code, line, message, fix)."""
        data = {"outcome": self.kind, "exercise": self.exercise, "cause": self.cause,
                "cause_title": lookup_cause(self.cause).title if self.cause else None,
                "message": self.text, "expected": self.expected, "actual": self.actual}
        if self.lint:
            data["lint"] = [{"rule": f.number, "code": f.code, "line": f.line, "message": f.message, "fix": f.fix}
                            for f in self.lint]
        return data

    def _notes(self) -> list[str]:
        """A Correct box's lint notes, one line each, then that they leave the grade alone."""
        if self.kind != "correct" or not self.lint:
            return []
        return ([f"Correct, but: {f.number} `{f.code}` at line {f.line}: {f.fix}" for f in self.lint]
                + ["(A note from `tapelab lint`: your grade is unchanged.)"])

    def _compares(self) -> bool:
        return self.expected is not None and self.actual is not None

    def _side_by_side(self) -> str:
        if not self._compares():
            return ""
        cell = "padding:2px 12px 2px 0;vertical-align:top;text-align:left"
        heads = "".join(f"<th style='{cell}'>{h}</th>" for h in ("Expected", "Your answer"))
        values = "".join(f"<td style='{cell}'><pre style='{_PRE}'>{html.escape(v)}</pre></td>"
                         for v in (self.expected, self.actual))
        return (f"<table style='margin:6px 0 0 0;border-collapse:collapse;table-layout:fixed;width:100%'>"
                f"<tr>{heads}</tr><tr>{values}</tr></table>")


def _inline_code(text: str) -> str:
    """Turn `backticks` into <code> for the HTML form."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _show_feedback(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler: the failure's box, then a one-line plain error output.

    IPython discards what a handler returns, so the handler displays the error itself; the kernel
    then sends an ordinary error output (the cell's last), which nbgrader scores as a failed test.
    """
    from IPython.display import display

    display(value.box())
    stb = [value.status_line()]
    shell._showtraceback(etype, value, stb)
    return stb


def show(obj: Any) -> None:
    """Display `obj` in the notebook (IPython's rich display), or print it where there is none."""
    try:
        from IPython.display import display
    except ImportError:  # pragma: no cover
        print(repr(obj))
        return
    display(obj)


def install_ipython_handler() -> None:
    """Show Feedback exceptions as messages in IPython; a no-op outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with every kernel
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((Feedback,), _show_feedback)
