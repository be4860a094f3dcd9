"""Rules on how a tape is used: what it watches, how often it is asked, whether it is released, and
variables rebound to tensors between steps."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelab.lint.model import Finding, checker, define, finding
from tapelab.lint.tapes import Call, Scope, Tape, dotted, flag, scopes, statements

__all__ = ["check_tapes"]

_CONSTANT_MAKERS = {"constant", "convert_to_tensor", "ones", "zeros", "fill", "range", "linspace", "ones_like",
                    "zeros_like", "eye"}
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)

define("TPL101", "not-watched", """
**What it does**: flags a `gradient`/`jacobian` source bound to `tf.constant(...)` (or `tf.ones`,
`tf.convert_to_tensor`, ...) that the tape never watches; also a `tf.Variable` source of a tape opened with
`watch_accessed_variables=False` and no `watch`.

**Why is this bad?** A tape watches trainable variables by itself, never constants: the gradient is `None`.

**Example**
```python
x = tf.constant(3.0)
with tf.GradientTape() as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
```

**Use instead**
```python
x = tf.constant(3.0)
with tf.GradientTape() as tape:
    tape.watch(x)
    y = x * x
dy_dx = tape.gradient(y, x)
```
""")

define("TPL110", "tape-used-twice", """
**What it does**: flags a second `gradient`/`jacobian` call on a tape opened without `persistent=True`, or
one call in a loop that runs it on the same tape again.

**Why is this bad?** A non-persistent tape frees its record at the first call: the second raises
`RuntimeError`.

**Example**
```python
with tf.GradientTape() as tape:
    y, z = x * x, x * x * x
dy_dx = tape.gradient(y, x)
dz_dx = tape.gradient(z, x)
```

**Use instead**
```python
with tf.GradientTape(persistent=True) as tape:
    y, z = x * x, x * x * x
dy_dx = tape.gradient(y, x)
dz_dx = tape.gradient(z, x)
del tape
```
""")

define("TPL111", "tape-not-released", """
**What it does**: flags a `persistent=True` tape opened at module level (a script, a notebook) or in a loop
that is never released with `del`.

**Why is this bad?** A persistent tape keeps every intermediate tensor it recorded until it is garbage
collected; at module level that is never, in a loop one tape's worth at a time at best.

**Example**
```python
with tf.GradientTape(persistent=True) as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
```

**Use instead**
```python
with tf.GradientTape(persistent=True) as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
del tape
```
""", level="warning")

define("TPL112", "replaced-by-tensor", """
**What it does**: flags a `tf.Variable` used as a gradient source and then rebound to a tensor
(`w = w - lr * g`, `w -= lr * g`) before a later gradient call, or in the loop that makes it.

**Why is this bad?** The new `w` is a plain tensor, which the tape does not watch: the next gradient is
`None`, and the variable the model reads is never updated.

**Example**
```python
w = tf.Variable(1.0)
for step in range(10):
    with tf.GradientTape() as tape:
        loss = (w * x - y) ** 2
    w = w - 0.1 * tape.gradient(loss, w)
```

