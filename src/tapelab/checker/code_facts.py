"""Facts about a student's function read from its source, used to name the likely mistake.

The facts describe each `with tf.GradientTape(...) as NAME` block (flags, nesting, lines), the
`NAME.watch(...)` calls, every `gradient` / `jacobian` call with its target and sources, each
assignment with the names it reads and whether NumPy produced it, and what the function returns.
Everything is best effort: a function without retrievable source yields empty facts (found=False),
and the checkers then assert no cause from the code at all.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from collections import Counter
from dataclasses import dataclass, field, replace

__all__ = ["CodeFacts", "Tape", "GradientCall", "Assignment", "Loop"]

_GRADIENT_METHODS = {"gradient", "jacobian", "batch_jacobian"}
_NUMPY_MODULES = {"np", "numpy"}
_CONSTANT_MAKERS = {"constant", "convert_to_tensor"}
_MODULES = {"tf", "np", "numpy", "keras", "math"}  # names that carry no data from the student's values


@dataclass(frozen=True)
class Tape:
    """One `with tf.GradientTape(...) as name:` block: its flags, lines, enclosing tape and watch calls."""

    name: str
    persistent: bool
    watch_accessed: bool
    start: int
    end: int
    parent: str | None
    watches: tuple[tuple[str, int], ...] = ()  # (watched expression, line)

    def contains(self, line: int) -> bool:
        """Whether `line` lies inside this tape's `with` block."""
        return self.start < line <= self.end

    def watch_line(self, expr: str) -> int | None:
        """The line of the first `name.watch(...)` whose argument names `expr`, if any."""
        return next((line for watched, line in self.watches if expr in _split_watched(watched)), None)


@dataclass(frozen=True)
class GradientCall:
    """`tape.gradient(target, sources)` (or `jacobian`, `batch_jacobian`) as written by the student."""

    tape: str
    method: str
    target: str
    sources: tuple[str, ...]
    line: int
    result: str | None = None  # the name the call's value is assigned to, if a plain name

    @property
    def source(self) -> str:
        """The one source when the call has one (or was narrowed to one), else all of them, comma-separated."""
        return ", ".join(self.sources)

    def text(self) -> str:
        """The call as the student wrote it, e.g. `tape.gradient(z, y)`."""
        sources = self.sources[0] if len(self.sources) == 1 else f"[{', '.join(self.sources)}]"
        return f"{self.tape}.{self.method}({self.target}, {sources})"


@dataclass(frozen=True)
class Assignment:
    """`names = value` at `line`: the names the value reads, and what produced it."""

    names: tuple[str, ...]
    reads: frozenset[str]
    line: int
    value: str
    made_by: str = ""  # "numpy" (a NumPy call, `.numpy()`, float()), "constant", "variable", "gradient" or ""
    call: str = ""  # the producing call's text when made_by is set


@dataclass(frozen=True)
class Loop:
    """`for target in iterable:` spanning lines start..end."""

    target: str
    iterable: str
    start: int
    end: int

    def contains(self, line: int) -> bool:
        return self.start < line <= self.end


def _call_name(func: ast.AST) -> tuple[str, str]:
    """(base, attribute) of a called expression: `np.mean` -> ("np", "mean"), `float` -> ("", "float")."""
    if isinstance(func, ast.Attribute):
        base = func.value.id if isinstance(func.value, ast.Name) else ""
        return base, func.attr
    return "", getattr(func, "id", "")


