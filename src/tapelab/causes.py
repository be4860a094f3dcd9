"""The one catalogue of mistake causes: a stable code, a title and a one-line fix for each.

Exercise feedback, `tapelab.diagnose`, `tapelab lint` and class insight all name a cause by its code,
so a cause has one name everywhere. Codes are kebab-case and never change meaning once released.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cause", "CAUSES", "cause"]


@dataclass(frozen=True)
class Cause:
    """One kind of mistake: `code` is stable, `title` names it, `fix` says what to do in one line."""

    code: str
    title: str
    fix: str


_CATALOGUE = (
    Cause("not-watched", "a constant source was never watched",
          "Call `tape.watch(x)` inside the `with` block, before computing from `x`."),
    Cause("outside-tape", "the target was computed outside the tape's `with` block",
          "Compute the target (and the forward pass it depends on) inside the `with tf.GradientTape()` block."),
    Cause("numpy-in-path", "a NumPy call or `.numpy()` on the path from source to target",
          "Use TensorFlow operations between the source and the target; convert to NumPy only after `gradient`."),
)

CAUSES: dict[str, Cause] = {c.code: c for c in _CATALOGUE}


def cause(code: str) -> Cause:
    """The catalogued cause `code`; a KeyError naming the known codes if there is none."""
    try:
        return CAUSES[code]
    except KeyError:
        raise KeyError(f"unknown cause code {code!r}; catalogued codes: {', '.join(sorted(CAUSES))}") from None
