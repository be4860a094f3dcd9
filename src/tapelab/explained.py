"""Causes that both the exercise checker and `tapelab.diagnose` establish, each from its own evidence (the
checker from the student's code facts, diagnose from its recorded run), told in one sentence with one fix: one
truth across surfaces. Python's `ast` only; nothing of tapelab, TensorFlow or NumPy.

A new `tf.Variable` on the path to the target, created from a value computed from the source: the variable
starts from a copy of that value, and its creation is no operation the tape can run backwards (cause
`state-change`). `variable_statement` reads such a statement, `initial_value` and `value_names` what the copy
is made of, and `variable_copy` is the sentence.
"""
from __future__ import annotations

import ast

__all__ = ["initial_value", "value_names", "variable_copy", "variable_statement"]

_SHAPE_ONLY = frozenset({"shape", "size", "rank", "dtype"})  # what reads only a tensor's shape or type, not its value


def value_names(node: ast.AST) -> set[str]:
    """The names whose *values* an expression reads: not those it reads only for a shape or dtype
    (`tf.zeros_like(w)`, `tf.shape(w)`, `w.shape`)."""
    if isinstance(node, ast.Call):
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if func.endswith("_like") or func in _SHAPE_ONLY:
            return set()
    if isinstance(node, ast.Attribute) and node.attr in _SHAPE_ONLY:
        return set()
    if isinstance(node, ast.Name):
        return {node.id}
    return set().union(*(value_names(child) for child in ast.iter_child_nodes(node)))


def initial_value(call: str) -> ast.AST | None:
    """The initial value given to a `tf.Variable(...)` call written as `call`."""
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call):
        return None
    given = node.args[:1] + [k.value for k in node.keywords if k.arg == "initial_value"]
    return given[0] if given else None


def variable_statement(line: str) -> tuple[str, str] | None:
    """(name, value) when the source line `line` is one statement `name = ...Variable(initial value, ...)`."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    node = tree.body[0]
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name) or not isinstance(node.value, ast.Call):
        return None
    if not ast.unparse(node.value.func).endswith("Variable"):
        return None
    value = ast.unparse(node.value)
    return (node.targets[0].id, value) if initial_value(value) is not None else None


def variable_copy(name: str, value: str, source: str, target: str, inside: bool = True,
                  call: str = "") -> tuple[str, str] | None:
    """The sentence for `name = value`, a new variable made (by `call`, the `tf.Variable(...)` in `value`; `value`
    itself by default) from a value computed from `source`, on the path to `target` (written as the reader should
    see it: "`loss`", "the loss"); `inside`: the statement runs inside the tape's `with` block. None when the call
    gives no initial value."""
    init = initial_value(call or value)
    if init is None:
        return None
    where = "" if inside else ", computed inside the `with` block"
    return (f"`{name} = {value}` makes a new variable that starts from a copy of the value of "
            f"`{ast.unparse(init)}`: creating a variable is no operation the tape can run backwards, so the path "
            f"from `{source}` to {target} stops there. Keep `{name}` a tensor: `{name} = {ast.unparse(init)}`"
            f"{where}.", "state-change")
