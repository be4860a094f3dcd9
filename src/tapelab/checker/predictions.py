"""Predict, then run: a question the student answers before the next cell computes and shows the answer.

A notebook asks in one cell (`q1_5.predict(...)`, the student replaces `...` with a prediction) and answers in
the next (`q1_5.reveal(value)`, where `value` is what TensorFlow just computed). `reveal` shows the value only
once a prediction is recorded, then judges the prediction at once, in the exercises' voice: Correct; or the
mistake a `Misconception` explains, with its cause code from `tapelab.causes`; or, when none explains it, a
plain "you predicted X, TensorFlow gives Y" (never a guessed cause). The truth is always the value the
notebook computed, so a question cannot disagree with TensorFlow.

A prediction is recorded once: a second `predict` before the reveal replaces it, one after the reveal keeps
the first (the answer has been seen). Predictions give no points: nothing here raises, so Run All and nbgrader
go past them, and they carry no grade cell (docs/instructor-guide.md says so). The release command empties
every prediction of the student notebooks (tapelab.release_predictions).

Kinds of answer: "value" (a number, None, or a list or tuple of them, compared elementwise with a tolerance;
None only equals None), "shape" (a tuple of ints against a TensorShape or tuple), "choice" (one of `choices`,
e.g. the label of the line that breaks a gradient).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tapelab.causes import cause as lookup_cause
from tapelab.checker.messages import Message, show

__all__ = ["Misconception", "Question"]

_UNSET = object()
KINDS = ("value", "shape", "choice")


@dataclass(frozen=True)
class Misconception:
    """A wrong prediction this question expects: `explains(guess, truth)` is True when the guess is what the
    mistaken belief gives on these values (test the belief's own consequence, not mere difference), `cause`
    its code in tapelab.causes, `belief` one sentence on what the prediction assumed and why it does not hold."""

    cause: str
    explains: Callable[[Any, Any], bool]
    belief: str

    def __post_init__(self) -> None:
        lookup_cause(self.cause)  # an unknown code is the question's bug: fail when the module loads


class Question:
    """One "predict, then run" question, numbered like the section it closes (`"1.5"`)."""

    def __init__(self, number: str, *, kind: str = "value", choices: Sequence[Any] = (),
                 misconceptions: Sequence[Misconception] = (), rtol: float = 1e-3, atol: float = 1e-6):
        if kind not in KINDS:
            raise ValueError(f"Question {number}: kind {kind!r} is not one of {KINDS}")
        if kind == "choice" and not choices:
            raise ValueError(f"Question {number}: a choice question needs its `choices`")
        self.number, self.kind, self.choices = number, kind, tuple(choices)
        self.misconceptions = tuple(misconceptions)
        self.rtol, self.atol = rtol, atol
        self._guess: Any = _UNSET
        self._revealed = False

    def __repr__(self) -> str:
        return f"<Question {self.number}: predict with .predict(...), then run the next cell>"

    @property
    def predicted(self) -> bool:
        """Whether a prediction is recorded (an explorer that asks first opens once it is)."""
        return self._guess is not _UNSET

    def predict(self, guess: Any = ...) -> None:
        """Record `guess` as your prediction (replace `...` with it), then run the next cell to see the answer."""
        if guess is ...:
            self._say("not-attempted", "Write your prediction in place of `...` in this cell and run it; "
                      "the next cell shows the answer only after that.")
            return
        if self._record(guess):
            self._say("task", f"Prediction recorded: {_render(guess)}. Now run the next cell.")

    def reveal(self, truth: Any) -> None:
        """Show `truth` (what the notebook just computed) and judge the recorded prediction against it."""
        if self._guess is _UNSET:
            self._say("not-attempted", "Nothing is shown yet: make your prediction in the cell above "
                      "(replace `...` and run it), then run this cell again.")
            return
        self._revealed = True
        show(self.judge(self._guess, truth))

    def answer(self, guess: Any, truth: Any) -> None:
        """Record `guess` and reveal `truth` at once: an explorer's answer box, where no next cell is run."""
        if self._record(guess):
            self.reveal(truth)

    def _record(self, guess: Any) -> bool:
        """Record `guess` unless it is not an answer of this kind or the answer was seen (saying why)."""
        problem = self._invalid(guess)
        if problem:
            self._say("not-attempted", f"Your prediction {_render(guess)} is not recorded: {problem}")
            return False
        if self._revealed:
            self._say("task", f"You have seen the answer already; your prediction stays "
                      f"{_render(self._guess)}. Restart the kernel to try this question afresh.")
            return False
        self._guess = guess
        return True

    def judge(self, guess: Any, truth: Any) -> Message:
        """The message for prediction `guess` against `truth`: Correct, the misconception that explains the guess
        with its cause, or both values and no cause. Records nothing (`reveal` is the notebook's way in)."""
        truth = _plain(truth) if self.kind == "value" else _shape(truth) if self.kind == "shape" else truth
        answer = _render(truth)
        if self._matches(guess, truth):
            return self._message("correct", f"You predicted {_render(guess)}; TensorFlow gives {answer}.")
        for mistake in self.misconceptions:
            try:
                explained = bool(mistake.explains(guess, truth))
            except (TypeError, ValueError, IndexError):  # a guess of another form is not this belief's
                explained = False
            if explained:
                return self._message("incorrect", mistake.belief, cause=mistake.cause, expected=answer,
                                     actual=_render(guess))
        return self._message("incorrect", f"You predicted {_render(guess)}; TensorFlow gives {answer}.",
                             expected=answer, actual=_render(guess))

    def _invalid(self, guess: Any) -> str:
        if self.kind == "choice" and guess not in self.choices:
            return f"choose one of {', '.join(map(_render, self.choices))}."
        if self.kind == "shape" and not (isinstance(guess, (tuple, list))
                                         and all(isinstance(n, int) for n in guess)):
            return "write a shape as a tuple of whole numbers, e.g. (3, 2), or () for a scalar."
        if self.kind == "value":
            try:
                _plain(guess)
            except (TypeError, ValueError):
                return "write a number, None, or a list of them."
        return ""

    def _matches(self, guess: Any, truth: Any) -> bool:
        if self.kind != "value":
            return tuple(guess) == tuple(truth) if self.kind == "shape" else guess == truth
        return _close(_plain(guess), truth, self.rtol, self.atol)

    def _say(self, kind: str, text: str) -> None:
        show(self._message(kind, text))

    def _message(self, kind: str, text: str, *, cause: str | None = None, expected: str | None = None,
                 actual: str | None = None) -> Message:
        return Message(kind, text, exercise=f"question {self.number}", cause=cause, expected=expected, actual=actual)


def _plain(value: Any) -> Any:
    """`value` with tensors and arrays as nested lists of floats; None kept; a ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "numpy"):
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise ValueError(f"not a number: {value!r}")
    return array.astype(float).tolist()


def _shape(value: Any) -> tuple:
    if hasattr(value, "as_list"):
        return tuple(value.as_list())
    if hasattr(value, "shape"):
        return tuple(value.shape)
    return tuple(value)


def _close(guess: Any, truth: Any, rtol: float, atol: float) -> bool:
    if guess is None or truth is None:
        return guess is None and truth is None
    if isinstance(guess, list) and isinstance(truth, list) and any(
            isinstance(v, list) or v is None for v in guess + truth):
        return len(guess) == len(truth) and all(_close(g, t, rtol, atol) for g, t in zip(guess, truth))
    g, t = np.asarray(guess, dtype=float), np.asarray(truth, dtype=float)
    return g.shape == t.shape and bool(np.allclose(g, t, rtol=rtol, atol=atol))


def _render(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_render(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value) if isinstance(value, str) else str(value)
