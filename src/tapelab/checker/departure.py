"""Where a wrong answer's code departs from what the task asks, read from the code itself.

When neither a value alternative (tapelab.checker.wrong_answers, tapelab.checker.differential) nor the
error (tapelab.checker.tf_errors) established a cause, `departure` looks at the student's function for a
departure the code shows on its own: it computes a gradient, drops it and returns the value it
differentiated instead, or it
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

__all__ = ["departure", "unread_parameters", "function_node"]


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


def departure(fn: Any, facts: CodeFacts, allowed_unread: frozenset[str] = frozenset()) -> Explanation | None:
    """The departure the code of `fn` shows, if one: see the module docstring."""
    found = _returned_target(fn, facts) if callable(fn) else None
    if found is not None:
        return found
    unread = [n for n in unread_parameters(fn) if n not in allowed_unread] if callable(fn) else []
    if unread:
        listed = ", ".join(f"`{n}`" for n in unread)
        which = "its parameter" if len(unread) == 1 else "its parameters"
        return Explanation(f"Your `{getattr(fn, '__name__', 'function')}` never reads {which} {listed}, which the "
                           "task gives it to compute the answer from. Use it where the task says.", "unused-input")
    return None
