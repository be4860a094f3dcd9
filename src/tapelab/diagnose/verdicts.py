"""One variable's verdict: its status, the cause established for it, and the explanation with the fix.

Each function here turns a fact diagnose established (a recorded break, a non-finite origin, the
variable's own flags) into an `Entry`. When no cause is established the entry says what is known
(the gradient is None, the ops the path took) and names no cause.
"""
from __future__ import annotations

from dataclasses import dataclass

from tapelab.causes import cause
from tapelab.diagnose.breaks import Break
from tapelab.diagnose.record import Location
from tapelab.explained import variable_copy, variable_statement

__all__ = ["CAUSES", "Entry", "for_break", "for_non_finite"]

# the catalogue codes diagnose can establish, in the checklist's order: source, recording, path, values
_ESTABLISHED = (
    "not-trainable", "all-variables", "not-watched", "int-dtype", "replaced-by-tensor", "sliced-source",
    "untracked-variable", "outside-tape", "unrecorded-gradient", "not-connected", "none-target", "tape-used-twice",
    "stop-gradient", "non-differentiable", "numpy-in-path", "state-change", "no-gradient-registered",
    "zero-gradient", "non-finite-value", "infinite-derivative", "where-nan-trap", "non-finite-input",
    "non-finite-gradient",
)
CAUSES: dict[str, str] = {code: cause(code).title for code in _ESTABLISHED}  # code -> the catalogue's title


@dataclass(frozen=True)
class Entry:
    """One variable's verdict: gradient status, the established cause's catalogue code, the op and user
    line where its path breaks, and the gradient's norm when it has one."""

    name: str
    status: str  # "ok", "zero", "None", "non_finite" or "untracked"
    cause: str | None = None  # a key of CAUSES (a tapelab.causes code), or None when no cause is established
    explanation: str = ""
    op: str | None = None
    where: Location | None = None
    norm: float | None = None

    def __post_init__(self) -> None:
        if self.cause is not None and self.cause not in CAUSES:  # diagnose's own bug: fail where it is made
            raise ValueError(f"{self.cause!r} is not a cause diagnose establishes; known: {', '.join(CAUSES)}")

    @property
    def ok(self) -> bool:
        return self.status == "ok"


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
    copied = _variable_copy(name, found) if code == "state-change" else None
    return Entry(name, "None", code, copied or text, found.op, found.where)


def _variable_copy(name: str, found: Break) -> str | None:
    """The checker's sentence (`tapelab.explained`) when the assignment is a new variable's initial value: the
    line that ran it reads `v = tf.Variable(...)`."""
    made = variable_statement(found.where.text) if found.where else None
    said = variable_copy(made[0], made[1], name, "the loss") if made else None
    return said[0] if said else None


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
        return Entry(name, "non_finite", "non-finite-gradient",
                     f"The gradient of `{name}` holds NaN or Inf, yet every recorded value that feeds the loss is "
                     "finite and no op ran where diagnose knows its derivative is infinite: it arose in the "
                     "backward pass (an op's derivative at its input, or an overflow). Is the loss very large? "
                     "Scale it down, or clip the inputs.", norm=norm)
    found, what = origin
    return Entry(name, "non_finite", found.code,
                 f"The gradient of `{name}` holds NaN or Inf: {what}. {_NON_FINITE_FIX[found.code]}",
                 found.op, found.where, norm)
