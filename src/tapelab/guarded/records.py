"""What a guarded step reports: the outcome of one step, its strict-JSON record, and the error it raises.

Records are read by machines (log pipelines, dashboards), so they are strict JSON: a NaN or an infinity
becomes `null` (the `non_finite` list says which gradient was at fault), times are ISO 8601 in UTC, and
every record carries the run id that correlates it with the other records of its run.
"""
from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Sequence

__all__ = ["BadGradientsError", "JsonFormatter", "StepOutcome", "name_bad_variables", "strict_json",
           "unique_names"]

LOSS_PROBLEMS = {"non_finite": "non_finite_loss", "empty": "empty_batch"}


@dataclass(frozen=True)
class StepOutcome:
    """What happened to one step: applied, skipped or raised, why, and the numbers a monitor wants."""

    step: int  # 1 for the guard's first step, then 2, 3, ... (restored from a checkpoint)
    outcome: Literal["applied", "skipped", "raised"]
    global_norm: float | None  # over the gradients that exist; None when none exists
    norms: dict[str, float | None] = field(default_factory=dict)  # per variable; None for a None gradient
    none: tuple[str, ...] = ()  # variables whose None gradient makes the step bad
    non_finite: tuple[str, ...] = ()  # variables whose gradient holds NaN or Inf
    consecutive_skips: int = 0
    dropped: tuple[str, ...] = ()  # variables whose None gradient `allow_none` accepted (left unchanged)
    loss: float | None = None  # the loss (its mean when it is not a scalar), when the call passed one
    loss_problem: Literal["", "non_finite", "empty"] = ""
    iterations: int | None = None  # the optimizer's own `iterations` after the step
    learning_rate: float | None = None
    step_seconds: float | None = None  # wall time per step since the previous step was seen
    loss_scale: float | None = None  # a LossScaleOptimizer's scale after the step
    run_id: str = ""
    timestamp: float = field(default_factory=time.time)

    @property
    def applied(self) -> bool:
        return self.outcome == "applied"

    @property
    def reason(self) -> str:
        """"" for a good step, else the problems joined by "+": none, non_finite, non_finite_loss, empty_batch."""
        problems = [name for name, bad in (("none", self.none), ("non_finite", self.non_finite)) if bad]
        if self.loss_problem:
            problems.append(LOSS_PROBLEMS[self.loss_problem])
        return "+".join(problems)

    def record(self, event: str = "gradient_step") -> dict[str, Any]:
        """A flat dict that `json.dumps(..., allow_nan=False)` accepts: non-finite numbers become None."""
        data = asdict(self)
        for key in ("none", "non_finite", "dropped"):
            data[key] = list(data[key])
        data["timestamp"] = iso_time(self.timestamp)
        return strict_json({"event": event, **data, "reason": self.reason})


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
    return text[:1].upper() + text[1:] + "." if text else ""


def explain_loss(problem: str) -> str:
    """One sentence on a bad loss: what was measured, never a guessed cause."""
    if problem == "empty":
        return "The batch is empty (the loss has no elements or the batch has no rows)."
    return "The loss is NaN or Inf."


def _listing(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def unique_names(variables: Sequence[Any]) -> list[str]:
    """Each variable's path (or name); names shared by several variables get `@position`, so none collide."""
    names = []
    for index, variable in enumerate(variables):
        name = getattr(variable, "path", None) or getattr(variable, "name", None) or f"variables[{index}]"
        names.append(str(name).removesuffix(":0"))
    seen = {name: names.count(name) for name in names}
    return [f"{name}@{index}" if seen[name] > 1 else name for index, name in enumerate(names)]


def iso_time(seconds: float) -> str:
    """A Unix time as ISO 8601 in UTC with microseconds, e.g. 2025-01-31T12:00:00.000001Z."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def strict_json(value: Any) -> Any:
    """`value` with every non-finite float (nested in dicts, lists, tuples) replaced by None."""
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


class JsonFormatter(logging.Formatter):
    """Format a log record as one strict JSON line; a dict message (a step record) is merged in as fields."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {"logger": record.name, "level": record.levelname}
        if isinstance(record.msg, dict):
            data.update(record.msg)
        else:
            data["message"] = record.getMessage()
        data.setdefault("timestamp", iso_time(record.created))
        return json.dumps(strict_json(data), default=str, allow_nan=False)
