"""The "predict, then run" questions of 03_watching_tensors, one closing each teaching section without an exercise.

Each misconception tests the consequence of its belief on the values the notebook's question uses (written next
to it); the truth always comes from the notebook's reveal cell, computed by TensorFlow.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tapelab.checker.predictions import Misconception, Question

__all__ = ["q3_1", "q3_2", "q3_3", "q3_4", "q3_6", "q3_8", "q3_10", "q3_11", "q3_12"]


def _near(guess: Any, value: Any) -> bool:
    """Is `guess` a number, or a list of numbers, equal to `value` within a small tolerance?"""
    g, v = np.asarray(guess, dtype=float), np.asarray(value, dtype=float)
    return g.shape == v.shape and bool(np.allclose(g, v, rtol=1e-3, atol=1e-6))


# 1. x = 2: `a = 3x` is computed before `tape.watch(x)`, `b = x²` after it, y = a + b; the tape gives db/dx = 4.
UNRECORDED_SLOPE = 3.0  # da/dx, the part of dy/dx computed before the watch

q3_1 = Question("3.1", misconceptions=[
    Misconception(
        cause="watched-too-late",
        explains=lambda guess, truth: guess is not None and _near(guess, truth + UNRECORDED_SLOPE),
        belief="Your prediction counts `a = 3 * x` too, as if `tape.watch` reached back to it. The tape records "
               "only what happens after the watch, so `a` is a constant to it and only `b = x**2` is "
               "differentiated."),
    Misconception(
        cause="watched-too-late",
        explains=lambda guess, truth: guess is None and truth is not None,
        belief="Your prediction assumes that once `x` was used unwatched, the tape ignores it for good. A watch "
               "counts from the moment it runs: the lines after it are recorded, so `b = x**2` has a gradient."),
])

# 2. a = Variable(1.0), b = Variable(2.0, trainable=False), c = a * 2.0 before the tape; y = a*b + c*b inside;
#    gradients with respect to [a, b, c]: [2.0, None, None].
PATH_THROUGH_C = 3.0  # dy/da if the tape had recorded c = 2a: b + 2b = 3b, three times what it records

q3_2 = Question("3.2", misconceptions=[
    Misconception(
        cause="not-trainable",
        explains=lambda guess, truth: guess[1] is not None and truth[1] is None,
        belief="You gave `b` a gradient. A tape watches only trainable variables by itself, and `b` was made "
               "with `trainable=False`, so its gradient is `None`."),
    Misconception(
        cause="not-watched",
        explains=lambda guess, truth: guess[2] is not None and truth[2] is None,
        belief="You gave `c` a gradient. `c = a * 2.0` is a tensor, not a variable, and it was made before the "
               "tape opened: nothing watched it, so its gradient is `None`."),
    Misconception(
        cause="outside-tape",
        explains=lambda guess, truth: guess[0] is not None and _near(guess[0], PATH_THROUGH_C * truth[0]),
        belief="Your `dy/da` also counts the path through `c`. `c = a * 2.0` was computed before the tape "
               "opened, so that path is not on the record: `dy/da` is `b` alone."),
])

# 3. n = tf.constant(2) (int32), r = tf.constant(np.array(2.0)) (float64), both watched;
#    y = tf.cast(n, tf.float64) * r**2; gradients with respect to [n, r]: [None, 8.0].
q3_3 = Question("3.3", misconceptions=[
    Misconception(
        cause="int-dtype",
        explains=lambda guess, truth: guess[0] is not None and truth[0] is None,
        belief="You gave the integer `n` a gradient, as if casting it to float inside the tape made it "
               "differentiable. The source itself is `int32`, and the tape differentiates only float (and "
               "complex) sources: `None`."),
    Misconception(
        cause="numpy-source",
        explains=lambda guess, truth: guess[1] is None and truth[1] is not None,
        belief="You expected no gradient for `r` because its value came from a NumPy array. `tf.constant` made "
               "it a float64 tensor, which the tape watches and differentiates like any float tensor."),
])

# 4. a = Variable(2.0), b = Variable(3.0); watch_accessed_variables=False, tape.watch(a); z = a*b + b;
#    gradients with respect to [a, b]: [3.0, None].
q3_4 = Question("3.4", misconceptions=[
    Misconception(
        cause="not-watched",
        explains=lambda guess, truth: guess[1] is not None and truth[1] is None,
        belief="You gave `b` a gradient because it is a trainable variable. With "
               "`watch_accessed_variables=False` the tape watches nothing by itself, variables included: only "
               "`a`, passed to `tape.watch`, is on the record."),
])

# 8. x = [1, 1, 1], w = [2, -1, 0.5], target 3: loss = (w·x - 3)², ∂loss/∂x = 2(w·x - 3)·w = -3w;
#    the fast gradient sign step x + 0.1·sign(∂loss/∂x) is [0.9, 1.1, 0.9].
START = 1.0  # every feature of x before the step

# 6. The saliency explorer's saddle f = x1² − x2² at (1, 0.5): the input gradient (2·x1, −2·x2) = [2, −1].
P6 = (1.0, 0.5)

q3_6 = Question("3.6", misconceptions=[
    Misconception(
        cause="sign-flipped",
        explains=lambda guess, truth: _near(guess, [2 * P6[0], 2 * P6[1]]),
        belief="Your prediction is the bowl's gradient, (2·x1, 2·x2). The saddle subtracts x2², so the second "
               "component is −2·x2: along x2 the surface falls, and the arrow points the other way."),
    Misconception(
        cause="not-watched",
        explains=lambda guess, truth: guess is None,
        belief="You assumed a constant input gets no gradient. The explorer watches its input point "
               "(`tape.watch`), so the tape returns one number per input, as for any watched tensor."),
])

q3_8 = Question("3.8", misconceptions=[
    Misconception(
        cause="wrong-target",
        explains=lambda guess, truth: _near(np.subtract(guess, START), -np.subtract(truth, START)),
        belief="Your step lowers the loss: it follows the sign of `w`, the output's gradient (or steps down the "
               "loss, as training does). The model's output w·x = 1.5 is below the target 3, so the loss grows "
               "when the output falls: ∂loss/∂x = -3·w, and the attack steps along its sign."),
    Misconception(
        cause="gradient-not-sign",
        explains=lambda guess, truth: (
            bool(np.all(np.sign(np.subtract(guess, START)) == np.sign(np.subtract(truth, START))))
            and np.ptp(np.abs(np.subtract(guess, START))) > 1e-6),
        belief="Your step moves the features by different amounts, as if scaled by the gradient. The fast "
               "gradient sign method takes only the gradient's sign, so every feature moves by exactly ε."),
])

def _one_axis_more(guess: Any, truth: Any) -> bool:
    """Is the shape `guess` the shape `truth` with one axis of size 1 put in somewhere?"""
    guess = tuple(guess)
    return any(guess[:i] + guess[i + 1:] == tuple(truth) for i, n in enumerate(guess) if n == 1)


# 10. t = 3.0 (a scalar), y = t * reshape(range(8), [4, 2]): tape.jacobian(y, t) has shape (4, 2).
q3_10 = Question("3.10", kind="shape", misconceptions=[
    Misconception(
        cause="gradient-not-jacobian",
        explains=lambda guess, truth: tuple(guess) == () and tuple(truth) != (),
        belief="A scalar is the shape of `tape.gradient`, which sums the outputs. `tape.jacobian` keeps one "
               "derivative per output: its shape is `y.shape + t.shape`, and a scalar's shape adds nothing."),
    Misconception(
        cause="extra-axis",
        explains=lambda guess, truth: _one_axis_more(guess, truth),
        belief="You gave the scalar source an axis of size 1. A scalar's shape is `()`, so "
               "`y.shape + t.shape` is just `y.shape`."),
])

# 11. x = [[1.0], [2.0]], watched; y = x * reduce_sum(x): row i depends on every row. The full Jacobian's
#     diagonal blocks are S + x_i = [4, 5] (S = 3); batch_jacobian differentiates the batch sum: [6, 6].
BATCH = (1.0, 2.0)

q3_11 = Question("3.11", misconceptions=[
    Misconception(
        cause="batch-mixed",
        explains=lambda guess, truth: _near(guess, [sum(BATCH) + xi for xi in BATCH]),
        belief="You predicted the diagonal blocks of the full Jacobian, dyᵢ/dxᵢ. `batch_jacobian` differentiates "
               "the sum over the batch, so each entry also collects the other example's dependence on xᵢ "
               "through `reduce_sum`: no error, and other numbers."),
])

# 12. x has 6 elements, y = reduce_sum(reshape(counted_square(x), [2, 3]), axis=1) has 2: with
#     experimental_use_pfor=False the gradient function of counted_square runs twice.
INPUTS, OUTPUTS = 6, 2

q3_12 = Question("3.12", misconceptions=[
    Misconception(
        cause="jacobian-pass-count",
        explains=lambda guess, truth: _near(guess, INPUTS) and not _near(truth, INPUTS),
        belief="You counted one backward pass per input element. A pass starts from one element of `y` and "
               "gives its gradient with respect to every input at once, so the loop runs once per output."),
    Misconception(
        cause="jacobian-pass-count",
        explains=lambda guess, truth: _near(guess, INPUTS * OUTPUTS),
        belief="You counted one backward pass per entry of the Jacobian. Each pass fills a whole row (one "
               "output, every input), so the loop runs once per element of `y`."),
])
