"""Exercises of notebook 01_basic_tape: first gradients, several sources, non-scalar targets,
and a gradient check of the tape against central differences."""
from __future__ import annotations

import re

import numpy as np
import tensorflow as tf

from tapelab.checker.wrong_answers import Alternative, arrangement, wrong_value
from tapelab.checker.compare import allclose, fmt, mismatch, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import Explanation, explain_none, none_feedback
from tapelab.checker.oracle import numeric_gradient
from tapelab.checker.variants import Space

__all__ = ["ex1_1", "ex1_2", "ex1_3", "ex1_4"]


def _require_tape(exercise: Exercise, facts) -> None:
    if facts.found and facts.tapes == 0:
        raise Incorrect(
            f"Exercise {exercise.number}: your numbers are right, but this exercise is about the tape. "
            "Compute them with `tf.GradientTape()` rather than by hand.", cause="no-tape-used")


class CubicSlope(Exercise):
    number = "1.1"
    replayable = True  # tests/checker/test_replay.py: judged from its records as it is live
    answer = "cubic_slope"
    # The polynomial's coefficients: its value and slope never meet at the test points for positive ones. A draw
    # whose slope at the visible x = 2 (12a − 4b + 1) is the text's (29) is refused: the text's answer would pass
    # the student's own check there and fail only the hidden cases.
    space = Space(default={"a": 3, "b": 2},
                  draws={"a": lambda rng: int(rng.integers(2, 10)), "b": lambda rng: int(rng.integers(1, 10))},
                  allowed=lambda v: 12 * v["a"] - 4 * v["b"] + 1 != 29,
                  wording={"a3": lambda v: str(3 * v["a"]), "b2": lambda v: str(2 * v["b"])})
    statement = ("Write `cubic_slope(x)` that takes a Python float `x` and returns dy/dx of y = ${a}x³ − ${b}x² + x "
                 "at that point, computed with a tape (not by hand). Then run the test cell below it.")
    visible_cases = (2.0,)
    praise = "the tape recorded the polynomial and gave its slope."
    hints = (
        "Make `x` a `tf.Variable` so that the tape watches it without being asked.",
        "Compute `y = $a * x**3 - $b * x**2 + x` inside `with tf.GradientTape() as tape:`.",
    )

    def cubic(self, x):
        return self.variant["a"] * x**3 - self.variant["b"] * x**2 + x

    def check_case(self, fn, x, facts):
        got = self.call(fn, x, shown=f"x={x}").value
        expected = numeric_gradient(self.cubic, x)
        if got is None:
            raise none_feedback(f"`cubic_slope({x})` returned `None`.", facts, facts.returned_call(), {"x": "constant"})
        problem = wrong_value(f"cubic_slope({x})", expected, got, [
            Alternative("the polynomial's value", self.cubic(x), "returned-value",
                        "You returned `y` itself, not its gradient: return `tape.gradient(y, x)`.")])
        self._raise_departed(problem, fn, (x,), lambda v: self.cubic(tf.Variable(v)))
        _require_tape(self, facts)


def _layer_case(spec):
    """(x, w, b) for a case: the notebook's worked example, or (batch, n_in, n_out, seed)."""
    if spec == "worked":
        return np.array([[1.0, 2.0, 3.0]]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.zeros(2)
    batch, n_in, n_out, seed = spec
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, n_in)), rng.normal(size=(n_in, n_out)), rng.normal(size=n_out)


def _less(target: float, minus: str = "-") -> str:
    """` - t` as code (or, with `minus="−"`, as the task) writes it after `y`; nothing for t = 0."""
    if target == 0:
        return ""
    return f" {minus} {target:g}" if target > 0 else f" + {-target:g}"


