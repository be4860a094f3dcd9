"""Compiled steps: replay a `tf.function` (XLA or not) eagerly op by op, and compare it with the compiled run.

A traced function runs as one op, so the recorder cannot see inside it. With
`tf.config.run_functions_eagerly(True)` the same Python code runs eagerly on the same inputs and
weights, every op seen with the user's line. The compiled run and the replay can disagree: XLA
rewrites and fuses ops (`log(exp(x))` becomes `x`, so an overflow the replay shows never happens
compiled), and a traced function keeps the Python values it captured when it was traced (a
`1e-7` later set to `0.0`, a model replaced since). Each gradient's status in both runs is compared,
and a difference is reported as a finding of its own.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import tensorflow as tf

__all__ = ["Comparison", "compiled_gradients", "functions_run_eagerly", "gradient_status"]


@contextlib.contextmanager
def functions_run_eagerly() -> Iterator[None]:
    """Run every `tf.function` called in the block as plain Python, op by op (restores the setting after)."""
    before = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(before)


def gradient_status(grad: Any) -> tuple[str, float | None]:
    """("None" | "non_finite" | "zero" | "ok", the gradient's norm) for one gradient."""
    if grad is None:
        return "None", None
    values = np.asarray(grad.values if isinstance(grad, tf.IndexedSlices) else grad)
    flat = values.ravel()
    norm = float(np.sqrt(np.vdot(flat, flat).real))
    if not np.isfinite(flat).all():
        return "non_finite", norm
    if values.dtype.kind == "f" and not flat.any():
        return "zero", norm
    return "ok", norm


def _finite_loss(loss: Any) -> bool | None:
    try:
        return bool(np.isfinite(np.asarray(loss, dtype=float)).all())
    except (TypeError, ValueError):
        return None


def compiled_gradients(loss_fn: Callable, sources: Sequence, *, watch: tuple, takes_tape: bool,
                       jit_compile: bool) -> tuple[Any, list]:
    """The loss and gradients of `loss_fn` traced into one `tf.function` (with XLA if `jit_compile`), as a
    compiled training step computes them."""
    def step():
        tape = tf.GradientTape()
        if takes_tape:
            loss = loss_fn(tape)
        else:
            with tape:
                for tensor in watch:
                    tape.watch(tensor)
                loss = loss_fn()
        return loss, tape.gradient(loss, list(sources))

    loss, grads = tf.function(step, jit_compile=jit_compile)()
    return loss, list(grads)


@dataclass
class Comparison:
    """The compiled run against the eager replay: the loss's finiteness and each gradient's status in both."""

    how: str  # what ran compiled: "the tf.functions your loss calls" or "a tf.function with jit_compile=True"
    loss_finite: tuple[bool | None, bool | None] = (None, None)  # (compiled, replay)
    statuses: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (compiled, replay)
    error: str = ""  # the compiled run raised this: the comparison could not be made
    stopped: str = ""  # the replay raised this (the user's own check_numerics, which XLA skips)
    stopped_at: Any = None  # the `Break` (op, line) the replayed ops show making the NaN or Inf it caught
    opaque: list[str] = field(default_factory=list)  # functions the replay could not open (no Python source)

    @classmethod
    def of(cls, how: str, compiled: tuple[Any, list], replay: tuple[Any, list], names: Sequence[str]) -> Comparison:
        statuses = {name: (gradient_status(c)[0], gradient_status(r)[0])
                    for name, c, r in zip(names, compiled[1], replay[1])}
        return cls(how, (_finite_loss(compiled[0]), _finite_loss(replay[0])), statuses)

    @property
    def disagreements(self) -> list[str]:
        """One sentence per difference between the compiled run and the replay (none when they agree)."""
        found = []
        compiled_loss, replay_loss = self.loss_finite
        if None not in self.loss_finite and compiled_loss != replay_loss:
            found.append(f"the loss is {_finite_word(compiled_loss)} compiled but {_finite_word(replay_loss)} "
                         "in the eager replay")
        for name, (compiled, replay) in self.statuses.items():
            if compiled != replay:
                found.append(f"the gradient of `{name}` is {compiled} compiled but {replay} in the eager replay")
        return found

    @property
    def agree(self) -> bool:
        return not self.error and not self.stopped and not self.disagreements

    def __str__(self) -> str:
        if self.error:
            return f"The compiled run ({self.how}) raised `{self.error}`, so it was not compared with the replay."
        if self.stopped:
            return (f"The compiled run ({self.how}) went through, but your own `tf.debugging.check_numerics` "
                    f"raised in the eager replay (`{self.stopped}`): compiled with XLA it checks nothing. "
                    + (f"The replayed ops show {self.stopped_at} making the NaN or Inf it caught."
                       if self.stopped_at else "No replayed op shows where the value it caught was made."))
        unopened = (f" The replay could not open {', '.join(f'`{name}`' for name in self.opaque)} (a function "
                    "with no Python to run, such as one loaded from a SavedModel): each stays one op."
                    if self.opaque else "")
        if self.agree:
            return f"The compiled run ({self.how}) and the eager replay agree." + unopened
        return (f"The compiled run ({self.how}) and the eager replay disagree: " + "; ".join(self.disagreements)
                + ". The replay names ops as eager code runs them; compiled, XLA may rewrite or fuse them "
                "(`log(exp(x))` becomes `x`), and a traced function keeps the Python values it captured when it "
                "was traced (a constant changed since, a model replaced). Retrace the function (call it on a "
                "new function object), or compare with `jit_compile=False`, to tell which." + unopened)


def _finite_word(finite: bool) -> str:
    return "finite" if finite else "NaN or Inf"
