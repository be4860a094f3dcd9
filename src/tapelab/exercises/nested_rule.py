"""The rules of notebook 04_persistent_tapes: `gradient` is called after its own tape's `with` block (every
exercise), and (Exercises 4.3 to 4.5) a higher derivative comes from two nested tapes, one per order of
derivative, not from one persistent tape that records its own `gradient` call."""
from __future__ import annotations

from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect

__all__ = ["INSIDE_WITH_LOG", "NESTED_REMEDIES", "TapeExercise", "require_nested_tapes"]

INSIDE_WITH_LOG = "significantly less efficient"  # TensorFlow's warning for `gradient` inside a persistent block

# The generic fix these exercises rule out (tapelab.checker.premises), and the one they ask for instead.
NESTED_REMEDIES = {"persistent": (
    'This exercise asks for nested tapes instead: an inner tape for the first derivative, called inside'
    " the outer tape's `with` block, and the outer tape for the second.")}


def require_nested_tapes(facts, logs: list[str]) -> None:
    """Raise when the source shows no nested tapes: with one persistent tape (or, without source, TensorFlow's
    warning) the value came from that tape; otherwise only the missing nesting is stated."""
    persistent = (any(t.persistent for t in facts.tape_blocks) if facts.found
                  else any(INSIDE_WITH_LOG in line for line in logs))
    if facts.found and not facts.nested() and not persistent:
        raise Incorrect(
            "Your value is right, but your code does not open one tape inside another. The rule of Exercises 4.3 to "
            "4.5 is two nested tapes, one per order of derivative: an inner one for the first derivative, called "
            "inside the `with` block of an outer one, which differentiates it again.", cause="not-from-tape")
    one_tape = facts.found and facts.tapes < 2
    if one_tape or (not facts.found and persistent):
        raise Incorrect(
            "Your value is right: one persistent tape that calls `gradient` inside its own block computes it too "
            "(the one case TensorFlow's efficiency warning allows), and it needs the same intermediates at its "
            "peak. The rule of Exercises 4.3 to 4.5 is two nested tapes, one per order of derivative, because of "
            "the release: each ordinary tape drops its record by itself after its one call, where one persistent "
            "tape keeps both passes until you `del` it. Did you nest two tapes, an inner one for the first "
            "derivative inside an outer one for the second?", cause="one-tape-second-derivative")


class TapeExercise(Exercise):
    """An exercise of notebook 04: one rule, `gradient` is called after its own tape's `with` block."""

    def _reject_gradient_inside_with(self, facts, logs: list[str]) -> None:
        # TensorFlow logs its warning once per process, so the source is the better witness.
        inside = facts.inside_own_block()
        if inside or any(INSIDE_WITH_LOG in line for line in logs):
            call = f"`{inside[0].text()}`" if inside else "`gradient`"
            raise Incorrect(
                f"Your values are right, but you called {call} inside the `with` block of its own tape. "
                "The rule in this notebook: call `gradient` after the block, unless you want the tape to record the "
                "gradient computation itself (a higher derivative); inside, a persistent tape records every "
                "gradient op too, which TensorFlow warns is significantly less efficient. Did you move the "
                "`gradient` calls after the `with` block?", cause="gradient-inside-block")
