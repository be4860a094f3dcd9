"""Read a recorded run as a dataflow graph: where a source's path to the loss breaks, and why.

Walking the ops in the order they ran, a tensor is *carried* when the tape can differentiate it back
to the source, and *reached* when its value comes from the source only through an op that cuts the
gradient. The first cutting op on the way to the loss is the break. An op cuts when it ran while the
tape was not recording, is `StopGradient`, has no registered gradient or one registered as none
(`ops.NotDifferentiable`), makes only non-float outputs (an int cast, argmax, a comparison), or is a
rounding op whose gradient function returns None. An assignment carries a value into a variable's
state, which no gradient crosses (so does a new variable's initial value); an op given a variable reads
it by a fast path no op callback sees, so which assigned variables the loss reads is asked of the tape
(`assigned_and_read`). A value that leaves TensorFlow (`.numpy()`, a NumPy function) runs
no op: its path just ends at the last op that used it (`not-connected`), and `host_data_in` says
whether the loss was built from a tensor made from host data during the run, as such a value returns.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tensorflow.python.framework import ops as tf_ops

from tapelab.diagnose.record import Location, Op, Recorder, tensor_id

__all__ = ["Break", "ancestry", "assigned_and_read", "cut_reason", "dead_relu", "excused", "find_break", "host_data_in",
           "non_finite_origin", "reads"]

ROUNDING = frozenset({"Round", "Floor", "Ceil", "Rint"})  # registered gradients that return None
_ASSIGN = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                     "ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub"})
_SELECT = frozenset({"Select", "SelectV2"})


@dataclass(frozen=True)
class Break:
    """Where a path stops: a catalogue cause code, the op (or call) and the user's line."""

    code: str
    op: str
    where: Location | None
    call: str = ""  # the user's call that cut the path, when the source shows it (a NumPy function)
    trail: tuple[Location, ...] = ()  # the user's frames that ran the op, innermost first
    after: Location | None = None  # where `op` ran, when `where` is the line of `call`

    def __str__(self) -> str:
        return f"`{self.op}` at {self.where}" if self.where else f"`{self.op}`"


def cut_reason(op: Op) -> str | None:
    """The cause code for why the tape carries no gradient through `op`, or None if it does."""
    if not op.recorded:
        return "outside-tape"
    if op.kind in ("StopGradient", "PreventGradient"):
        return "stop-gradient"
    try:
        registered = tf_ops._gradient_registry.lookup(op.kind)
    except LookupError:
        return "no-gradient-registered"
    floats = [t for t in op.outputs if t.dtype.is_floating or t.dtype.is_complex]
    if registered is None or not floats or op.kind in ROUNDING:
        return "non-differentiable"
    return None


def reads(record: Recorder, source_id: int) -> list[Op]:
    """The ops that read the source: the variable's handle, or the watched tensor itself."""
    return [op for op in record.ops if source_id in op.input_ids]


def find_break(record: Recorder, source_id: int, loss_id: int | None,
               read_by_loss: frozenset[int] = frozenset()) -> Break | None:
    """Where the source's path to the loss breaks, or None when it does not (or was never read).

    A source read but never reaching the loss gives a `not-connected` break at the last op that used
    its value (also when that value left TensorFlow: the caller reads the source for the call).
    `read_by_loss` holds the handles of variables the tape says the loss is computed from: an op given a
    variable itself reads it by a fast path no op callback sees, so a value assigned into such a variable
    reaches the loss through a read the recording lacks.
    """
    carried: set[int] = {source_id}
    reached: dict[int, Break] = {}  # tensor or handle id -> the first break on its way here
    last_use: Op | None = None
    for op in record.ops:
        ins = op.input_ids
        if not any(i in carried or i in reached for i in ins):
            continue
        last_use = op
        if op.kind in _ASSIGN:  # the value goes into the variable's state; later reads carry none
            if any(i in carried or i in reached for i in ins[1:]):
                reached[ins[0]] = Break("state-change", op.kind, op.where)
            continue
        reason = cut_reason(op) if any(i in carried for i in ins) else None
        inherited = next((reached[i] for i in ins if i in reached), None)
        from_source = any(i in carried for i in ins)
        for out in op.outputs:
            floating = out.dtype.is_floating or out.dtype.is_complex
            if from_source and reason is None and floating:
                carried.add(out._id)
            elif from_source:
                reached[out._id] = Break(reason or "non-differentiable", op.kind, op.where)
            else:
                reached[out._id] = inherited
    if loss_id in carried:
        return None
    if loss_id in reached and reached[loss_id] is not None:
        return reached[loss_id]
    assigned = next((reached[h] for h in sorted(read_by_loss) if h in reached and reached[h] is not None), None)
    if assigned is not None:
        return assigned
    if last_use is not None:
        return Break("not-connected", last_use.kind, last_use.where, trail=last_use.trail)
    return None


def assigned_and_read(record: Recorder, tape, loss) -> frozenset[int]:
    """Handles of the variables assigned during the run that the loss is computed from, by the tape's own
    account (their gradient is not None): an op given a variable reads it unseen by the recorder. Only a
    persistent tape can be asked again; otherwise none are known."""
    assigned = {op.input_ids[0] for op in record.ops if op.kind in _ASSIGN and op.input_ids}
    variables = [v for v in tape.watched_variables() if tensor_id(v) in assigned]
    if not variables or not tape._persistent:
        return frozenset()
    try:
        grads = tape.gradient(loss, variables)
    except (LookupError, RuntimeError, TypeError, ValueError):
        return frozenset()
    return frozenset(tensor_id(v) for v, g in zip(variables, grads) if g is not None)