class LossGradients(Exercise):
    number = "1.2"
    replayable = True  # tests/checker/test_replay.py: judged from its records as it is live
    remedies = {"persistent": (
        'The task asks for a single call: pass both sources in one list, `tape.gradient(loss, [w, b])`.')}
    answer = "loss_gradients"
    # The loss's target t: the mean squared distance of the prediction from it (0 in the notebook's text).
    space = Space(default={"t": 0}, draws={"t": lambda rng: float(rng.choice([-1.5, -1, -0.5, 0.5, 1, 1.5, 2]))},
                  wording={"err": lambda v: f"(y{_less(v['t'])})" if v["t"] else "y",
                           "less_t": lambda v: _less(v["t"]),
                           "err_text": lambda v: f"(y{_less(v['t'], '−')})" if v["t"] else "y"})
    statement = ("Write `loss_gradients(x, w, b)` that computes `y = x @ w + b` and `loss = mean(${err_text}²)` under a "
                 "tape and returns the list `[dl_dw, dl_db]`. `x` is a constant tensor; `w` and `b` are "
                 "`tf.Variable`s. Use a single `tape.gradient` call. The test calls it on the layer above, and on "
                 "layers of other sizes.")
    visible_cases = ("worked",)
    praise = "one `gradient` call with a list of sources gave a list of gradients, each shaped like its source."
    hints = (
        "`tape.gradient` accepts a list of sources and returns a list of gradients in the same order.",
        "Inside the tape: `y = x @ w + b` and `loss = tf.reduce_mean($err ** 2)`.",
    )

    def loss(self, y):
        t = self.variant["t"]
        return tf.reduce_mean((y - t if t else y) ** 2) if tf.is_tensor(y) else np.mean((y - t) ** 2)

    def check_case(self, fn, spec, facts):
        x, w, b = _layer_case(spec)
        args = (tf.constant(x, tf.float32), tf.Variable(w, dtype=tf.float32), tf.Variable(b, dtype=tf.float32))
        shown = f"x of shape {x.shape}, w {w.shape}, b {b.shape}"
        got = self.call(fn, *args, shown=shown).value
        dl_dw = numeric_gradient(lambda w_: self.loss(x @ w_ + b), w)
        dl_db = numeric_gradient(lambda b_: self.loss(x @ w + b_), b)
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect(mismatch([dl_dw, dl_db], got, "loss_gradients(...)") or
                            "`loss_gradients` should return a list `[dl_dw, dl_db]`.")
        for i, name in enumerate(("dl_dw", "dl_db")):
            if got[i] is None:
                raise none_feedback(f"`{name}` is `None`.", facts, facts.returned_call(i),
                                    {"x": "constant", "w": "variable", "b": "variable"})
        if allclose(dl_db, got[0]) and allclose(dl_dw, got[1]):
            raise Incorrect("Your gradients are right but swapped: return them in the order of the sources, "
                            "`tape.gradient(loss, [w, b])` gives `[dl_dw, dl_db]`.", cause="swapped-results")
        ones = np.ones((x.shape[0], w.shape[1]))  # d sum(y) / dy: the prediction as the target
        of_prediction = (x.T @ ones, ones.sum(axis=0))
        for name, expected, value, wrong in zip(("dl_dw", "dl_db"), (dl_dw, dl_db), got, of_prediction):
            problem = wrong_value(name, expected, value, [Alternative(
                "the prediction's gradient", wrong, "wrong-target",
                "These are the gradients of the prediction `y = x @ w + b`, not of the `loss`. "
                "Did you pass `loss` as the target?")])
            self._raise_departed(problem, fn, args, lambda x_, w_, b_: self.loss(x_ @ w_ + b_))
        _require_tape(self, facts)
        calls = [c for c in facts.gradient_calls if c.method == "gradient"]
        if len(calls) > 1:
            raise Incorrect(f"Your gradients are right, but the task asks for a single `tape.gradient` call and yours "
                            f"makes {len(calls)} ({', '.join(f'`{c.text()}`' for c in calls)}). Pass both sources "
                            "in one list: `tape.gradient(loss, [w, b])`.", cause="several-gradient-calls")


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_SUB = {2: "", 3: "₃", 4: "₄"}
_SUP = {1: "", 2: "²", 3: "³", 4: "⁴"}


