"""What a scope binds a name to, read from its plain assignments: the value last given to a name before a
point, and what kind of value a tape's source was made as (a constant, a variable, a tensor computed before
the tape), as the rules on watching and on sources need it."""
from __future__ import annotations

import ast

from tapelab.lint.tapes import Scope, dotted, flag, statements

__all__ = ["assignments_of", "binding", "origin", "tensor_made"]

_CONSTANT_MAKERS = {"constant", "convert_to_tensor", "ones", "zeros", "fill", "range", "linspace", "ones_like",
                    "zeros_like", "eye"}


def assignments_of(scope: Scope) -> list[ast.stmt]:
    return [s for s in statements(scope.body) if isinstance(s, (ast.Assign, ast.AugAssign))]


def origin(value: ast.AST) -> str | None:
    if isinstance(value, ast.Call):
        func = dotted(value.func) or ""
        parts = func.split(".")
        if parts[0] == "tf" and (parts[-1] in _CONSTANT_MAKERS and len(parts) == 2 or parts[1:2] == ["random"]):
            return "constant"
        if func in ("tf.Variable", "tf.compat.v1.Variable"):
            frozen = flag(value, "trainable") is False
            return "frozen" if frozen else "variable"
    return None


_NOT_TENSORS = {"Variable", "nest", "keras", "compat", "distribute", "data", "train", "saved_model", "Module",
                "function", "py_function", "numpy_function", "io", "summary", "config", "experimental", "GradientTape"}


def tensor_made(value: ast.AST, assignments: list[ast.stmt], depth: int = 0) -> str | None:
    """"tensor" when `value`, computed before the tape, is certainly a tensor (never watched by itself): a
    TensorFlow op's result (`tf.add(v, r)`), or arithmetic on names bound to TensorFlow values (`x0 + x1`)."""
    if isinstance(value, ast.Call):
        parts = (dotted(value.func) or "").split(".")
        return "tensor" if parts[0] == "tf" and len(parts) > 1 and not _NOT_TENSORS & set(parts[1:]) else None
    if isinstance(value, ast.BinOp) and depth < 2:
        for side in (value.left, value.right):
            bound = binding(side.id, assignments, value) if isinstance(side, ast.Name) else None
            if bound is not None and (origin(bound) or tensor_made(bound, assignments, depth + 1)):
                return "tensor"
    return None


def binding(name: str, assignments: list[ast.stmt], before: ast.AST) -> ast.AST | None:
    """The value last given to `name` by a plain assignment before `before` (`name = v`, or an item of
    `a, name = u, v`); None when it was last bound otherwise or not at all."""
    value = None
    for stmt in assignments:
        if stmt.lineno >= before.lineno:
            break
        for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
            if dotted(target) == name:
                value = stmt.value if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
            elif isinstance(target, ast.Tuple) and any(dotted(e) == name for e in target.elts):
                pairs = isinstance(stmt.value, ast.Tuple) and len(stmt.value.elts) == len(target.elts)
                value = next((v for e, v in zip(target.elts, stmt.value.elts) if dotted(e) == name), None) \
                    if pairs else None
    return value
