"""Keras 2 idioms that break or mislead under Keras 3.

These rules are about code written against Keras 3's public API. A module that imports Keras 2 by name
(`tf_keras`, `tensorflow.python.keras`) is Keras 2 code, where `compiled_loss` or a legacy optimizer is
right; a module that imports Keras's private implementation (`keras.src`) is Keras itself, which defines
these names as shims, or code tied to one exact Keras build. Neither is checked: the rules cannot tell which
Keras such code means, so they stay silent rather than report a Keras 3 mistake that may not be one.

A finding carries an edit (`tapelab lint --fix`) only where the rewrite means the same to Keras: a renamed
`lr`, `reset_states`, or a legacy optimizer whose Keras 3 namesake takes the same arguments, on an object
that comes from Keras (a constructor imported from `keras` or `tensorflow`; a receiver known by its name
only, such as `self.optimizer`, in a module that imports one of them).
"""
from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from tapelab.lint.model import Edit, Finding, checker, define, finding, rename_end
from tapelab.lint.tapes import dotted, nodes
from tapelab.lint.uses import Uses

__all__ = ["check_keras", "keras3_client", "imported_names"]

define("TPL201", "keras2-compiled-loss", """
**What it does**: flags calls of `self.compiled_loss(...)` (any receiver) in a module that does not define
`compiled_loss` itself (a method of that name, or an attribute it sets).

**Why is this bad?** Keras 3 keeps `compiled_loss` only as a deprecated shim; a custom `train_step`
should ask `compute_loss`, which also adds the layer losses.

**Example**
```python
loss = self.compiled_loss(y, y_pred)
```

**Use instead**
```python
loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
```
""", level="warning")

define("TPL202", "keras2-reset-states", """
**What it does**: flags `.reset_states()` on a metric: a name or attribute made by `keras.metrics.X(...)`
(or `tf.keras.metrics.X`), or the loop variable over `self.metrics` / `model.metrics`.

**Why is this bad?** Keras 3 metrics have only `reset_state()`: the plural raises `AttributeError`.
(Stateful RNN layers keep `reset_states`, so layers are not flagged.)

**Example**
```python
for metric in self.metrics:
    metric.reset_states()
```

**Use instead**
```python
for metric in self.metrics:
    metric.reset_state()
```
""")

define("TPL203", "keras2-get-gradients", """
**What it does**: flags `optimizer.get_gradients(...)` on an optimizer (a name or attribute made by
`...optimizers.X(...)`, or an attribute named `optimizer`).

**Why is this bad?** Keras 3 optimizers have no `get_gradients`; gradients come from a tape.

**Example**
```python
grads = self.optimizer.get_gradients(loss, params)
```

**Use instead**
```python
grads = tape.gradient(loss, params)
```
""")

define("TPL204", "keras2-legacy-optimizer", """
**What it does**: flags `optimizers.legacy` (e.g. `tf.keras.optimizers.legacy.Adam`) where it is built,
subclassed or handed on (an argument, an item of a list or dict), directly, through a name it is bound to,
or through a name imported from it. Comparing with it, `isinstance`/`issubclass` against it and annotations
are left alone: Keras 3 still defines the names, and only building one raises.

**Why is this bad?** Keras 3 has no legacy optimizers: every `optimizers.legacy.X` is a stand-in whose
constructor raises `ImportError`, so the optimizer (or a subclass of it) cannot be built.

**Example**
```python
optimizer = tf.keras.optimizers.legacy.Adam(1e-3)
```

**Use instead**
```python
optimizer = keras.optimizers.Adam(1e-3)
```
""")

define("TPL205", "keras2-lr", """
**What it does**: flags an optimizer built with `lr=` (a call of `...optimizers.X(...)`, or of a class
imported from an `optimizers` module) and `.lr` read or set on an optimizer (a name or attribute made by
such a call, or an attribute named `optimizer`).

**Why is this bad?** Keras 3 optimizers take and expose only `learning_rate`: `SGD(lr=0.1)` raises
`ValueError: Argument(s) not recognized`, reading `optimizer.lr` raises `AttributeError`, and
setting it adds a new attribute while the learning rate stays what it was.

**Example**
```python
optimizer = keras.optimizers.Adam(lr=1e-3)
optimizer.lr = 1e-4
```

**Use instead**
```python
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
optimizer.learning_rate = 1e-4
```
""")

