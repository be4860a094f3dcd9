"""What `fit` differentiates without a tape in sight: the loss function given to `compile`, and the layers of
a model that the module compiles (a `Lambda`'s function, ops applied between functional layers).

The path rules follow a tape's sources to its target; `fit` has the same path, from the model's input through
its layers to the compiled loss, and the same cuts break it. These checks report them under the same rules
(`non-differentiable`, `numpy-in-path`, ...; `not-connected` for a loss that never reads its prediction), on a
model the module itself builds and compiles: a model that is only used to predict is left alone.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

from tapelab.lint.calls import Always, function_cut, make_flow
from tapelab.lint.flow import Break
from tapelab.lint.model import Finding, checker, finding
from tapelab.lint.tapes import Call, dotted, nodes, statements

__all__ = ["check_fit"]

_MODELS = {"Model", "Sequential", "Functional"}


def _fn(node: ast.AST | None, functions: dict) -> ast.AST | None:
    """The function a loss or `Lambda` names: a `lambda`, a `def` of the module, or an op (`ops.argmax`)."""
    if isinstance(node, ast.Name) and node.id in functions:
        return functions[node.id]
    return node if isinstance(node, (ast.Lambda, ast.Attribute)) else None


def _loss_findings(call: ast.Call, functions: dict) -> Iterator[Finding]:
    """A loss function given to `compile` whose result depends on `y_pred` only through a cut, or not at all."""
    given = next((k.value for k in call.keywords if k.arg == "loss"), call.args[1] if len(call.args) > 1 else None)
    for item in given.elts if isinstance(given, (ast.List, ast.Tuple)) else [given]:
        fn = _fn(item, functions)
        if not isinstance(fn, (ast.FunctionDef, ast.Lambda)) or len(fn.args.args) < 2:
            continue
        cut = function_cut(fn, 1, functions)
        name = getattr(fn, "name", "the lambda")
        if isinstance(cut, Break):
            yield finding(cut.code, cut.node, f"the loss `{name}` given to `compile` (line {call.lineno}) depends "
                          f"on its prediction only through {cut.what}, which has no gradient, so fit finds no "
                          "gradients")
            continue
        y_pred = fn.args.args[1].arg
        body = fn.body if isinstance(fn, ast.FunctionDef) else [fn.body]
        if not any(isinstance(n, ast.Name) and n.id == y_pred for part in body for n in ast.walk(part)):
            at = next((n for part in body for n in ast.walk(part) if isinstance(n, ast.Return)), body[0])
            yield finding("not-connected", at, f"the loss `{name}` given to `compile` (line {call.lineno}) never "
                          f"reads its prediction `{y_pred}`, so it does not depend on the model and fit finds no "
                          "gradients")


def _sequential_cuts(model: ast.Call, functions: dict) -> Iterator[Break]:
    """The cut of each `Lambda` in `Sequential([...])` that has a layer to train before it."""
    layers = model.args[0].elts if model.args and isinstance(model.args[0], (ast.List, ast.Tuple)) else []
    for index, layer in enumerate(layers):
        if not (isinstance(layer, ast.Call) and (dotted(layer.func) or "").split(".")[-1] == "Lambda" and layer.args):
            continue
        trained = [e for e in layers[:index] if (dotted(getattr(e, "func", None)) or "").split(".")[-1] != "Input"]
        cut = function_cut(_fn(layer.args[0], functions), 0, functions) if trained else None
        if isinstance(cut, Break):
            yield cut


def _functional_cut(model: ast.Call, body: list[ast.stmt], functions: dict) -> object:
    """The state of a functional model's outputs, followed from its inputs through its layers."""
    inputs = next((k.value for k in model.keywords if k.arg == "inputs"), model.args[0] if model.args else None)
    outputs = next((k.value for k in model.keywords if k.arg == "outputs"), model.args[1] if len(model.args) > 1
                   else None)
    names = [e for e in (inputs.elts if isinstance(inputs, (ast.List, ast.Tuple)) else [inputs])
             if isinstance(e, ast.Name)]
    if outputs is None or not names:
        return None
    flow = make_flow(Call(Always(), model, outputs, tuple(names)), functions)
    flow.run(body)
    return flow.value(outputs)


def _owners(tree: ast.Module, compiles: list[ast.Call]) -> dict[int, tuple[ast.AST, list[ast.Call]]]:
    """The innermost function (or the module) around each `compile` call, with the calls it holds."""
    defs = [n for n in nodes(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    owners: dict[int, tuple[ast.AST, list[ast.Call]]] = {}
    for call in compiles:
        around = [d for d in defs if d.lineno <= call.lineno <= d.end_lineno]
        owner = max(around, key=lambda d: d.lineno) if around else tree
        owners.setdefault(id(owner), (owner, []))[1].append(call)
    return owners


@checker("Lambda", "y_pred", ("compile", "Input"))  # what fit trains: a Lambda, a loss, a functional model
def check_fit(tree: ast.Module) -> Iterator[Finding]:
    """Cuts in what `fit` differentiates: compiled losses, and models the module builds and compiles."""
    compiles = [n for n in nodes(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "compile"]
    if not compiles:
        return
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    seen: set[tuple[int, int]] = set()
    for owner, calls in _owners(tree, compiles).values():
        compiled = {dotted(c.func.value) for c in calls}
        for call in calls:
            yield from _loss_findings(call, functions)
        body = owner.body
        for stmt in statements(body):
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and (
                    dotted(stmt.value.func) or "").split(".")[-1] in _MODELS):
                continue
            name = next((d for d in map(dotted, stmt.targets) if d in compiled), None)
            if name is None:
                continue
            kind = (dotted(stmt.value.func) or "").split(".")[-1]
            cuts = list(_sequential_cuts(stmt.value, functions)) if kind == "Sequential" else [
                _functional_cut(stmt.value, body, functions)]
            for cut in (c for c in cuts if isinstance(c, Break)):
                where = (getattr(cut.node, "lineno", 0), getattr(cut.node, "col_offset", 0))
                if where not in seen:
                    seen.add(where)
                    yield finding(cut.code, cut.node, f"`{name}` is compiled to train (line {stmt.lineno}), but its "
                                  f"output depends on the layers before {cut.what} only through it, which has no "
                                  "gradient: those layers never train")
