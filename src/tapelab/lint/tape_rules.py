"""Rules on how a tape is used: what it watches, how often it is asked, whether it is released, and
variables rebound to tensors between steps."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelab.lint.bindings import assignments_of, binding, origin, tensor_made
from tapelab.lint.flow import OWNED
from tapelab.lint.model import Finding, checker, define, finding
from tapelab.lint.tapes import Call, Scope, Tape, dotted, flag, scopes

__all__ = ["check_tapes"]

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)

define("TPL101", "not-watched", """
**What it does**: flags a `gradient`/`jacobian` source bound to `tf.constant(...)` (or `tf.ones`,
`tf.convert_to_tensor`, ...) or to `tf.Variable(..., trainable=False)` that the tape never watches; with
`watch_accessed_variables=False`, also an unwatched `tf.Variable` or `model.trainable_variables`. Sources
given as a list, tuple or dict, nested or bound to a name first (`params = {"w": w}`), are read item by item.

**Why is this bad?** A tape watches trainable variables by itself, never constants or non-trainable
variables: the gradient is `None`.

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
**What it does**: flags a `persistent=True` tape that is stored where it outlives its name (appended to a
list, put in a dict or an attribute), and one opened at module level (a script, a notebook) that is neither
deleted nor rebound before the module trains or differentiates again (a later loop or tape). A tape in a
function goes when the function returns, one rebound on each pass of a loop goes on the next pass, and a
script's last tape goes when the script ends: none of these is flagged.

**Why is this bad?** A persistent tape keeps the tensors its recorded operations' gradients need for as long
as the tape object lives: a stored tape for as long as its container, a notebook's for the rest of the session.

**Example**
```python
with tf.GradientTape(persistent=True) as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
for step in range(1000):
    train_step()
```

