"""Exercise 2.5 of notebook 02_model_variables: a running mean kept by a compiled function.

The lesson is what a `tf.function` keeps between calls: its Python body runs only while it is traced, so
state that must change on every call lives in variables, created once, and each function made by the
factory needs its own. The checker tells these apart by what the functions return: two fresh functions
given the same first value must agree (else they share state), and the means of interleaved calls are
compared with the values each known mistake gives. Where two mistakes give the same means (Python state
and variables whose names are rebound to tensors), the source tells which one the code makes.
"""
from __future__ import annotations

import re

import numpy as np
import tensorflow as tf

from tapelab.checker.compare import to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value

__all__ = ["ex2_5"]

_RTOL, _ATOL = 1e-5, 1e-5


# The statistic each function keeps, by name: what it adds to its total (the value's power), whether it returns
# the root of total / count, and how the task and the feedback say it.
_STATISTICS = {
    "mean": (1, False, "their mean", "the value it was given"),
    "mean square": (2, False, "the mean of their squares", "the square of the value it was given"),
    "root mean square": (2, True, "their root mean square (`tf.sqrt` of the mean of their squares)",
                         "the size of the value it was given"),
}


def _statistic(values: dict, field: int) -> str:
    return _STATISTICS[values["statistic"]][field]


def _interleaved(spec):
    """(function index, value) in the order the checker calls: one value of each function in turn."""
    longest = max(len(values) for values in spec)
    return [(i, values[k]) for k in range(longest) for i, values in enumerate(spec) if k < len(values)]


