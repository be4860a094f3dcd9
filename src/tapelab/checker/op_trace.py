"""Where a student's computation departs from the task's: the operations both execute on the same input.

A checker that has the task's forward computation (the formula the target is computed by, in TensorFlow)
passes it to `Exercise.departs_from`, which runs it and the student's function eagerly under an op
callback, keeps the operations that compute (not the variable bookkeeping), and aligns the task's
sequence with the student's (`difflib`). The first operation of the task's formula that the student's
code replaces is the departure: "where the task's formula raises to a power (`Pow`), yours multiplies
(`Mul`)", with the student's line when their function has that operation on exactly one line in the place
the alignment points to. Operations the student runs after the task's formula ends (the backward pass) are
not compared, so a mistake outside the formula (a wrong source) finds nothing here and stays unnamed.

The op callback is TensorFlow's `op_callbacks` hook, which `tf.debugging.experimental.enable_check_numerics`
is built on; it is imported only when a check has already failed.
"""
from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Departure", "executed_ops", "first_departure"]

# Operations that move or read values rather than compute them
_BOOKKEEPING = frozenset({"VarHandleOp", "AssignVariableOp", "ReadVariableOp", "VarIsInitializedOp", "Identity",
                          "Const", "DestroyResourceOp", "AssignAddVariableOp", "AssignSubVariableOp", "Cast",
                          "Shape", "Reshape", "Pack", "ZerosLike", "OnesLike", "Fill", "StopGradient"})
# op type -> (what it does, in words; the Python operator or the tf function that writes it)
_WORDS = {
    "Mul": ("multiplies elementwise", ast.Mult), "Pow": ("raises to a power", ast.Pow),
    "MatMul": ("takes a matrix product", ast.MatMult), "BatchMatMulV2": ("takes a matrix product", ast.MatMult),
    "AddV2": ("adds", ast.Add), "Sub": ("subtracts", ast.Sub), "RealDiv": ("divides", ast.Div),
    "Neg": ("negates", ast.USub), "Square": ("squares", "square"), "Sum": ("sums", "reduce_sum"),
    "Mean": ("averages", "reduce_mean"), "Abs": ("takes an absolute value", "abs"), "Exp": ("exponentiates", "exp"),
    "Log": ("takes a logarithm", "log"), "Sigmoid": ("applies the sigmoid", "sigmoid"),
    "Tanh": ("applies tanh", "tanh"), "Sqrt": ("takes a square root", "sqrt"), "Relu": ("applies relu", "relu"),
    "Round": ("rounds", "round"), "Maximum": ("takes a maximum", "maximum"), "Minimum": ("takes a minimum", "minimum"),
}


@dataclass(frozen=True)
class Departure:
    """The first operation of the task's formula the student's code replaces, and where in their code."""

    expected: str  # the task's op type
    actual: str  # the student's op type in its place ("" when the student's code has none)
    line: tuple[int, str] | None = None  # (line number, text) of the student's operation, when it is known

    def sentence(self) -> str:
        said = _WORDS.get(self.expected, (f"runs `{self.expected}`",))[0]
        where = f" at line {self.line[0]} (`{self.line[1]}`)" if self.line else ""
        does = (f"yours {_WORDS.get(self.actual, (f'runs `{self.actual}`',))[0]} (`{self.actual}`)" if self.actual
                else "yours has no such step")
        return (f"Your computation departs from the task's formula{where}: where the formula {said} "
                f"(`{self.expected}`), {does}, so the value you differentiate is not the task's. Compare that "
                "step with the task's formula.")


def executed_ops(thunk: Callable[[], Any]) -> list[str] | None:
    """The computing operations `thunk` runs eagerly, in order; None if it raises."""
    from tensorflow.python.framework import op_callbacks  # only on a failed check: see the module docstring

    seen: list[str] = []

    def record(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is None and op_type not in _BOOKKEEPING:
            seen.append(op_type)

    op_callbacks.add_op_callback(record)
    try:
        thunk()
    except Exception:
        return None
    finally:
        op_callbacks.remove_op_callback(record)
    return seen


def _evaluation_order(function: ast.AST) -> list[ast.AST]:
    """The function's nodes in the order Python evaluates them (operands before their operator)."""
    order: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            visit(child)
        order.append(node)

    for statement in getattr(function, "body", []):
        visit(statement)
    return order


def _kind(node: ast.AST):
    if isinstance(node, ast.BinOp):
        return type(node.op)
    if isinstance(node, ast.UnaryOp):
        return type(node.op)
    if isinstance(node, ast.Call):
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return None


def first_departure(expected: list[str], actual: list[str], function: ast.AST | None = None,
                    source_lines: list[str] | None = None) -> Departure | None:
    """The first op of `expected` (the task's formula) that `actual` (the student's run) replaces; None when
    the student runs the whole formula in order (whatever comes after it is theirs: the backward pass)."""
    matcher = difflib.SequenceMatcher(a=expected, b=actual, autojunk=False)
    for tag, i1, _, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag in ("replace", "delete") and j1 < len(actual):
            if tag == "delete":
                return Departure(expected[i1], "")
            return Departure(expected[i1], actual[j1], _line_of(actual, j1, function, source_lines))
        return None
    return None


def _line_of(actual: list[str], index: int, function: ast.AST | None, source_lines: list[str] | None):
    """The line of the student's op `actual[index]`: its k-th occurrence is the k-th node that writes it, in
    evaluation order, when the function writes it exactly as often as it ran before the end of the forward
    pass (no loops or helpers in between); else None."""
    kind = _WORDS.get(actual[index], (None, None))[1]
    if function is None or kind is None or not source_lines:
        return None
    written = [n for n in _evaluation_order(function) if _kind(n) == kind]
    k = actual[:index].count(actual[index])
    if k >= len(written) or len(written) > actual.count(actual[index]):
        return None
    number = written[k].lineno
    return (number, source_lines[number - 1].strip()) if 0 < number <= len(source_lines) else None
