"""Exercise 5.1 of notebook 05_debugging_none: fix the one line that makes a snippet's gradient `None`.

Every snippet wants the gradient of loss = mean((w·x − k)²) over three fixed x (with w shifted by 1 first, in the
rebinding one) and breaks one link of section 1's checklist. A variant draws another snippet and another k: the
student has to find the broken link, not retype a fix. The checker runs the student's fixed function and compares
the gradient with the derivative; a `None` is explained from the student's own code (tapelab.checker.explanations), never from the
snippet's known cause."""
from __future__ import annotations

import numpy as np

from tapelab.checker.exercise import Exercise
from tapelab.checker.explanations import explain_none
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.diagnose import CAUSES, blocking_call

__all__ = ["ex5_1", "none_feedback"]

_TAPE = "    with tf.GradientTape() as tape:\n"
_RETURN = "    return tape.gradient(loss, w)"

# snippet -> (lines before the tape, lines in it) broken, then fixed; `$k` is the variant's target. Each differs
# from its fix in one line (the state one also drops the variable the fix leaves unused), and every fixed body
# computes `err` and `loss` inside the tape.
_W, _X = "    w = tf.Variable(start)\n", "    x = tf.constant([0.5, -1.0, 3.0])\n"
_ERR, _LOSS = "        err = w * x - $k\n", "        loss = tf.reduce_mean(tf.square(err))\n"
_SNIPPETS: dict[str, tuple[str, str, str, str]] = {
    "state": (_W + _X + "    err = tf.Variable(tf.zeros(3))\n", "        err.assign(w * x - $k)\n" + _LOSS,
              _W + _X, _ERR + _LOSS),
    "numpy": (_W + _X, _ERR + "        loss = tf.constant(np.mean(np.square(err.numpy())))\n", _W + _X, _ERR + _LOSS),
    "outside": (_W + _X + _ERR[4:], _LOSS, _W + _X, _ERR + _LOSS),
    "stop": (_W + _X, "        err = tf.stop_gradient(w * x) - $k\n" + _LOSS, _W + _X, _ERR + _LOSS),
    "frozen": ("    w = tf.Variable(start, trainable=False)\n" + _X, _ERR + _LOSS, _W + _X, _ERR + _LOSS),
    "replaced": (_W + "    w = w + 1.0\n" + _X, _ERR + _LOSS, _W + "    w.assign_add(1.0)\n" + _X, _ERR + _LOSS),
}
_XS = np.array([0.5, -1.0, 3.0])
# snippet -> the line at fault and its fix, the last hint (answers.toml's `last_hint` is `$cure`)
_CURES = {
    "state": "`err.assign(...)` stores a value in a variable, and an assignment has no gradient: compute "
             "`err = w * x - $k` as a tensor inside the tape.",
    "numpy": "`err.numpy()` and NumPy's functions leave TensorFlow, so the tape records nothing after them: "
             "`loss = tf.reduce_mean(tf.square(err))`.",
    "outside": "`err` is computed before the tape opens, so nothing records it: move `err = w * x - $k` "
               "into the `with` block.",
    "stop": "`tf.stop_gradient` blocks the path by design: `err = w * x - $k`.",
    "frozen": "A variable made with `trainable=False` is not watched: `w = tf.Variable(start)`.",
    "replaced": "`w = w + 1.0` binds `w` to a tensor the tape does not watch: change the variable in place, "
                "`w.assign_add(1.0)`.",
}
_SHIFT = {"replaced": 1.0}  # the snippets that move w before the tape: the gradient is taken at start + shift


def _body(snippet: str, fixed: bool, k: int) -> str:
    """The snippet's function body, broken or fixed, for the factor k."""
    before, inside = _SNIPPETS[snippet][2:] if fixed else _SNIPPETS[snippet][:2]
    return (before + _TAPE + inside + _RETURN).replace("$k", f"{k}.0")


def _fields(v: dict) -> dict:
    return {"broken": "def broken_gradient(start):\n" + _body(v["snippet"], False, v["k"]),
            "fixed": _body(v["snippet"], True, v["k"]),
            "broken_body": _body(v["snippet"], False, v["k"]),
            "broken_tape": _body(v["snippet"], False, v["k"]).removesuffix("\n" + _RETURN),  # for the catalogues
            "setup": _SNIPPETS[v["snippet"]][2].rstrip("\n"),
            "cure": _CURES[v["snippet"]].replace("$k", f"{v['k']}.0"),
            "shift": " + 1" if v["snippet"] in _SHIFT else ""}


