"""A flight recorder for refused steps: keep what replays the step, diagnose it, and bound the disk it uses.

In the step (eagerly, or traced into `tf.function` / `fit`, XLA included), `Stash.keep` copies the batch
into variables under a `tf.cond` that runs only on a refused step: a good step pays one untaken branch.
On the host, when the guard's poll sees a refused step, `FlightRecorder.save` writes the step folder
that `tapelab.diagnose.replay` reads (the batch, the model's and optimizer's variables, a digest, the
guard's record), then diagnoses that very step (the weights are checked against the saved digest) and
returns what the step's log record carries under `flight`. At most `keep` steps per run, and never more
than `max_bytes` on disk: a step that would not fit is not written, and the record says so.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import tensorflow as tf

__all__ = ["FlightRecorder", "Stash"]


class Stash:
    """Batch copies kept on the device, one set of variables per batch signature (XLA needs static shapes)."""

    def __init__(self) -> None:
        self.slots: dict[tuple, tuple[tf.Variable, list[tf.Variable]]] = {}

    def keep(self, batch: Any, refused: tf.Tensor, step: tf.Tensor) -> None:
        """Copy `batch` (any nest of tensors) into the stash when `refused` is true; note the step it belongs to."""
        flat = [tf.convert_to_tensor(t) for t in tf.nest.flatten(batch)]
        signature = tuple((t.dtype.name, tuple(t.shape.as_list()) if t.shape.is_fully_defined() else None)
                          for t in flat)
        if signature not in self.slots:
            with tf.init_scope():  # lifted out of a graph being traced
                copies = [tf.Variable(tf.zeros(shape if shape is not None else [0], dtype), trainable=False,
                                      shape=shape if shape is not None else tf.TensorShape(None))
                          for dtype, shape in signature]
                self.slots[signature] = (tf.Variable(tf.constant(-1, tf.int64), trainable=False), copies)
        owner, copies = self.slots[signature]

        def save():
            for copy, tensor in zip(copies, flat):
                copy.assign(tensor)
            owner.assign(tf.cast(step, tf.int64))
            return tf.constant(True)

        tf.cond(refused, save, lambda: tf.constant(False))

    def read(self, step: int) -> tuple[np.ndarray, ...] | None:
        """The batch stashed for `step`, or None."""
        for owner, copies in self.slots.values():
            if int(owner.numpy()) == step:
                return tuple(np.asarray(c.numpy()) for c in copies)
        return None


class FlightRecorder:
    """Save the first refused steps of a run under `directory/<run_id>/step-NNNNNN/` and diagnose each.

    `model` is the model the step trains (set it later with `recorder.model = model` when the model is built
    after the guard); `loss_fn(model, batch)` recomputes the step's loss for the diagnosis (default: the
    loss `fit` uses). `keep` bounds the steps saved per run, `max_bytes` the bytes they take together.
    `build` ("module:function" that builds the model) completes the replay command written with each step.
    """

    def __init__(self, directory: str | Path, model: Any = None, *, loss_fn: Callable[[Any, tuple], Any] | None = None,
                 keep: int = 3, max_bytes: int = 256 * 2**20, diagnose: bool = True, build: str = "MODULE:FUNCTION"):
        if keep < 0 or max_bytes < 0:
            raise ValueError("keep and max_bytes must be 0 or more")
        self.directory, self.model, self.loss_fn = Path(directory), model, loss_fn
        self.keep, self.max_bytes, self.diagnose, self.build = keep, max_bytes, diagnose, build
        self.stash = Stash()
        self.saved: list[Path] = []
        self.used = 0  # bytes this run's saved steps take
        self.variables: list = []  # the step's variables, when no model is given (the guard sets them)

    def save(self, record: dict[str, Any], optimizer: Any) -> dict[str, Any]:
        """Write the refused step `record` describes; what the log record carries under `flight`."""
        from tapelab.diagnose.replay import (
            BATCH_FILE,
            OPTIMIZER_FILE,
            STEP_FILE,
            WEIGHTS_FILE,
            variable_arrays,
            weights_digest,
        )

        step = int(record["step"])
        batch = self.stash.read(step)
        if batch is None:
            return {"saved": False, "why": "no batch was kept for this step: pass `batch=(x, y)` to the guard"}
        if len(self.saved) >= self.keep:
            return {"saved": False, "why": f"{self.keep} step(s) of this run are saved already (keep={self.keep})"}
        weights = (variable_arrays(self.model.variables, self.model.name) if self.model is not None
                   else variable_arrays(self.variables))
        slots = variable_arrays(getattr(optimizer, "variables", []))
        estimate = sum(a.nbytes for a in [*batch, *weights.values(), *slots.values()])
        if self.used + estimate > self.max_bytes:
            return {"saved": False, "why": f"the step needs about {estimate} bytes and {self.used} of "
                                           f"max_bytes={self.max_bytes} are used"}
        folder = self.directory / str(record.get("run_id") or "run") / f"step-{step:06d}"
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        np.savez(partial / BATCH_FILE, **{str(i): a for i, a in enumerate(batch)})
        np.savez(partial / WEIGHTS_FILE, **weights)
        np.savez(partial / OPTIMIZER_FILE, **slots)
        command = f"{Path(sys.executable).name} -m tapelab.diagnose.replay {folder} --model {self.build}"
        meta = {"step": step, "run_id": record.get("run_id"), "reason": record.get("reason"),
                "weights_sha256": weights_digest(weights), "optimizer_sha256": weights_digest(slots),
                "jit_compile": self._jit_compile(), "replay": command, "record": record,
                "versions": {"tensorflow": tf.__version__}}
        (partial / STEP_FILE).write_text(json.dumps(meta, indent=1, allow_nan=False))
        size = sum(f.stat().st_size for f in partial.iterdir())
        if self.used + size > self.max_bytes:
            shutil.rmtree(partial)
            return {"saved": False, "why": f"the step took {size} bytes, over max_bytes={self.max_bytes}"}
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        self.used += size
        self.saved.append(folder)
        flight = {"saved": True, "dir": str(folder), "bytes": size, "replay": command}
        if self.diagnose and self.model is not None:
            flight["diagnosis"] = self._diagnosis(folder)
            meta["diagnosis"] = flight["diagnosis"]
            (folder / STEP_FILE).write_text(json.dumps(meta, indent=1, allow_nan=False))
        return flight

    def _jit_compile(self) -> bool | None:
        if self.model is None or not getattr(self.model, "compiled", False):
            return None
        return bool(self.model.jit_compile)

    def _diagnosis(self, folder: Path) -> dict[str, Any]:
        """diagnose on the saved step, summarised for a log record (never raises: the record matters more)."""
        from tapelab.diagnose.replay import replay

        try:
            report = replay(folder, self.model, self.loss_fn)
        except Exception as error:  # a failed diagnosis must not lose the record of the step
            return {"error": f"{type(error).__name__}: {str(error).strip()[:300]}"}
        problems = [{"name": e.name, "status": e.status, "cause": e.cause, "op": e.op,
                     "where": str(e.where) if e.where else None} for e in report.problems]
        return {"ok": report.ok, "problems": problems,
                "compiled": str(report.compiled) if report.compiled is not None else None}
