"""One variable's verdict: its status, the cause established for it, and the explanation with the fix.

Each function here turns a fact diagnose established (a recorded break, a non-finite origin, the
variable's own flags) into an `Entry`. When no cause is established the entry says what is known
(the gradient is None, the ops the path took) and names no cause.
"""
from __future__ import annotations

from dataclasses import dataclass

from tapelab.diagnosis.paths import Break
from tapelab.diagnosis.record import Location

__all__ = ["CAUSES", "Entry", "for_break", "for_non_finite"]

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
    "non_finite": "a gradient holding NaN or Inf (log of 0, sqrt at 0, an overflow, the `tf.where` trap)",
    "sliced_source": "a slice of a variable passed as the source: a new tensor the tape never watched",
    "tape_used_twice": "a non-persistent tape asked for gradients a second time",
}


@dataclass(frozen=True)
class Entry:
    """One variable's verdict: gradient status, the established cause (course id and catalogue code),
    the op and user line where its path breaks, and the gradient's norm when it has one."""

    name: str
    status: str  # "ok", "zero", "None", "non_finite" or "untracked"
    cause: str | None = None  # a key of CAUSES, or None when no cause is established
    explanation: str = ""
    code: str | None = None  # the tapelab.causes catalogue code
    op: str | None = None
    where: Location | None = None
    norm: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


_BREAK_CAUSE = {"stop-gradient": "stop_gradient", "non-differentiable": "non_differentiable",
                "numpy-in-path": "numpy", "state-change": "state_change", "outside-tape": "loss_outside_tape",
                "unrecorded-gradient": "loss_outside_tape", "no-gradient-registered": "no_gradient_registered",
                "not-connected": "not_connected"}


def for_break(name: str, found: Break) -> Entry:
    """The entry for a None gradient whose path the recorded run shows breaking at `found`."""
    at = f"at {found.where}" if found.where else "(no line of yours ran it)"
    code = found.code
    if code == "outside-tape" and found.where and ".gradient(" in found.where.text:
        code = "unrecorded-gradient"
    text = {
        "stop-gradient": f"The path from `{name}` to the loss ends at `tf.stop_gradient` {at}, which blocks "
                         "gradients by design. Did you leave it in by mistake? Remove it from the path you want to train.",
        "non-differentiable": f"The path from `{name}` to the loss ends at `{found.op}` {at}, which has no gradient "
                              "(or makes only integers). Did you mean a smooth version (softmax instead of argmax, "
                              "keep floats instead of casting to int, or a straight-through estimator for round)?",
        "numpy-in-path": f"The value `{found.op}` computed from `{name}`"
                         f"{f' at {found.after}' if found.after and found.after != found.where else ''} leaves "
                         f"TensorFlow for {'Python' if found.call.startswith(('float(', 'int(', 'complex(')) else 'NumPy'} "
                         f"through `{found.call}` {at}, and the tape records TensorFlow operations only. "
                         "Did you mean the `tf.` function (`tf.reduce_mean`, not `np.mean`) and to drop `.numpy()`?",
        "state-change": f"The value computed from `{name}` goes into a variable's state through `{found.op}` {at}, "
                        "and no gradient crosses an assignment. Did you mean to compute the value as a tensor "
                        "(`v + ...`) inside the tape, and update state after `tape.gradient`?",
        "outside-tape": f"`{found.op}` {at} ran while the tape was not recording (after its `with` block, or in "
                        f"`stop_recording`), so the path from `{name}` to the loss ends there. Did you mean to "
                        "compute the loss inside `with tf.GradientTape() as tape:`?",
        "unrecorded-gradient": f"The gradient {at} was computed while the outer tape was not recording, so the "
                               f"outer tape holds no path from `{name}` through it. Compute the inner gradient "
                               "inside the outer tape's `with` block.",
        "not-connected": f"The loss reads `{name}`, but nothing computed from it reaches the loss: its value is "
                         f"last used by `{found.op}` {at}. Does the loss really depend on that result (a branch "
                         "not taken, a result not returned, a typo in a name)?",
    }[code]
    return Entry(name, "None", _BREAK_CAUSE[code], text, code, found.op, found.where)


_NON_FINITE_FIX = {
    "where-nan-trap": "Make the unsafe branch's input safe first (`safe = tf.where(ok, x, 1.0)`), then apply the "
                      "op to `safe` inside the outer `tf.where`.",
    "non-finite-value": "Keep the input in range (`tf.math.log(x + 1e-7)`, `tf.clip_by_value`) or use a stable "
                        "op (`tf.nn.log_softmax`, `tf.math.reduce_logsumexp`).",
    "non-finite-input": "Check the data for NaN or Inf (`tf.debugging.check_numerics`) and clean it before the step.",
    "infinite-derivative": "Move the input off that point (`tf.sqrt(x + 1e-12)`), or pick around it with "
                           "`tf.where` on the input.",
}


def for_non_finite(name: str, origin: tuple[Break, str] | None, norm: float) -> Entry:
    """The entry for a gradient holding NaN or Inf, naming the op that made it when the run shows one."""
    if origin is None:
        return Entry(name, "non_finite", "non_finite",
                     f"The gradient of `{name}` holds NaN or Inf, yet every recorded value that feeds the loss is "
                     "finite and no op ran where diagnose knows its derivative is infinite: it arose in the "
                     "backward pass (an op's derivative at its input, or an overflow). Is the loss very large? "
                     "Scale it down, or clip the inputs.",
                     "non-finite-gradient", norm=norm)
    found, what = origin
    return Entry(name, "non_finite", "non_finite",
                 f"The gradient of `{name}` holds NaN or Inf: {what}. {_NON_FINITE_FIX[found.code]}",
                 found.code, found.op, found.where, norm)