def _norm_gradient(x: np.ndarray, p: int, axis: int | None) -> np.ndarray:
    """The gradient of the p-norms of `x` along `axis` (of the whole of `x` for None), each with respect to its own
    slice: sign(r)·|r|^(p−1) / ‖r‖^(p−1)."""
    norms = (np.abs(x) ** p).sum(axis=axis, keepdims=axis is not None) ** (1 / p)
    return np.sign(x) * np.abs(x) ** (p - 1) / norms ** (p - 1)


class NormGradients(Exercise):
    number = "1.3"
    replayable = True  # tests/checker/test_replay.py: judged from its records as it is live
    remedies = {"persistent": (
        'The task asks for a single call, `tape.gradient(lengths, X)`: each length depends on its own slice of '
        '`X`, so it gives every gradient at once.'), "slice-inside": "",  # a slice per row is a call per row
        "reduce-jacobian": "Differentiate with one `tape.gradient(lengths, X)` instead of `jacobian`: the gradient "
                           "of a non-scalar target is the sum over its outputs, which holds every length's gradient here.",
        "batch-jacobian": "Its diagonal blocks are the right values, and the task asks for them from one "
                          "`tape.gradient(lengths, X)` call: each length depends on its own slice of `X`."}
    answer = "norm_gradients"
    # Which norms: of the rows (axis 1, the notebook's text) or of the columns (axis 0), and their order p (2, the
    # length, in the text). The text's own pair is refused: the text's answer would pass it.
    space = Space(default={"axis": 1, "p": 2},
                  draws={"axis": lambda rng: int(rng.integers(0, 2)), "p": lambda rng: int(rng.choice([2, 3, 4]))},
                  allowed=lambda v: (v["axis"], v["p"]) != (1, 2),
                  wording={"part": lambda v: "row" if v["axis"] == 1 else "column",
                           "other": lambda v: str(1 - v["axis"]),
                           "norm": lambda v: "length ‖r‖" if v["p"] == 2 else f"{v['p']}-norm ‖r‖{_SUB[v['p']]}",
                           "ord_arg": lambda v: "" if v["p"] == 2 else f"ord={v['p']}, ",
                           "ord_kw": lambda v: "" if v["p"] == 2 else f", ord={v['p']}",
                           "grad": lambda v: "r/‖r‖" if v["p"] == 2 else
                           f"sign(r)·|r|{_SUP[v['p'] - 1]}/‖r‖{_SUB[v['p']]}{_SUP[v['p'] - 1]}"})
    statement = ("Write `norm_gradients(X)` that takes a 2-D float constant tensor `X` and returns, for each "
                 "${part} r of `X`, the gradient of its ${norm} (`tf.norm(X, ${ord_arg}axis=${axis})`) with respect "
                 "to r, all in one tensor shaped like `X`, with a single tape and a single `gradient` call.")
    visible_cases = (((3.0, 4.0), (1.0, -2.0), (0.5, 2.0)),)
    praise = "each length depends on its own slice of `X`, so the gradient of their sum holds every gradient at once."
    hints = (
        "Each length depends on its own ${part} only: what does the tape do with a vector of lengths as the target?",
        "`X` is a constant, so `tape.watch(X)` first inside the block, then "
        "`lengths = tf.norm(X, ${ord_arg}axis=$axis)`.",
    )

    def forward(self, X):
        return tf.norm(X, ord=self.variant["p"], axis=self.variant["axis"])

    def check_case(self, fn, rows, facts):
        X = tf.constant(rows, tf.float32)
        got = self.call(fn, X, shown=f"X={fmt(X)}").value
        axis, p = self.variant["axis"], self.variant["p"]
        part = "row" if axis == 1 else "column"
        other = "column" if axis == 1 else "row"
        noun = "length" if p == 2 else "norm"
        x = np.array(rows, np.float64)
        expected = _norm_gradient(x, p, axis)
        call = f"tf.norm(X, {self.variant['ord_arg']}axis={axis})"
        if got is None:
            raise none_feedback("`norm_gradients` returned `None`.", facts, facts.returned_call(), {"X": "constant"})
        without_root = (f"Twice `X` is the gradient of each {part}'s squared length, the sum of squares without its "
                        "square root: differentiate `tf.norm` itself.") if p == 2 else (
            f"This is the gradient of each {part}'s sum of |r|{_SUP[p]}, the {p}-norm without its root: "
            f"differentiate `{call}` itself.")
        euclidean = [] if p == 2 else [Alternative(
            "the gradient of the Euclidean lengths", _norm_gradient(x, 2, axis), "wrong-target",
            f"These are the gradients of each {part}'s Euclidean length, `tf.norm`'s default order: the task's norm "
            f"is `ord={p}`, `{call}`.")]
        problem = wrong_value("norm_gradients(X)", expected, got, [
            Alternative(f"the {noun}s themselves", (np.abs(x) ** p).sum(axis=axis) ** (1 / p), "returned-value",
                        f"You returned the {part}s' lengths, not their gradient."),
            Alternative(f"the gradient of the mean {noun}", expected / x.shape[1 - axis], "mean-target",
                        "Did you differentiate `tf.reduce_mean(lengths)`? The tape already sums a non-scalar "
                        "target: pass the lengths themselves."),
            Alternative(f"the {other}s' {noun}s", _norm_gradient(x, p, 1 - axis), "other-axis",
                        f"These are the gradients of each {other}'s {noun}: the task's {noun}s are the {part}s', "
                        f"`axis={axis}`."),
            Alternative("the gradient of the squared lengths" if p == 2 else "the gradient without the root", p * np.sign(x) * np.abs(x) ** (p - 1), "norm-without-sqrt",
                        without_root),
            Alternative(f"the {noun} of the whole matrix", _norm_gradient(x, p, None), "missing-axis",
                        f"This is the gradient of one {noun}, the whole matrix's: `tf.norm(X{self.variant['ord_kw']})` "
                        f"without `axis={axis}` flattens `X`."), *euclidean])
        self._raise_departed(problem, fn, (X,), self.forward)
        _require_tape(self, facts)