**Use instead**
```python
with tf.GradientTape(persistent=True) as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
del tape
for step in range(1000):
    train_step()
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


_STORES = {"append", "extend", "insert", "add", "setdefault", "put", "update"}


def _holds(node: ast.AST, name: str) -> bool:
    """Whether expression `node` is the name, or a list/tuple/dict display holding it."""
    if isinstance(node, ast.Name):
        return node.id == name
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return any(_holds(e, name) for e in node.elts)
    return isinstance(node, ast.Dict) and any(v is not None and _holds(v, name) for v in node.values)


def _stored(scope: Scope, tape: Tape) -> ast.AST | None:
    """A statement that puts the tape where it outlives its name: into a container (`tapes.append(tape)`,
    `kept[k] = tape`) or an attribute (`self.tape = tape`)."""
    for stmt in scope.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STORES \
                    and any(_holds(a, tape.name) for a in [*node.args, *(k.value for k in node.keywords)]):
                return node
            if isinstance(node, ast.Assign) and _holds(node.value, tape.name) and any(
                    isinstance(t, (ast.Subscript, ast.Attribute)) for t in node.targets):
                return node
    return None


def _let_go(scope: Scope, tape: Tape) -> bool:
    """Whether the module lets the tape go after it was opened: `del tape`, or the name bound again (another
    tape, `tape = None`); a loop that opens it anew lets each pass's tape go, but not the last one's."""
    for node in (n for stmt in scope.body for n in ast.walk(stmt)):
        if getattr(node, "lineno", 0) <= tape.bound.lineno or node is tape.bound:
            continue
        if isinstance(node, ast.Delete) and any(dotted(t) == tape.name for t in node.targets):
            return True
        targets = node.targets if isinstance(node, ast.Assign) else (
            [i.optional_vars for i in node.items] if isinstance(node, (ast.With, ast.AsyncWith)) else [])
        if any(dotted(t) == tape.name for t in targets if t is not None):
            return True
    return False


def _work_after(scope: Scope, tape: Tape) -> ast.stmt | None:
    """The first module-level statement after the tape's last use that trains or differentiates again (a
    loop, or another tape): what runs while the unreleased tape still holds its record."""
    last = max([c.end_lineno for c in tape.gradients] + [b.end_lineno for b in tape.blocks] + [tape.bound.end_lineno])
    for stmt in scope.body:
        if stmt.lineno > last and (isinstance(stmt, _LOOPS) or any(
                isinstance(n, ast.Call) and (dotted(n.func) or "").endswith("GradientTape") for n in ast.walk(stmt))):
            return stmt
    return None


def _not_released(scope: Scope, tape: Tape) -> Iterator[Finding]:
    """A persistent tape stored where it outlives its name, or one a module keeps while it goes on training.
    A function's tapes go when it returns and a tape rebound in a loop goes on the next pass, so neither is
    flagged; nor is a script's last tape, which goes when the script ends."""
    kept = _stored(scope, tape)
    if kept is not None:
        yield finding("tape-not-released", kept, f"persistent tape `{tape.name}` is stored by `{ast.unparse(kept)}`"
                      ", so it and every tensor it recorded stay in memory as long as that does")
        return
    work = _work_after(scope, tape) if isinstance(scope.node, ast.Module) and not _let_go(scope, tape) else None
    if work is not None:
        yield finding("tape-not-released", tape.bound, f"persistent tape `{tape.name}` is never released, so every "
                      f"tensor it recorded stays in memory while the rest of the module runs (from line "
                      f"{work.lineno}); `del {tape.name}` once its gradients are taken")


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


def _leaves(source: ast.AST, assignments: list[ast.stmt], before: ast.AST, depth: int = 0) -> Iterator[ast.AST]:
    """The sources a `gradient` call really differentiates by: the items of a list, tuple or dict given as
    sources, nested or bound to a name first (`params = {"w": w}`), down to names and attributes."""
    items = source.elts if isinstance(source, (ast.List, ast.Tuple)) else (
        [v for v in source.values if v is not None] if isinstance(source, ast.Dict) else None)
    if items is not None and depth < 4:
        for item in items:
            yield from _leaves(item, assignments, before, depth + 1)
        return
    bound = binding(source.id, assignments, before) if isinstance(source, ast.Name) and depth < 4 else None
    if isinstance(bound, (ast.List, ast.Tuple, ast.Dict)):
        yield from _leaves(bound, assignments, bound, depth + 1)
    else:
        yield source


def _unwatched(scope: Scope, call: Call, assignments: list[ast.stmt]) -> Iterator[Finding]:
    auto = not (isinstance(call.tape.bound, ast.With) and any(
        flag(i.context_expr, "watch_accessed_variables") is False for i in call.tape.bound.items
        if isinstance(i.context_expr, ast.Call)))
    for given in call.sources:
        for source in _leaves(given, assignments, call.node):
            name = dotted(source)
            if name is None or _watched(call.tape, name.split(".")[0], call.node):
                continue
            at = source if _contains(call.node, source) else given  # an item of `params` is reported at `params`
            if not auto and name.endswith(OWNED):
                yield finding("not-watched", at, f"`{call.tape.name}` is opened with "
                              f"`watch_accessed_variables=False` and never watches `{name}`, so every gradient "
                              "is None")
                continue
            bound = binding(name, assignments, call.node) if isinstance(source, ast.Name) else None
            kind = origin(bound) if bound is not None else None
            if kind is None and bound is not None and not call.tape.records(bound):
                kind = tensor_made(bound, assignments)
            if kind in ("constant", "frozen", "tensor") or (kind == "variable" and not auto):
                made = ast.unparse(bound.func if isinstance(bound, ast.Call) else bound) + (
                    "(..., trainable=False)" if kind == "frozen" else "")
                why = ", which a tape does not watch by itself," if kind in ("frozen", "tensor") else ""
                yield finding("not-watched", at, f"`{name}` is made by `{made}` (line {bound.lineno}){why} and "
                              f"`{call.tape.name}` never watches it, so the gradient is None")


def _rebound(scope: Scope, call: Call, assignments: list[ast.stmt], parents) -> Iterator[Finding]:
    for source in call.sources:
        if not isinstance(source, ast.Name) or _watched(call.tape, source.id, scope.body[-1]):
            continue
        made = [a for a in assignments if isinstance(a, ast.Assign) and len(a.targets) == 1
                and dotted(a.targets[0]) == source.id and origin(a.value) in ("variable", "frozen")]
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
        assignments = assignments_of(scope)
        for tape in scope.tapes:
            if tape.persistent is False:
                yield from _twice(scope, tape, parents)
            elif tape.persistent is True:
                yield from _not_released(scope, tape)
        seen: set[int] = set()
        for call in scope.gradient_calls():
            yield from _unwatched(scope, call, assignments)
            for found in _rebound(scope, call, assignments, parents):
                if found.line not in seen:
                    seen.add(found.line)
                    yield found