class RunningMean(Exercise):
    number = "2.5"
    answer = "make_running_mean"
    replayable = True  # every read of the kernel's state after a call goes through `run`
    # What each function returns of the values it has seen: their mean (the notebook's text), the mean of their
    # squares, or its root. The visible values are positive and not all equal, so each differs from the mean.
    space = Space(default={"statistic": "mean"},
                  draws={"statistic": lambda rng: str(rng.choice(["mean square", "root mean square"]))},
                  wording={"sqr": lambda v: "**2" if _statistic(v, 0) == 2 else "",
                           "sq": lambda v: "tf.sqrt(" if _statistic(v, 1) else "",
                           "sq_end": lambda v: ")" if _statistic(v, 1) else "",
                           "ret": lambda v: "tf.sqrt(total / count)" if _statistic(v, 1) else "total / count",
                           "adds": lambda v: ("`assign_add` to both" if v["statistic"] == "mean" else
                                              "`total.assign_add(value**2)`, `count.assign_add(1.0)`"),
                           "returns": lambda v: _statistic(v, 2), "of_value": lambda v: _statistic(v, 3)})
    statement = ("`make_running_mean()` returns a compiled function (`@tf.function`) `update(value)` that takes a "
                 "float32 scalar tensor, adds it to the values that function has seen, and returns ${returns} as a "
                 "tensor. Each function that `make_running_mean()` makes keeps its own values.")
    # Each case: the values given to each function that make_running_mean() makes, called in turn.
    visible_cases = (((2.0, 4.0, 9.0),), ((1.0, 3.0), (10.0, 20.0, 30.0)))
    praise = ("the total and the count live in variables made once per function, so every call of the one "
              "traced graph updated them, and each function kept its own.")
    hints = (
        "Python code inside a `tf.function` runs only while it is traced. What must hold the total and the "
        "count, so that every call changes them?",
        "In `make_running_mean`, before the compiled function, create `total = tf.Variable(0.0)` and "
        "`count = tf.Variable(0.0)`; inside it, ${adds} and return `${ret}`.",
    )

    def _made(self, fn):
        """One compiled function from the student's factory, checked to be one."""
        # what the check asks of the returned object is read in the same run, so that the grader's judge, which
        # has only a stand-in for it, is served the answers (tapelab.checker.replay)
        update, is_callable, compiled = self.run(lambda: _described(fn()), f"Calling `{self.answer}()`").value
        if update is None:
            raise Incorrect("`make_running_mean()` returned `None`. Did you forget to `return` the compiled "
                            "function?", cause="no-return")
        if not is_callable:
            raise Incorrect(f"`make_running_mean()` returned a `{type(update).__name__}`, but should return a "
                            "function to call with each value.")
        if not compiled:
            raise Incorrect("`make_running_mean()` returned a plain Python function. Decorate the function it "
                            "returns with `@tf.function`: the exercise is about what a compiled function keeps "
                            "between calls.", cause="not-compiled")
        return update

    def _mean(self, update, value) -> float:
        got = self.run(lambda: update(tf.constant(value)), f"Calling `update(tf.constant({value}))`").value
        try:
            array = to_numpy(got)
        except (TypeError, ValueError):
            array = None
        if array is None or array.size != 1:
            raise Incorrect(f"`update(tf.constant({value}))` returned {got!r}, but should return the mean of "
                            "the values so far: one number, as a scalar tensor.")
        return float(array.ravel()[0])

    def check_case(self, fn, spec, facts):
        self._mean(self._made(fn), -2.5)  # a first function, then two more given the same first value
        second, third = (self._mean(self._made(fn), 7.5) for _ in range(2))
        if not np.isclose(second, third, rtol=_RTOL, atol=_ATOL):
            raise Incorrect("Three functions made by `make_running_mean()` in turn: the first called with "
                            f"`tf.constant(-2.5)`, then the second and the third each once with `tf.constant(7.5)`. "
                            f"Those two returned {second:.6g} and {third:.6g}, so the third saw values given to the "
                            "functions before it: they share one total and count. Create the variables inside "
                            "`make_running_mean`, so that each function it makes gets its own.",
                            cause="shared-state")
        updates = [self._made(fn) for _ in spec]
        got = [[] for _ in spec]
        for i, value in _interleaved(spec):
            got[i].append(self._mean(updates[i], value))
        for values, means in zip(spec, got):
            self._compare(list(values), means, _rebound_variables(facts))

    def _compare(self, values: list, means: list, rebound: list) -> None:
        """One function's means against the running means, and against what each known mistake returns;
        `rebound` holds the assignments that rebind a variable's name to a tensor computed from it."""
        power, root, _, of_value = _STATISTICS[self.variant["statistic"]]
        added = np.asarray(values, np.float64) ** power if power != 1 else values  # what the total adds up

        def returned(kept):  # what a function returns of what it keeps
            return [float(m) for m in (np.sqrt(kept) if root else kept)]

        counts = np.arange(1, len(values) + 1)
        shown = " and ".join(f"`{a.names[0]} = {a.value}`" if re.search(rf"\b{a.names[0]}\b", a.value)
                             else f"the augmented assignment to `{a.names[0]}`" for a in rebound)
        did = ("rebinds a variable's name to a new tensor, and the variable itself never changes" if len(rebound) == 1
               else "rebind the variables' names to new tensors, and the variables themselves never change")
        alternatives = (
            Alternative("each value", returned(added), "trace-time-state",
                        f"Each call returned {of_value}. The Python code that keeps your values (a "
                        "list, a number) ran once, while `tf.function` traced the function; every later call "
                        "ran the graph alone. Keep the total and the count in `tf.Variable`s and `assign_add` "
                        "to them.", lambda: not rebound),
            *([Alternative("each value, variables rebound", returned(added), "replaced-by-tensor",
                           f"Each call returned {of_value}: {shown} {did}, so every call starts "
                           "again from the first values. Change a variable in place with `assign_add`, e.g. "
                           f"`{rebound[0].names[0]}.assign_add(...)`.")]
              if rebound else []),
            Alternative("running total", returned(np.cumsum(added)), "trace-time-state",
                        "These are running totals: the count you divide by stayed at 1. Is it a Python number? "
                        "`count += 1` runs only while tracing; keep the count in a `tf.Variable` too."),
            Alternative("value over count", returned(np.asarray(added) / counts), "replaced-by-tensor",
                        "Each is the value just given divided by the count: the total never grew. Did you "
                        f"rebind its name, `total = total + value{self.variant['sqr']}`? That ran once, while "
                        "tracing, and put a tensor in the variable's place; write "
                        f"`total.assign_add(value{self.variant['sqr']})`."),
        )
        expected = returned(np.cumsum(added) / counts)
        problem = wrong_value(f"[float(update(v)) for v in {values}]", expected, means,
                              alternatives, f"Does the function add each value{self.variant['sqr']} to a total, "
                              f"count it, and return {self.variant['ret']}?", _RTOL, _ATOL)
        if problem:
            raise problem


def _described(update) -> tuple:
    """What the factory returned, whether it is callable, and whether it is a compiled function (a `tf.function`)."""
    return update, callable(update), hasattr(update, "experimental_get_tracing_count")


def _rebound_variables(facts) -> list:
    """The assignments that rebind the name of a variable the code creates to a value computed from it
    (`total = total + value`, `count += 1`)."""
    made = {n for a in facts.assignments if a.made_by == "variable" for n in a.names}
    return [a for a in facts.assignments if a.made_by != "variable" and len(a.names) == 1
            and a.names[0] in made and a.names[0] in a.reads]


ex2_5 = RunningMean()