define("TPL206", "keras2-get-updates", """
**What it does**: flags `optimizer.get_updates(...)` on an optimizer (a name or attribute made by
`...optimizers.X(...)`, or an attribute named `optimizer`).

**Why is this bad?** `get_updates` built the update ops of a Keras 2 graph-mode optimizer; Keras 3
optimizers have no such method, so it raises `AttributeError`.

**Example**
```python
updates = self.optimizer.get_updates(loss, params)
```

**Use instead**
```python
grads = tape.gradient(loss, params)
self.optimizer.apply_gradients(zip(grads, params))
```
""")

define("TPL207", "keras2-compiled-metrics", """
**What it does**: flags a member of `self.compiled_metrics` (any receiver: `.update_state`, `.metrics`, ...)
in a module that does not define `compiled_metrics` itself.

**Why is this bad?** Keras 3 keeps `compiled_metrics` only as a shim with `update_state`, which warns that
it is deprecated and updates every `Mean` metric of `self.metrics` with `y_pred`, the loss tracker among
them: the loss `fit` reports becomes the mean prediction. Anything else of the Keras 2 container
(`.metrics`, `.reset_state()`, `.result()`) raises `AttributeError`.

**Example**
```python
self.compiled_metrics.update_state(y, y_pred)
return {m.name: m.result() for m in self.metrics}
```

**Use instead**
```python
for metric in self.metrics:
    metric.update_state(y, y_pred)
return {m.name: m.result() for m in self.metrics}
```
""")

_NOT_KERAS3_CLIENT = ("tf_keras", "tensorflow.python.keras", "keras.src")


