"""Data flow from a tape's sources to its target, over one scope's statements in order.

For one `tape.gradient(target, sources)` call, each name gets a state: `TENSOR` (computed from a source
where the tape can follow it), `OWNER` (an object holding the sources, e.g. the model of
`model.trainable_variables`, or a distribution or layer built from a variable outside the tape) or a `Break` (it depends on a source only through something the tape cannot
differentiate: NumPy, `float()`, `model.predict`, a non-differentiable op, `tf.stop_gradient`, or an op
run outside the tape's `with` block). A name with no state carries nothing known. Branches join towards
"may carry a gradient", so a break is reported only when every path from the sources is cut: the
analysis under-reports rather than invent a cause.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from tapelab.lint.tapes import GRADIENT_METHODS, Call, dotted

__all__ = ["TENSOR", "OWNER", "OWNED", "EMPTY", "Break", "Flow", "combine", "ops_name", "NON_DIFFERENTIABLE"]

TENSOR, OWNER = "tensor", "owner"
EMPTY = "empty"  # a new empty list, tuple or dict: what is appended to it later decides its state
OWNED = (".trainable_variables", ".trainable_weights", ".variables", ".weights")
_MODULES = {"tf", "np", "numpy", "keras", "ops", "math", "jnp"}
_OPS_PREFIXES = ("tf.", "tf.math.", "keras.ops.", "ops.", "tf.experimental.numpy.")
NON_DIFFERENTIABLE = {"argmax", "argmin", "round", "sign", "floor", "ceil", "equal", "not_equal", "greater",
                       "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_not",
                       "logical_xor", "is_nan", "is_finite", "is_inf", "isnan", "isfinite"}
_STOP = {"stop_gradient"}
_SIZES = {"len", "isinstance", "print", "str", "repr", "id", "type", "hasattr", "callable", "range",
          "tf.shape", "tf.size", "tf.rank", "tf.print", "ops.shape", "keras.ops.shape"}
_CONTAINERS = {"list", "tuple", "zip", "enumerate", "reversed", "sorted", "dict", "set", "iter", "next", "map"}
_ADDS = {"append", "extend", "insert", "appendleft", "add"}
_INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")


@dataclass(frozen=True)
class Break:
    """Where a value stops carrying gradients: the cause code, the node, and the text of the culprit."""

    code: str
    node: ast.AST
    what: str


def ops_name(name: str) -> str | None:
    """`argmax` for `tf.argmax`, `tf.math.argmax`, `keras.ops.argmax`...; None for other names."""
    for prefix in sorted(_OPS_PREFIXES, key=len, reverse=True):
        if name.startswith(prefix) and "." not in name[len(prefix):]:
            return name[len(prefix):]
    return None


_TENSOR_MAKERS = {"Variable", "constant", "convert_to_tensor", "identity", "cast"}


def _builds_object(func: str, op: str | None, receiver: object, callee: object) -> bool:
    """Whether a call outside the tape, given a source, builds an object that keeps a reference to it (a
    distribution, a bijector, a layer, any instance of a class the linter cannot see) rather than computing a
    tensor: a class's constructor or a plain function of the user's, not a TensorFlow or NumPy op, a method,
    or a call of a model that owns the sources (which computes at once). Such an object computes lazily when its methods run, and a method
    run inside the tape is recorded, so it is an owner of the source, not a value cut from it."""
    if op is not None or receiver == TENSOR or callee == OWNER:
        return False
    parts = func.split(".")
    if parts[-1] in _TENSOR_MAKERS:
        return False
    # a class (`tfd.Normal`, `keras.layers.Dense`, `Bijector`), or a plain function of the user's
    # (`make_head(v)`); a method (`tape.gradient`, `opt.apply`) computes and returns values
    # a factory classmethod (`tfd.Beta.experimental_from_mean_variance(m, v)`) builds an instance as well
    return any(p[:1].isupper() for p in parts[1:]) or parts[-1][:1].isupper() or (
        len(parts) == 1 and parts[0] not in _MODULES)


def _int_dtype(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in _INT_DTYPES
    return bool(node is not None and (dotted(node) or "").split(".")[-1] in _INT_DTYPES)


def combine(states: list) -> object:
    """TENSOR if any part carries a gradient, else the first break, else OWNER or nothing."""
    states = [s for s in states if s != EMPTY]
    if TENSOR in states:
        return TENSOR
    breaks = [s for s in states if isinstance(s, Break)]
    if breaks:
        return breaks[0]
    return OWNER if OWNER in states else None


def _join(first: object, second: object) -> object:
    """After two branches: a gradient may flow if it flows in either; a break only if both break (a list still
    empty on one branch is what the other branch put in it)."""
    if first == EMPTY or second == EMPTY:
        return second if first == EMPTY else first
    if TENSOR in (first, second):
        return TENSOR
    if OWNER in (first, second):
        return OWNER
    return first if isinstance(first, Break) and isinstance(second, Break) else None


class Flow:
    """Walk one scope up to `call`, giving each name its state with respect to the call's sources."""

    def __init__(self, call: Call, functions: dict | None = None):
        self.call = call
        self.functions = functions or {}  # the module's functions, followed one call deep (`calls`)
        self.follow = None  # how a call of one of them is followed: set by `calls.flow`
        self.returns: list[object] = []
        self.sources = {d for d in map(dotted, call.sources) if d}
        self.owners = {s[: -len(end)] for s in self.sources for end in OWNED if s.endswith(end)}
        self.env: dict[str, object] = {}

    # expressions -----------------------------------------------------------------------------
    def lookup(self, name: str) -> object:
        if name in self.sources:
            return TENSOR
        if any(name == o or name.startswith(o + ".") for o in self.owners):
            return OWNER
        return self.env.get(name)

    def value(self, node: ast.AST | None) -> object:
        """The state of expression `node` in the current environment."""
        if node is None or isinstance(node, (ast.Constant, ast.JoinedStr)):
            return None
        if isinstance(node, (ast.List, ast.Tuple, ast.Dict)) and not (node.keys if isinstance(node, ast.Dict) else
                                                                       node.elts):
            return EMPTY
        name = dotted(node)
        if name is not None:
            state = self.lookup(name)
            if state is None and isinstance(node, ast.Attribute):
                base = self.value(node.value)
                return OWNER if base == OWNER else None  # `.shape`, `.dtype` of a tensor carry no gradient
            return state
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Compare):
            parts = combine([self.value(n) for n in [node.left, *node.comparators]])
            return Break("non-differentiable", node, "a comparison") if parts in (TENSOR,) or isinstance(
                parts, Break) else parts
        if isinstance(node, ast.IfExp):
            return _join(self.value(node.body), self.value(node.orelse))
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return self._comprehension(node)
        if isinstance(node, ast.Lambda):
            return self.value(node.body)
        return combine([self.value(child) for child in ast.iter_child_nodes(node)])

    def _comprehension(self, node: ast.AST) -> object:
        saved = dict(self.env)
        for generator in node.generators:
            self.bind(generator.target, self.value(generator.iter))
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        state = combine([self.value(p) for p in parts])
        self.env = saved
        return state

    def _call(self, node: ast.Call) -> object:
        func = dotted(node.func) or ""
        args = [*node.args, *(k.value for k in node.keywords)]
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        receiver = self.value(node.func.value) if isinstance(node.func, ast.Attribute) and (
            func.split(".")[0] not in _MODULES) else None
        callee = self.value(node.func) if isinstance(node.func, ast.Name) else None  # `model(x)`: the model
        inputs = combine([receiver, callee, *(self.value(a) for a in args)])
        op = ops_name(func)
        text = ast.unparse(node.func)
        if func in _SIZES:
            return None
        applied = self.follow(self, node, args) if self.follow else None
        if applied is not None:  # a function of the module, or a `Lambda` layer (`calls.applied`)
            return applied
        if func in _CONTAINERS:
            return inputs
        if func.split(".")[0] in ("np", "numpy") or method == "numpy":
            return self._cut(inputs, "numpy-in-path", node, f"`{text}()`")
        if func in ("float", "int", "bool") or method in ("item", "tolist"):
            return self._cut(inputs, "python-number-in-path", node, f"`{text}()`")
        if method in ("predict", "predict_on_batch"):
            # Keras's `predict` only on what the sources show to be a model (`model` of
            # `model.trainable_variables`); any other object's `predict` may be its own method
            model = dotted(node.func.value)
            if model is not None and any(s == model + owned for s in self.sources for owned in OWNED):
                return self._cut(inputs, "predict-in-tape", node, f"`{text}()`")
            return inputs
        if op is None and self.value(node.func) == OWNER:
            # the owner of the sources called, or one of its methods: it computes from the sources whatever its
            # arguments are, so `model(tf.stop_gradient(x))` still reaches `model.trainable_variables`
            return TENSOR if self.lookup(func) == OWNER or self.recording(node) else OWNER
        if op in _STOP:
            return self._cut(inputs, "stop-gradient", node, f"`{text}`")
        if op == "where":
            return combine([self.value(a) for a in node.args[1:3]]) if len(node.args) >= 3 else None
        if op in NON_DIFFERENTIABLE or (op in ("cast", "saturate_cast") and _int_dtype(
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "dtype"), None))):
            return self._cut(inputs, "non-differentiable", node, f"`{text}`")
        if inputs == OWNER:
            return TENSOR if self.recording(node) else OWNER
        if inputs == TENSOR and not self.recording(node) and _builds_object(func, op, receiver, callee):
            return OWNER  # an object holding the source, which computes when its methods run inside the tape
        return inputs

    @staticmethod
    def _cut(inputs: object, code: str, node: ast.AST, what: str) -> object:
        """A new break at `node`, or the break its inputs already carry (the first cut names the cause)."""
        if isinstance(inputs, Break):
            return inputs
        return Break(code, node, what) if inputs is not None else None

    def recording(self, node: ast.AST) -> bool:
        """Whether the call's tape records `node` (it lies inside one of the tape's `with` blocks)."""
        return self.call.tape.records(node)

    def computed(self, node: ast.AST, where: ast.AST) -> object:
        """The state of `node` evaluated at `where`: a tensor op outside the tape breaks the path."""
        state = self.value(node)
        if state == TENSOR and isinstance(node, (ast.Call, ast.BinOp, ast.UnaryOp)) and not self.recording(where):
            func = node.func if isinstance(node, ast.Call) else None
            if not (func is not None and (dotted(func) or "") in _CONTAINERS):
                gradient = isinstance(func, ast.Attribute) and func.attr in GRADIENT_METHODS
                return Break("unrecorded-gradient" if gradient else "outside-tape", where, f"`{ast.unparse(node)}`")
        return state

    # statements ------------------------------------------------------------------------------
    def bind(self, target: ast.AST, state: object) -> None:
        name = dotted(target)
        if name is not None:
            for key in [k for k in self.env if k.startswith(name + ".")]:
                del self.env[key]
            if state is None:
                self.env.pop(name, None)
            else:
                self.env[name] = state
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind(element, state)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, state)

    def run(self, body: list[ast.stmt]) -> bool:
        """Execute `body` until the statement holding the call; True once the call is reached."""
        stop = self.call.node
        for stmt in body:
            if _contains(stmt, stop):
                for children in _bodies(stmt):
                    if any(_contains(child, stop) for child in children):
                        self._enter(stmt)
                        return self.run(children)
                return True
            self.execute(stmt)
        return False

    def _enter(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.bind(stmt.target, self.value(stmt.iter))

    def execute(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Return):
            self.returns.append(self.computed(stmt.value, stmt) if stmt.value is not None else None)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self._mutate(stmt.value, stmt)
        elif isinstance(stmt, ast.Assign):
            pairs = [t for t in stmt.targets if isinstance(t, (ast.Tuple, ast.List)) and isinstance(
                stmt.value, (ast.Tuple, ast.List)) and len(t.elts) == len(stmt.value.elts)]
            state = self.computed(stmt.value, stmt)
            for target in stmt.targets:
                if target in pairs:  # `a, b = [], []`: each name its own value
                    for name, value in zip(target.elts, stmt.value.elts):
                        self.bind(name, self.computed(value, stmt))
                else:
                    self.bind(target, state)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            state = self.computed(stmt.value, stmt)
            if isinstance(stmt, ast.AugAssign):
                state = combine([self.value(stmt.target), state])
                if state == TENSOR and not self.recording(stmt):
                    state = Break("outside-tape", stmt, f"`{ast.unparse(stmt)}`")
            self.bind(stmt.target, state)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bind(ast.Name(stmt.name), None)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                self.bind(target, None)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, None)
            for inner in stmt.body:
                self.execute(inner)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            before = dict(self.env)
            self._enter(stmt)
            for inner in stmt.body:
                self.execute(inner)
            self._merge(before, self.env)
            for inner in stmt.orelse:
                self.execute(inner)
        elif isinstance(stmt, (ast.If, ast.Try, ast.Match)):
            before = dict(self.env)
            outcomes = []
            for children in _bodies(stmt):
                self.env = dict(before)
                for inner in children:
                    self.execute(inner)
                outcomes.append(self.env)
            self.env = outcomes[0] if outcomes else before
            for other in outcomes[1:]:
                self._merge(self.env, other)
            if isinstance(stmt, ast.If) and not stmt.orelse:
                self._merge(before, self.env)

    def _mutate(self, call: ast.Call, stmt: ast.stmt) -> None:
        """`items.append(x)` and its kin: the list now holds what was put in it (a list the scope did not start
        empty holds unknown things too, so only a gradient-carrying item changes what is known of it)."""
        func = call.func
        name = dotted(func.value) if isinstance(func, ast.Attribute) else None
        if name is None or func.attr not in _ADDS or not call.args:
            return
        item = combine([self.computed(a, stmt) for a in call.args[-1:]])
        old = self.env.get(name)
        if old == EMPTY:
            state = item if item is not None else EMPTY
        elif old is None:
            state = item if item in (TENSOR, OWNER) else None
        else:
            state = combine([old, item])
        self.bind(ast.Name(name), state)

    def _merge(self, first: dict[str, object], second: dict[str, object]) -> None:
        merged = {}
        for key in first.keys() | second.keys():
            state = _join(first.get(key), second.get(key))
            if state is not None:
                merged[key] = state
        self.env = merged


def _bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a compound statement (branches of if/try/match, loop bodies)."""
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    lists = [getattr(stmt, name) for name in ("body", "orelse", "finalbody") if getattr(stmt, name, None)]
    lists += [handler.body for handler in getattr(stmt, "handlers", [])]
    return [] if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else lists


def _contains(outer: ast.AST, node: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and (
        node.end_lineno, node.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)
