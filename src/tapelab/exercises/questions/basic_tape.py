"""The "predict, then run" questions of 01_basic_tape: one for each teaching section without an exercise."""
from __future__ import annotations

import math

from tapelab.checker.predictions import Misconception, Question

__all__ = ["q1_2", "q1_5", "q1_7", "q1_8"]

# Section 2: dy/dx of y = (x² + 1)³ at x = 2 by the chain rule, 3(x² + 1)² · 2x. The inner operation's
# local derivative there is 2x = 4.
q1_2 = Question("1.2", misconceptions=[
    Misconception("missing-local-derivative",
                  lambda guess, truth: math.isclose(guess, truth / 4, rel_tol=1e-3),
                  "Your prediction is the outer power's local derivative alone, 3(x² + 1)². The backward walk "
                  "also multiplies by the inner operation's local derivative, d(x² + 1)/dx = 2x, which is 4 here."),
])

# Section 5: the branch cell with x = -1: `result = v1**2` ran, so [dv0, dv1, dx] = [None, 2·v1, None].
q1_5 = Question("1.5", misconceptions=[
    Misconception("not-connected", lambda guess, truth: truth[0] is None and guess[0] is not None,
                  "Your prediction gives `v0` a gradient, but with x = -1 only the `else` branch ran: the tape "
                  "recorded `v1**2` and nothing of `v0`, so `v0`'s gradient is `None`."),
    Misconception("not-connected", lambda guess, truth: truth[2] is None and guess[2] is not None,
                  "Your prediction gives `x` a gradient, but the comparison `x > 0` only chose a branch: no "
                  "recorded operation computes `result` from `x`, so its gradient is `None`."),
])

# Section 7: one tape, y = x² and z = x³ at x = 3, one call `tape.gradient([y, z], x)`: the sum's gradient.
q1_7 = Question("1.7", misconceptions=[
    Misconception("targets-summed",
                  lambda guess, truth: isinstance(guess, list) and len(guess) == 2
                  and math.isclose(sum(guess), truth, rel_tol=1e-3),
                  "Your prediction has one gradient per target. Given a list of targets, `gradient` "
                  "differentiates their sum and returns one gradient for `x`: your two numbers added."),
])

# Section 8: where the tangent of x³ - 3x is flat for x > 0 (its slope 3x² - 3 is zero at 1).
q1_8 = Question("1.8", misconceptions=[
    Misconception("value-for-slope", lambda guess, truth: math.isclose(guess, math.sqrt(3.0), rel_tol=1e-2),
                  "Your prediction is where x³ - 3x crosses zero (√3). The tangent is flat where the slope "
                  "3x² - 3 is zero, which is a different point."),
])
