"""Exercises of notebook 04_persistent_tapes: one gradient per example from one persistent tape and releasing
it (4.3 and 4.4, nested tapes, live in second_order.py, 4.5 in hessian_vector.py, 4.6 in gan_step.py)."""
from __future__ import annotations

import ast
import gc
import weakref

import numpy as np
import tensorflow as tf

from tapelab.checker.differential import combination
from tapelab.checker.wrong_answers import Alternative, arrangement, swapped_item, wrong_value
from tapelab.checker.compare import agrees, fmt, mismatch
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import none_feedback
from tapelab.checker.oracle import numeric_gradient
from tapelab.checker.variants import Space
from tapelab.exercises.hessian_vector import ex4_5
from tapelab.exercises.second_order import ex4_3, ex4_4
from tapelab.exercises.gan_step import ex4_6
from tapelab.exercises.nested_rule import TapeExercise as _TapeExercise

__all__ = ["ex4_1", "ex4_2", "ex4_3", "ex4_4", "ex4_5", "ex4_6"]


# ---------------------------------------------------------------- 4.1 one gradient per example

# name -> (the loss of one example as code, as text, as a function of the residual r = w·x − t (TensorFlow or
# NumPy), its derivative with respect to r (NumPy))
_LOSSES = {
    "square": ("(w * xs - ts) ** 2", "(w·xᵢ − tᵢ)²", lambda r: r**2, lambda r: 2 * r),
    "fourth": ("(w * xs - ts) ** 4", "(w·xᵢ − tᵢ)⁴", lambda r: r**4, lambda r: 4 * r**3),
    "log": ("tf.math.log(1 + (w * xs - ts) ** 2)", "log(1 + (w·xᵢ − tᵢ)²)", lambda r: np.log(1 + r * r),
            lambda r: 2 * r / (1 + r * r)),
    "cosh": ("tf.math.cosh(w * xs - ts)", "cosh(w·xᵢ − tᵢ)", np.cosh, np.sinh),
}
_DRAWN = sorted(set(_LOSSES) - {"square"})
_TF_LOSSES = {"square": lambda r: r**2, "fourth": lambda r: r**4, "log": lambda r: tf.math.log(1 + r**2),
              "cosh": tf.math.cosh}


