"""`GuardedApply`: the check, the decision and the update of one training step, eager or in a graph.

The package docstring (`tapelab.guarded`) says what it does and where each part runs.
"""
from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Collection, Literal, Sequence

import tensorflow as tf

from tapelab.guarded.decide import COUNTER_NAMES, apply_flag, counters_of, decide, outcome_from_report
from tapelab.guarded.measure import Layout, measure
from tapelab.guarded.records import (BadGradientsError, StepOutcome, explain_loss,
                                     name_bad_variables, strict_json, unique_names)
from tapelab.guarded.retry import with_retries

__all__ = ["GuardedApply"]

Explain = Callable[[Sequence[str], Sequence[str]], str]
AllowNone = Collection[str] | Callable[[str], bool] | bool | None


class GuardedApply(tf.Module):
    """Check gradients before `optimizer.apply`: apply good ones, skip or raise on bad ones, log each step.

    A step is bad when a gradient is None (unless `allow_none` accepts it), a gradient holds NaN or Inf,
    or the `loss` passed is NaN, Inf or empty (as is a `batch` with no rows). `on_bad="raise"` fails
    fast; `on_bad="skip"` leaves the variables unchanged and counts the skip, and a bad step after
    `max_skips` consecutive skips raises, so a broken run cannot skip forever.

    `allow_none` is a policy for partial None gradients: a collection of variable names, a predicate on
    the name, or True for any (Keras's own drop, without its stderr warning). Accepted ones are dropped:
    their variables stay unchanged and the record lists them under `dropped`. IndexedSlices gradients are
    passed on sparse. `log` receives one strict-JSON dict per step (bad steps always, applied steps every
    `log_every`-th); a transient `OSError` in `log` is retried `log_retries` times with backoff, then the
    record is dropped and counted as `log_failures`: a broken log sink never stops training.
    `explain(none, non_finite)` words the error; an eager call that passes `loss_fn` (no argument, returns
    the loss) runs `tapelab.diagnose` on it when gradients are None and adds its report to the error.
    `recorder` (a `FlightRecorder`) saves the first refused steps with the `batch` passed, for replay, and
    puts where and what diagnose found in the step's record under `flight`.
    """

    def __init__(self, optimizer: Any, *, on_bad: Literal["raise", "skip"] = "raise", max_skips: int = 3,
                 allow_none: AllowNone = None, log: Callable[[dict[str, Any]], None] | None = None,
                 log_every: int = 1, log_retries: int = 3, run_id: str | None = None,
                 explain: Explain = name_bad_variables, sleep: Callable[[float], None] = time.sleep,
                 recorder: Any = None):
        super().__init__(name="guarded_apply")
        if on_bad not in ("raise", "skip"):
            raise ValueError(f"on_bad must be 'raise' or 'skip', not {on_bad!r}")
        if max_skips < 0:
            raise ValueError(f"max_skips must be 0 or more, not {max_skips}")
        if log_every < 1:
            raise ValueError(f"log_every must be 1 or more, not {log_every}")
        self.optimizer, self.on_bad, self.max_skips, self.explain = optimizer, on_bad, max_skips, explain
        self.allow_none, self.log_every, self.run_id = allow_none, log_every, run_id or uuid.uuid4().hex
        self._log = None if log is None else with_retries(log, attempts=log_retries + 1, sleep=sleep)
        self.counter_values = tf.Variable(tf.zeros([len(COUNTER_NAMES)], tf.int64), trainable=False,
                                          name="counters")
        self.last_report: tf.Variable | None = None  # created by the first graph step (XLA needs its shape)
        self._traced: Layout | None = None  # the layout of the graph step, for `poll`
        self._seen = {"steps": 0, "raised": 0, "time": None}
        self._log_failures = 0
        self.recorder = recorder  # a FlightRecorder saves refused steps (a plain object: not checkpointed)
        self._latency = {"seconds_sum": 0.0, "count": 0, "last": None}

    @property
    def counters(self) -> dict[str, int]:
        """Monitoring counters: steps, applied, skipped, raised, consecutive skips (checkpointed), and the
        records this process dropped after the log sink kept failing."""
        values = self.counter_values.numpy()
        return {**{name: int(v) for name, v in zip(COUNTER_NAMES, values)}, "log_failures": self._log_failures}

    @property
    def latency(self) -> dict[str, float | int | None]:
        """Step time seen by this process, as a monitoring system sums it: seconds_sum, count, last."""
        return dict(self._latency)

    def __call__(self, grads: Sequence[Any], variables: Sequence[Any], *, loss: Any = None, batch: Any = None,
                 loss_fn: Callable[[], Any] | None = None) -> StepOutcome | dict[str, tf.Tensor]:
        """Apply `grads` to `variables` if the step is good; else skip or raise (see the class docstring)."""
        grads, variables = list(grads), list(variables)
        if len(grads) != len(variables):
            raise ValueError(f"got {len(grads)} gradients for {len(variables)} variables; "
                             "pass them in matching order, as `tape.gradient(loss, variables)` returns them")
        layout = self._layout(grads, variables, loss)
        if not self.optimizer.built:
            self.optimizer.build(variables)
        stats = measure(grads, layout, self.optimizer, loss, batch)
        apply, counters, report = decide(stats, layout, self.counter_values, raise_first=self.on_bad == "raise",
                                         max_skips=self.max_skips)
        present = ([grads[i] for i in layout.present], [variables[i] for i in layout.present])
        if self.recorder is not None and batch is not None:
            self.recorder.stash.keep(batch, ~apply, counters[0])
            self.recorder.variables = variables
        if tf.executing_eagerly():
            values = report.numpy()  # the eager step's one copy from the device
            if apply_flag(values, layout):
                self.optimizer.apply(*present)
            self.counter_values.assign(counters)
            return self._host_side(values, layout, steps=1, variables=variables, loss_fn=loss_fn)
        tf.cond(apply, lambda: self._apply(*present), lambda: tf.constant(False))
        self.counter_values.assign(counters)
        if self.last_report is None or self.last_report.shape != report.shape:
            with tf.init_scope():  # lifted out of the graph being traced
                self.last_report = tf.Variable(tf.zeros(report.shape, tf.float64), trainable=False,
                                               name="last_report")
        self.last_report.assign(report)
        self._traced = layout
        return {"step": counters[0], "applied": tf.equal(report[layout.size], 0.0),
                "global_norm": tf.sqrt(tf.reduce_sum(stats[:len(layout.present)]))}

    def poll(self) -> StepOutcome | None:
        """The host side of the latest graph step: log its record, raise if the guard refused a step for
        good. Returns its outcome, or None if no graph step ran since the last poll."""
        if self._traced is None:
            return None
        values = self.last_report.numpy()
        steps = counters_of(values, self._traced)["steps"] - self._seen["steps"]
        return self._host_side(values, self._traced, steps=steps) if steps > 0 else None

    def _apply(self, grads: list, variables: list) -> tf.Tensor:
        self.optimizer.apply(grads, variables)
        return tf.constant(True)

    def _layout(self, grads: list, variables: list, loss: Any) -> Layout:
        names = unique_names(variables)
        missing = [name for name, grad in zip(names, grads) if grad is None]
        allowed = [name for name in missing if self._allows_none(name)]
        present = tuple(i for i, grad in enumerate(grads) if grad is not None)
        none = tuple(missing) if not present else tuple(n for n in missing if n not in allowed)
        dropped = () if not present else tuple(allowed)
        return Layout(tuple(names), present, none, dropped, loss is not None,
                      hasattr(self.optimizer, "scale_loss") and hasattr(self.optimizer, "inner_optimizer"))

    def _allows_none(self, name: str) -> bool:
        if isinstance(self.allow_none, bool) or self.allow_none is None:
            return bool(self.allow_none)
        if callable(self.allow_none):
            return bool(self.allow_none(name))
        return name in self.allow_none

    def _host_side(self, values: Any, layout: Layout, *, steps: int, variables: list | None = None,
                   loss_fn: Callable[[], Any] | None = None) -> StepOutcome:
        now = time.perf_counter()
        seconds = None if self._seen["time"] is None else (now - self._seen["time"]) / steps
        self._seen["time"] = now
        if seconds is not None:
            self._latency = {"seconds_sum": self._latency["seconds_sum"] + seconds * steps,
                             "count": self._latency["count"] + steps, "last": seconds}
        outcome = outcome_from_report(values, layout, run_id=self.run_id, step_seconds=seconds)
        raised = counters_of(values, layout)["raised"]
        newly_raised = raised > self._seen["raised"]
        self._seen.update(steps=outcome.step, raised=raised)
        if not outcome.applied or outcome.step % self.log_every == 0:
            record = outcome.record()
            if self.recorder is not None and outcome.reason and not (layout.loss_scaled and outcome.reason == "non_finite"):
                record["flight"] = strict_json(self.recorder.save(record, self.optimizer))
            self._emit(record)
        if newly_raised:
            raise BadGradientsError(self._message(outcome, variables, loss_fn), outcome)
        return outcome

    def _emit(self, record: dict[str, Any]) -> None:
        if self._log is None:
            return
        try:
            self._log(record)
        except OSError:  # retried already: drop the record, count it, keep training
            self._log_failures += 1

    def _message(self, outcome: StepOutcome, variables: list | None, loss_fn: Callable[[], Any] | None) -> str:
        if outcome.outcome != "raised":  # a graph step between two polls raised; the latest one did not
            return (f"A step before step {outcome.step} was refused for good (see its log record); "
                    f"counters: {self.counters}.")
        head = f"Step {outcome.step}: gradients not applied. "
        if self.on_bad == "skip":
            head = (f"Step {outcome.step}: bad gradients again after {outcome.consecutive_skips} skipped "
                    f"step(s) in a row (max_skips={self.max_skips}). ")
        text = head + " ".join(part for part in (self.explain(outcome.none, outcome.non_finite),
                                                  explain_loss(outcome.loss_problem) if outcome.loss_problem
                                                  else "") if part)
        if outcome.none and loss_fn is not None and variables is not None:
            report = _diagnose(loss_fn, variables)
            if report:
                text += "\nDiagnosis: " + report
        return text


def _diagnose(loss_fn: Callable[[], Any], variables: list) -> str:
    """diagnose's report for `loss_fn`, or "" if diagnose fails itself (it must never hide the problem)."""
    from tapelab.diagnose import diagnose

    try:
        report = diagnose(loss_fn, dict(zip(unique_names(variables), variables)))
    except Exception:  # a diagnosis must never hide the original problem
        return ""
    return str(report)
