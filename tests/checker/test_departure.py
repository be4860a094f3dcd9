"""Departures the code shows on its own (tapelab.checker.departure), and every reference held to them: a
reference answer reads every parameter its exercise does not list in `unread_parameters`."""
import inspect

import pytest

from answers import define
from mutation.inprocess import exercises
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.departure import departure, unread_parameters
from tapelab.paths import assignment_names

_EXERCISES = [e for nb in assignment_names() for e in exercises(nb)]


def _defined(code: str, name: str):
    import tensorflow as tf
    return define(code, f"departure {name}", {"tf": tf})[name]


@pytest.mark.parametrize("exercise", _EXERCISES, ids=[e.answer_id for e in _EXERCISES])
def test_every_reference_reads_its_parameters(exercise):
    """Would `unused-input` ever fire on a reference answer? Its unread parameters must be declared."""
    namespace: dict = {"__name__": "__main__"}
    exec(compile(exercise.setup, f"<setup {exercise.notebook}>", "exec"), namespace)
    before = set(namespace)
    define(exercise.reference, f"reference {exercise.answer_id}", namespace)
    # a function, or what a decorator made of one (`@tf.custom_gradient` keeps it as `__wrapped__`)
    functions = [v for k, v in namespace.items()
                 if k not in before and callable(v) and hasattr(inspect.unwrap(v), "__code__")]
    checker = next(v for k, v in namespace.items() if k.startswith("ex") and hasattr(v, "unread_parameters")
                   and v.answer in {f.__name__ for f in functions})
    fn = next(f for f in functions if f.__name__ == checker.answer)
    assert set(unread_parameters(fn)) <= checker.unread_parameters


def test_a_dropped_gradient_and_its_target_returned():
    fn = _defined("def f(x):\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n        z = x * x\n"
                  "    dz = tape.gradient(z, x)\n    return z\n", "f")
    why = departure(fn, CodeFacts.of(fn))
    assert why.cause == "loss-for-gradient" and "`dz = tape.gradient(z, x)`" in why.text


def test_a_target_returned_next_to_its_used_gradient_is_no_departure():
    """A training step returns its loss and applies its gradients: nothing departs."""
    fn = _defined("def f(x, opt):\n    with tf.GradientTape() as tape:\n        loss = x * x\n"
                  "    g = tape.gradient(loss, x)\n    opt.apply([g], [x])\n    return loss\n", "f")
    assert departure(fn, CodeFacts.of(fn)) is None


def test_an_unread_parameter_unless_the_exercise_allows_it():
    fn = _defined("def f(x, y):\n    return x * 2\n", "f")
    assert departure(fn, CodeFacts.of(fn)).cause == "unused-input"
    assert departure(fn, CodeFacts.of(fn), frozenset({"y"})) is None
