"""Why a gradient of notebook 05 is `None`, read from the student's own code: their gradient call first, then an
operation on the path that blocks it (shared by the notebook's exercises, so that 5.1 and the others say it alike)."""
from __future__ import annotations

from tapelab.checker.explanations import explain_none
from tapelab.checker.messages import Incorrect
from tapelab.diagnose import CAUSES, blocking_call

__all__ = ["none_feedback"]


def none_feedback(fn, facts, gradient_name: str, item: int | None, source: str, values: dict) -> Incorrect:
    """Why the gradient `gradient_name` is None: the student's own gradient call first, then a blocking op."""
    call = facts.returned_call(item)
    why = explain_none(facts, call, values)
    if why.cause not in (None, "not-connected"):
        return Incorrect(f"`{gradient_name}` is `None`. {why}", cause=why.cause)
    blocked = blocking_call(fn, call.source if call else source)
    if blocked:
        cause, text = blocked
        message = {
            "stop-gradient": f"`{text}` is still on the path from `{source}` to the loss, and `tf.stop_gradient` "
                             "blocks gradients by design. Did you mean to remove it?",
            "non-differentiable": f"`{text}` has no gradient, so nothing flows back to `{source}`. Did you keep that "
                                  "op without a straight-through estimator?",
        }.get(cause, f"`{text}` blocks the path to `{source}`: {CAUSES[cause]}.")
        return Incorrect(f"`{gradient_name}` is `None`: {message}", cause=cause)
    return Incorrect(f"`{gradient_name}` is `None`. {why}".strip(), cause=why.cause)
