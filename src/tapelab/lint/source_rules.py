"""Rules on what a tape is asked to differentiate: sources that are the wrong object, integer variables, and a
target that depends on no source at all."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelab.lint.bindings import assignments_of, binding
from tapelab.lint.model import Finding, checker, define, finding, rename_end
from tapelab.lint.tapes import Call, Scope, dotted, flag, nodes, scopes

__all__ = ["check_sources"]

define("TPL113", "all-variables", """
**What it does**: flags `model.variables` (or `model.weights`) given to `gradient`/`jacobian` as the sources,
and the same list handed with those gradients to `apply_gradients`/`apply` in that scope, in a module that
shows non-trainable variables (batch normalization, a Keras application, `trainable=False`). `--fix` makes both
`model.trainable_variables` (`trainable_weights`), so gradients and variables stay paired.

**Why is this bad?** `variables` also holds what is not trained, such as BatchNormalization's moving mean and
variance: their gradients are `None`, and the optimizer warns or raises on them.

**Example**
```python
grads = tape.gradient(loss, model.variables)
optimizer.apply_gradients(zip(grads, model.variables))
```

**Use instead**
```python
grads = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
```
""")

define("TPL114", "symbolic-source", """
**What it does**: flags, as a `gradient` source or a `watch` argument, a Keras model or layer itself (a name
the scope builds as a model, or uses as the owner of `.trainable_variables`), or a symbolic tensor of one:
`model.inputs`, `model.input`, `model.outputs`, `model.output`, `model.get_layer(name).output`,
`model.layers[i].output`.

**Why is this bad?** A model is not a tensor, and its `.inputs`/`.output` are the symbolic tensors it was built
with, not the values of this call: the tape never saw them, so it raises or gives `None`.

**Example**
```python
with tf.GradientTape() as tape:
    tape.watch(model.inputs)
    loss = loss_fn(y, model(x))
grads = tape.gradient(loss, model.inputs)
```