@functools.lru_cache(maxsize=1)
def keras3_client(tree: ast.Module) -> bool:
    """False when the module imports Keras 2 or Keras's own implementation (see the module docstring); asked once
    per module however many families ask."""
    for node in nodes(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        if isinstance(node, ast.ImportFrom):  # `from package.internal import tf_keras`: a Keras 2 shim by name
            names += [a.asname or a.name for a in node.names]
        if any(n == p or n.startswith(p + ".") for n in names for p in _NOT_KERAS3_CLIENT):
            return False
    return True


def _made_by(tree: ast.Module, module: str) -> set[str]:
    """Names and attributes assigned from a call of `<...>.<module>.<Class>(...)`, e.g. `keras.metrics.Mean()`."""
    made = set()
    for node in nodes(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            parts = (dotted(node.value.func) or "").split(".")
            if len(parts) >= 2 and parts[-2] == module:
                made.update(d for d in map(dotted, node.targets) if d)
    return made


def _metric_loop_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in nodes(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and (dotted(node.iter) or "").endswith(".metrics"):
            names.update(d for d in [dotted(node.target)] if d)
    return names


def _legacy_module(node: ast.AST) -> bool:
    """Whether `node` is `<...>.optimizers.legacy`."""
    return isinstance(node, ast.Attribute) and node.attr == "legacy" and (dotted(node.value) or "").endswith(
        "optimizers")


def _legacy(node: ast.AST, uses: Uses) -> bool:
    """A reference to `optimizers.legacy` that breaks when run (built, subclassed, handed on): see `uses`."""
    if isinstance(node, ast.Attribute):
        return _legacy_module(node) and uses.breaks(uses.chain(node))
    if isinstance(node, ast.ImportFrom) and node.module:
        parts = node.module.split(".")
        legacy = "optimizers.legacy" in node.module or (parts[-1] == "optimizers" and any(
            a.name == "legacy" for a in node.names))
        return legacy and any(True for _ in uses.imported(node))
    if isinstance(node, ast.Import):  # `import ...optimizers.legacy as L`; without `as`, its chains are judged
        return any(".optimizers.legacy" in a.name and a.asname and any(
            uses.breaks(uses.chain(n)) for n in uses.loads.get(a.asname, [])) for a in node.names)
    return False


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether the module defines `name` itself (a method, or an attribute it sets), so a call of it is not
    Keras's: `def compiled_loss(...)`, `self.compiled_loss = ...`."""
    return any((isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name) or (
        isinstance(n, ast.Attribute) and n.attr == name and isinstance(n.ctx, ast.Store)) for n in nodes(tree))


def _optimizer_classes(tree: ast.Module) -> set[str]:
    """Names imported from an `optimizers` module (`from keras.optimizers import Adam`)."""
    return {a.asname or a.name for node in nodes(tree) if isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[-1] == "optimizers" for a in node.names}


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted path it was imported as (`import tensorflow as tf`: `tf` -> `tensorflow`)."""
    names = {}
    for node in nodes(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname, a.name) if a.asname else (a.name.split(".")[0],) * 2 for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update((a.asname or a.name, f"{node.module}.{a.name}") for a in node.names)
    return names


_KERAS = ("keras", "tensorflow")


def _from_keras(path: str, imported: dict[str, str]) -> bool:
    """Whether the dotted `path` starts at a name imported from `keras` or `tensorflow`."""
    return imported.get(path.split(".")[0], "").split(".")[0] in _KERAS


def _builds_optimizer(call: ast.Call, classes: set[str]) -> bool:
    parts = (dotted(call.func) or "").split(".")
    return (len(parts) >= 2 and parts[-2] == "optimizers") or (len(parts) == 1 and parts[0] in classes)


def _guarded(node: ast.AST, receiver: str, uses: Uses) -> bool:
    """Whether `node` runs only where `hasattr(receiver, "lr")` holds: in the body of such an `if` (or the true
    branch of such a conditional expression), code written for both Keras versions."""
    child, parent = node, uses.parents.get(id(node))
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test and (
                child in parent.body if isinstance(parent.body, list) else child is parent.body) and any(
                isinstance(n, ast.Call) and dotted(n.func) == "hasattr" and len(n.args) == 2 and dotted(
                    n.args[0]) == receiver and getattr(n.args[1], "value", None) == "lr" for n in ast.walk(parent.test)):
            return True
        child, parent = parent, uses.parents.get(id(parent))
    return False


def _lr_findings(tree: ast.Module, optimizers: set[str], imported: dict[str, str],
                 keras_module: bool, uses: Uses) -> Iterator[Finding]:
    classes = _optimizer_classes(tree)
    for node in nodes(tree):
        if isinstance(node, ast.Call) and _builds_optimizer(node, classes):
            renamable = _from_keras(dotted(node.func), imported) and not any(
                k.arg == "learning_rate" for k in node.keywords)
            for keyword in (k for k in node.keywords if k.arg == "lr"):
                edit = Edit(keyword.lineno, keyword.col_offset, keyword.lineno, keyword.col_offset + len("lr"),
                            "learning_rate") if renamable else None
                yield finding("keras2-lr", keyword, f"`{dotted(node.func)}(lr=...)`: Keras 3 optimizers take "
                              "`learning_rate=`, and raise on `lr`", edit)
        elif isinstance(node, ast.Attribute) and node.attr == "lr":
            receiver = dotted(node.value) or ""
            if (receiver in optimizers or receiver.split(".")[-1] == "optimizer") and not _guarded(node, receiver, uses):
                yield finding("keras2-lr", node, f"`{receiver}.lr`: a Keras 3 optimizer has `learning_rate`, "
                              "not `lr`", rename_end(node, "lr", "learning_rate") if keras_module else None)


# Legacy optimizers whose Keras 3 namesake takes the same leading parameters, in this order, with the same
# defaults (after them the legacy `name` meets Keras 3's `weight_decay`, so later positions differ).
_SAME_IN_KERAS3 = {
    "Adam": ("learning_rate", "beta_1", "beta_2", "epsilon", "amsgrad"),
    "SGD": ("learning_rate", "momentum", "nesterov"),
    "RMSprop": ("learning_rate", "rho", "momentum", "epsilon", "centered"),
    "Adagrad": ("learning_rate", "initial_accumulator_value", "epsilon"),
    "Adadelta": ("learning_rate", "rho", "epsilon"),
    "Adamax": ("learning_rate", "beta_1", "beta_2", "epsilon"),
    "Nadam": ("learning_rate", "beta_1", "beta_2", "epsilon"),
    "Ftrl": ("learning_rate", "learning_rate_power", "initial_accumulator_value", "l1_regularization_strength",
             "l2_regularization_strength"),
}
_BOTH_KEYWORDS = frozenset({"name", "clipnorm", "clipvalue", "global_clipnorm", "lr"})  # `lr`: TPL205 renames it


def _legacy_edits(tree: ast.Module, imported: dict[str, str]) -> dict[int, Edit]:
    """id of each `<...>.optimizers.legacy` node -> the edit dropping `.legacy`, where it is called as a
    constructor Keras 3 has the same (not `decay=`, which Keras 3 ignores, nor a base class to subclass)."""
    edits = {}
    for node in nodes(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if not (isinstance(func, ast.Attribute) and _legacy_module(func.value) and func.attr in _SAME_IN_KERAS3
                and _from_keras(dotted(func) or "", imported)):
            continue
        keywords = {k.arg for k in node.keywords}
        if len(node.args) <= len(_SAME_IN_KERAS3[func.attr]) and not any(
                isinstance(a, ast.Starred) for a in node.args) and keywords <= _BOTH_KEYWORDS | set(
                _SAME_IN_KERAS3[func.attr]):
            package = func.value.value
            edits[id(func.value)] = Edit(package.end_lineno, package.end_col_offset, func.value.end_lineno,
                                         func.value.end_col_offset, "")
    return edits


def _compiled_metrics(node: ast.Attribute, uses: Uses) -> Iterator[Finding]:
    """A use of the Keras 2 container's members (a bare `if self.compiled_metrics:` works in Keras 3)."""
    used = uses.parents.get(id(node))
    if not (isinstance(used, ast.Attribute) and used.value is node):
        return
    if used.attr == "update_state":
        said = ("is a Keras 3 shim whose `update_state` feeds `y_pred` to every `Mean` metric, the loss tracker "
                "among them, so the reported loss is wrong")
    else:
        said = f"in Keras 3 has only `update_state`, so `.{used.attr}` raises AttributeError"
    yield finding("keras2-compiled-metrics", node, f"`{ast.unparse(node)}` {said}")


@checker("compiled_loss", "compiled_metrics", "reset_states", "get_gradients", "get_updates", "legacy", "lr")
def check_keras(tree: ast.Module) -> Iterator[Finding]:
    """Keras 2 names called on Keras 3 objects, in modules written against Keras 3."""
    if not keras3_client(tree):
        return
    metrics = _made_by(tree, "metrics") | _metric_loop_names(tree)
    optimizers, imported = _made_by(tree, "optimizers"), imported_names(tree)
    keras_module = any(path.split(".")[0] in _KERAS for path in imported.values())
    legacy_edits = _legacy_edits(tree, imported)
    own = {name for name in ("compiled_loss", "compiled_metrics") if _defines(tree, name)}
    uses = Uses(tree)
    yield from _lr_findings(tree, optimizers, imported, keras_module, uses)
    for node in nodes(tree):
        if _legacy(node, uses):
            yield finding("keras2-legacy-optimizer", node, "`optimizers.legacy` is Keras 2 only; Keras 3 has "
                          "no legacy optimizers, and building one raises ImportError", legacy_edits.get(id(node)))
        if isinstance(node, ast.Attribute) and node.attr == "compiled_metrics" and "compiled_metrics" not in own \
                and isinstance(node.ctx, ast.Load):
            yield from _compiled_metrics(node, uses)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver, method = dotted(node.func.value) or "", node.func.attr
        optimizer = receiver in optimizers or receiver.split(".")[-1] == "optimizer"
        if method == "compiled_loss" and method not in own:
            yield finding("keras2-compiled-loss", node, f"`{ast.unparse(node.func)}` is the Keras 2 loss "
                          "container; Keras 3 asks `compute_loss`")
        elif method == "reset_states" and receiver in metrics:
            edit = rename_end(node.func, "reset_states", "reset_state") if keras_module and not (
                node.args or node.keywords) else None
            yield finding("keras2-reset-states", node, f"`{receiver}` is a Keras metric: Keras 3 metrics have "
                          "`reset_state()`, not `reset_states()`", edit)
        elif method in ("get_gradients", "get_updates") and optimizer:
            yield finding(f"keras2-{method.replace('_', '-')}", node, f"`{receiver}.{method}` is Keras 2 only: "
                          "compute gradients with a tape" + (" and apply them with `apply_gradients`"
                                                              if method == "get_updates" else ""))