def host_data_in(record: Recorder, loss_id: int | None) -> bool:
    """Whether the loss was computed from a tensor made during the run by no recorded op: one TensorFlow
    created from host data (a NumPy array, a Python number), as a value that left TensorFlow comes back."""
    made = {i for op in record.ops for i in op.output_ids}
    return any(i >= record.start and i not in made for i in ancestry(record, loss_id) if i is not None)


def _finite(tensor) -> bool:
    return not (tensor.dtype.is_floating or tensor.dtype.is_complex) or bool(np.isfinite(tensor.numpy()).all())


_SINGULAR = {  # op -> (test of its first input where its derivative is infinite, what that point is)
    "Sqrt": (lambda x: x == 0, "0, where the derivative of sqrt is infinite"),
    "Rsqrt": (lambda x: x == 0, "0, where the derivative of rsqrt is infinite"),
    "Log": (lambda x: x == 0, "0, where the derivative of log is infinite"),
    "Acos": (lambda x: np.abs(x) == 1, "±1, where the derivative of acos is infinite"),
    "Asin": (lambda x: np.abs(x) == 1, "±1, where the derivative of asin is infinite"),
    "Pow": (lambda x: x == 0, "0, where a fractional power has an infinite derivative"),
}


def ancestry(record: Recorder, tensor_id: int | None) -> set[int]:
    """The ids of `tensor_id` and every tensor it was computed from, through the recorded ops."""
    producer = record.producer()
    stack, seen = [tensor_id], set()
    while stack:
        tensor = stack.pop()
        if tensor is None or tensor in seen:
            continue
        seen.add(tensor)
        if tensor in producer:
            stack.extend(producer[tensor].input_ids)
    return seen


def excused(record: Recorder, covers) -> set[int]:
    """Ids of the non-finite tensors that are intended: made or read by an allowed op (`covers(op)`), or
    carried on from such a tensor by an op that makes no new NaN (an `-inf` mask added to scores)."""
    found: set[int] = set()
    for op in record.ops:
        if covers(op):
            found |= {t._id for t in op.inputs + op.outputs if hasattr(t, "_id") and not _finite(t)}
        elif found.intersection(op.input_ids) and not any(_has_nan(t) for t in op.outputs):
            found |= {t._id for t in op.outputs if not _finite(t)}
    return found


def _at(op: Op) -> str:
    return f"at {op.where}" if op.where else "(inside library code, no line of yours)"


def _has_nan(tensor) -> bool:
    return (tensor.dtype.is_floating or tensor.dtype.is_complex) and bool(np.isnan(tensor.numpy()).any())


def non_finite_origin(record: Recorder, loss_id: int | None, covers=lambda op: op.allowed) -> tuple[Break, str] | None:
    """The op where a NaN or Inf first appears, and what happened there, from the recorded values.

    First an op whose inputs are finite and whose output is not (log(0), overflow, a division by 0);
    if a later `tf.where` picks around that value its output is finite but its gradient is not (the
    `tf.where` NaN trap). Else an op reading a value that was already non-finite before the run (the
    data), else an op evaluated where its derivative is infinite (sqrt at 0). Ops that `covers` allows,
    and the values they excuse (`excused`), are never named.
    """
    # without a loss (the run stopped early), every recorded value counts
    feeding = ancestry(record, loss_id) if loss_id is not None else {i for op in record.ops for i in op.output_ids}
    fine = excused(record, covers)

    def finite(tensor) -> bool:
        return getattr(tensor, "_id", None) in fine or _finite(tensor)

    for index, op in enumerate(record.ops):
        if not feeding.intersection(op.output_ids) or covers(op):
            continue
        if not op.recorded or all(finite(t) for t in op.outputs) or not all(finite(t) for t in op.inputs):
            continue
        bad = {t._id for t in op.outputs}
        for later in record.ops[index + 1:]:
            if later.kind in _SELECT and bad & set(later.input_ids) and all(_finite(t) for t in later.outputs):
                return (Break("where-nan-trap", "tf.where", later.where),
                        f"`tf.where` at {later.where} picks around the non-finite values `{op.kind}` made "
                        f"{'on that line' if later.where == op.where else f'at {op.where}'}, but the gradient flows into both branches, and 0 times Inf is NaN")
            if bad & set(later.input_ids):
                bad |= set(later.output_ids)
        return Break("non-finite-value", op.kind, op.where), f"`{op.kind}` {_at(op)} turned finite inputs into Inf or NaN"
    made = {i for op in record.ops for i in op.output_ids}
    for op in record.ops:
        given = [t for t in op.inputs if t._id not in made and not finite(t)]
        if given and feeding.intersection(op.output_ids) and not covers(op):
            return (Break("non-finite-input", op.kind, op.where),
                    f"`{op.kind}` {_at(op)} reads a tensor that held NaN or Inf before the run (the data?)")
    for op in record.ops:
        test = _SINGULAR.get(op.kind)
        if (test and op.recorded and not covers(op) and feeding.intersection(op.output_ids) and op.inputs
                and op.inputs[0].dtype.is_floating):
            if bool(np.any(test[0](op.inputs[0].numpy()))):
                return Break("infinite-derivative", op.kind, op.where), f"`{op.kind}` {_at(op)} has an input of {test[1]}"
    return None


def dead_relu(record: Recorder, loss_id: int | None) -> Op | None:
    """The first relu feeding the loss whose output is 0 everywhere: no gradient passes it."""
    feeding = ancestry(record, loss_id)
    for op in record.ops:
        if op.kind in ("Relu", "Relu6") and feeding.intersection(op.output_ids) and not op.outputs[0].numpy().any():
            return op
    return None