**Use instead**
```python
for step in range(10):
    with tf.GradientTape() as tape:
        loss = (w * x - y) ** 2
    w.assign_sub(0.1 * tape.gradient(loss, w))
```
""")


def _parents(body: list[ast.stmt]) -> dict[int, tuple[ast.AST, str]]:
    """id(node) -> (parent, field) for the nodes of one scope."""
    parents: dict[int, tuple[ast.AST, str]] = {}
    stack: list[ast.AST] = list(body)
    for stmt in body:
        parents.setdefault(id(stmt), (None, "body"))
    while stack:
        node = stack.pop()
        for name, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    parents[id(child)] = (node, name)
                    stack.append(child)
    return parents


def _chain(node: ast.AST, parents: dict[int, tuple[ast.AST, str]]) -> list[tuple[ast.AST, str, ast.AST]]:
    """(ancestor, field, child) from the node up to the scope."""
    chain = []
    while id(node) in parents and parents[id(node)][0] is not None:
        parent, name = parents[id(node)]
        chain.append((parent, name, node))
        node = parent
    return chain


def _ends_after(container: ast.AST, name: str, child: ast.AST) -> bool:
    statements = getattr(container, name, None)
    if not isinstance(statements, list) or child not in statements:
        return False
    return any(isinstance(s, _ENDS) for s in statements[statements.index(child):])


def _exclusive(first: ast.AST, second: ast.AST, parents) -> bool:
    """Whether `first` running rules out `second` (other branch, or a return/raise/break after it)."""
    up_first, up_second = _chain(first, parents), _chain(second, parents)
    second_at = {id(a): name for a, name, _ in up_second}
    for ancestor, name, child in up_first:
        if _ends_after(ancestor, name, child):
            return True
        if id(ancestor) in second_at:
            other = second_at[id(ancestor)]
            branching = isinstance(ancestor, (ast.If, ast.Try, ast.Match, ast.match_case, ast.IfExp))
            return branching and other != name
    return False


def _in_loop_without(node: ast.AST, binding: ast.AST, parents) -> bool:
    """Whether `node` repeats in a loop that does not also re-create the tape (`binding`)."""
    for ancestor, name, child in _chain(node, parents):
        if isinstance(ancestor, _LOOPS) and name == "body":
            if any(ancestor is a for a, _, _ in _chain(binding, parents)):
                return False
            return not _ends_after(ancestor, name, child) and not any(
                _ends_after(a, n, c) for a, n, c in _chain(node, parents) if a is not ancestor and _contains(ancestor, a))
    return False


def _contains(outer: ast.AST, node: ast.AST) -> bool:
    return outer.lineno <= node.lineno and node.end_lineno <= outer.end_lineno


def _twice(scope: Scope, tape: Tape, parents) -> Iterator[Finding]:
    calls = sorted(tape.gradients, key=lambda c: (c.lineno, c.col_offset))
    for index, call in enumerate(calls):
        earlier = [c for c in calls[:index] if not _exclusive(c, call, parents)]
        repeated = _in_loop_without(call, tape.bound, parents)
        if earlier or repeated:
            why = f"after line {earlier[0].lineno}" if earlier else "again on each pass of its loop"
            yield finding("tape-used-twice", call, f"`{tape.name}` is not persistent, so this `{call.func.attr}` "
                          f"call {why} raises RuntimeError")
            return


def _released(scope: Scope, tape: Tape, within: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Delete) and any(dotted(t) == tape.name for t in n.targets)
               for stmt in within for n in ast.walk(stmt))


def _not_released(scope: Scope, tape: Tape, parents) -> Iterator[Finding]:
    loop = next((a for a, name, _ in _chain(tape.bound, parents) if isinstance(a, _LOOPS) and name == "body"), None)
    if loop is not None:
        held = not _released(scope, tape, loop.body)
    else:
        held = isinstance(scope.node, ast.Module) and not _released(scope, tape, scope.body)
    if held:
        where = "in a loop" if loop is not None else "at module level"
        yield finding("tape-not-released", tape.bound, f"persistent tape `{tape.name}` opened {where} is never "
                      "released with `del`, so it keeps every tensor it recorded")


def _assignments(scope: Scope) -> list[ast.stmt]:
    return [s for s in statements(scope.body) if isinstance(s, (ast.Assign, ast.AugAssign))]


def _origin(value: ast.AST) -> str | None:
    if isinstance(value, ast.Call):
        func = dotted(value.func) or ""
        parts = func.split(".")
        if parts[0] == "tf" and (parts[-1] in _CONSTANT_MAKERS and len(parts) == 2 or parts[1:2] == ["random"]):
            return "constant"
        if func in ("tf.Variable", "tf.compat.v1.Variable"):
            return "variable"
    return None


def _watched(tape: Tape, name: str, before: ast.AST) -> bool:
    """Whether the tape may watch `name` before `before` (any watch we cannot read counts as watching)."""
    for watch in tape.watches:
        if watch.lineno > before.lineno:
            continue
        for arg in watch.args:
            names = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            if any(not isinstance(n, ast.Name) or n.id == name for n in names):
                return True
    return False


def _unwatched(scope: Scope, call: Call, assignments: list[ast.stmt]) -> Iterator[Finding]:
    auto = not (isinstance(call.tape.bound, ast.With) and any(
        flag(i.context_expr, "watch_accessed_variables") is False for i in call.tape.bound.items
        if isinstance(i.context_expr, ast.Call)))
    for source in call.sources:
        if not isinstance(source, ast.Name) or _watched(call.tape, source.id, call.node):
            continue
        bindings = [a for a in assignments if a.lineno < call.node.lineno and any(
            dotted(t) == source.id for t in (a.targets if isinstance(a, ast.Assign) else [a.target]))]
        if not bindings or not isinstance(bindings[-1], ast.Assign) or len(bindings[-1].targets) != 1:
            continue
        origin = _origin(bindings[-1].value)
        if origin == "constant" or (origin == "variable" and not auto):
            made = ast.unparse(bindings[-1].value.func)
            yield finding("not-watched", source, f"`{source.id}` is made by `{made}` (line {bindings[-1].lineno}) "
                          f"and `{call.tape.name}` never watches it, so the gradient is None")


def _rebound(scope: Scope, call: Call, assignments: list[ast.stmt], parents) -> Iterator[Finding]:
    for source in call.sources:
        if not isinstance(source, ast.Name) or _watched(call.tape, source.id, scope.body[-1]):
            continue
        made = [a for a in assignments if isinstance(a, ast.Assign) and len(a.targets) == 1
                and dotted(a.targets[0]) == source.id and _origin(a.value) == "variable"]
        if not made:
            continue
        loops = [a for a, name, _ in _chain(call.node, parents) if isinstance(a, _LOOPS)]
        for stmt in assignments:
            target = stmt.target if isinstance(stmt, ast.AugAssign) else (stmt.targets[0] if len(stmt.targets) == 1
                                                                          else None)
            reads_itself = isinstance(stmt, ast.AugAssign) or (
                isinstance(stmt.value, ast.BinOp) and any(dotted(n) == source.id for n in ast.walk(stmt.value)))
            if dotted(target) != source.id or not reads_itself or stmt.lineno <= made[0].lineno:
                continue
            remade = any(stmt.lineno < m.lineno < call.node.lineno for m in made)
            if (stmt.lineno < call.node.lineno and not remade) or any(_contains(loop, stmt) for loop in loops):
                yield finding("replaced-by-tensor", stmt, f"`{source.id}` is a `tf.Variable` rebound here to a "
                              f"tensor, which `{call.tape.name}` does not watch: use `{source.id}.assign_sub(...)`")
                return


@checker("GradientTape")
def check_tapes(tree: ast.Module) -> Iterator[Finding]:
    """Watching, repeated calls, release and rebinding, for every tape of every scope."""
    for scope in scopes(tree):
        if not scope.tapes:
            continue
        parents = _parents(scope.body)
        assignments = _assignments(scope)
        for tape in scope.tapes:
            if tape.persistent is False:
                yield from _twice(scope, tape, parents)
            elif tape.persistent is True:
                yield from _not_released(scope, tape, parents)
        seen: set[int] = set()
        for call in scope.gradient_calls():
            yield from _unwatched(scope, call, assignments)
            for found in _rebound(scope, call, assignments, parents):
                if found.line not in seen:
                    seen.add(found.line)
                    yield found
