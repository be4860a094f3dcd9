"""Where a wrong answer's code departs from what the task asks, read from the code itself.

When neither a value alternative (tapelab.checker.wrong_answers, tapelab.checker.differential) nor the
error (tapelab.checker.tf_errors) established a cause, `departure` looks at the student's function for a
departure the code shows on its own: it loops over `enumerate(dataset)` as if over the batches, it
computes a gradient, drops it and returns the value it differentiated instead, it applies the gradients
twice, or it
never reads one of its parameters (which every reference answer reads, unless its exercise says otherwise
in `Exercise.unread_parameters`; tests/checker/test_departure.py holds every reference to that). It
reports what it found and the student's own names, and nothing it did not find.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any, Callable

from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.explanations import Explanation

__all__ = ["departure", "reduced_axis", "unread_parameters", "function_node"]


def function_node(fn: Callable) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition of `fn` from its source; None when the source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)


def _loaded(function: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def unread_parameters(fn: Callable) -> list[str]:
    """The parameters of `fn` its body never reads (in order); [] when its source cannot be read."""
    function = function_node(fn)
    if function is None:
        return []
    arguments = function.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    read = _loaded(function)
    return [n for n in names if n not in read and n not in ("self", "cls")]


def _returned_target(fn: Callable, facts: CodeFacts) -> Explanation | None:
    """The function returns (as its value or one of its items) the target of a gradient call whose result it
    then never reads: the gradient was computed and dropped, its target returned in its place."""
    function = function_node(fn)
    if function is None or not facts.returns:
        return None
    loaded = _loaded(function)
    returned = facts.returns[-1]
    items = returned.elts if isinstance(returned, (ast.Tuple, ast.List)) else [returned]
    for item in items:
        name = ast.unparse(item)
        call = next((c for c in facts.gradient_calls if c.target == name and c.result and c.result not in loaded),
                    None)
        if call is not None:
            return Explanation(f"Your function computes `{call.result} = {call.text()}` and never uses it: it returns "
                               f"`{name}`, the value being differentiated, where its gradient is asked. Return "
                               f"`{call.result}`.", "loss-for-gradient")
    return None


_UPDATES = ("apply", "apply_gradients", "minimize")


def _applied_twice(function: ast.AST) -> Explanation | None:
    """One optimizer asked to update the variables at two places of one step (`apply` and `apply_gradients`)."""
    sites: dict[str, list[str]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _UPDATES:
            sites.setdefault(ast.unparse(node.func.value), []).append(node.func.attr)
    twice = next(((who, how) for who, how in sites.items() if len(how) > 1), None)
    if twice is None:
        return None
    who, how = twice
    return Explanation(f"Your step updates the variables twice: `{who}` is called as "
                       f"{' and '.join(f'`{who}.{h}(...)`' for h in how)}, and each call moves the variables. "
                       "Apply the gradients once.", "applied-twice")


def _enumerated_batches(function: ast.AST) -> Explanation | None:
    """`for x, y in enumerate(dataset)` with `x` then used as data: `x` is the batch number, `y` the batch."""
    for loop in (n for n in ast.walk(function) if isinstance(n, (ast.For, ast.AsyncFor))):
        target, source = loop.target, loop.iter
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(source, ast.Call)
                and isinstance(source.func, ast.Name) and source.func.id == "enumerate"):
            continue
        first, second = (ast.unparse(e) for e in target.elts)
        used = any(isinstance(n, ast.Call) and any(ast.unparse(a) == first for a in n.args)
                   for stmt in loop.body for n in ast.walk(stmt))
        if used:
            return Explanation(f"`for {first}, {second} in {ast.unparse(source)}` binds `{first}` to the batch's "
                               f"number and `{second}` to the whole `(x, y)` batch, so the step gets a count and a "
                               "pair instead of the inputs and the targets. Write `for x, y in dataset:`.",
                               "batch-not-unpacked")
    return None


def departure(fn: Any, facts: CodeFacts, allowed_unread: frozenset[str] = frozenset(),
              raised: bool = False) -> Explanation | None:
    """The departure the code of `fn` shows, if one: see the module docstring. With `raised` (the failure wraps
    an error the code raised), only the departures that explain an error are looked for."""
    function = function_node(fn) if callable(fn) else None
    if function is None:
        return None
    found = _enumerated_batches(function)
    if found is not None or raised:
        return found
    found = _returned_target(fn, facts) or _applied_twice(function)
    if found is not None:
        return found
    unread = [n for n in unread_parameters(fn) if n not in allowed_unread]
    if unread:
        listed = ", ".join(f"`{n}`" for n in unread)
        which = "its parameter" if len(unread) == 1 else "its parameters"
        return Explanation(f"Your `{getattr(fn, '__name__', 'function')}` never reads {which} {listed}, which the "
                           "task gives it to compute the answer from. Use it where the task says.", "unused-input")
    return None


_REDUCTIONS = ("reduce_mean", "reduce_sum", "mean", "sum")


def reduced_axis(fn: Any) -> Explanation | None:
    """For a value off by a constant factor: a reduction inside a tape's block over only some axes (`axis=`),
    which leaves a non-scalar target that `gradient` sums, so a mean over some axes is off by the size of the
    others."""
    function = function_node(fn) if callable(fn) else None
    blocks = [n for n in ast.walk(function) if isinstance(n, ast.With)] if function else []
    for call in (n for block in blocks for stmt in block.body for n in ast.walk(stmt) if isinstance(n, ast.Call)):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        axis = next((k for k in call.keywords if k.arg == "axis"), None)
        if name in _REDUCTIONS and (axis is not None or len(call.args) > 1):
            return Explanation(f"Your `{ast.unparse(call)}` reduces over only some axes, which leaves one value "
                               "per remaining entry; `gradient` differentiates their sum, so a mean over some axes "
                               "is off by the size of the others. Reduce over every axis (no `axis=`).", "wrong-axis")
    return None
