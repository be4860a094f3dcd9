"""The "predict, then run" questions of notebook 04 (persistent tapes), one per teaching section without a task.

Each misconception tests the consequence of its belief on the values the notebook's question states (the
constants below); the truth is always what the notebook's reveal cell computes with TensorFlow.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tapelab.checker.predictions import Misconception, Question

__all__ = ["q4_1", "q4_4", "q4_5", "q4_8", "q4_9", "q4_10", "q4_10b"]

W4 = 3.0  # section 4: y = w**3 at w = 3, the gradient taken inside a persistent tape's block
X5, Y5 = 2.0, 3.0  # section 5: s = x * y inside stop_recording(), then z = s * y + x**2
U8, V8 = 1.0, 2.0  # section 8: loss_u = u**2 * v, loss_v = v**2 - u * v, one call on the list of both


def _near(guess: Any, value: Any) -> bool:
    """Is `guess` (a number or a list of numbers, no None) `value` within the questions' tolerance?"""
    g, v = np.asarray(guess, dtype=float), np.asarray(value, dtype=float)
    return g.shape == v.shape and bool(np.allclose(g, v, rtol=1e-3, atol=1e-6))


def _count(guess: Any) -> bool:
    """Is `guess` a whole number (a count), not a bool or a list?"""
    return isinstance(guess, (int, float)) and not isinstance(guess, bool) and float(guess).is_integer()


q4_1 = Question("4.1", kind="choice", choices=("a number", "None", "RuntimeError"), misconceptions=[
    Misconception(
        "tape-used-twice",
        lambda guess, truth: guess == "a number" and truth == "RuntimeError",
        "You assumed the first call used up only the `sin` part of the record, leaving the multiplication for "
        "the second. An ordinary tape drops its whole record after its first `gradient` call, whatever that "
        "call needed, so the second call raises."),
    Misconception(
        "tape-used-twice",
        lambda guess, truth: guess == "None" and truth == "RuntimeError",
        "You assumed a tape with nothing left to answer from returns `None`. An ordinary tape refuses a second "
        "`gradient` call outright with `RuntimeError`, so the mistake cannot pass unnoticed."),
])

q4_4 = Question("4.4", misconceptions=[
    Misconception(
        "gradient-recorded",
        lambda guess, truth: truth is not None and guess is None,
        "You assumed the tape does not record its own `gradient` call. Called inside the `with` block, a "
        "persistent tape records the gradient's operations like any others (the cost the warning is about), "
        "so dy/dw is computed from w and has a derivative, 6w."),
    Misconception(
        "first-derivative",
        lambda guess, truth: _near(guess, 3 * W4**2),
        "You gave dy/dw itself, 3w². The target of this call is dy/dw, so the tape returns its derivative, "
        "6w: the second derivative of y."),
])

q4_5 = Question("4.5", misconceptions=[
    Misconception(
        "recording-paused",
        lambda guess, truth: _near(guess, [Y5**2 + 2 * X5, 2 * X5 * Y5]),
        "You differentiated z = x·y² + x² as if all of it were recorded. Inside `stop_recording()` nothing is "
        "recorded, so `s` reaches z as a constant: dz/dx = 2x and dz/dy = s."),
    Misconception(
        "recording-paused",
        lambda guess, truth: (isinstance(guess, (list, tuple)) and len(guess) == 2 and None not in truth
                              and all(g is None for g in guess)),
        "You assumed a variable used inside `stop_recording()` gets no gradient. Only the paused product is off "
        "the record: x and y are used again after the pause, and those uses are recorded."),
])

q4_8 = Question("4.8", misconceptions=[
    Misconception(
        "targets-summed",
        lambda guess, truth: _near(guess, [2 * U8 * V8, 2 * V8 - U8]),
        "You gave each player the gradient of its own loss. A list target is summed first, so u gets the "
        "gradient of loss_u + loss_v, and loss_v depends on u too (through −u·v)."),
    Misconception(
        "targets-summed",
        lambda guess, truth: _near(guess, [2 * U8 * V8, U8**2]),
        "You differentiated the first target only. `gradient` with a list target differentiates the sum of "
        "all its targets, so loss_v's terms count for both variables."),
])

q4_9 = Question("4.9", misconceptions=[
    Misconception(
        "unrecorded-gradient",
        lambda guess, truth: _count(guess) and _count(truth) and 0 <= guess < truth,
        "You assumed some weights still reach the penalty. The slope ∂D/∂x̂ was computed before the outer tape "
        "opened, so to that tape it is a constant: the penalty depends on no weight, and every gradient is "
        "`None`."),
])

q4_10 = Question("4.10", misconceptions=[
    Misconception(
        "tape-not-released",
        lambda guess, truth: _count(guess) and guess == 0 and truth != 0,
        "You assumed the `gradient` call frees the record, as an ordinary tape's does. A persistent tape keeps "
        "every intermediate until the tape itself is deleted, which is why `del tape` follows the last call."),
])

# 10, the explorer: f = x**4/4 - x**2 for x > 0. f' = x**3 - 2x is zero at sqrt(2), f at 2, f'' = 3x**2 - 2 at sqrt(2/3).
F_FLAT, F_ZERO = 2.0**0.5, 2.0


def _about(guess: Any, value: float) -> bool:
    """Is `guess` a number within 2% of `value` (a prediction written to two decimals)?"""
    return isinstance(guess, (int, float)) and not isinstance(guess, bool) and abs(guess - value) <= 0.02 * value


q4_10b = Question("4.10b", rtol=1e-2, misconceptions=[
    Misconception(
        "first-derivative",
        lambda guess, truth: _about(guess, F_FLAT) and not _about(truth, F_FLAT),
        "You gave the x where f′ is zero, the bottom of the dip. f″ measures how fast f′ changes, and it is "
        "zero where f′ stops falling and turns, the inflection point between the hump at 0 and the dip."),
    Misconception(
        "value-for-slope",
        lambda guess, truth: _about(guess, F_ZERO) and not _about(truth, F_ZERO),
        "You gave the x where f itself is zero. f″ crosses zero where the curve changes from bending down to "
        "bending up, which need not be where f or f′ is zero."),
])
