"""The AST transforms behind mutants.py: each models one real mistake with `tf.GradientTape`
(or a generic slip: an operator, a comparison, a constant) and yields the sites where it applies.

A transform takes a parsed answer and yields sites (kind, node, edit), or (kind, node, edit,
anchor) when the site is an operator token that follows `anchor`; `edit(node, parents)` applies
the mistake to a copy of the tree, given that copy's node and its child -> parent map.
"""
from __future__ import annotations

import ast
import copy
from typing import Callable, Iterator

__all__ = ["TRANSFORMS", "TAPE_KINDS"]

# Kinds that model a tape-specific mistake; the visible message should name them (see harness).
TAPE_KINDS = (
    "drop_watch", "outside_with", "wrong_target", "wrong_source", "drop_persistent", "numpy_in_tape",
    "asarray_in_tape", "rebind_assign", "swap_apply_gradients", "drop_training", "drop_del_tape",
)
_GRADIENT_CALLS = {"gradient", "jacobian", "batch_jacobian"}
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_FLIPS = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq,
          ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_CMP = {ast.Lt: "<", ast.GtE: ">=", ast.Gt: ">", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!=",
        ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
_REBIND = {"assign_sub": ast.Sub, "assign_add": ast.Add, "assign": None}

Edit = Callable[[ast.AST, dict], None]


def _container(parents: dict, stmt: ast.stmt) -> list:
    """The statement list that holds `stmt`."""
    parent = parents[stmt]
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    raise ValueError(f"no statement list holds {ast.dump(stmt)[:60]}")


def _remove(stmt: ast.stmt, parents: dict) -> None:
    block = _container(parents, stmt)
    block[:] = [s for s in block if s is not stmt] or [ast.Pass()]


def _is_tape_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and "GradientTape" in ast.unparse(node.func)


def _tape_withs(tree: ast.AST) -> Iterator[ast.With]:
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(_is_tape_call(i.context_expr) for i in node.items):
            yield node


def _tape_names(tree: ast.AST) -> set[str]:
    names = {i.optional_vars.id for w in _tape_withs(tree) for i in w.items
             if isinstance(i.optional_vars, ast.Name) and _is_tape_call(i.context_expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_tape_call(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _method_calls(tree: ast.AST, names) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names:
            yield node


def _inside(withs, kinds) -> Iterator[ast.AST]:
    """Nodes of `kinds` anywhere in the bodies of `withs`."""
    for w in withs:
        for stmt in w.body:
            for node in ast.walk(stmt):
                if isinstance(node, kinds):
                    yield node


# ---- tape-specific transforms -------------------------------------------------------------------

def drop_watch(tree):
    for node in ast.walk(tree):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "watch"):
            yield "drop_watch", node, lambda n, p: _remove(n, p)


def outside_with(tree):
    """Each assignment directly in a tape's `with` body, moved to just after the block."""
    def move(stmt, parents):
        with_node = parents[stmt]
        _remove(stmt, parents)
        outer = _container(parents, with_node)
        outer.insert(next(i for i, s in enumerate(outer) if s is with_node) + 1, stmt)

    for w in _tape_withs(tree):
        for stmt in w.body:
            if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                yield "outside_with", stmt, move


def _scope_names(tree: ast.AST, call: ast.Call, params: bool) -> list[str]:
    """Names assigned before `call` in the function around it (or the module), tapes excluded;
    with `params`, the function's parameters first."""
    scope = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(c is call for c in ast.walk(node)):
            scope = node  # ast.walk is breadth-first: the last match is the innermost function
    names = []
    if params and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = scope.args
        names += [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x]
    for node in ast.walk(scope):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        for target in targets:
            if target.end_lineno < call.lineno:  # on an earlier line: not the call's own statement
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    tapes = _tape_names(tree)
    return [n for i, n in enumerate(names) if n not in names[:i] and n not in tapes]


def _replace_with_name(name: str) -> Edit:
    def edit(node, parents):
        parent = parents[node]
        for field, value in ast.iter_fields(parent):
            if value is node:
                setattr(parent, field, ast.Name(name, ast.Load()))
            elif isinstance(value, list):
                value[:] = [ast.Name(name, ast.Load()) if v is node else v for v in value]
    return edit


def wrong_target(tree):
    """The first argument of `.gradient(` (or `jacobian`) replaced by another name assigned before it."""
    for call in _method_calls(tree, _GRADIENT_CALLS):
        if call.args:
            current = ast.unparse(call.args[0])
            for name in _scope_names(tree, call, params=False):
                if name != current:
                    yield f"wrong_target({name})", call.args[0], _replace_with_name(name)


def wrong_source(tree):
    """The sources (or each element of a list of sources) replaced by a parameter or an earlier name."""
    for call in _method_calls(tree, _GRADIENT_CALLS):
        if len(call.args) < 2:
            continue
        source = call.args[1]
        slots = source.elts if isinstance(source, (ast.List, ast.Tuple)) else [source]
        for slot in slots:
            for name in _scope_names(tree, call, params=True):
                if name != ast.unparse(slot) and name != ast.unparse(call.args[0]):
                    yield f"wrong_source({name})", slot, _replace_with_name(name)


def drop_persistent(tree):
    for node in ast.walk(tree):
        if _is_tape_call(node):
            for kw in node.keywords:
                if kw.arg == "persistent":
                    yield "drop_persistent", kw.value, _drop_keyword("persistent")


def _drop_keyword(name: str) -> Edit:
    def edit(value, parents):
        call = parents[parents[value]]
        call.keywords = [k for k in call.keywords if k.arg != name]
    return edit


def numpy_in_tape(tree):
    for stmt in _inside(_tape_withs(tree), (ast.Assign, ast.AugAssign)):
        yield "numpy_in_tape", stmt, _wrap_value(lambda v: ast.Call(ast.Attribute(v, "numpy", ast.Load()), [], []))


def asarray_in_tape(tree):
    for stmt in _inside(_tape_withs(tree), (ast.Assign, ast.AugAssign)):
        yield "asarray_in_tape", stmt, _wrap_value(
            lambda v: ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "asarray", ast.Load()), [v], []))


def _wrap_value(make: Callable[[ast.expr], ast.expr]) -> Edit:
    """Replace a statement's value `v` by `make(v)`; the site is named after the statement."""
    def edit(stmt, parents):
        stmt.value = make(stmt.value)
    return edit


def rebind_assign(tree):
    """`v.assign_sub(e)` -> `v = v - e` (and `assign_add`, `assign`), as a statement."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if (isinstance(call.func, ast.Attribute) and call.func.attr in _REBIND and len(call.args) == 1
                and isinstance(call.func.value, (ast.Name, ast.Attribute, ast.Subscript))):
            yield "rebind_assign", node, _rebind


def _rebind(stmt, parents):
    call = stmt.value
    op, receiver, value = _REBIND[call.func.attr], call.func.value, call.args[0]
    target = copy.deepcopy(receiver)
    target.ctx = ast.Store()
    new_value = value if op is None else ast.BinOp(copy.deepcopy(receiver), op(), value)
    block = _container(parents, stmt)
    block[:] = [ast.Assign([target], new_value) if s is stmt else s for s in block]


def swap_apply_gradients(tree):
    """`apply_gradients(zip(grads, vars))` -> `zip(vars, grads)`; Keras 3 `apply(grads, vars)` -> `apply(vars, grads)`."""
    for call in _method_calls(tree, {"apply_gradients"}):
        pairs = call.args[:1]
        if pairs and isinstance(pairs[0], ast.Call) and ast.unparse(pairs[0].func) == "zip" and len(pairs[0].args) == 2:
            yield "swap_apply_gradients", pairs[0], lambda n, p: n.args.reverse()
    for call in _method_calls(tree, {"apply"}):
        if len(call.args) == 2 and not call.keywords:
            yield "swap_apply_gradients", call.args[0], lambda n, p: p[n].args.reverse()


def drop_training(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "training" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                    yield "drop_training", kw.value, _drop_keyword("training")


def drop_del_tape(tree):
    tapes = _tape_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name) and (target.id in tapes or "tape" in target.id):
                    yield "drop_del_tape", target, _drop_delete_target


def _drop_delete_target(target, parents):
    stmt = parents[target]
    stmt.targets = [t for t in stmt.targets if t is not target]
    if not stmt.targets:
        _remove(stmt, parents)


# ---- generic transforms -------------------------------------------------------------------------

def flip_sign(tree):
    """Unary minus on a returned or assigned value; an existing leading minus removed."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Return, ast.Assign, ast.AugAssign)) and node.value is not None:
            yield "flip_sign", node, _wrap_value(_negate)


def _negate(value: ast.expr) -> ast.expr:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        return value.operand
    return ast.UnaryOp(ast.USub(), value)


def drop_factor(tree):
    """One operand of a `*` removed (either side); the divisor of a `/` removed."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            yield "drop_left_factor", node, _replace_by(lambda n: n.right)
            yield "drop_right_factor", node, _replace_by(lambda n: n.left)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            yield "drop_divisor", node, _replace_by(lambda n: n.left)


def _replace_by(pick) -> Edit:
    def edit(node, parents):
        replacement, parent = pick(node), parents[node]
        for field, value in ast.iter_fields(parent):
            if value is node:
                setattr(parent, field, replacement)
            elif isinstance(value, list):
                value[:] = [replacement if v is node else v for v in value]
    return edit


def swap_operator(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _OPS:
            for new in _OPS:
                if new is not type(node.op):
                    yield f"op({_OPS[type(node.op)]},{_OPS[new]})", node, _set_op(new)


def _set_op(new) -> Edit:
    def edit(node, parents):
        node.op = new()
    return edit


def flip_compare(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                flipped = _FLIPS[type(op)]
                anchor = node.left if i == 0 else node.comparators[i - 1]
                yield f"compare({_CMP[type(op)]},{_CMP[flipped]})", node, _flip_at(i, flipped), anchor


def _flip_at(i, flipped) -> Edit:
    def edit(node, parents):
        node.ops[i] = flipped()
    return edit


def mutate_constant(tree):
    """c -> c + 1, c -> 0, 2 -> 1, for numeric literals (not booleans)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            c = node.value
            yield "const(+1)", node, _set_constant(c + 1)
            if c != 0:
                yield "const(0)", node, _set_constant(type(c)(0))
            if c == 2:
                yield "const(2->1)", node, _set_constant(type(c)(1))


def _set_constant(value) -> Edit:
    def edit(node, parents):
        node.value = value
    return edit


TRANSFORMS = (
    drop_watch, outside_with, wrong_target, wrong_source, drop_persistent, numpy_in_tape, asarray_in_tape,
    rebind_assign, swap_apply_gradients, drop_training, drop_del_tape,
    flip_sign, drop_factor, swap_operator, flip_compare, mutate_constant,
)