**Use instead**
```python
x = tf.convert_to_tensor(x)
with tf.GradientTape() as tape:
    tape.watch(x)
    loss = loss_fn(y, model(x))
grads = tape.gradient(loss, x)
```
""")

define("TPL115", "int-dtype", """
**What it does**: flags a trainable variable of an integer dtype: a `gradient` source made by `tf.Variable(3)`
(an integer literal, or an integer `dtype=`), and a weight made by `add_weight`/`add_variable` in a layer or
model class with an integer `dtype` and not `trainable=False` (a metric's weights are never trained).

**Why is this bad?** Only floating-point values have gradients: the tape gives `None` for an integer variable,
and `fit` stops with "No gradients provided for any variable".

**Example**
```python
w = tf.Variable(3)
with tf.GradientTape() as tape:
    loss = tf.cast(w, tf.float32) * x
grad = tape.gradient(loss, w)
```

**Use instead**
```python
w = tf.Variable(3.0)
with tf.GradientTape() as tape:
    loss = w * x
grad = tape.gradient(loss, w)
```
""")

define("TPL116", "not-connected", """
**What it does**: flags a `gradient` call whose target is computed, within the scope, only from literals,
constants and variables that are not its sources (including a variable changed by `assign` from a source), and
a loss function given to `compile` that never reads its prediction argument (`y_pred`).

**Why is this bad?** A target that does not depend on a source has no gradient with respect to it: `None`, or
for `fit`, "No gradients provided for any variable". `assign` is not differentiable, so a value that reaches the
target only through a variable's `assign` does not count.

**Example**
```python
v = tf.Variable(1.0)
with tf.GradientTape() as tape:
    tape.watch(x)
    v.assign_add(x)
    loss = v * v
grad = tape.gradient(loss, x)
```

**Use instead**
```python
with tf.GradientTape() as tape:
    tape.watch(x)
    updated = v + x
    loss = updated * updated
grad = tape.gradient(loss, x)
```
""")

_ALL = {"variables": "trainable_variables", "weights": "trainable_weights"}
_SYMBOLIC = {"inputs", "input", "outputs", "output"}
_MODEL_MAKERS = {"Model", "Sequential", "Functional"}
_INT = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_MODULES = ("tf", "np", "numpy", "ops", "keras", "math")


_FROZEN = {"BatchNormalization", "SyncBatchNormalization", "BatchNorm", "batch_normalization", "applications"}


def _holds_frozen(tree: ast.Module) -> bool:
    """Whether the module shows non-trainable variables: batch normalization, a Keras application, a layer or
    variable made with `trainable=False`, or `layer.trainable = False`."""
    for node in nodes(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) or getattr(node, "attr", "")) \
                in _FROZEN:
            return True
        if isinstance(node, ast.keyword) and node.arg == "trainable" and getattr(node.value, "value", 1) is False:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "trainable"
                                                for t in node.targets) and getattr(node.value, "value", 1) is False:
            return True
    return False


def _all_variables(scope: Scope, call: Call) -> Iterator[Finding]:
    for source in call.sources:
        name = dotted(source) or ""
        owner, _, last = name.rpartition(".")
        if not owner or last not in _ALL:
            continue
        yield finding("all-variables", source, f"`{name}` holds non-trainable variables too (BatchNormalization's "
                      f"statistics), whose gradients are None: use `{owner}.{_ALL[last]}`",
                      rename_end(source, last, _ALL[last]))
        for node in (n for stmt in scope.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "apply_gradients", "apply"):
                for used in (n for a in node.args for n in ast.walk(a) if dotted(n) == name):
                    yield finding("all-variables", used, f"`{name}` is paired here with the gradients of line "
                                  f"{call.node.lineno}: use `{owner}.{_ALL[last]}` in both",
                                  rename_end(used, last, _ALL[last]))


def _built_models(tree: ast.Module) -> set[str]:
    """Names and attributes the module builds as a Keras model."""
    found = set()
    for node in nodes(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            parts = (dotted(node.value.func) or "").split(".")
            if parts[-1] in _MODEL_MAKERS or "applications" in parts[:-1]:
                found.update(d for d in map(dotted, node.targets) if d)
    return found


def _models(built: set[str], scope: Scope) -> set[str]:
    """The module's models (`built`), and what the scope uses as an owner of trainable variables
    (`x.trainable_variables`)."""
    found = set(built)
    for node in (n for stmt in scope.body for n in ast.walk(stmt)):
        if isinstance(node, ast.Attribute) and node.attr in ("trainable_variables", "trainable_weights"):
            found.update(d for d in [dotted(node.value)] if d)
    return found


def _from_model(node: ast.AST, models: set[str]) -> bool:
    """Whether `node` is a known model, one of its layers (`get_layer(...)`, `layers[i]`), or built from one."""
    if dotted(node) in models:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get_layer":
        return True
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "layers"


def _symbolic(models: set[str], call: Call | None, watched: list[ast.AST]) -> Iterator[Finding]:
    given = [*(call.sources if call else ()), *watched]
    for source in given:
        what = "watched" if call is None or source in watched else "a source"
        if isinstance(source, ast.Attribute) and source.attr in _SYMBOLIC and _from_model(source.value, models):
            yield finding("symbolic-source", source, f"`{ast.unparse(source)}` is {what}, but it is the symbolic "
                          "tensor the model was built with, not the tensor of this call: feed and watch a tensor "
                          "of your own, or differentiate by tensors computed inside the tape")
        elif call is not None and source not in watched and dotted(source) in models:
            yield finding("symbolic-source", source, f"`{dotted(source)}` is a model, not its variables: use "
                          f"`{dotted(source)}.trainable_variables` as the sources")


def _int_variable(value: ast.AST | None) -> bool:
    """Whether `value` makes an integer variable: `tf.Variable(3)`, or one with an integer `dtype=`."""
    if not (isinstance(value, ast.Call) and (dotted(value.func) or "").split(".")[-1] == "Variable"):
        return False
    if flag(value, "trainable") is False:
        return False
    dtype = next((k.value for k in value.keywords if k.arg == "dtype"), None)
    if dtype is not None:
        return (dotted(dtype) or getattr(dtype, "value", "") or "").split(".")[-1] in _INT
    first = value.args[0] if value.args else None
    return isinstance(first, ast.Constant) and type(first.value) is int


def _int_sources(call: Call, assignments: list[ast.stmt]) -> Iterator[Finding]:
    items = [e for s in call.sources for e in (s.elts if isinstance(s, (ast.List, ast.Tuple)) else [s])]
    for source in items:
        bound = binding(source.id, assignments, call.node) if isinstance(source, ast.Name) else None
        if _int_variable(bound):
            yield finding("int-dtype", bound, f"`{source.id}` is an integer variable, so its gradient (line "
                          f"{call.node.lineno}) is None: make it a float (`tf.Variable({source.id}_value * 1.0)`, "
                          "or `dtype=tf.float32`)")


def _int_weights(tree: ast.Module) -> Iterator[Finding]:
    """Integer weights made trainable in a layer or model class (a metric's weights are never trainable)."""
    classes = [c for c in nodes(tree) if isinstance(c, ast.ClassDef) and any(
        (dotted(b) or "").split(".")[-1].endswith(("Layer", "Model")) for b in c.bases)]
    for node in (n for c in classes for n in ast.walk(c)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "add_weight", "add_variable") and flag(node, "trainable") is not False:
            dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
            name = (dotted(dtype) or (dtype.value if isinstance(dtype, ast.Constant) else "") or "") if dtype else ""
            if str(name).split(".")[-1] in _INT:
                yield finding("int-dtype", node, f"a trainable weight of dtype `{name.split('.')[-1]}`: integers "
                              "have no gradient, so fit reports no gradients for it; use a float dtype, or "
                              "`trainable=False` for a counter")


def _closed(node: ast.AST, sources: set[str], assignments: list[ast.stmt], before: ast.AST, seen: list[str],
            depth: int = 0) -> bool:
    """Whether `node` is computed, as far as this scope shows, only from literals, TensorFlow constants and
    variables that are not sources (their names are collected in `seen`)."""
    if depth > 12:
        return False
    if isinstance(node, ast.Constant):
        return True
    name = dotted(node)
    if name is not None and name.split(".")[0] in _MODULES and "." in name:
        return True  # `tf.float32`, `np.pi`
    if isinstance(node, ast.Name):
        if node.id in sources:
            return False
        bound = binding(node.id, assignments, before)
        if bound is None:
            return False
        seen.append(node.id)
        return _closed(bound, sources, assignments, bound, seen, depth + 1)
    parts = [p for p in ast.iter_child_nodes(node) if isinstance(p, ast.expr)]
    if isinstance(node, ast.Call):
        func = dotted(node.func) or ""
        if func.split(".")[0] not in _MODULES or func.split(".")[-1] in ("GradientTape", "watch"):
            return False
        parts = [*node.args, *(k.value for k in node.keywords)]
    elif not isinstance(node, (ast.BinOp, ast.UnaryOp, ast.List, ast.Tuple, ast.Subscript, ast.Slice)):
        return False
    return all(_closed(p, sources, assignments, before, seen, depth + 1) for p in parts)


def _not_connected(scope: Scope, call: Call, assignments: list[ast.stmt]) -> Iterator[Finding]:
    sources = {d for d in map(dotted, call.sources) if d}
    seen: list[str] = []
    bound = [binding(s, assignments, call.node) for s in sources]
    if not sources or call.target is None or not all(isinstance(s, ast.Name) for s in call.sources) or not all(
            b is not None and not isinstance(b, (ast.List, ast.Tuple, ast.Dict, ast.Set)) for b in bound):
        return  # a source known only by its name, or a container of sources, is not followed here
    if not _closed(call.target, sources, assignments, call.node, seen):
        return
    assigns = [n for stmt in scope.body for n in ast.walk(stmt) if isinstance(n, ast.Call) and isinstance(
        n.func, ast.Attribute) and n.func.attr.startswith("assign") and dotted(n.func.value) in seen]
    how = (f"; `{ast.unparse(assigns[0].func)}` (line {assigns[0].lineno}) changes `{dotted(assigns[0].func.value)}`"
           " but has no gradient") if assigns else ""
    yield finding("not-connected", call.node, f"`{ast.unparse(call.target)}` is computed only from constants and "
                  f"variables that are not sources{how}, so it does not depend on "
                  f"`{', '.join(sorted(sources))}` and the gradient is None")


@checker("GradientTape", ("add_weight", "dtype"), ("add_variable", "dtype"))
def check_sources(tree: ast.Module) -> Iterator[Finding]:
    """Sources that are the wrong object or of an integer dtype, and targets that depend on no source."""
    yield from _int_weights(tree)
    if not any((type(n) is ast.Attribute and n.attr == "GradientTape") or (type(n) is ast.Name and n.id ==
                                                                           "GradientTape") for n in nodes(tree)):
        return  # named `add_weight` only: no tape to read
    frozen, built = _holds_frozen(tree), _built_models(tree)
    for scope in scopes(tree):
        if not scope.tapes:
            continue
        models = _models(built, scope)
        assignments = assignments_of(scope)
        for tape in scope.tapes:
            watched = [a for w in tape.watches for a in w.args]
            yield from _symbolic(models, None, [w for w in watched if not isinstance(w, ast.List)])
        for call in scope.gradient_calls():
            if frozen:
                yield from _all_variables(scope, call)
            yield from _symbolic(models, call, [])
            yield from _int_sources(call, assignments)
            yield from _not_connected(scope, call, assignments)
