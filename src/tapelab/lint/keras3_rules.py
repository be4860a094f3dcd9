"""Keras 2 calls that Keras 3 removed outright: watching Keras variables, `model.reset_states()`, and the
backend's `get_value`/`set_value`. Like the other TPL2 rules they apply to code written against Keras 3's
public API (see `keras_rules`), and only to objects the module shows to be Keras ones."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelab.lint.keras_rules import imported_names, keras3_client
from tapelab.lint.model import Edit, Finding, checker, define, finding
from tapelab.lint.tapes import dotted, flag, nodes, scopes

__all__ = ["check_keras3"]

define("TPL208", "keras3-watch-variables", """
**What it does**: flags `tape.watch(model.trainable_variables)` (or `.trainable_weights`, `.variables`,
`.weights`) in code written against Keras 3, where the owner is a Keras model: one the module builds, or
a name that says so (`model`, `self.generator_model`), and the module does not work with `tf.Module`s
(a distribution's or a `tf.Module`'s variables are `tf.Variable`s, which `watch` takes). `--fix` removes the
`watch` when the tape watches trainable variables by itself (it is not opened with
`watch_accessed_variables=False`).

**Why is this bad?** Keras 3 variables are not `tf.Variable`s: `watch` raises `ValueError: Passed in object
... of type 'Variable', not tf.Tensor or tf.Variable`. A tape already watches every trainable variable it
reads, so the line was never needed.

**Example**
```python
with tf.GradientTape() as tape:
    tape.watch(model.trainable_variables)
    loss = loss_fn(y, model(x))
```

**Use instead**
```python
with tf.GradientTape() as tape:
    loss = loss_fn(y, model(x))
```
""")

define("TPL209", "keras2-model-reset-states", """
**What it does**: flags `model.reset_states()` on a model the module builds (`keras.Model(...)`,
`keras.Sequential(...)`, an application, or a function of the module that returns one).

**Why is this bad?** Keras 3 models have no `reset_states`: the call raises `AttributeError`. Stateful RNN
layers keep it, so they are not flagged.

**Example**
```python
model = keras.Sequential([keras.Input(batch_shape=(1, None)), keras.layers.LSTM(8, stateful=True)])
model.reset_states()
```

**Use instead**
```python
for layer in model.layers:
    if hasattr(layer, "reset_states"):
        layer.reset_states()
```
""")

define("TPL210", "keras2-backend-value", """
**What it does**: flags `get_value(...)` and `set_value(...)` called on Keras 3's backend module
(`keras.backend`, or a name imported as it, such as `from keras import backend as K`). TensorFlow's
`tf.keras.backend` still has both in TF 2.21, so it is not flagged.

**Why is this bad?** Keras 3's backend module has neither: the call raises `AttributeError`.

**Example**
```python
from keras import backend as K
lr = K.get_value(model.optimizer.learning_rate)
K.set_value(model.optimizer.learning_rate, lr / 10)
```

**Use instead**
```python
lr = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
model.optimizer.learning_rate.assign(lr / 10)
```
""")

_VARIABLES = ("trainable_variables", "trainable_weights", "variables", "weights")
_MODELS = {"Model", "Sequential", "Functional"}


def _builds_model(call: ast.AST, builders: set[str]) -> bool:
    parts = (dotted(call.func) or "").split(".") if isinstance(call, ast.Call) else []
    return bool(parts) and (parts[-1] in _MODELS or "applications" in parts[:-1] or dotted(call.func) in builders)


def _models(tree: ast.Module) -> set[str]:
    """Names the module binds to a Keras model, directly or through one of its functions that returns one."""
    builders = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and any(
        isinstance(r, ast.Return) and _builds_model(r.value, set()) for r in ast.walk(n))}
    return {d for n in nodes(tree) if isinstance(n, ast.Assign) and _builds_model(n.value, builders)
            for d in map(dotted, n.targets) if d}


def _removal(stmt: ast.stmt, body: list[ast.stmt]) -> Edit | None:
    """The edit deleting `stmt` (its own lines), or None when it is alone in its block or shares a line with
    another statement."""
    if len(body) < 2 or any(s is not stmt and s.lineno <= stmt.end_lineno and s.end_lineno >= stmt.lineno
                            for s in body):
        return None
    if stmt is not body[-1]:  # whole lines, with their end: the next statement keeps the file's last line
        return Edit(stmt.lineno, 0, stmt.end_lineno + 1, 0, "")
    return Edit(stmt.lineno, stmt.col_offset, stmt.end_lineno, stmt.end_col_offset, "")


def _watches(tree: ast.Module, models: set[str]) -> Iterator[Finding]:
    for scope in scopes(tree):
        for tape in scope.tapes:
            auto = not any(isinstance(i.context_expr, ast.Call) and flag(i.context_expr, "watch_accessed_variables")
                           is False for b in tape.blocks if isinstance(b, ast.With) for i in b.items)
            for call in tape.watches:
                args = [e for a in call.args for e in (a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])]
                named = [dotted(a) for a in args if (dotted(a) or "").rpartition(".")[2] in _VARIABLES]
                owner = named[0].rpartition(".")[0] if named else ""
                if not owner or not (owner in models or owner.split(".")[-1].lower().endswith("model")):
                    continue
                stmt = next((s for b in tape.blocks for s in b.body if isinstance(s, ast.Expr) and s.value is call),
                            None)
                edit = _removal(stmt, next(b.body for b in tape.blocks if stmt in b.body)) if (
                    stmt is not None and auto) else None
                yield finding("keras3-watch-variables", call, f"`tape.watch({named[0]})` raises on Keras 3 "
                              "variables; the tape watches trainable variables by itself, so drop the line", edit)


def _backend(tree: ast.Module) -> Iterator[Finding]:
    imported = imported_names(tree)
    for node in nodes(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "get_value", "set_value"):
            receiver = dotted(node.func.value) or ""
            head, _, rest = receiver.partition(".")
            path = ".".join(p for p in (imported.get(head, head), rest) if p)
            if path == "keras.backend":  # Keras 3's own; `tf.keras.backend` (the TF 2 shim) still has both
                yield finding("keras2-backend-value", node, f"`{receiver}.{node.func.attr}` does not exist in Keras "
                              "3: read a variable with `keras.ops.convert_to_numpy(v)`, set it with `v.assign(...)`")


@checker(("watch", "trainable_variables"), ("watch", "trainable_weights"), "reset_states", "get_value",
         "set_value")
def check_keras3(tree: ast.Module) -> Iterator[Finding]:
    """Keras 2 calls removed in Keras 3, on objects the module shows to be Keras ones."""
    if not keras3_client(tree):
        return
    source_names = {n.id for n in nodes(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in nodes(tree) if isinstance(n, ast.Attribute)}
    models = _models(tree)
    if "Module" not in source_names:  # tf.Module variables are tf.Variables, which `watch` takes
        yield from _watches(tree, models)
    yield from _backend(tree)
    for node in nodes(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "reset_states" \
                and dotted(node.func.value) in models:
            yield finding("keras2-model-reset-states", node, f"`{dotted(node.func.value)}` is a Keras model, and "
                          "Keras 3 models have no `reset_states()`: reset each stateful layer instead")
