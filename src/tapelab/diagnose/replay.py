"""Replay a training step a flight recorder saved, and diagnose it: `python -m tapelab.diagnose.replay STEP_DIR`.

A saved step is a folder (written by `tapelab.guarded.FlightRecorder`):

    step.json      the step number, run id, the guard's record, file digests, the replay command
    batch.npz      the batch the step trained on, its tensors in order ("0", "1", ...: x, y, sample weight)
    weights.npz    the model's variables by path (trainable, BatchNorm statistics, dropout seed states)
    optimizer.npz  the optimizer's variables by path (iterations, moments, a loss scale)

The architecture is code, not data: pass the model (in Python) or `--model module:function` that builds
it. The loss defaults to the one `fit` uses (`model.compute_loss` on the model in training mode);
a custom step passes its own `loss_fn(model, batch)` (or `--loss module:function`).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

__all__ = ["SavedStep", "fit_loss", "load_step", "main", "replay", "variable_arrays", "weights_digest"]

STEP_FILE, BATCH_FILE, WEIGHTS_FILE, OPTIMIZER_FILE = "step.json", "batch.npz", "weights.npz", "optimizer.npz"


def weights_digest(arrays: Mapping[str, Any]) -> str:
    """A sha256 over each array's name, dtype, shape and bytes, in name order: equal weights, equal digest."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        value = np.ascontiguousarray(np.asarray(arrays[name]))
        digest.update(f"{name}|{value.dtype.str}|{value.shape}|".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def variable_arrays(variables, root: str = "") -> dict[str, np.ndarray]:
    """{path: value} of variables, as saved and compared: paths below the model named `root` lose that prefix
    (a model built again gets another automatic name); a path several variables share gets `@position`."""
    return {name: np.asarray(var.numpy()) for name, var in _by_path(variables, root).items()}


@dataclass
class SavedStep:
    """A saved step read back: its description, its batch and its weights."""

    meta: dict
    batch: tuple
    weights: dict[str, np.ndarray]
    optimizer: dict[str, np.ndarray]


def load_step(step_dir: str | os.PathLike) -> SavedStep:
    """Read a saved step, checking the weights against the digest in step.json."""
    folder = Path(step_dir)
    meta = json.loads((folder / STEP_FILE).read_text())
    with np.load(folder / BATCH_FILE) as data:
        batch = tuple(data[str(i)] for i in range(len(data.files)))
    with np.load(folder / WEIGHTS_FILE) as data:
        weights = {name: data[name] for name in data.files}
    with np.load(folder / OPTIMIZER_FILE) as data:
        optimizer = {name: data[name] for name in data.files}
    if weights_digest(weights) != meta["weights_sha256"]:
        raise ValueError(f"{folder / WEIGHTS_FILE} does not match the digest in {STEP_FILE}: the file changed "
                         "after the step was saved. Replay a step whose files are intact.")
    return SavedStep(meta, batch, weights, optimizer)


def fit_loss(model: Any, batch: tuple) -> Any:
    """The loss `fit`'s own train step differentiates: the model in training mode, then `compute_loss`."""
    x, y, sample_weight = (tuple(batch) + (None, None))[:3] if len(batch) > 1 else (batch[0], None, None)
    return model.compute_loss(x=x, y=y, y_pred=model(x, training=True), sample_weight=sample_weight, training=True)


def replay(step_dir: str | os.PathLike, model: Any, loss_fn: Callable[[Any, tuple], Any] | None = None, *,
           jit_compile: bool | None = None):
    """Put the saved weights into `model`, diagnose `loss_fn(model, batch)` on the saved batch (compiled as the
    step was, if `jit_compile` is not None, and replayed eagerly), and put `model`'s own weights back."""
    from tapelab.diagnose.run import diagnose

    step = load_step(step_dir)
    by_path = _by_path(model.variables, model.name)
    missing = sorted(set(step.weights) - set(by_path))
    if missing:
        raise ValueError(f"the model has no variables named {missing[:3]}: is it built by the same code as the "
                         "model that was saved?")
    kept = {name: var.numpy() for name, var in by_path.items()}
    batch = step.batch
    try:
        for name, value in step.weights.items():
            by_path[name].assign(value)
        named = _by_path(model.trainable_variables, model.name)  # named as saved: below the model
        return diagnose(lambda: (loss_fn or fit_loss)(model, batch), named, model=model,
                        jit_compile=step.meta.get("jit_compile") if jit_compile is None else jit_compile)
    finally:
        for name, value in kept.items():
            by_path[name].assign(value)


def _by_path(variables, root: str = "") -> dict[str, Any]:
    names = [str(getattr(v, "path", None) or v.name).removesuffix(":0") for v in variables]
    names = [n.removeprefix(root + "/") if root else n for n in names]
    return {(f"{n}@{i}" if names.count(n) > 1 else n): v for i, (n, v) in enumerate(zip(names, variables))}


def _load(spec: str) -> Callable:
    module, _, name = spec.partition(":")
    if not name:
        raise SystemExit(f"usage error: {spec!r} is not `module:function`")
    sys.path.insert(0, os.getcwd())
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tapelab.diagnose.replay",
                                     description="Diagnose a training step a flight recorder saved.")
    parser.add_argument("step_dir", help="the saved step's folder (it holds step.json)")
    parser.add_argument("--model", required=True, help="module:function that builds the model (no arguments)")
    parser.add_argument("--loss", help="module:function(model, batch) -> loss; default: the loss fit uses")
    args = parser.parse_args(argv)
    if not (Path(args.step_dir) / STEP_FILE).is_file():
        parser.error(f"{args.step_dir} holds no {STEP_FILE}: pass a step folder the flight recorder wrote")
    model = _load(args.model)()
    report = replay(args.step_dir, model, _load(args.loss) if args.loss else None)
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    sys.exit(main())
