"""Exercise 5.1 of notebook 05_debugging_none: fix the one line that makes a snippet's gradient `None`.

Every snippet wants the gradient of loss = (k·w − 1)² (with w shifted by 1 first, in the rebinding one) and breaks
one link of section 1's checklist. A variant draws another snippet and another k: the student has to find the
broken link, not retype a fix. The checker runs the student's fixed function and compares the gradient with the
derivative; a `None` is explained from the student's own code (tapelab.checker.explanations), never from the
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

# snippet -> (lines before the tape, lines in it) broken, then fixed; `$k` is the variant's factor. Each differs
# from its fix in one line (the state one also drops the variable the fix leaves unused), and every fixed body
# computes `err` and `loss` inside the tape.
_SNIPPETS: dict[str, tuple[str, str, str, str]] = {
    "state": ("    w = tf.Variable(start)\n    err = tf.Variable(0.0)\n",
              "        err.assign(w * $k - 1.0)\n        loss = tf.square(err)\n",
              "    w = tf.Variable(start)\n",
              "        err = w * $k - 1.0\n        loss = tf.square(err)\n"),
    "numpy": ("    w = tf.Variable(start)\n",
              "        err = w * $k - 1.0\n        loss = tf.constant(np.square(err.numpy()))\n",
              "    w = tf.Variable(start)\n",
              "        err = w * $k - 1.0\n        loss = tf.square(err)\n"),
    "outside": ("    w = tf.Variable(start)\n    err = w * $k - 1.0\n",
                "        loss = tf.square(err)\n",
                "    w = tf.Variable(start)\n",
                "        err = w * $k - 1.0\n        loss = tf.square(err)\n"),
    "stop": ("    w = tf.Variable(start)\n",
             "        err = tf.stop_gradient(w * $k) - 1.0\n        loss = tf.square(err)\n",
             "    w = tf.Variable(start)\n",
             "        err = w * $k - 1.0\n        loss = tf.square(err)\n"),
    "frozen": ("    w = tf.Variable(start, trainable=False)\n",
               "        err = w * $k - 1.0\n        loss = tf.square(err)\n",
               "    w = tf.Variable(start)\n",
               "        err = w * $k - 1.0\n        loss = tf.square(err)\n"),
    "replaced": ("    w = tf.Variable(start)\n    w = w + 1.0\n",
                 "        err = w * $k - 1.0\n        loss = tf.square(err)\n",
                 "    w = tf.Variable(start)\n    w.assign_add(1.0)\n",
                 "        err = w * $k - 1.0\n        loss = tf.square(err)\n"),
}
# snippet -> the line at fault and its fix, the last hint (answers.toml's `last_hint` is `$cure`)
_CURES = {
    "state": "`err.assign(...)` stores a value in a variable, and an assignment has no gradient: compute "
             "`err = w * $k - 1.0` as a tensor inside the tape.",
    "numpy": "`err.numpy()` and `np.square` leave TensorFlow, so the tape records nothing after them: "
             "`loss = tf.square(err)`.",
    "outside": "`err` is computed before the tape opens, so nothing records it: move `err = w * $k - 1.0` "
               "into the `with` block.",
    "stop": "`tf.stop_gradient` blocks the path by design: `err = w * $k - 1.0`.",
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
    # Which snippet (its broken link of the checklist) and the factor k of its loss (k·w − 1)²: "state" and 2 in
    # the notebook's text; a variant draws one of the other snippets, so that the notebook's fix never passes it.
    space = Space(default={"snippet": "state", "k": 2},
                  draws={"snippet": lambda rng: str(rng.choice(sorted(set(_SNIPPETS) - {"state"}))),
                         "k": lambda rng: int(rng.integers(2, 6))},
                  wording={name: (lambda v, name=name: _fields(v)[name])
                           for name in ("broken", "fixed", "broken_body", "broken_tape", "setup", "shift", "cure")})
    statement = """This function should return the gradient of its loss, (${k}·w − 1)² at w = `start`${shift}, but it returns `None`:

```python
${broken}
```

Write `fixed_gradient(start)`: the same function with the line that breaks the path from `w` to the loss fixed,
so that it returns the gradient of that loss with respect to `w`. The test runs it at several starts and compares
with the derivative."""
    # For every k from 2 to 5, neither start puts k·w (or k·(w + 1)) at 1, where the gradient is 0 and a `None`
    # turned into zeros would pass, nor at 3, where the loss equals d loss / d err.
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
        expected = 2 * k * (k * w - 1)
        problem = wrong_value(f"fixed_gradient({start})", np.float32(expected), got, [
            Alternative("zeros for an unconnected source", np.float32(0.0), "none-silenced",
                        "That is 0, and your `gradient` call asks for zeros where the path is broken "
                        "(`unconnected_gradients`): that hides the `None` but leaves the path broken. Fix the line "
                        "that breaks it instead.",
                        confirm=lambda: any(k.startswith("unconnected_gradients=") for k in facts.keywords)),
            Alternative("the loss itself", np.float32((k * w - 1) ** 2), "returned-value",
                        "That is the loss's value, not its gradient: return `tape.gradient(loss, w)`."),
            Alternative("d loss / d err", np.float32(2 * (k * w - 1)), "wrong-source",
                        f"That is d loss / d err, the gradient with respect to `err`: it lacks the factor {k} of "
                        "d err / d w. Differentiate with respect to `w`."),
            *([Alternative("the gradient at start, without the shift", np.float32(2 * k * (k * start - 1)),
                           "missing-term",
                           f"That is the gradient at w = {start}, not at {start} + 1: did you drop the shift "
                           "`w + 1.0` instead of applying it to the variable (`w.assign_add(1.0)`)?")]
              if self.variant["snippet"] in _SHIFT else [])],
            otherwise=f"Is your loss still ({k}·w − 1)², computed as `err = w * {k}.0 - 1.0` and `tf.square(err)`?")
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
