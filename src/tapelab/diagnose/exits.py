"""Where a value left TensorFlow: the `.numpy()`, `float()`, `int()` or NumPy call that took it out.

A value that leaves TensorFlow runs no op, so the recording shows only its consequence: the path from
the variable stops at the last op that used it, and the loss is built from a tensor made from host
data. The call itself is read from the source of the functions that ran: the loss function, and the
plain Python functions it calls by name (a helper that ends in `.numpy()`), a few calls deep. A call
counts when it consumes a value made on a line where the last op ran (or sits on that line) and its
result flows into what the function returns; a `print(h.numpy())` beside the loss is not blamed.

Not found: a call through a method or attribute (`self.to_host(h)`), a value carried through a
container, a list or a global, and control flow (every statement counts, in source order).
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Callable, Iterator

from tapelab.diagnose.record import Location, library_file

__all__ = ["Exit", "leaving_call"]

_NP_NAMES = {"np", "numpy"}
_TO_PYTHON = {"float", "int", "complex"}
_DEPTH = 3  # helper functions followed from the loss function


@dataclass(frozen=True)
class Exit:
    """A call that turned a tensor into host data: its source text and the line that ran it."""

    call: str
    where: Location


def leaving_call(fn: Callable, trail: tuple[Location, ...]) -> Exit | None:
    """The call in `fn` (or a helper it calls) that takes a value made at one of `trail`'s lines out of
    TensorFlow and whose result `fn` returns, if the source shows one."""
    return _exit_in(fn, frozenset(), trail, _DEPTH)


def _exit_in(fn: Callable, seeds: frozenset, trail: tuple[Location, ...], depth: int) -> Exit | None:
    parsed = _parse(fn)
    if parsed is None:
        return None
    filename, offset, body, returned = parsed
    lines = {loc.lineno - offset for loc in trail if loc.filename == filename}
    return _Flow(fn, filename, offset, set(seeds), lines, trail, depth).run(body, returned)


def _parse(fn: Callable):
    """(file, line offset, body statements, returned expression of a lambda) of a plain function."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None or library_file(code.co_filename):
        return None
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    offset = max(first, 1) - 1
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__:
            return code.co_filename, offset, node.body, None
        if isinstance(node, ast.Lambda) and fn.__name__ == "<lambda>":
            return code.co_filename, offset, [], node.body
    return None


class _Flow:
    """One function's statements in source order: which names hold a value derived from the seeds
    (the names made where the last op ran, or a helper's parameters), and which hold an exit's result."""

    def __init__(self, fn, filename, offset, seeds, lines, trail, depth) -> None:
        self.fn, self.filename, self.offset = fn, filename, offset
        self.seeds, self.lines, self.trail, self.depth = seeds, lines, trail, depth
        self.deps: dict[str, set[str]] = {}
        self.held: dict[str, Exit] = {}  # name -> the exit whose result it holds

    def run(self, body: list[ast.stmt], returned: ast.expr | None) -> Exit | None:
        if returned is not None:
            return self._flowing(returned)
        for node in _own_nodes(body):
            if isinstance(node, ast.Return) and node.value is not None:
                found = self._flowing(node.value)
                if found:
                    return found
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                self._assign(node)
        return None

    def _assign(self, node) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        used = self._closure(node.value) | (names if isinstance(node, ast.AugAssign) else set())
        found = self._flowing(node.value)
        if self._on_trail(node):
            self.seeds |= names
        for name in names:
            self.deps[name] = used
            if found:
                self.held[name] = found
            else:
                self.held.pop(name, None)

    def _flowing(self, expr: ast.expr) -> Exit | None:
        """The exit inside `expr`, innermost first, or the one a name it reads already holds."""
        for call in _post_order(expr):
            if isinstance(call, ast.Call):
                found = self._exit_of(call)
                if found:
                    return found
        return next((self.held[n] for n in sorted(_names(expr)) if n in self.held), None)

    def _exit_of(self, call: ast.Call) -> Exit | None:
        func = call.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        base = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        args = call.args + [k.value for k in call.keywords]
        if attr == "numpy" and isinstance(func, ast.Attribute):
            args = [func.value]
        elif not (base in _NP_NAMES or (isinstance(func, ast.Name) and attr in _TO_PYTHON)):
            return self._through_helper(call, args) if isinstance(func, ast.Name) else None
        if self._on_trail(call) or any(self._closure(a) & self.seeds for a in args):
            text = ast.unparse(call)
            return Exit(text if len(text) < 60 else text[:57] + "...", Location(self.filename, call.lineno + self.offset))
        return None

    def _through_helper(self, call: ast.Call, args: list[ast.expr]) -> Exit | None:
        """An exit inside a plain function this one calls by name, on the arguments that carry the seeds."""
        helper = self._resolve(call.func.id)
        if helper is None or self.depth <= 0:
            return None
        try:
            bound = inspect.signature(helper).bind_partial(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})
        except (TypeError, ValueError):
            return None
        seeded = frozenset(p for p, a in bound.arguments.items()
                           if isinstance(a, ast.expr) and self._closure(a) & self.seeds)
        if not seeded and not self._on_trail(call):
            return None
        return _exit_in(helper, seeded, self.trail, self.depth - 1)

    def _on_trail(self, node: ast.AST) -> bool:
        """Whether one of the trail's lines (where the last op ran) falls within `node`."""
        return any(node.lineno <= line <= node.end_lineno for line in self.lines)

    def _resolve(self, name: str) -> Callable | None:
        code = self.fn.__code__
        if name in code.co_freevars and self.fn.__closure__:
            try:
                value = self.fn.__closure__[code.co_freevars.index(name)].cell_contents
            except ValueError:  # an empty cell
                return None
        else:
            value = self.fn.__globals__.get(name)
        return value if isinstance(value, types.FunctionType) else None

    def _closure(self, node: ast.AST) -> set[str]:
        found = set()
        for name in _names(node):
            found |= {name} | self.deps.get(name, set())
        return found


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _post_order(node: ast.AST) -> Iterator[ast.AST]:
    """Children before their parent, so `np.maximum(h.numpy(), 0)` yields `h.numpy()` first."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _post_order(child)
    yield node


def _own_nodes(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """The statements of the scope in source order, not descending into nested functions or classes."""
    stack = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(reversed([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]))
