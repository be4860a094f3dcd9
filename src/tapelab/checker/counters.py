"""A call counter tested before the statement that counts the call, read from a function's source.

`if calls % k == 0:` written before `calls += 1` (or `calls = calls + 1`, `calls.assign_add(1)`) in the same block
sees, on each call, the count of the calls before it: a checker that has seen the run act one call early quotes
both lines. Only the order of the two statements is read; whether it matters is for the run to show.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

__all__ = ["late_count"]


def _incremented(statement: ast.stmt) -> str | None:
    """The counter `statement` adds to (`n += 1`, `n = n + 1`, `n.assign_add(1)`), as written, else None."""
    if isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add):
        return ast.unparse(statement.target)
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.value, ast.BinOp)
            and isinstance(statement.value.op, ast.Add)
            and ast.unparse(statement.targets[0]) == ast.unparse(statement.value.left)):
        return ast.unparse(statement.targets[0])
    call = statement.value if isinstance(statement, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "assign_add":
        return ast.unparse(call.func.value)
    return None


def _tested(test: ast.expr) -> set[str]:
    """The names and attributes a condition counts with: divided with `%` or compared (`calls % k == 0`,
    `self.count >= k`), also through `.numpy()`."""
    operands = [n.left for n in ast.walk(test) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]
    operands += [o for n in ast.walk(test) if isinstance(n, ast.Compare) for o in [n.left, *n.comparators]]
    operands = [o.func.value if isinstance(o, ast.Call) and isinstance(o.func, ast.Attribute) and o.func.attr == "numpy"
                else o for o in operands]
    return {ast.unparse(o) for o in operands if isinstance(o, (ast.Name, ast.Attribute))}


def _blocks(tree: ast.AST):
    """Every list of statements in the tree: function bodies, and those of `if`, `for`, `while`, `with`, `try`."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def late_count(fn) -> tuple[str, str] | None:
    """(the condition, the increment) as written, where an `if` tests a counter that a later statement of the same
    block adds to, and no earlier one; None when the source shows no such pair or cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    for block in _blocks(tree):
        for index, statement in enumerate(block):
            if not isinstance(statement, ast.If):
                continue
            tested = _tested(statement.test)
            if {_incremented(s) for s in block[:index]} & tested:
                continue
            later = next((s for s in block[index + 1:] if _incremented(s) in tested), None)
            if later is not None:
                return ast.unparse(statement.test), ast.unparse(later)
    return None