class PerExampleGradients(_TapeExercise):
    number = "4.1"
    replayable = True
    answer = "per_example_gradients"
    # The loss of one example, a function of its residual w·x − t; the notebook's text has the square, which no
    # drawn variant repeats.
    space = Space(default={"loss": "square"}, draws={"loss": lambda rng: str(rng.choice(_DRAWN))},
                  wording={"loss_code": lambda v: _LOSSES[v["loss"]][0], "loss_text": lambda v: _LOSSES[v["loss"]][1]})
    statement = ("Write `per_example_gradients(w, xs, ts)`: `w` is a scalar `tf.Variable`, `xs` and `ts` are 1-D float "
                 "constants, and example i has the loss ${loss_text}. Compute all the losses in **one** forward pass "
                 "and return the list of each example's gradient with respect to `w`.")
    visible_cases = ((0.5, (1.0, -2.0, 3.0), (2.0, 0.5, 1.0)),)
    praise = "one recording answered a question per example, and no tape is left holding it."
    hints = (
        "`tape.gradient(losses, w)` gives one number: the gradient of the sum of the losses. You need one `gradient` "
        "call per example, so the tape must answer several times.",
        "Open `tf.GradientTape(persistent=True)`; inside the block compute `losses = $loss_code` and split it with "
        "`tf.unstack(losses)` (an index taken after the block is not recorded).",
    )

    def check_case(self, fn, case, facts):
        w0, xs, ts = case
        w = tf.Variable(w0, dtype=tf.float32, name="w")
        x, t = tf.constant(xs, tf.float32), tf.constant(ts, tf.float32)
        call = self.call(fn, w, x, t, shown=f"w=tf.Variable({w0}), xs={fmt(x)}, ts={fmt(t)}")
        got = call.value
        xs_, ts_ = np.array(xs, np.float64), np.array(ts, np.float64)
        _, _, loss_of, slope = _LOSSES[self.variant["loss"]]
        residual = w0 * xs_ - ts_
        expected = slope(residual) * xs_
        name = "per_example_gradients(...)"
        problem = arrangement(name, list(expected), got) if got is not None else None
        if problem:
            raise problem
        if isinstance(got, (list, tuple)):
            for i, value in enumerate(got):
                if value is None:
                    raise none_feedback(_none_item(facts, i), facts, _call_behind(facts, i),
                                        {"w": "variable", "xs": "constant", "ts": "constant"})
        elif got is not None and np.ndim(got) == 1:
            got = list(np.asarray(got))  # one gradient per example as a 1-D tensor (`tape.jacobian`) is as good
        one = got[0] if isinstance(got, (list, tuple)) and len(got) == 1 else got
        if len(xs) > 1 and one is not None and np.ndim(one) == 0:
            for how, value, why in (("sum", expected.sum(), "of all the losses at once (one vector, a list or their "
                                     "sum) is the gradient of their sum"),
                                    ("mean", expected.mean(), "of their mean is the mean of the per-example ones")):
                if agrees(value, one):
                    raise Incorrect(
                        f"Your function gives one number, {fmt(value)}, the {how} of the {len(xs)} per-example "
                        f"gradients {fmt(expected)}: the gradient {why}. Ask the persistent tape once per example's "
                        "loss.", cause="targets-summed")
        if not isinstance(got, (list, tuple)) or len(got) != len(xs):
            raise Incorrect(mismatch(list(expected), got, name)
                            or f"`per_example_gradients` should return a list of {len(xs)} gradients, one per example.")
        problem = wrong_value(name, list(expected), list(got), [
            Alternative("the losses", lambda: list(loss_of(residual)), "returned-value",
                        "Those are the losses themselves, not their gradients. Return `tape.gradient` of each "
                        "example's loss with respect to `w`."),
            Alternative("the sum in every item", lambda: [expected.sum()] * len(xs), "targets-summed",
                        "Every item is the sum of the per-example gradients: the gradient of all the losses at once "
                        "is the gradient of their sum. Pass each example's own loss as the target."),
            Alternative("each gradient with respect to x", lambda: list(slope(residual) * w0), "wrong-source",
                        "Each item is the gradient with respect to that example's `x`, not to `w`. Pass `w` as the "
                        "source of `gradient`."),
        ])
        forward = _TF_LOSSES[self.variant["loss"]]
        self._raise_departed(problem, fn, (w, x, t), lambda w, xs, ts: forward(w * xs - ts))
        self._reject_gradient_inside_with(facts, call.logs)
        looped = next((lp for b in facts.tape_blocks for lp in facts.loops if lp.contains(b.start)), None)
        if looped is not None:
            raise Incorrect(f"Your values are right, but your code opens a tape inside `for {looped.target} in "
                            f"{looped.iterable}`, so it runs the forward pass again for every example; the task asks "
                            "for one forward pass. Record all the losses once on one persistent tape, then ask it "
                            "once per example.", cause="forward-pass-per-example")
        kept = [b.name for b in facts.tape_blocks if b.persistent and b.name not in facts.deleted]
        if kept:
            others = sorted(facts.deleted)
            also = f" (it deletes {', '.join(f'`{n}`' for n in others)}, which frees nothing the tape holds)" if others \
                else ""
            raise Incorrect(f"Your values are right, but the rule of Exercises 4.1 and 4.2 is to `del {kept[0]}` once "
                            f"you have every gradient, and your code never deletes `{kept[0]}`{also}. A persistent "
                            "tape keeps its whole record until the tape object itself goes.",
                            cause="tape-not-released")


def _none_item(facts, item: int) -> str:
    """"Item i of your list is `None`", naming the expression the code returns there when it writes a list."""
    returned = facts.returns[-1] if facts.returns else None
    if isinstance(returned, (ast.List, ast.Tuple)) and item < len(returned.elts):
        return f"`{ast.unparse(returned.elts[item])}` is `None` (item {item} of your list)."
    return f"Item {item} of your list is `None`."


