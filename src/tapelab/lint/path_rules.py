"""Rules on the path from a tape's sources to its target (data flow in `tapelab.lint.flow`)."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelab.lint.calls import target_state
from tapelab.lint.flow import Break
from tapelab.lint.model import Finding, checker, define, finding
from tapelab.lint.tapes import Call, dotted, scopes

__all__ = ["check_paths"]

define("TPL102", "outside-tape", """
**What it does**: flags a `gradient` call whose target is computed from its sources outside the tape's
`with` block (before it, or after it). An object built from a source outside the block (a distribution, a
bijector, a layer, any class's instance or the result of a function of yours) is not flagged: it keeps a
reference to the source and computes when its methods run, which the tape records if they run inside.

**Why is this bad?** A tape records only the operations run while its block is open; the target's link to
the source was never recorded, so the gradient is `None`.

**Example**
```python
with tf.GradientTape() as tape:
    pass
y = x * x
dy_dx = tape.gradient(y, x)
```

**Use instead**
```python
with tf.GradientTape() as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
```
""")

define("TPL103", "numpy-in-path", """
**What it does**: flags a target that depends on its sources only through a NumPy call or `.numpy()`.

**Why is this bad?** NumPy values leave TensorFlow: the tape cannot follow them, so the gradient is `None`.

**Example**
```python
with tf.GradientTape() as tape:
    y = tf.constant(np.square(x.numpy()))
```

**Use instead**
```python
with tf.GradientTape() as tape:
    y = tf.square(x)
```
""")

define("TPL104", "python-number-in-path", """
**What it does**: flags a target that depends on its sources only through `float()`, `int()`, `bool()`,
`.item()` or `.tolist()`.

**Why is this bad?** A Python number is a constant to TensorFlow: the tape loses the path, and the
gradient is `None`.

**Example**
```python
with tf.GradientTape() as tape:
    loss = tf.constant(float(tf.reduce_sum(w * x)))
```

**Use instead**
```python
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * x)
```
""")

define("TPL105", "predict-in-tape", """
**What it does**: flags a target computed from `model.predict(...)` (or `predict_on_batch`), where `model`
is what the sources show to be a Keras model (`tape.gradient(loss, model.trainable_variables)`); another
object's `predict` may be its own method and is not flagged.

**Why is this bad?** `predict` runs its own loop and returns NumPy arrays, so nothing connects the loss
to the model's weights: every gradient is `None`.

**Example**
```python
with tf.GradientTape() as tape:
    loss = loss_fn(y, model.predict(x))
grads = tape.gradient(loss, model.trainable_variables)
```

**Use instead**
```python
with tf.GradientTape() as tape:
    loss = loss_fn(y, model(x, training=True))
```
""")

define("TPL106", "non-differentiable", """
**What it does**: flags a target that depends on its sources only through an operation with no gradient:
`argmax`/`argmin`, `round`, `sign`, `floor`/`ceil`, comparisons, or a cast to an integer or boolean dtype.

**Why is this bad?** These ops have no gradient (or a zero one): the gradient is `None`. A term of the
target that still flows differentiably is fine, so only a path cut everywhere is reported.

**Example**
```python
with tf.GradientTape() as tape:
    y = tf.cast(tf.argmax(model(x), axis=1), tf.float32)
```

**Use instead**
```python
with tf.GradientTape() as tape:
    y = tf.nn.softmax(model(x))
```
""")

define("TPL107", "stop-gradient", """
**What it does**: flags a target that reaches its sources only through `tf.stop_gradient`.

**Why is this bad?** `stop_gradient` tells the tape to treat its input as a constant: the gradient with
respect to every source behind it is `None`.

**Example**
```python
with tf.GradientTape() as tape:
    y = tf.stop_gradient(x * x)
```

**Use instead**
```python
with tf.GradientTape() as tape:
    y = x * x
```
""")

define("TPL108", "unrecorded-gradient", """
**What it does**: flags a second-order `gradient` call whose target is a first gradient computed outside
the outer tape's `with` block.

**Why is this bad?** The outer tape must record the inner `gradient` call to differentiate it again; computed
after the outer block, the first derivative is a constant to it and the second derivative is `None`.

**Example**
```python
with tf.GradientTape() as outer:
    with tf.GradientTape() as inner:
        y = x ** 3
dy_dx = inner.gradient(y, x)
d2y_dx2 = outer.gradient(dy_dx, x)
```

**Use instead**
```python
with tf.GradientTape() as outer:
    with tf.GradientTape() as inner:
        y = x ** 3
    dy_dx = inner.gradient(y, x)
d2y_dx2 = outer.gradient(dy_dx, x)
```
""")

define("TPL109", "no-gradients", """
**What it does**: flags `apply_gradients`/`apply` fed the result of a `gradient` call whose target this
linter found cut from every source (one of the rules above), with no `is None` check on the gradients.

**Why is this bad?** Every gradient is then `None`: the optimizer raises, or in older set-ups silently
skips the update, and training does nothing.

**Example**
```python
with tf.GradientTape() as tape:
    loss = loss_fn(y, model.predict(x))
grads = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
```

**Use instead**
```python
with tf.GradientTape() as tape:
    loss = loss_fn(y, model(x, training=True))
grads = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
```
""")

_MESSAGES = {
    "outside-tape": "`{target}` is computed from the source outside the `with {tape}` block ({what}, line {line}), "
                    "so `{tape}` recorded nothing and the gradient is None",
    "unrecorded-gradient": "`{target}` is a first gradient computed outside the `with {tape}` block ({what}, "
                           "line {line}), so `{tape}` cannot differentiate it again",
}


def _message(call: Call, cut: Break) -> str:
    target = ast.unparse(call.target)
    line = getattr(cut.node, "lineno", call.node.lineno)
    template = _MESSAGES.get(cut.code, "`{target}` depends on the source only through {what} (line {line}), "
                                       "which the tape cannot differentiate, so the gradient is None")
    return template.format(target=target, tape=call.tape.name, what=cut.what, line=line)


def _checks_none(scope_node: ast.AST) -> bool:
    """Whether the scope compares anything with `None` by identity (a gradient filter, presumably)."""
    return any(isinstance(n, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops)
               for n in ast.walk(scope_node))


def _result_name(call: Call, body_node: ast.AST) -> str | None:
    for node in ast.walk(body_node):
        if isinstance(node, ast.Assign) and node.value is call.node and len(node.targets) == 1:
            return dotted(node.targets[0])
    return None


def _applies(scope_node: ast.AST, grads: str) -> Iterator[ast.Call]:
    for node in ast.walk(scope_node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "apply_gradients", "apply"):
            if any(dotted(n) == grads for a in node.args for n in ast.walk(a)):
                yield node


@checker("GradientTape")
def check_paths(tree: ast.Module) -> Iterator[Finding]:
    """Each gradient call whose target is cut from every source, and optimizers fed its None gradients."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for scope in scopes(tree):
        for call in scope.gradient_calls():
            cut = target_state(call, scope.body, functions)
            if not isinstance(cut, Break):
                continue
            yield finding(cut.code, call.node, _message(call, cut))
            grads = _result_name(call, scope.node)
            if grads and not _checks_none(scope.node):
                for apply in _applies(scope.node, grads):
                    yield finding("no-gradients", apply, f"`{ast.unparse(apply.func)}` is given `{grads}`, every "
                                  f"one None (line {call.node.lineno}), with no `is None` check")
