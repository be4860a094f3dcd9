"""Ask first: an explorer holds back what it shows until the student has predicted it.

An explorer built with `ask=q1_8, truth=value` (a "predict, then run" question of the section, and the value
the notebook computed with TensorFlow) keeps its plot and readout hidden under a small form: an answer box and
a **Check** button. Check records the answer as the question's prediction and reveals the truth through the
question itself, so the verdict is the section's own (Correct, a misconception with its cause, or the plain
"you predicted X; TensorFlow gives Y"), then the explorer opens. A question already predicted in its cell
opens the explorer at once, and one whose answer the box cannot record (not a number, not a choice) leaves it
closed with the question's own reason.

The question is duck-typed (`predicted`, `kind`, `choices`, `answer`): widgets may not import
the checker.
"""
from __future__ import annotations

import ast
from typing import Any

__all__ = ["AskFirst", "ask_first", "parse_answer"]

_PLACEHOLDER = {"value": "a number, None, or a list", "shape": "a shape, e.g. (3, 2)"}


def parse_answer(text: str) -> Any:
    """The Python value the student typed: a literal (number, None, tuple, list, string) or, failing that,
    the text itself, for the question to refuse in its own words."""
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


class AskFirst:
    """The form that asks `question` before `result` (an ipywidgets box) is shown; `truth` is the answer."""

    def __init__(self, question: Any, truth: Any, result: Any) -> None:
        import ipywidgets as widgets  # here, so that models need no widget stack

        self.question, self.truth, self.result = question, truth, result
        if question.kind == "choice":
            self.answer = widgets.Dropdown(options=[("choose…", None)] + [(str(c), c) for c in question.choices],
                                           value=None, description="Your answer")
        else:
            self.answer = widgets.Text(placeholder=_PLACEHOLDER[question.kind], description="Your answer")
        self.check = widgets.Button(description="Check", tooltip="Record your prediction and show the answer")
        self.output = widgets.Output()
        self.check.on_click(lambda _button: self.submit())
        self.form = widgets.HBox([self.answer, self.check])
        self.widget = widgets.VBox([self.form, self.output])
        self._set_open(question.predicted)
        if question.predicted:
            self._close_form()

    @property
    def open(self) -> bool:
        """Whether the explorer's result is showing."""
        return self.result.layout.display != "none"

    def submit(self) -> None:
        """Record the answer box's value as the prediction, reveal the truth below it, and open if recorded."""
        value = self.answer.value
        guess = parse_answer(value) if isinstance(value, str) else value
        if guess is None and self.question.kind == "choice":
            return  # nothing chosen yet: the button does nothing rather than record a non-answer
        self.output.clear_output()
        with self.output:
            self.question.answer(guess, self.truth)
        if self.question.predicted:
            self._close_form()
            self._set_open(True)

    def _close_form(self) -> None:
        """Answered: the form goes, and its controls are disabled too (nothing hidden can still be moved)."""
        self.form.layout.display = "none"
        self.answer.disabled = self.check.disabled = True

    def _set_open(self, showing: bool) -> None:
        self.result.layout.display = None if showing else "none"


def ask_first(view: Any, ask: Any, truth: Any) -> tuple[Any, AskFirst | None]:
    """An explorer's outer widget: `view` itself without a question, else `view` under a form that asks `ask`
    first (its answer `truth`). Returns the widget and the form (None without a question)."""
    if ask is None:
        return view, None
    import ipywidgets as widgets  # here, so that models need no widget stack

    asking = AskFirst(ask, truth, view)
    return widgets.VBox([asking.widget, view]), asking