def _call_behind(facts, item: int):
    """The gradient call behind returned item `item`; the only one, for a returned name the trail loses (a list
    built by a comprehension)."""
    call = facts.returned_call(item)
    if call is None and len(facts.gradient_calls) == 1 and facts.returns and isinstance(facts.returns[-1], ast.Name):
        return facts.gradient_calls[0]
    return call


# ---------------------------------------------------------------- 4.2 release the tape


class _Tracked:
    """The test's `f`: loss and penalty of `x`, with weak references to every intermediate it makes.

    Only the checker holds these references, so an intermediate is alive exactly while some tape
    keeps it; `held_at_next_call` is how many were alive when `f` was called again.
    """

    def __init__(self, target: float, weight: float) -> None:
        self.target, self.weight = target, weight
        self.refs: list[weakref.ref] = []
        self.calls = 0
        self.held_at_next_call = 0

    def __call__(self, x):
        if self.calls:
            self.held_at_next_call = max(self.held_at_next_call, self.live())
        self.calls += 1
        h = tf.exp(0.5 * x)
        gap = h - self.target
        squares = x * x
        self.refs += [weakref.ref(t) for t in (h, gap, squares)]
        loss = tf.reduce_sum(gap * gap)
        penalty = self.weight * tf.reduce_sum(squares)
        return loss, penalty

    def live(self) -> int:
        return sum(ref() is not None for ref in self.refs)

    def numpy_loss(self, x):
        return float(np.sum((np.exp(0.5 * x) - self.target) ** 2))

    def numpy_penalty(self, x):
        return float(self.weight * np.sum(x * x))


def _left(f: _Tracked, x: tf.Variable) -> tuple[int, np.ndarray, int]:
    """After the student's call: how many of `f`'s intermediates are still alive, `x`'s value, and how many were
    alive when `f` was called again."""
    gc.collect()
    return f.live(), x.numpy(), f.held_at_next_call


def _times(mu: float) -> str:
    """`mu * ` as code writes it before a term, nothing for 1."""
    return "" if mu == 1 else f"{mu:g} * "


