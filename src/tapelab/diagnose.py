"""Why is my gradient None? Run a loss under a tape and name, for each variable, the likely cause.

`diagnose(loss_fn, variables)` runs `loss_fn()` under its own `tf.GradientTape`, asks for every
gradient, and for each one that is None or all zero infers the most likely cause from the
variable itself (trainable flag, dtype, Variable or Tensor), from what the tape saw, and from the
source of `loss_fn` (calls to `tf.stop_gradient`, `argmax`, `round`, int casts, NumPy, `assign_*`,
a name reassigned to a tensor). The inference is a best guess, and the report says so.

    report = diagnose(lambda: loss(model(x), y), model=model)
    print(report)          # or display it in a notebook
    report.ok              # True when every variable has a nonzero gradient
"""
from __future__ import annotations

import ast
import html
import inspect
import linecache
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import tensorflow as tf

from tapelab.quiet import Quiet

__all__ = ["CAUSES", "Entry", "Report", "blocking_call", "diagnose"]

CAUSES: dict[str, str] = {
    "not_trainable": "the variable is not trainable, so the tape does not watch it",
    "not_watched": "a constant tensor that was never passed to `tape.watch`",
    "not_connected": "the loss does not depend on the variable",
    "stop_gradient": "`tf.stop_gradient` blocks the path from the loss to the variable",
    "non_differentiable": "an operation with no gradient (argmax, round, cast to int, a comparison) is on the path",
    "numpy": "NumPy or `.numpy()` on the path: the tape cannot see through NumPy",
    "replaced_by_tensor": "a variable was replaced by a tensor (`x = x + 1` instead of `x.assign_add(1)`)",
    "state_change": "the value reaches the loss through `assign`/`assign_add`, which has no gradient",
    "int_dtype": "an integer variable or tensor: only floating-point values have gradients",
    "loss_outside_tape": "the loss was computed outside the tape's `with` block",
    "no_gradient_registered": "an operation on the path has no registered gradient (LookupError)",
    "untracked_variable": "a plain `tf.Variable` on a Keras 3 layer: not in `trainable_variables`",
    "zero_gradient": "a gradient that exists but is all zero (a dead relu, a flat loss)",
}

_COLOURS = {"ok": "#1e7e34", "zero": "#b7791f", "None": "#c53030"}
_NON_DIFF = {"argmax", "argmin", "round", "floor", "ceil", "sign", "equal", "not_equal", "greater",
             "greater_equal", "less", "less_equal", "argsort", "top_k", "unique"}
_STATE = {"assign", "assign_add", "assign_sub", "scatter_update", "scatter_add"}
_NP_NAMES = {"np", "numpy"}


@dataclass(frozen=True)
class Entry:
    """One variable's verdict: its gradient status and, if it is not ok, the most likely cause."""

    name: str
    status: str  # "ok", "zero" or "None"
    cause: str | None = None  # a key of CAUSES
    explanation: str = ""

    @property
    def ok(self) -> bool:
        return self.cause is None


@dataclass
class Report:
    """Every variable's entry, printable in a terminal and displayed as a table in a notebook."""

    entries: list[Entry] = field(default_factory=list)
    loss: float | None = None

    @property
    def ok(self) -> bool:
        """True when every variable received a nonzero gradient."""
        return all(entry.ok for entry in self.entries)

    @property
    def problems(self) -> list[Entry]:
        return [entry for entry in self.entries if not entry.ok]

    def __getitem__(self, name: str) -> Entry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(f"no variable named {name!r}; the report has: {[e.name for e in self.entries]}")

    def __str__(self) -> str:
        lines = [f"{e.name}: {e.status}" + (f" ({e.cause}). {e.explanation}" if e.cause else "")
                 for e in self.entries]
        verdict = "Every gradient is fine." if self.ok else f"{len(self.problems)} of {len(self.entries)} gradients need attention."
        return "\n".join([verdict] + lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(e.name)}</code></td>"
            f"<td style='color:white;background:{_COLOURS[e.status]};text-align:center'>{e.status}</td>"
            f"<td>{html.escape(e.cause or '')}</td><td>{_inline_code(e.explanation)}</td></tr>"
            for e in self.entries)
        return ("<table><tr><th>variable</th><th>gradient</th><th>likely cause</th><th>why, and the fix</th></tr>"
                f"{rows}</table>")