class FixTheSnippet(Exercise):
    number = "5.1"
    answer = "fixed_gradient"
    # Which snippet (its broken link of the checklist) and the target k of its loss mean((w·x − k)²): "state" and 2 in
    # the notebook's text; a variant draws one of the other snippets, so that the notebook's fix never passes it.
    space = Space(default={"snippet": "state", "k": 2},
                  draws={"snippet": lambda rng: str(rng.choice(sorted(set(_SNIPPETS) - {"state"}))),
                         "k": lambda rng: int(rng.integers(2, 6))},
                  # every fix but the rebinding one is the notebook's for the same k: a variant must change k too
                  allowed=lambda v: v["k"] != 2 or v["snippet"] in ("state", "replaced"),
                  wording={name: (lambda v, name=name: _fields(v)[name])
                           for name in ("broken", "fixed", "broken_body", "broken_tape", "setup", "shift", "cure")})
    statement = """This function should return the gradient of its loss, the mean of (w·x − ${k})² over the three values of `x`, at
w = `start`${shift}, but it returns `None`:

```python
${broken}
```

Write `fixed_gradient(start)`: the same function with the line that breaks the path from `w` to the loss fixed,
so that it returns the gradient of that loss with respect to `w`. The test runs it at several starts and compares
with the derivative."""
    # The gradient is 2·(mean(x²)·w − mean(x)·k) = 2·(41/12·w − 5/6·k): for no k from 2 to 5 is it 0 at either start
    # (or start + 1), where a `None` turned into zeros would pass. x is not symmetric under 1/x, so `w / x` fails.
    visible_cases = (1.25, -1.0)
    praise = "the path from `w` to the loss is whole again, and the gradient is the derivative."
    hints = (
        "Walk section 1's checklist on the snippet: is `w` a watched float variable, is `loss` recorded inside the "
        "tape and computed from `w` through tensors, and does every operation on the way have a gradient?",
        "Print what each line makes: `type(...)` and `.trainable` of `w`, and whether `err` is a variable, a tensor "
        "computed inside the tape, or a NumPy value.",
    )

    def check_case(self, fn, start, facts):
        k, w = self.variant["k"], start + _SHIFT.get(self.variant["snippet"], 0.0)
        got = self.call(fn, start, shown=f"start={start}").value
        if got is None:
            raise _none(fn, facts)
        err = w * _XS - k
        problem = wrong_value(f"fixed_gradient({start})", np.float32(np.mean(2 * err * _XS)), got, [
            Alternative("zeros for an unconnected source", np.float32(0.0), "none-silenced",
                        "That is 0, and your `gradient` call asks for zeros where the path is broken "
                        "(`unconnected_gradients`): that hides the `None` but leaves the path broken. Fix the line "
                        "that breaks it instead.",
                        confirm=lambda: any(kw.startswith("unconnected_gradients=") for kw in facts.keywords)),
            Alternative("the loss itself", np.float32(np.mean(err**2)), "returned-value",
                        "That is the loss's value, not its gradient: return `tape.gradient(loss, w)`."),
            Alternative("d loss / d err", (2 * err / len(_XS)).astype(np.float32), "wrong-source",
                        "That is d loss / d err, one value per element of `err`, without the factor `x` of "
                        "d err / d w: differentiate with respect to `w`."),
            *([Alternative("the gradient at start, without the shift", np.float32(np.mean(2 * (start * _XS - k) * _XS)),
                           "missing-term",
                           f"That is the gradient at w = {start}, not at {start} + 1: did you drop the shift "
                           "`w + 1.0` instead of applying it to the variable (`w.assign_add(1.0)`)?")]
              if self.variant["snippet"] in _SHIFT else [])],
            otherwise=f"Is your loss still the mean of (w·x − {k})², computed as `err = w * x - {k}.0`?")
        if problem:
            raise problem


def none_feedback(fn, facts, gradient_name: str, item: int | None, source: str, values: dict) -> Incorrect:
    """Why the gradient `gradient_name` is None: the student's own gradient call first, then a blocking op
    (shared by Exercises 5.1 to 5.4)."""
    call = facts.returned_call(item)
    why = explain_none(facts, call, values)
    if why.cause not in (None, "not-connected"):
        return Incorrect(f"`{gradient_name}` is `None`. {why}", cause=why.cause)
    blocked = blocking_call(fn, call.source if call else source)
    if blocked:
        cause, text = blocked
        message = {
            "stop-gradient": f"`{text}` is still on the path from `{source}` to the loss, and `tf.stop_gradient` "
                             "blocks gradients by design. Did you mean to remove it?",
            "non-differentiable": f"`{text}` has no gradient, so nothing flows back to `{source}`. Did you keep that "
                                  "op without a straight-through estimator?",
        }.get(cause, f"`{text}` blocks the path to `{source}`: {CAUSES[cause]}.")
        return Incorrect(f"`{gradient_name}` is `None`: {message}", cause=cause)
    return Incorrect(f"`{gradient_name}` is `None`. {why}".strip(), cause=why.cause)


def _none(fn, facts) -> Incorrect:
    """The gradient is None: the cause the student's own code shows, never the snippet's known one."""
    return none_feedback(fn, facts, "fixed_gradient(...)", None, "w", {"start": "constant"})


ex5_1 = FixTheSnippet()