_DEFAULT_H = 1e-5  # the default of `gradient_check`'s `h` in the notebook
# Functions built from TensorFlow ops (called on a Python float they give float32), and their derivatives.
_FUNCTIONS = {
    "sin(x^2)": (lambda x: tf.sin(x**2), lambda x: 2 * x * np.cos(x**2)),
    "exp(-x)": (lambda x: tf.exp(-x), lambda x: -np.exp(-x)),
    "x*exp(-x)": (lambda x: x * tf.exp(-x), lambda x: (1 - x) * np.exp(-x)),
    "tanh": (tf.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "softplus": (tf.math.softplus, _sigmoid),
    "x^3-3x": (lambda x: x**3 - 3 * x, lambda x: 3 * x**2 - 3),
}
_SLOPE = dict(rtol=1e-9, atol=1e-12)  # float64 slopes from the same formula agree to a few ulps


def _float32(value) -> bool:
    """Whether `value` (a tensor, a NumPy number) carries a single- or half-precision dtype."""
    dtype = getattr(value, "dtype", None)
    try:
        return np.dtype(getattr(dtype, "as_numpy_dtype", dtype)) in (np.float32, np.float16)
    except TypeError:
        return False


def _central(f, x, h, dtype=tf.float64) -> float:
    """The central difference of `f` at `x` with step `h`, `x` made a tensor of `dtype` first."""
    x = tf.constant(x, dtype)
    return float((f(x + h) - f(x - h)) / (2 * h))


def _float32_tape(f, x) -> float:
    x = tf.constant(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return float(tape.gradient(y, x))


def _at(f, x) -> tf.Tensor:
    return f(tf.constant(x, tf.float64))


_ROUNDING = "in float32 the rounding error is as large as the difference a gradient check measures"
_USE_FLOAT64 = "Did you make `x` a `tf.constant(x, tf.float64)` and use that tensor everywhere?"
_IN_FLOAT32 = f"That is the float32 value: {_ROUNDING}. {_USE_FLOAT64}"
_SIGNED = ("Your error has the wrong sign: it is a size, so take `abs` of the difference and of the slope you "
           "divide by, `abs(tape_slope - numeric_slope) / abs(numeric_slope)`.")


class GradientCheck(Exercise):
    number = "1.4"
    replayable = True  # tests/checker/test_replay.py: judged from its records as it is live
    answer = "gradient_check"
    fixed_because = ("`gradient_check` is a procedure for any `f`, `x` and `h` it is given and holds no numbers of "
                     "its own, so only the test's inputs could change, not what you write.")
    parameter_kinds = {"x": "constant"}
    # Not the default h, so a hard-coded step fails here; the two cases' errors have opposite signs and
    # both slopes are negative, so a missing `abs` fails too; |f'| is far from 1, so an absolute error fails.
    visible_cases = (("exp(-x)", -1.0, 1e-3), ("sin(x^2)", 2.0, 1e-3))
    praise = ("the tape and the central difference agree to a relative error that shrinks like h², "
              "so the tape's gradient is right.")
    hints = (
        "Make `x` a `tf.constant(x, tf.float64)` first: every value after it, `f(x + h)` included, is then float64.",
        "Watch `x`, compute `y = f(x)` under the tape for `tape_slope`; outside it, "
        "`numeric_slope = (f(x + h) - f(x - h)) / (2 * h)`.",
    )

    def check_case(self, fn, case, facts):
        name, x, h = case
        f, df = _FUNCTIONS[name]
        got = self.call(fn, f, x, h, shown=f"f={name}, x={x}, h={h}").value
        if got is None and facts.found and not facts.returns:
            raise Incorrect("`gradient_check` returned `None`. Did you forget `return`?", cause="no-return")
        if not isinstance(got, (list, tuple)) or len(got) != 3:
            raise Incorrect("`gradient_check` should return three values, `tape_slope, numeric_slope, rel_error`; "
                            f"it returned {fmt(got) if got is None else type(got).__name__}.")
        tape_slope, numeric_slope, rel_error = got
        if tape_slope is None:
            raise none_feedback("`tape_slope` is `None`.", facts, facts.returned_call(0), {"x": "constant"})
        for part, value in (("tape_slope", tape_slope), ("numeric_slope", numeric_slope)):
            if _float32(value):
                raise Incorrect(f"`{part}` has dtype float32, but a gradient check needs float64: {_ROUNDING}. "
                                f"{_USE_FLOAT64}", cause="float32-check")
        central = _central(f, x, h)
        problem = arrangement("gradient_check(...)[:2]", [df(x), central], [tape_slope, numeric_slope],
                              **_SLOPE, causes=frozenset({"swapped-results"}))
        if problem:
            raise problem
        self._slopes(name, f, df, x, h, tape_slope, numeric_slope, central)
        t, n = float(to_numpy(tape_slope)), float(to_numpy(numeric_slope))
        error = abs(t - n) / abs(n)
        # Dividing by |t|, |n| or the larger of the two changes the error by a factor within 1 ± error: all accepted.
        problem = wrong_value("rel_error", error, rel_error, [
            Alternative("the absolute error", abs(t - n), "absolute-error",
                        "That is the absolute difference `abs(tape_slope - numeric_slope)`. Divide it by "
                        "`abs(numeric_slope)` to get the relative error."),
            Alternative("a signed error", (t - n) / abs(n), "signed-error", _SIGNED),
            Alternative("a signed error", (n - t) / abs(n), "signed-error", _SIGNED),
            Alternative("a signed error", abs(t - n) / n, "signed-error", _SIGNED),
        ], rtol=1e-6 + 2 * error, atol=1e-20)
        if problem:
            raise problem
        _require_tape(self, facts)

    def _explain_error(self, error: Exception, doing: str) -> tuple[str, Explanation | None]:
        """Two errors this task's code meets: float32 mixed with float64, and a `None` gradient (the returned
        tuple's first item) used in the error's arithmetic, explained from that item's gradient call."""
        observed, general = super()._explain_error(error, doing)
        text = str(error)
        if re.search(r"expected to be a (double|float) tensor but is a (float|double) tensor", text):
            return observed, Explanation(f"Here a float32 tensor met a float64 one. A gradient check needs every value in "
                                         f"float64: {_ROUNDING}. Did you call `f` on the Python float `x` (TensorFlow "
                                         "makes that float32) instead of your float64 tensor?", "float32-check")
        if "Attempt to convert a value (None)" in text and self._facts.found:
            why = explain_none(self._facts, self._facts.returned_call(0), self.parameter_kinds)
            if why.cause:
                return observed, Explanation("The tape's gradient is `None`, and the next operation could not use "
                                             f"it. {why.text}", why.cause)
        return observed, general

    def _slopes(self, name, f, df, x, h, tape_slope, numeric_slope, expected) -> None:
        """Raise if the tape's slope is not f'(x) in float64, or the difference is not `expected`, the central one
        at `h`."""
        problem = wrong_value("tape_slope", df(x), tape_slope, [
            Alternative("the float32 tape gradient", lambda: _float32_tape(f, x), "float32-check", _IN_FLOAT32)],
            **_SLOPE)
        if problem:
            raise problem
        problem = wrong_value(f"numeric_slope for f={name}, x={x}, h={h}", expected, numeric_slope, [
            Alternative("the forward difference", lambda: float((_at(f, x + h) - _at(f, x)) / h),
                        "forward-difference", "That is the forward difference `(f(x + h) - f(x)) / h`, accurate only "
                        "to O(h). Step to both sides of `x`."),
            Alternative("the backward difference", lambda: float((_at(f, x) - _at(f, x - h)) / h),
                        "forward-difference", "That is the backward difference `(f(x) - f(x - h)) / h`, accurate only "
                        "to O(h). Step to both sides of `x`."),
            Alternative("a division by h", 2 * expected, "constant-factor",
                        "You divided by `h`, but `x + h` and `x - h` are `2 * h` apart: divide by `2 * h`."),
            Alternative("a / 2 * h", expected * h * h, "constant-factor",
                        "That is the difference divided by 2 and then multiplied by `h`: `a / 2 * h` means "
                        "`(a / 2) * h`. Write `/ (2 * h)`."),
            Alternative("the default step", lambda: _central(f, x, _DEFAULT_H), "ignored-step",
                        f"That is the central difference with the default step `h={_DEFAULT_H}`, not the `h={h}` "
                        "you were given. Did you use the `h` you were given, in both evaluations and the division?"),
            Alternative("float32 evaluations", lambda: float((f(x + h) - f(x - h)) / (2 * h)), "float32-check",
                        "That is the central difference of `f` called on Python floats, which TensorFlow turns into "
                        "float32. Did you evaluate `f` at `x + h` and `x - h` of your float64 tensor `x`?"),
            Alternative("float32 evaluations", lambda: _central(f, x, h, tf.float32), "float32-check", _IN_FLOAT32),
        ], **_SLOPE)
        if problem:
            raise problem



ex1_1 = CubicSlope()
ex1_2 = LossGradients()
ex1_3 = NormGradients()
ex1_4 = GradientCheck()