def _inline_code(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def diagnose(loss_fn: Callable[..., Any], variables: Iterable | Mapping[str, Any] | None = None, *,
             model: Any = None, watch: Iterable = ()) -> Report:
    """Run `loss_fn` under a tape and report, per variable, a None or all-zero gradient and its likely cause.

    `loss_fn()` takes no argument and returns the loss; or it takes one, the tape, and enters
    `with tape:` itself. `variables` is a list or a {name: variable} dict (default: the model's
    trainable variables); `model` also lets the report find untracked `tf.Variable`s on its layers;
    `watch` lists tensors the tape should watch.
    """
    caller = inspect.currentframe().f_back
    known = {**caller.f_globals, **caller.f_locals} if caller else {}
    del caller
    named = _named_variables(loss_fn, variables, model, known)
    watch = tuple(watch)
    source = _Source.of(loss_fn)
    tape = tf.GradientTape(persistent=True)
    with Quiet():
        if _takes_tape(loss_fn):
            loss = loss_fn(tape)
        else:
            with tape:
                for tensor in watch:
                    tape.watch(tensor)
                loss = loss_fn()
        accessed = {id(v) for v in tape.watched_variables()}
        precomputed = any(value is loss for value in _free_values(loss_fn).values())
        entries = []
        for name, var in named:
            grad, lookup = _gradient(tape, loss, var)
            entries.append(_judge(name, var, grad, lookup, id(var) in accessed, precomputed, source,
                                  watched={id(t) for t in watch}))
        entries += _untracked(model, {id(v) for _, v in named})
    del tape
    value = None
    try:
        value = float(tf.reduce_sum(loss))
    except (TypeError, ValueError):
        pass
    return Report(entries, value)


def _gradient(tape: tf.GradientTape, loss: Any, var: Any) -> tuple[Any, str | None]:
    try:
        return tape.gradient(loss, var), None
    except LookupError as error:
        match = re.search(r"no entry for: (\w+)", str(error))
        return None, match.group(1) if match else str(error)
    except (TypeError, ValueError):
        return None, None


def _judge(name, var, grad, lookup, accessed, precomputed, source, watched) -> Entry:
    """The Entry for one variable: its status, and the first cause in the checklist that fits."""
    if lookup:
        return Entry(name, "None", "no_gradient_registered",
                     f"`{name}`: computing its gradient raised `LookupError`: TensorFlow has no gradient for "
                     f"the operation `{lookup}`, and the backward pass stops there for every variable of "
                     "this loss. Can you replace it with differentiable ops, or wrap it in "
                     "`tf.custom_gradient` with a gradient you define?")
    if grad is not None:
        values = tf.convert_to_tensor(grad)
        if values.dtype.is_floating and not bool(tf.reduce_any(values != 0)):
            return Entry(name, "zero", "zero_gradient",
                         f"`{name}` has a gradient, but every entry is 0. Is a relu dead (all its inputs "
                         "negative), is a sigmoid saturated, or is the loss multiplied by zero? Try other "
                         "initial values, a smaller learning rate or `leaky_relu`.")
        return Entry(name, "ok")
    dtype = getattr(var, "dtype", None)
    if dtype is not None and not tf.as_dtype(dtype).is_floating:
        return Entry(name, "None", "int_dtype",
                     f"`{name}` has dtype `{tf.as_dtype(dtype).name}`. Only floating-point values have "
                     f"gradients: did you create it from integers? Write `2.0`, not `2`, or pass `dtype=tf.float32`.")
    is_variable = isinstance(var, tf.Variable) or hasattr(var, "trainable") and hasattr(var, "assign")
    if is_variable and not getattr(var, "trainable", True):
        return Entry(name, "None", "not_trainable",
                     f"`{name}` is a variable with `trainable=False`, and the tape only watches trainable "
                     "variables by itself. Did you mean it to be trained? Create it with `trainable=True`, "
                     f"or call `tape.watch({name})` inside the `with` block.")
    if precomputed or source.loss_outside:
        return Entry(name, "None", "loss_outside_tape",
                     "The loss was computed before the tape started recording (or after its `with` block), "
                     "so the tape holds no path to any variable. Did you compute the loss inside "
                     "`with tf.GradientTape() as tape:`?")
    if not is_variable and id(var) not in watched:
        if source.reassigned(name):
            return Entry(name, "None", "replaced_by_tensor",
                         f"`{name}` is a tensor, not a `tf.Variable`: a line like `{name} = {name} - ...` "
                         f"replaced the variable by the result. Did you mean `{name}.assign_sub(...)` "
                         "(or `assign_add`), which changes the variable in place?")
        return Entry(name, "None", "not_watched",
                     f"`{name}` is a constant tensor, and the tape only watches trainable variables by "
                     f"itself. Did you call `tape.watch({name})` inside the `with` block, or mean it to be "
                     "a `tf.Variable`?")
    blocked = source.blocker(name)
    if blocked:
        return _blocked_entry(name, *blocked)
    if not accessed:
        return Entry(name, "None", "not_connected",
                     f"The loss never reads `{name}`: the tape saw no operation on it. Does the loss really "
                     f"depend on `{name}` (a branch not taken, a layer not called, a typo in a name)?")
    return Entry(name, "None", "not_connected",
                 f"The loss reads `{name}`, but the path back to it is broken. Is there a `tf.stop_gradient`, "
                 "an argmax, round or int cast, or a NumPy call between them?")


def blocking_call(fn: Callable, name: str) -> tuple[str, str] | None:
    """The first call in `fn`'s source that blocks gradients to `name`, as (cause id, call text), if any."""
    return _Source.of(fn).blocker(name)


def _blocked_entry(name: str, cause: str, call: str) -> Entry:
    text = {
        "stop_gradient": f"`{name}` reaches the loss only through `{call}`, which blocks gradients by design. "
                         "Did you leave it in by mistake? Remove it from the path you want to train.",
        "non_differentiable": f"`{name}` reaches the loss only through `{call}`, which has no gradient. "
                              "Did you mean a smooth version (softmax instead of argmax, keep floats instead of "
                              "casting to int, or a straight-through estimator for round)?",
        "numpy": f"`{name}` reaches the loss through NumPy (`{call}`): the tape records TensorFlow operations "
                 "only. Did you mean the `tf.` function (`tf.reduce_mean`, not `np.mean`) and to drop `.numpy()`?",
        "state_change": f"`{name}` reaches the loss through `{call}`, which changes a variable's state and has "
                        "no gradient. Did you mean to compute the value as a tensor (`v + ...`) inside the "
                        "tape, and update state after `tape.gradient`?",
    }[cause]
    return Entry(name, "None", cause, text)


@dataclass
class _Source:
    """What `loss_fn`'s source shows: calls that block gradients, which names they consume, reassignments."""

    found: bool = False
    deps: dict[str, set[str]] = field(default_factory=dict)
    blockers: list[tuple[str, str, set[str]]] = field(default_factory=list)  # (cause, call text, names)
    reassignments: set[str] = field(default_factory=set)
    loss_outside: bool = False

    @classmethod
    def of(cls, fn: Callable) -> "_Source":
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError, IndentationError):
            return cls()
        found = cls(found=True)
        tape_param = next(iter(inspect.signature(fn).parameters)) if _takes_tape(fn) else None
        outside: set[str] = set()
        inside: set[str] = set()
        found._scan(tree, False, tape_param, outside, inside)
        if tape_param:
            returned = {n.id for node in ast.walk(tree) if isinstance(node, ast.Return) and node.value
                        for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            found.loss_outside = bool(returned) and returned <= outside - inside
        found.reassignments |= _file_reassignments(fn)
        return found

    def _scan(self, node: ast.AST, in_tape: bool, tape_param: str | None, outside: set, inside: set) -> None:
        if isinstance(node, ast.With) and any(
                "GradientTape" in ast.unparse(i.context_expr) or ast.unparse(i.context_expr) == tape_param
                for i in node.items):
            in_tape = True
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and getattr(node, "value", None):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            used = self._closure(node.value) | (names if isinstance(node, ast.AugAssign) else set())
            self.reassignments |= _self_assigned(node)
            for target in names:
                self.deps[target] = used
            (inside if in_tape else outside).update(names)
        if isinstance(node, ast.Call):
            self._note_call(node)
        for child in ast.iter_child_nodes(node):
            self._scan(child, in_tape, tape_param, outside, inside)

    def _closure(self, node: ast.AST) -> set[str]:
        found = set()
        for name in _names(node):
            found |= {name} | self.deps.get(name, set())
        return found

    def _note_call(self, node: ast.Call) -> None:
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        base = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        args = set().union(*(self._closure(a) for a in node.args + [k.value for k in node.keywords]), set())
        text = ast.unparse(node)
        cause = None
        if attr == "stop_gradient":
            cause = "stop_gradient"
        elif base in _NP_NAMES or attr == "numpy":
            cause = "numpy"
            if attr == "numpy" and isinstance(func, ast.Attribute):
                args |= self._closure(func.value)
        elif attr in _NON_DIFF:
            cause = "non_differentiable"
        elif attr == "cast" and re.search(r"int|bool", ast.unparse(node.args[1]) if len(node.args) > 1 else
                                          " ".join(ast.unparse(k.value) for k in node.keywords)):
            cause = "non_differentiable"
        elif attr in _STATE and isinstance(func, ast.Attribute):
            cause = "state_change"
        if cause:
            self.blockers.append((cause, text if len(text) < 60 else text[:57] + "...", args))

    def blocker(self, name: str) -> tuple[str, str] | None:
        """The first blocking call whose arguments depend on `name`, as (cause, call text)."""
        plain = name.split("/")[-1].split("[")[0]
        for cause, text, used in self.blockers:
            if name in used or plain in used:
                return cause, text
        return None

    def reassigned(self, name: str) -> bool:
        return name in self.reassignments


def _self_assigned(node: ast.AST) -> set[str]:
    """Names an assignment rebinds to an expression of themselves: `x = x + 1`, `x -= lr * g`."""
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, ast.Assign):
        value_names = _names(node.value)
        return {t.id for t in node.targets if isinstance(t, ast.Name) and t.id in value_names}
    return set()


