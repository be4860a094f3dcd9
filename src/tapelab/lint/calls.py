"""Following calls one level deep: a function of the module called on the path (a loss function), a `Lambda`
layer applied to a tensor, and the state of a tape's target with them in view.

A function is analysed on its own, with one parameter as the source and everything inside recorded (whatever
tape calls it records its body): if every `return` reaches that parameter only through a cut, a call passing a
gradient-carrying value there is cut too. Calls inside it are not followed further, so the analysis stays one
level deep and cannot recurse.
"""
from __future__ import annotations

import ast

from tapelab.lint.flow import NON_DIFFERENTIABLE, OWNER, TENSOR, Break, Flow, ops_name
from tapelab.lint.tapes import Call, dotted

__all__ = ["target_state", "make_flow", "applied", "function_cut", "Always"]


def make_flow(call: Call, functions: dict | None = None) -> Flow:
    """A flow for `call` that follows calls of the module's `functions` (and `Lambda` layers) one level deep."""
    flow = Flow(call, functions)
    flow.follow = applied
    return flow


def applied(self: Flow, node: ast.Call, args: list[ast.AST]) -> object:
    """The state of a call of a function of this module, or of a `Lambda(fn)` layer applied to a tensor, when
    every argument that carries a gradient reaches the function's result only through a break: that break."""
    layer = node.func
    if isinstance(layer, ast.Call) and isinstance(layer.func, ast.Name) and layer.func.id in self.functions:
        made = self.functions[layer.func.id].body[-1]  # `def ArgMax(): return Lambda(...)`, then `ArgMax()(x)`
        layer = made.value if isinstance(made, ast.Return) else layer
    if isinstance(layer, ast.Call) and (dotted(layer.func) or "").split(".")[-1] == "Lambda":
        fn = layer.args[0] if layer.args else None
        live = [0] if args and self.value(args[0]) in (TENSOR, OWNER) else []
    elif isinstance(node.func, ast.Name) and node.func.id in self.functions:
        fn = self.functions[node.func.id]
        live = [i for i, a in enumerate(node.args) if not isinstance(a, ast.Starred)
                and self.value(a) in (TENSOR, OWNER)]
        if any(self.value(k.value) in (TENSOR, OWNER) for k in node.keywords):
            return None
    else:
        return None
    cuts = [function_cut(fn, i, self.functions) for i in live]
    return cuts[0] if cuts and all(isinstance(c, Break) for c in cuts) else None


def target_state(call: Call, body: list[ast.stmt], functions: dict | None = None) -> object:
    """The state of the call's target where the call is made (None when the target is not followed)."""
    if call.target is None or not call.tape.blocks:
        return None
    flow = make_flow(call, functions)
    flow.run(body)
    state = flow.computed(call.target, call.node)
    target = call.target
    if state == OWNER and isinstance(target, ast.Call) and not flow.recording(call.node) and any(
            flow.value(a) == TENSOR for a in target.args):
        # a target is a tensor, whatever else a call may build: one computed after the block is not recorded
        return Break("outside-tape", call.node, f"`{ast.unparse(target)}`")
    return state


class Always:
    """A tape recording everything: a function's body, analysed on its own, is all inside whatever tape calls it."""

    blocks = (True,)

    def records(self, node: ast.AST) -> bool:
        return True


class _Nowhere:
    lineno = end_lineno = 10 ** 9
    col_offset = end_col_offset = 0


def function_cut(fn: ast.AST | None, index: int, functions: dict | None = None) -> object:
    """How a function's result depends on its parameter `index`: a Break when every return reaches it only
    through a break, TENSOR when one may carry its gradient, None when not known. `fn` is a `def`, a `lambda`,
    or an op named directly (`Lambda(ops.argmax)`); calls inside it are not followed further."""
    if isinstance(fn, (ast.Attribute, ast.Name)) and not (isinstance(fn, ast.Name) and fn.id in (functions or {})):
        op = ops_name(dotted(fn) or "") or ("argmax" if (dotted(fn) or "").endswith(".argmax") else None)
        return Break("non-differentiable", fn, f"`{ast.unparse(fn)}`") if op in NON_DIFFERENTIABLE else None
    if isinstance(fn, ast.Name):
        fn = functions[fn.id]
    if not isinstance(fn, (ast.FunctionDef, ast.Lambda)):
        return None
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if index >= len(params):
        return None
    flow = Flow(Call(Always(), _Nowhere(), None, (ast.Name(params[index]),)))  # not followed further
    if isinstance(fn, ast.Lambda):
        return flow.value(fn.body)
    flow.run(fn.body)
    states = [s for s in flow.returns]
    if states and all(isinstance(s, Break) for s in states):
        return states[0]
    return TENSOR if TENSOR in states else None
