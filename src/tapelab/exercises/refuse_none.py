"""Exercise 5.5 of 05_debugging_none: `checked_apply(optimizer, grads, variables)` refuses a step with `None`
gradients, naming every variable at fault, and changes nothing; otherwise it applies the step."""
from __future__ import annotations

import ast
import re

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.departure import function_node
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.wrong_answers import wrong_value

__all__ = ["ex5_5"]


_LAYERS = (("encoder", 2, 3), ("head", 3, 1), ("aux", 3, 1))  # no path is a substring of another
_LR = 0.1


def _step_inputs(none_paths: tuple[str, ...]) -> tuple[list, list]:
    """Fresh variables of three small Dense layers (seeded: the grader's judge builds the same ones), and gradients
    that are None for `none_paths`."""
    variables = []
    for seed, (name, n_in, n_out) in enumerate(_LAYERS):
        layer = keras.layers.Dense(n_out, name=name, kernel_initializer=keras.initializers.GlorotUniform(seed=seed))
        layer.build((None, n_in))
        variables += layer.trainable_variables
    grads = [None if v.path in none_paths else tf.fill(v.shape, 0.5 * (i + 1)) for i, v in enumerate(variables)]
    return variables, grads


def _refusal(fn, optimizer, grads, variables) -> str | None:
    """What the `ValueError` the student's function raised says, or None when it returned."""
    try:
        fn(optimizer, grads, variables)
    except ValueError as error:
        return str(error)
    return None


def _raises_in_loop(function: ast.AST | None) -> bool:
    """Whether a `raise` of `function` (its own body, not a nested definition) sits inside a `for` or `while`."""
    def walk(node: ast.AST, in_loop: bool) -> bool:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Raise) and in_loop:
                return True
            if walk(child, in_loop or isinstance(child, (ast.For, ast.AsyncFor, ast.While))):
                return True
        return False
    return function is not None and walk(function, False)


def _listed(paths) -> str:
    return ", ".join(f"`{p}`" for p in paths)


class RefuseNoneStep(Exercise):
    number = "5.5"
    replayable = True
    answer = "checked_apply"
    fixed_because = ("`checked_apply` is a guard for any optimizer, gradients and variables it is given and holds no "
                     "numbers of its own: only the test's layers and which gradients are `None` could change, not "
                     "what you write.")
    visible_cases = (("aux/kernel", "aux/bias"), ())  # a head the loss skipped, then a healthy step
    praise = "a step with a `None` gradient is refused and names the variables at fault; a healthy one is applied."
    hints = (
        "Before you call the optimizer, find which gradients are `None`, and keep the variables they belong to.",
        "`[v.path for g, v in zip(grads, variables) if g is None]` lists them; `v.path` tells two layers' "
        "`kernel`s apart.",
    )

    def check_case(self, fn, none_paths, facts):
        variables, grads = _step_inputs(none_paths)
        before = [v.numpy().copy() for v in variables]
        doing = "Calling `checked_apply(optimizer, grads, variables)` " + (
            f"with `None` for {_listed(none_paths)}" if none_paths else "with every gradient present")
        refused = self.run(lambda: _refusal(fn, keras.optimizers.SGD(learning_rate=_LR), grads, variables),
                           doing).value
        after = self.run(lambda: [v.numpy() for v in variables], "Reading the variables after `checked_apply`").value
        moved = [v.path for v, old, new in zip(variables, before, after) if not np.array_equal(new, old)]
        if none_paths:
            self._check_refusal(fn, refused, none_paths, moved, variables)
            return
        if refused is not None:
            raise Incorrect(f"`checked_apply` raised `ValueError: {refused}` although every gradient exists. "
                            "Raise only when at least one gradient is `None`; otherwise apply them all.",
                            cause="refused-healthy-step")
        for v, old, new, g in zip(variables, before, after, grads):
            problem = wrong_value(f"{v.path} after the step", old - _LR * g.numpy(), new,
                                  otherwise="Did you apply each gradient once, with `optimizer.apply(grads, variables)`?")
            if problem:
                raise problem

    @staticmethod
    def _check_refusal(fn, refused, none_paths, moved, variables) -> None:
        """A step with None gradients must raise before anything changes, naming exactly those paths."""
        listed = _listed(none_paths)
        if refused is None and moved:
            raise Incorrect(f"`checked_apply` applied the step although {listed} had `None` gradients: "
                            f"{_listed(moved)} changed. A step that skips the `None`s (as Keras does, with only a "
                            "warning) leaves the broken part untrained. Did you check for `None` before applying, and raise "
                            "`ValueError` naming those variables?", cause="none-applied")
        if refused is None:
            function = function_node(fn)
            never = function is not None and not any(isinstance(n, ast.Raise) for n in ast.walk(function))
            raise Incorrect(f"`checked_apply` returned without raising, although {listed} had `None` gradients."
                            + (" Your function has no `raise` statement: a refusal it returns is a value the "
                               "training loop ignores." if never else "") + " Raise `ValueError` naming them.",
                            cause="error-swallowed" if never else None)
        if moved:
            raise Incorrect(f"`checked_apply` raised, but only after {_listed(moved)} had changed: the refused "
                            "step was half applied. Check for `None` before calling the optimizer.",
                            cause="applied-before-refusing")
        message = str(refused)
        missing = [p for p in none_paths if p not in message]
        if missing:
            short = [v.name for v in variables if v.path in missing]
            if all(re.search(rf"(?<![\w/]){re.escape(name)}(?![\w/])", message) for name in short):  # not in a path
                raise Incorrect(f"Your `ValueError` says {message!r}: it names {', '.join(f'`{n}`' for n in short)}, "
                                "but several layers have a variable of that name. Did you mean `v.path` "
                                f"({_listed(missing)}), which tells them apart?", cause="name-not-path")
            first = next(v.path for v in variables if v.path in none_paths)  # where a loop over them meets None
            named = [p for p in none_paths if p in message]
            if named == [first] and _raises_in_loop(function_node(fn)):
                raise Incorrect(f"Your `ValueError` says {message!r}: it names {_listed(named)} but not "
                                f"{_listed(missing)}. Your function raises inside its loop, so the first `None` "
                                "ends the check before the others are found. Collect the path of every variable "
                                "whose gradient is `None` first, then raise one error naming them all.",
                                cause="refused-at-first-none")
            raise Incorrect(f"Your `ValueError` says {message!r}, which does not name {_listed(missing)}. "
                            "Put the path of every variable whose gradient is `None` in the message.")
        extra = [v.path for v in variables if v.path not in none_paths and v.path in message]
        if extra:
            raise Incorrect(f"Your `ValueError` also names {_listed(extra)}, whose gradients exist. "
                            "List only the variables whose gradient is `None`.", cause="lists-healthy-variables")


ex5_5 = RefuseNoneStep()