def _split_watched(expr: str) -> set[str]:
    """`[x, y]` or `(x, y)` -> {"x", "y"}; a single expression -> {expr}."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return {expr}
    if isinstance(node, (ast.List, ast.Tuple)):
        return {ast.unparse(e) for e in node.elts}
    return {expr}


def _producer(value: ast.AST) -> tuple[str, str]:
    """What made an assigned value: a NumPy call, a constant, a variable, a gradient call (else "")."""
    for node in ast.walk(value):
        if not isinstance(node, ast.Call):
            continue
        base, attr = _call_name(node.func)
        text = ast.unparse(node)
        if base in _NUMPY_MODULES or attr == "numpy" or (base == "" and attr == "float"):
            return "numpy", text
    if isinstance(value, ast.Call):
        base, attr = _call_name(value.func)
        if attr in _GRADIENT_METHODS:
            return "gradient", ast.unparse(value)
        if attr in _CONSTANT_MAKERS:
            return "constant", ast.unparse(value)
        if attr == "Variable":
            return "variable", ast.unparse(value)
    return "", ""


def _loaded(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def _target_names(target: ast.AST) -> tuple[str, ...]:
    return tuple(n.id for n in ast.walk(target) if isinstance(n, ast.Name))


@dataclass
class CodeFacts:
    """What a function's source does, as far as the tape is concerned."""

    found: bool = False
    calls: Counter = field(default_factory=Counter)
    inside_tape: set[str] = field(default_factory=set)
    outside_tape: set[str] = field(default_factory=set)
    params: tuple[str, ...] = ()
    tape_blocks: list[Tape] = field(default_factory=list)
    gradient_calls: list[GradientCall] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    appended: dict[str, list[str]] = field(default_factory=dict)  # list name -> expressions appended to it
    returns: list[ast.AST] = field(default_factory=list)
    deleted: dict[str, int] = field(default_factory=dict)  # name -> line of its `del`
    positional: Counter = field(default_factory=Counter)  # calls of each name made with positional arguments
    keywords: Counter = field(default_factory=Counter)  # keyword arguments as written, e.g. "training=True"
    loops: list[Loop] = field(default_factory=list)
    list_added: list[tuple[str, int]] = field(default_factory=list)  # (`x.losses`-like list added with `+`, line)
    first_line: int = 1  # the file's lines the source spans: the facts' line L is the file's L + first_line - 1
    last_line: int = 0

    @classmethod
    def of(cls, fn) -> "CodeFacts":
        """Facts for `fn`; empty (found=False) when its source cannot be read."""
        try:
            lines, first = inspect.getsourcelines(fn)
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except (OSError, TypeError, SyntaxError, IndentationError):
            return cls()
        facts = cls(found=True, first_line=max(first, 1), last_line=max(first, 1) + len(lines) - 1)
        function = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if function is not None:
            facts.params = tuple(a.arg for a in function.args.posonlyargs + function.args.args)
        facts._visit(tree, [])
        return facts

    # ------------------------------------------------------------------ reading the source

    def _visit(self, node: ast.AST, open_tapes: list[str]) -> None:
        if isinstance(node, ast.With):
            opened = [self._open_tape(item, node, open_tapes) for item in node.items]
            opened = [name for name in opened if name]
            for child in node.body:
                self._visit(child, open_tapes + opened)
            return
        if isinstance(node, ast.Call):
            self._note_call(node)
        if isinstance(node, ast.Delete):
            self.deleted.update({t.id: node.lineno for t in node.targets if isinstance(t, ast.Name)})
        if isinstance(node, ast.Return) and node.value is not None:
            self.returns.append(node.value)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.loops.append(Loop(ast.unparse(node.target), ast.unparse(node.iter), node.lineno,
                                   node.end_lineno or node.lineno))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):  # a loop on its own lines
            self.loops += [Loop(ast.unparse(g.target), ast.unparse(g.iter), node.lineno - 1,
                                node.end_lineno or node.lineno) for g in node.generators]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            self.list_added += [(ast.unparse(side), node.lineno) for side in (node.left, node.right)
                                if isinstance(side, ast.Attribute) and side.attr == "losses"]
        for child in ast.iter_child_nodes(node):
            self._visit(child, open_tapes)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and getattr(node, "value", None):
            self._note_assignment(node, open_tapes)  # after its value's calls, so a gradient call is known

    def _open_tape(self, item: ast.withitem, node: ast.With, open_tapes: list[str]) -> str | None:
        call = item.context_expr
        if not (isinstance(call, ast.Call) and "GradientTape" in ast.unparse(call.func)):
            return None
        flags = {k.arg: ast.unparse(k.value) for k in call.keywords}
        name = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else f"<tape {len(self.tape_blocks)}>"
        self.calls["GradientTape"] += 1
        self.tape_blocks.append(Tape(name, flags.get("persistent") == "True",
                                     flags.get("watch_accessed_variables") != "False",
                                     node.lineno, node.end_lineno or node.lineno,
                                     open_tapes[-1] if open_tapes else None))
        return name

    def _note_call(self, node: ast.Call) -> None:
        base, attr = _call_name(node.func)
        self.calls[attr] += 1
        if node.args:
            self.positional[attr] += 1
        self.keywords.update(f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords if k.arg)
        if attr == "watch" and base and node.args:
            self._add_watch(base, ast.unparse(node.args[0]), node.lineno)
        if attr == "append" and base and node.args:
            self.appended.setdefault(base, []).append(ast.unparse(node.args[0]))
        if attr in _GRADIENT_METHODS and base and len(node.args) + len(node.keywords) >= 2:
            args = list(node.args) + [k.value for k in node.keywords]
            sources = args[1]
            parts = sources.elts if isinstance(sources, (ast.List, ast.Tuple)) else [sources]
            self.gradient_calls.append(GradientCall(base, attr, ast.unparse(args[0]),
                                                    tuple(ast.unparse(p) for p in parts), node.lineno))

    def _add_watch(self, tape: str, expr: str, line: int) -> None:
        for i, block in enumerate(self.tape_blocks):
            if block.name == tape:
                self.tape_blocks[i] = replace(block, watches=block.watches + ((expr, line),))

    def _note_assignment(self, node: ast.AST, open_tapes: list[str]) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = tuple(n for t in targets for n in _target_names(t))
        reads = _loaded(node.value) | (frozenset(names) if isinstance(node, ast.AugAssign) else frozenset())
        made_by, call = _producer(node.value)
        self.assignments.append(Assignment(names, reads, node.lineno, ast.unparse(node.value), made_by, call))
        (self.inside_tape if open_tapes else self.outside_tape).update(names)
        if made_by == "gradient" and len(names) == 1 and self.gradient_calls:
            last = self.gradient_calls[-1]
            if last.line == node.lineno:
                self.gradient_calls[-1] = replace(last, result=names[0])

    # ------------------------------------------------------------------ questions checkers ask

    @property
    def tapes(self) -> int:
        """How many `with tf.GradientTape()` blocks the function opens."""
        return len(self.tape_blocks)

    def tape(self, name: str) -> Tape | None:
        """The tape block bound to `name`, if the function opens one."""
        return next((t for t in self.tape_blocks if t.name == name), None)

    def nested(self) -> bool:
        """Whether one tape block is opened inside another."""
        return any(t.parent for t in self.tape_blocks)

    def inside_own_block(self) -> list[GradientCall]:
        """The gradient calls made inside the `with` block of the very tape they ask."""
        return [c for c in self.gradient_calls if self.tape(c.tape) and self.tape(c.tape).contains(c.line)]

    def computed_outside_tape(self, name: str) -> bool:
        """Whether `name` is assigned only outside every `with tf.GradientTape()` block."""
        return self.found and self.tapes > 0 and name in self.outside_tape and name not in self.inside_tape

    def calls_to(self, name: str) -> int:
        """How many calls of a function or method called `name` the source makes."""
        return self.calls.get(name, 0)

    def assignments_of(self, name: str, before: int | None = None) -> list[Assignment]:
        """Every assignment to `name` (before line `before`, if given), in source order."""
        return [a for a in self.assignments if name in a.names and (before is None or a.line < before)]

    def upstream(self, expr: str) -> set[str]:
        """Every name `expr` is computed from, following assignments in the function (the names included)."""
        seen: set[str] = set()
        todo = set(_names_in(expr))
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for a in self.assignments_of(name):
                todo |= a.reads - seen
        return seen - _MODULES

    def loop_over(self, pattern: str) -> Loop | None:
        """The first `for` loop whose iterable, as written, contains `pattern` (e.g. "range(epochs)")."""
        return next((loop for loop in self.loops if pattern in loop.iterable.replace(" ", "")), None)

    def numpy_copies_changed(self) -> list[Assignment]:
        """Assignments `name = v.numpy()` whose `name` is then changed in place (`name -= ...`) and never given back
        to a variable by `assign`: the change stays in the NumPy copy."""
        copies = [a for a in self.assignments if a.made_by == "numpy" and ".numpy()" in a.value and len(a.names) == 1]
        changed = [a for a in copies if any(b.line > a.line and b.names == a.names and a.names[0] in b.reads
                                            and b is not a for b in self.assignments)]
        return [a for a in changed if not any(self.calls_to(m) for m in ("assign", "assign_sub", "assign_add"))]

    def iterators_made_once(self) -> list[tuple[Assignment, Loop]]:
        """`it = iter(...)` made outside a loop whose body loops over `it` again: the iterator is used up by the
        first pass, so later passes get nothing."""
        found = []
        for a in self.assignments:
            if len(a.names) != 1 or not a.value.startswith("iter("):
                continue
            outer = next((o for o in self.loops if o.start > a.line and any(
                i.iterable == a.names[0] and o.contains(i.start) for i in self.loops)), None)
            if outer is not None:
                found.append((a, outer))
        return found

    def returned_call(self, item: int | None = None) -> GradientCall | None:
        """The gradient call behind the returned value (or its `item`-th element), narrowed to one source.

        Follows `return tape.gradient(...)`, `return [dy_dx, dz_dx]`, `return tf.abs(g)`, names assigned
        from a call (also by unpacking), a list filled by `append`, and `grads[i]`; None when the trail ends.
        """
        if not self.returns:
            return None
        node = self.returns[-1]
        if item is not None and isinstance(node, (ast.List, ast.Tuple)):
            if item >= len(node.elts):
                return None
            node, item = node.elts[item], None
        return self._trace(node, item, depth=0)

    def _trace(self, node: ast.AST, item: int | None, depth: int) -> GradientCall | None:
        if depth > 8:
            return None
        if isinstance(node, ast.Call):
            base, attr = _call_name(node.func)
            if attr in _GRADIENT_METHODS:
                return _narrow(self._written_as(node), item)
            return self._trace(node.args[0], item, depth + 1) if len(node.args) == 1 else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            return self._trace(node.value, node.slice.value, depth + 1)
        if isinstance(node, ast.Name):
            if node.id in self.appended:
                exprs = self.appended[node.id]
                return self._trace(ast.parse(exprs[min(item or 0, len(exprs) - 1)], mode="eval").body, None, depth + 1)
            for a in reversed(self.assignments_of(node.id)):
                value = ast.parse(a.value, mode="eval").body
                position = a.names.index(node.id) if len(a.names) > 1 else item
                return self._trace(value, position, depth + 1)
        return None


    def _written_as(self, node: ast.Call) -> GradientCall | None:
        """The recorded gradient call written as `node` (matched by text: `node` may be re-parsed)."""
        return next((c for c in reversed(self.gradient_calls) if _same_call(c, node)), None)


def _same_call(call: GradientCall, node: ast.Call) -> bool:
    args = list(node.args) + [k.value for k in node.keywords]
    if len(args) < 2:
        return False
    parts = args[1].elts if isinstance(args[1], (ast.List, ast.Tuple)) else [args[1]]
    return (_call_name(node.func) == (call.tape, call.method) and ast.unparse(args[0]) == call.target
            and tuple(ast.unparse(p) for p in parts) == call.sources)


def _names_in(expr: str) -> set[str]:
    try:
        return set(_loaded(ast.parse(expr, mode="eval")))
    except SyntaxError:
        return set()


def _narrow(call: GradientCall | None, item: int | None) -> GradientCall | None:
    """`call` with only its `item`-th source (all of them when item is None or out of range)."""
    if call is None or item is None or len(call.sources) <= 1 or item >= len(call.sources):
        return call
    return replace(call, sources=(call.sources[item],))