def _file_reassignments(fn: Callable) -> set[str]:
    """Self-reassigned names in the scope that defines `fn`: its enclosing function, else its file or cell."""
    code = getattr(fn, "__code__", None)
    lines = linecache.getlines(code.co_filename) if code else []
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return set()
    line = code.co_firstlineno if code else 0
    scope: ast.AST = tree
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno < line <= node.end_lineno
                and node.lineno > getattr(scope, "lineno", 0)):
            scope = node
    return set().union(*(_self_assigned(node) for node in ast.walk(scope)), set())


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _takes_tape(fn: Callable) -> bool:
    try:
        return len(inspect.signature(fn).parameters) == 1
    except (TypeError, ValueError):
        return False


def _free_values(fn: Callable) -> dict[str, Any]:
    """The globals and closure values `fn` refers to, by name."""
    try:
        found = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return {}
    return {**found.globals, **found.nonlocals}


def _named_variables(loss_fn, variables, model, known: dict[str, Any]) -> list[tuple[str, Any]]:
    """(name, variable) pairs: a dict's keys, else the name the code uses for each variable."""
    if variables is None:
        if model is None:
            raise ValueError("diagnose needs the variables to check: pass `variables=[...]` or `model=...`.")
        variables = model.trainable_variables
    if isinstance(variables, Mapping):
        return list(variables.items())
    free = {id(value): name for name, value in known.items() if not name.startswith("_")}
    free.update({id(value): name for name, value in _free_values(loss_fn).items()})
    named = []
    for i, var in enumerate(variables):
        name = free.get(id(var)) or getattr(var, "path", None) or getattr(var, "name", "") or f"variables[{i}]"
        named.append((str(name).removesuffix(":0"), var))
    return named


def _untracked(model: Any, seen: set[int]) -> list[Entry]:
    """Entries for plain tf.Variables stored on the model's layers that Keras 3 does not track."""
    if model is None:
        return []
    tracked = {id(v) for v in model.variables}
    layers = [model] + list(getattr(model, "_flatten_layers", lambda: [])())
    entries, reported = [], set()
    for layer in layers:
        for attr, value in vars(layer).items():
            if isinstance(value, tf.Variable) and id(value) not in tracked | seen | reported:
                reported.add(id(value))
                name = f"{layer.name}.{attr}"
                entries.append(Entry(name, "None", "untracked_variable",
                                     f"`{name}` is a plain `tf.Variable` on a Keras 3 layer, which Keras does not "
                                     "track: it is missing from `model.trainable_variables`, so your step never "
                                     "asks for its gradient and the optimizer never updates it. Did you mean "
                                     "`self.add_weight(...)` in the layer?"))
    return entries