class TwoGradientsAndRelease(_TapeExercise):
    number = "4.2"
    answer = "two_gradients_and_release"
    replayable = True  # every read of the kernel's state after a call goes through `run`
    # The weight mu of the penalty's gradient in the step, lr * (dloss_dx + mu * dpenalty_dx) (1 in the text).
    space = Space(default={"mu": 1}, draws={"mu": lambda rng: float(rng.choice([0.25, 0.5, 1.5, 2, 3]))},
                  wording={"mu_times": lambda v: _times(v["mu"])})
    statement = ("Write `two_gradients_and_release(f, x, lr)`. `x` is a `tf.Variable` and `f(x)` returns two scalars, "
                 "`(loss, penalty)`. Your function must: 1. record `loss, penalty = f(x)` on one persistent tape and, "
                 "after its `with` block, get `dloss_dx` and `dpenalty_dx`; 2. release the tape with `del tape`; "
                 "3. take one step: `x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))`; 4. call `f(x)` again "
                 "and return `[dloss_dx, dpenalty_dx, new_loss]`, where `new_loss` is the loss after the step.")
    visible_cases = (((0.5, -1.0, 2.0), 0.1, 1.5, 0.2),)
    praise = "two gradients from one recording, and the tape let go of its intermediates before the next forward pass."
    hints = (
        "Record `loss, penalty = f(x)` once on a persistent tape and ask it for two gradients; "
        "then free it before you call `f` again.",
        "After the `with` block: the two `gradient` calls, then `del tape`, then "
        "`x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))`.",
    )

    def check_case(self, fn, case, facts):
        values, lr, target, weight = case
        x0 = np.array(values, np.float64)
        x = tf.Variable(x0, dtype=tf.float32, name="x")
        f = _Tracked(target, weight)
        call = self.call(fn, f, x, lr, shown=f"f, x=tf.Variable({fmt(x0)}), lr={lr}")
        got = call.value
        # what the call left in the kernel (the intermediates alive, `x`, those alive at `f`'s second call) is read
        # in a run, so that the grader's judge is served it (tapelab.checker.replay)
        alive_after_return, x_after, held_at_next_call = self.run(
            lambda: _left(f, x), "Reading `x` and what your tape still holds after your function returned").value

        dloss = numeric_gradient(f.numpy_loss, x0)
        dpenalty = numeric_gradient(f.numpy_penalty, x0)
        mu = self.variant["mu"]
        x1 = x0 - lr * (dloss + mu * dpenalty)
        if not isinstance(got, (list, tuple)) or len(got) != 3:
            raise Incorrect(mismatch([dloss, dpenalty, 0.0], got, "two_gradients_and_release(...)")
                            or "`two_gradients_and_release` should return `[dloss_dx, dpenalty_dx, new_loss]`.")
        for i, (name, value) in enumerate((("dloss_dx", got[0]), ("dpenalty_dx", got[1]))):
            if value is None:
                raise none_feedback(f"`{name}` is `None`.", facts, facts.returned_call(i), {"x": "variable"})
        swapped = "Your gradients are swapped: return `[dloss_dx, dpenalty_dx, new_loss]`."
        rights = [dloss, dpenalty]
        for i, (name, expected) in enumerate((("dloss_dx", dloss), ("dpenalty_dx", dpenalty))):
            target, other = ("loss", "penalty") if i == 0 else ("penalty", "loss")
            # the other item's right value here, while that item is right too: one target differentiated twice
            twice = (lambda i=i: rights[1 - i] if agrees(rights[1 - i], got[1 - i]) else None)
            problem = wrong_value(name, expected, got[i], [
                swapped_item(rights, got[:2], i, says=swapped),
                Alternative("the other gradient again", twice, "wrong-target",
                            f"That is the gradient of `{other}` again (your other item): `{name}` differentiates "
                            f"the wrong target. Differentiate `{target}`.")])
            if problem:
                raise problem
        step = (1e-4, 1e-4)  # rtol, atol: `x` and the loss after a float32 step
        problem = wrong_value("x", x1, x_after, [
            Alternative("x before the step", x0, "no-update", "`x` did not move. Did you call `x.assign_sub(...)`?"),
            Alternative("a step uphill", x0 + lr * (dloss + mu * dpenalty), "uphill-step",
                        "You stepped uphill. Did you use `assign_add` instead of `assign_sub`?"),
        ], otherwise=self.variant.fill("Did you step by `lr * (dloss_dx + ${mu_times}dpenalty_dx)`?"),
            rtol=step[0], atol=step[1])
        moved = combination({"dloss_dx": dloss, "dpenalty_dx": dpenalty}, {"dloss_dx": lr, "dpenalty_dx": lr * mu},
                            x0 - x_after, "your step (`x` before minus `x` after)", *step, rate=lr) \
            if problem and problem.cause is None else None
        if moved is not None:
            raise Incorrect(f"{mismatch(x1, x_after, 'x', *step)} {moved[1]}", cause=moved[0])
        if problem:
            raise problem
        problem = wrong_value("new_loss", f.numpy_loss(x1), got[2], [Alternative(
            "the loss before the step", f.numpy_loss(x0), "stale-value",
            "That is the loss before the step. Did you call `f(x)` again after `x.assign_sub(...)`?")],
            rtol=step[0], atol=step[1])
        if problem:
            raise problem
        self._reject_gradient_inside_with(facts, call.logs)
        if held_at_next_call:
            raise Incorrect(
                f"Your values are right, but when you called `f` the second time your persistent tape was still "
                f"alive and held {held_at_next_call} intermediates of the first call. Did you `del tape` "
                "right after the `gradient` calls?", cause="tape-not-released")
        if alive_after_return:
            raise Incorrect(
                f"Your values are right, but your persistent tape is still alive after your function returned "
                f"(it holds {alive_after_return} intermediates). Did you return the tape or store it outside "
                "the function? `del tape` once you have the gradients.", cause="tape-not-released")


ex4_1 = PerExampleGradients()
ex4_2 = TwoGradientsAndRelease()
