"""Exercise 5.1 of notebook 05_debugging_none: fix the one line that makes a function's gradient `None`.

Every snippet wants the gradient of loss = mean((w·x − k)²) over three fixed x (with w moved by 1 first, in the
rebinding one) and breaks one link of section 1's checklist. A variant draws another snippet and another k: the
student has to find the broken link, not retype a fix. The checker runs the student's function and compares the
gradient with the derivative; a `None` is explained from the student's own code (tapelab.exercises.blocked_path),
never from the snippet's known cause, and the given function handed back unchanged is "not attempted"."""
from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np

from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import NotAttempted
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.exercises.blocked_path import none_feedback

__all__ = ["ex5_1"]

_TAPE = "    with tf.GradientTape() as tape:\n"
_RETURN = "    return tape.gradient(loss, w)"

# snippet -> (lines before the tape, lines in it, the line at fault); `$k` is the variant's target as a float. Each
# breaks one link and wants the gradient of the loss whose error is `err = w * x - k`. How to mend it is not here:
# the answer and the last hint live in the answers distribution (solutions/answers.toml).
_W, _X = "    w = tf.Variable(start)\n", "    x = tf.constant([0.5, -1.0, 3.0])\n"
_ERR, _LOSS = "        err = w * x - $k\n", "        loss = tf.reduce_mean(tf.square(err))\n"
_SNIPPETS: dict[str, tuple[str, str, str]] = {
    "state": (_W + _X + "    err = tf.Variable(tf.zeros(3))\n", "        err.assign(w * x - $k)\n" + _LOSS,
              "err.assign(w * x - $k)"),
    "numpy": (_W + _X, _ERR + "        loss = tf.constant(np.mean(np.square(err.numpy())))\n",
              "loss = tf.constant(np.mean(np.square(err.numpy())))"),
    "outside": (_W + _X + _ERR[4:], _LOSS, "err = w * x - $k"),
    "stop": (_W + _X, "        err = tf.stop_gradient(w * x) - $k\n" + _LOSS, "err = tf.stop_gradient(w * x) - $k"),
    "frozen": ("    w = tf.Variable(start, trainable=False)\n" + _X, _ERR + _LOSS, "w = tf.Variable(start, trainable=False)"),
    "replaced": (_W + "    w = w + 1.0\n" + _X, _ERR + _LOSS, "w = w + 1.0"),
}
_XS = np.array([0.5, -1.0, 3.0])
_SHIFT = {"replaced": 1.0}  # the snippets that move w before the tape: the gradient is taken at start + shift


def _fields(v: dict) -> dict:
    snippet, k = v["snippet"], f"{v['k']}.0"
    before, inside, fault = _SNIPPETS[snippet]
    broken = (before + _TAPE + inside + _RETURN).replace("$k", k)
    return {"broken": "def broken_gradient(start):\n" + broken,
            "broken_body": broken,
            "broken_tape": broken.removesuffix("\n" + _RETURN),  # for the catalogues
            "fault": fault.replace("$k", k),
            "kf": k,
            "shift": " + 1" if snippet in _SHIFT else "",
            # the shift kept on the variable (the task asks for the gradient at start + 1), for the answer's template
            "shift_line": "    w.assign_add(1.0)\n" if snippet in _SHIFT else ""}


def _statements(source: str) -> list[str] | None:
    """The statements of the one function `source` defines, as ASTs without names or positions (None if unread)."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    fn = next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)
    return None if fn is None else [ast.dump(statement) for statement in fn.body]


def _unchanged(fn, broken: str) -> bool:
    """Whether the student's function is the given broken one, statement for statement (comments aside)."""
    try:
        mine = _statements(inspect.getsource(fn))
    except (OSError, TypeError):
        return False
    return mine is not None and mine == _statements(broken)


class FixTheSnippet(Exercise):
    number = "5.1"
    replayable = True
    answer = "fixed_gradient"
    # Which snippet (its broken link of the checklist) and the target k of its loss mean((w·x − k)²): "state" and 2 in
    # the notebook's text; a variant draws one of the other snippets, so that the notebook's fix never passes it.
    space = Space(default={"snippet": "state", "k": 2},
                  draws={"snippet": lambda rng: str(rng.choice(sorted(set(_SNIPPETS) - {"state"}))),
                         "k": lambda rng: int(rng.integers(2, 6))},
                  # every fix but the rebinding one is the notebook's for the same k: a variant must change k too
                  allowed=lambda v: v["k"] != 2 or v["snippet"] in ("state", "replaced"),
                  wording={name: (lambda v, name=name: _fields(v)[name])
                           for name in ("broken", "broken_body", "broken_tape", "fault", "kf", "shift", "shift_line")})
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
        "Walk section 1's checklist on the function: is `w` a watched float variable, is `loss` recorded inside the "
        "tape and computed from `w` through tensors, and does every operation on the way have a gradient?",
        "Print what each line makes: `type(...)` and `.trainable` of `w`, and whether `err` is a variable, a tensor "
        "computed inside the tape, or a NumPy value.",
    )

    def check_case(self, fn, start, facts):
        k, w = self.variant["k"], start + _SHIFT.get(self.variant["snippet"], 0.0)
        if _unchanged(fn, self.variant["broken"]):
            raise NotAttempted(f"Exercise {self.number}: `fixed_gradient` is the given function unchanged, so it "
                               "still returns `None`. Find the line that breaks the path from `w` to the loss and "
                               "change it.")
        got = self.call(fn, start, shown=f"start={start}").value
        if got is None:
            raise none_feedback(fn, facts, f"fixed_gradient({start})", None, "w", {"start": "constant"})
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


ex5_1 = FixTheSnippet()
