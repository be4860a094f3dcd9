"""Apply gradients only when they are usable: no None, no NaN or Inf, with a record of every step.

A custom training step that calls `optimizer.apply(grads, variables)` blindly fails late and
quietly: all-None gradients raise a generic ValueError, some None are skipped with a warning on
stderr, and NaN gradients turn every weight into NaN without any error at all. `GuardedApply`
checks the gradients first, then either applies them, skips the step (bounded: too many skips
in a row raise), or fails fast with an explanation naming the variables at fault.

    guard = GuardedApply(optimizer, on_bad="skip", max_skips=3, log=records.append)
    with tf.GradientTape() as tape:
        loss = loss_fn()
    outcome = guard(tape.gradient(loss, variables), variables, loss_fn=loss_fn)

Every call returns a `StepOutcome` and hands one structured record (a dict) to `log`;
`JsonFormatter` turns such records into JSON lines for Python's `logging`.
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Literal, Sequence

import tensorflow as tf

__all__ = ["BadGradientsError", "GuardedApply", "JsonFormatter", "StepOutcome", "name_bad_variables"]

Explain = Callable[[Sequence[str], Sequence[str]], str]


@dataclass(frozen=True)
class StepOutcome:
    """What happened to one step's gradients: applied or skipped, and why, with their norms."""

    step: int  # 1 for the guard's first call, then 2, 3, ...
    outcome: Literal["applied", "skipped", "raised"]
    global_norm: float | None  # over the gradients that exist; None when none exists
    norms: dict[str, float | None] = field(default_factory=dict)  # per variable; None for a None gradient
    none: tuple[str, ...] = ()  # variables whose gradient is None
    non_finite: tuple[str, ...] = ()  # variables whose gradient holds NaN or Inf
    consecutive_skips: int = 0

    @property
    def applied(self) -> bool:
        return self.outcome == "applied"

    @property
    def reason(self) -> str:
        """"" for a good step, else "none", "non_finite" or "none+non_finite"."""
        return "+".join(name for name, bad in (("none", self.none), ("non_finite", self.non_finite)) if bad)

    def record(self, event: str = "gradient_step") -> dict[str, Any]:
        """A flat, JSON-ready dict for structured logs: event, step id, outcome, norms, causes."""
        data = asdict(self)
        data["none"], data["non_finite"] = list(self.none), list(self.non_finite)
        return {"event": event, **data, "reason": self.reason}


class BadGradientsError(RuntimeError):
    """Raised instead of applying None or non-finite gradients; `outcome` holds the step's record."""

    def __init__(self, message: str, outcome: StepOutcome):
        super().__init__(message)
        self.outcome = outcome


