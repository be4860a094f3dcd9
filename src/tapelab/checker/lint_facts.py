"""The checkers' static facts: `tapelab lint` run once on the student's function, beside the runtime facts
(`tapelab.checker.code_facts`), so feedback can name a pitfall that the values alone do not show.

Precision first, in both uses:
- A failed check whose runtime found no cause takes a finding's cause only when the finding is tied to that
  very failure: the `None` the failure reports is what a gradient call the rule cut returns (every returned
  gradient traces to such a call), or the student's code raised at a line that reads such a call's result
  and the error is about a `None`, or it raised at the very line of a Keras 2 idiom and the error names it.
  A cause the runtime established is never replaced.
- A passed check shows every finding as a note in the Correct box; a note never changes the grade.

Lines are those of the file the function was defined in (a notebook cell), which is what a student sees.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from types import CodeType, TracebackType
from typing import Any, Callable

from tapelab.checker.code_facts import CodeFacts, GradientCall
from tapelab.checker.messages import Feedback, Incorrect
from tapelab.lint import Finding, lint_source
from tapelab.lint.tapes import GRADIENT_METHODS

__all__ = ["StaticFacts"]

# Rules whose finding says a gradient call returns None: the path from its sources is cut (at the call), or a
# source is never watched (at that source, inside the call).
_CUTS_PATH = frozenset({"outside-tape", "numpy-in-path", "python-number-in-path", "predict-in-tape",
                        "non-differentiable", "stop-gradient", "unrecorded-gradient"})
_UNWATCHED = "not-watched"
# Keras 2 idioms: the name that the error Keras 3 raises at the flagged line speaks of.
_KERAS2_NAMES = {"keras2-compiled-loss": "compiled_loss", "keras2-reset-states": "reset_states",
                 "keras2-get-gradients": "get_gradients", "keras2-legacy-optimizer": "legacy"}
# How Python and TensorFlow say that a None reached an operation.
_NONE_ERRORS = ("NoneType", "value (None)", "None values")
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class StaticFacts:
    """The lint findings on one function, with what is needed to tie one to a failure."""

    findings: tuple[Finding, ...] = ()
    tree: ast.Module | None = None
    first: int = 1  # the line, in its file, where the function's source starts
    codes: frozenset[CodeType] = field(default_factory=frozenset)  # the function's code and its nested code

    @classmethod
    def of(cls, fn: Callable) -> "StaticFacts":
        """Lint `fn`'s own source (nothing when it cannot be read or parsed, e.g. a builtin)."""
        code = getattr(fn, "__code__", None)
        try:
            source = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            return cls()
        first = code.co_firstlineno if isinstance(code, CodeType) else 1
        padded = "\n" * (first - 1) + source  # findings, and the lines their messages cite, read as in the file
        try:
            tree = ast.parse(padded)
            findings = lint_source(padded, getattr(fn, "__qualname__", "<function>"))
        except Exception:  # student code is arbitrary: a source lint cannot read gives no static facts, never a crash
            return cls()
        return cls(tuple(findings), tree, first, frozenset(_nested_codes(code)) if code else frozenset())

    def explain(self, failure: Feedback, facts: CodeFacts) -> Feedback:
        """`failure` itself, or, when it has no cause and one finding is tied to it, an Incorrect that adds the
        finding and names its cause (see the module docstring for the ties)."""
        if not isinstance(failure, Incorrect) or failure.cause is not None or not self.findings:
            return failure
        error = failure.__context__  # what the student's code raised, when the failure wraps it (Exercise.run)
        found = self._raised(error) if error is not None else self._returned_none(failure, facts)
        if found is None:
            return failure
        explained = Incorrect(f"{failure} {_sentence(found)}", cause=found.code,
                              expected=failure.expected, actual=failure.actual)
        explained.findings = (found,)
        return explained

    # ------------------------------------------------------------------ a None returned

    def _returned_none(self, failure: Feedback, facts: CodeFacts) -> Finding | None:
        """The finding that cuts every gradient the function returns (or the one returned element the failure
        names, as in "`dz_dx` is `None`"), when the failure reports a `None`."""
        text = str(failure)
        if "`None`" not in text or not facts.returns:
            return None
        returned = facts.returns[-1]
        items = list(range(len(returned.elts))) if isinstance(returned, (ast.List, ast.Tuple)) else []
        named = [i for i in items if f"`{ast.unparse(returned.elts[i])}` is `None`" in text]
        calls = [facts.returned_call(i) for i in (named if len(named) == 1 else items)] or [facts.returned_call()]
        cuts = [self._cut(call) for call in calls]
        if not all(cuts):
            return None
        return _one_cause([f for cut in cuts for f in cut])

    def _cut(self, call: GradientCall | None) -> list[Finding]:
        """The findings that make `call` (as `tapelab.checker.code_facts` read it, perhaps narrowed to one source) None."""
        if call is None:
            return []
        line = call.line + self.first - 1  # code_facts counts from the function's first line
        nodes = [n for n in self._gradient_calls()
                 if n.lineno == line and _tape_and_method(n) == (call.tape, call.method)]
        if len(nodes) != 1:
            return []
        return self._cutting(nodes[0], set(call.sources))

    # ------------------------------------------------------------------ an error raised by the student's code

    def _raised(self, error: BaseException) -> Finding | None:
        """The finding tied to `error`, when the student's own code raised it (at a line of the function)."""
        line = self._line_raised(error.__traceback__)
        if line is None:
            return None
        text = str(error)
        idioms = [f for f in self.findings
                  if f.line == line and f.code in _KERAS2_NAMES and _KERAS2_NAMES[f.code] in text]
        if idioms:
            return idioms[0]
        if not any(words in text for words in _NONE_ERRORS):
            return None
        statement = _statement_at(self.tree, line)
        if statement is None:
            return None
        parts = _own_parts(statement)
        read = {n.id for part in parts for n in ast.walk(part)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        tied = []
        for node in self._gradient_calls():
            cut = self._cutting(node, None)
            inside = any(node is n for part in parts for n in ast.walk(part))
            if cut and (inside or read & _downstream(self.tree, node)):
                tied += cut
        return _one_cause(tied)

    def _line_raised(self, tb: TracebackType | None) -> int | None:
        """The line of the innermost frame of the student's function (or a function nested in it) in `tb`."""
        line = None
        while tb is not None:
            if tb.tb_frame.f_code in self.codes:
                line = tb.tb_lineno
            tb = tb.tb_next
        return line

    # ------------------------------------------------------------------ which calls the findings cut

    def _gradient_calls(self) -> list[ast.Call]:
        return [n for n in ast.walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in GRADIENT_METHODS] if self.tree else []

    def _cutting(self, node: ast.Call, sources: set[str] | None) -> list[Finding]:
        """The findings by which `node` returns None for `sources` (all of its sources when None): a rule that
        cuts the call's whole path, or a never-watched finding on each of those sources."""
        at_call = [f for f in self._at(node) if f.code in _CUTS_PATH]
        if at_call:
            return at_call
        wanted = [s for s in _sources(node) if sources is None or ast.unparse(s) in sources]
        unwatched = [next((f for f in self._at(s) if f.code == _UNWATCHED), None) for s in wanted]
        return [f for f in unwatched if f] if wanted and all(unwatched) else []

    def _at(self, node: ast.AST) -> list[Finding]:
        """The findings reported at `node`'s position (a rule reports at the node it flags)."""
        return [f for f in self.findings if (f.line, f.col) == (node.lineno, node.col_offset)]


def _nested_codes(code: CodeType) -> list[CodeType]:
    found = [code]
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found += _nested_codes(const)
    return found


def _tape_and_method(node: ast.Call) -> tuple[str, str]:
    func = node.func
    return (func.value.id if isinstance(func.value, ast.Name) else "", func.attr)


def _sources(node: ast.Call) -> list[ast.AST]:
    args = list(node.args) + [k.value for k in node.keywords if k.arg in ("target", "sources")]
    if len(args) < 2:
        return []
    return list(args[1].elts) if isinstance(args[1], (ast.List, ast.Tuple)) else [args[1]]


def _one_cause(findings: list[Finding]) -> Finding | None:
    """The first finding when they all name one cause; None when there are none, or several causes."""
    return findings[0] if findings and len({f.code for f in findings}) == 1 else None


def _statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement spanning `line` (`ast.walk` goes outside in, so a later one of equal span is
    nested in the earlier)."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or _span(node) <= _span(best):
                best = node
    return best


def _span(node: ast.stmt) -> int:
    return (node.end_lineno or node.lineno) - node.lineno


def _own_parts(statement: ast.stmt) -> list[ast.AST]:
    """The expressions of `statement` itself, not of the statements in its body."""
    parts: list[Any] = []
    for name, value in ast.iter_fields(statement):
        if name not in _BODIES:
            parts += value if isinstance(value, list) else [value]
    return [p for p in parts if isinstance(p, ast.AST)]


def _downstream(tree: ast.Module, call: ast.Call) -> set[str]:
    """Every name bound from `call`'s result, followed through assignments, loops, comprehensions, `with` and
    `append`/`extend`, anywhere in the function (a name, not a scope: more names, never fewer)."""
    bindings: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            bindings += [pair for t in node.targets for pair in _pairs(node.value, t)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            bindings.append((node.value, node.target))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bindings += _pairs(node.iter, node.target, looped=True)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bindings.append((node.context_expr, node.optional_vars))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("append", "extend") and node.args):
            bindings.append((node.args[0], node.func.value))
    names: set[str] = set()

    def carries(expr: ast.AST) -> bool:
        return any(n is call or (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names)
                   for n in ast.walk(expr))

    grown = True
    while grown:
        grown = False
        for value, target in bindings:
            bound = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            if not bound <= names and carries(value):
                names |= bound
                grown = True
    return names


def _pairs(value: ast.AST, target: ast.AST, looped: bool = False) -> list[tuple[ast.AST, ast.AST]]:
    """(value, target) pairs of one binding, element by element where both sides are written out: `a, b = x, y`,
    and in a loop `for v, g in zip(variables, grads)` (`g` is bound from `grads` only) or `enumerate(grads)`."""
    if not isinstance(target, (ast.Tuple, ast.List)):
        return [(value, target)]
    parts: list[ast.AST | None] | None = None
    if isinstance(value, (ast.Tuple, ast.List)) and not looped:
        parts = list(value.elts)
    elif looped and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not value.keywords:
        if value.func.id == "zip":
            parts = list(value.args)
        elif value.func.id == "enumerate" and len(value.args) == 1:
            parts = [None, value.args[0]]  # the index carries nothing
    if parts is None or len(parts) != len(target.elts) or any(isinstance(p, ast.Starred) for p in parts):
        return [(value, target)]
    return [(part, element) for part, element in zip(parts, target.elts) if part is not None]


def _sentence(found: Finding) -> str:
    """What the feedback adds: where lint saw it, the rule, what it saw, and the catalogue's fix."""
    return (f"`tapelab lint` finds why, at line {found.line} ({found.number} `{found.code}`): {found.message}. "
            f"{found.fix}")