def name_bad_variables(none: Sequence[str], non_finite: Sequence[str]) -> str:
    """The default explanation: which variables have None or non-finite gradients, and what to check."""
    parts = []
    if none:
        many = len(none) > 1
        parts.append(f"the gradient{'s' if many else ''} of {_listing(none)} {'are' if many else 'is'} None: "
                     f"the loss has no path to {'them' if many else 'it'} (computed outside the tape, "
                     "a non-differentiable op, a layer not called?)")
    if non_finite:
        many = len(non_finite) > 1
        parts.append(f"the gradient{'s' if many else ''} of {_listing(non_finite)} "
                     f"{'hold' if many else 'holds'} NaN or Inf (a learning rate too high, log(0), "
                     "a division by zero, inputs of extreme size?)")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def _listing(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _name(variable: Any, index: int) -> str:
    name = getattr(variable, "path", None) or getattr(variable, "name", None) or f"variables[{index}]"
    return str(name).removesuffix(":0")


class GuardedApply:
    """Check gradients before `optimizer.apply`: apply good ones, skip or raise on bad ones, log each step.

    `on_bad="raise"` fails fast; `on_bad="skip"` leaves the variables unchanged and counts the skip,
    and the step after `max_skips` consecutive skips raises, so a broken run cannot skip forever.
    `log` receives one dict per step (see `StepOutcome.record`). `explain(none, non_finite)` words
    the error; when a call passes `loss_fn` (a function of no argument returning the loss) and some
    gradients are None, `tapelab.diagnose` runs on it and its report is added to the error.
    """

    def __init__(self, optimizer: Any, *, on_bad: Literal["raise", "skip"] = "raise", max_skips: int = 3,
                 log: Callable[[dict[str, Any]], None] | None = None, explain: Explain = name_bad_variables):
        if on_bad not in ("raise", "skip"):
            raise ValueError(f"on_bad must be 'raise' or 'skip', not {on_bad!r}")
        if max_skips < 0:
            raise ValueError(f"max_skips must be 0 or more, not {max_skips}")
        self.optimizer, self.on_bad, self.max_skips = optimizer, on_bad, max_skips
        self.log, self.explain = log, explain
        self.steps = self.applied = self.skipped = self.consecutive_skips = 0

    @property
    def counters(self) -> dict[str, int]:
        """Monitoring counters: steps seen, applied and skipped so far."""
        return {"steps": self.steps, "applied": self.applied, "skipped": self.skipped}

    def __call__(self, grads: Sequence[Any], variables: Sequence[Any], *,
                 loss_fn: Callable[[], Any] | None = None) -> StepOutcome:
        """Apply `grads` to `variables` if every gradient exists and is finite; else skip or raise."""
        grads, variables = list(grads), list(variables)
        if len(grads) != len(variables):
            raise ValueError(f"got {len(grads)} gradients for {len(variables)} variables; "
                             "pass them in matching order, as `tape.gradient(loss, variables)` returns them")
        self.steps += 1
        names = [_name(v, i) for i, v in enumerate(variables)]
        norms: dict[str, float | None] = {}
        none, non_finite, squares = [], [], 0.0
        for name, grad in zip(names, grads):
            if grad is None:
                norms[name] = None
                none.append(name)
                continue
            norm = float(tf.norm(tf.cast(tf.convert_to_tensor(grad), tf.float64)))
            norms[name] = norm
            squares += norm * norm
            if not math.isfinite(norm):
                non_finite.append(name)
        global_norm = math.sqrt(squares) if len(none) < len(names) else None
        if not none and not non_finite:
            self.optimizer.apply(grads, variables)
            self.applied += 1
            self.consecutive_skips = 0
            return self._emit(StepOutcome(self.steps, "applied", global_norm, norms))
        outcome = StepOutcome(self.steps, "skipped", global_norm, norms, tuple(none), tuple(non_finite),
                              self.consecutive_skips + 1)
        if self.on_bad == "skip" and self.consecutive_skips < self.max_skips:
            self.skipped += 1
            self.consecutive_skips += 1
            return self._emit(outcome)
        outcome = replace(outcome, outcome="raised", consecutive_skips=self.consecutive_skips)
        self._emit(outcome)
        raise BadGradientsError(self._message(outcome, variables, loss_fn), outcome)

    def _emit(self, outcome: StepOutcome) -> StepOutcome:
        if self.log is not None:
            self.log(outcome.record())
        return outcome

    def _message(self, outcome: StepOutcome, variables: list, loss_fn: Callable[[], Any] | None) -> str:
        head = f"Step {outcome.step}: gradients not applied. "
        if self.on_bad == "skip":
            head = (f"Step {outcome.step}: bad gradients again after {self.consecutive_skips} skipped "
                    f"step(s) in a row (max_skips={self.max_skips}). ")
        text = head + self.explain(outcome.none, outcome.non_finite)
        if outcome.none and loss_fn is not None:
            report = _diagnose(loss_fn, variables)
            if report:
                text += "\nDiagnosis: " + report
        return text


def _diagnose(loss_fn: Callable[[], Any], variables: list) -> str:
    """diagnose's report for `loss_fn`, or "" if diagnose is unavailable or fails itself."""
    try:
        from tapelab.diagnose import diagnose
    except ImportError:  # pragma: no cover - diagnose ships with tapelab
        return ""
    try:
        report = diagnose(loss_fn, {_name(v, i): v for i, v in enumerate(variables)})
    except Exception:  # a diagnosis must never hide the original problem
        return ""
    return str(report)


class JsonFormatter(logging.Formatter):
    """Format a log record as one JSON line; a dict message (a step record) is merged in as fields."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {"logger": record.name, "level": record.levelname}
        if isinstance(record.msg, dict):
            data.update(record.msg)
        else:
            data["message"] = record.getMessage()
        return json.dumps(data, default=str, allow_nan=True)
