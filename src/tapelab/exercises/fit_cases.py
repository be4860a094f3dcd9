"""The cases a custom `train_step` is fitted on against plain `fit` (exercises 6.1 and 6.2): data, sample weights,
batches, the compiled loss and metrics, the dtype policy, and the model itself; and what known wrong steps would
report along the plain fit (`Replay`)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import keras
import numpy as np
import tensorflow as tf

__all__ = ["EPOCHS", "OWN_LOSSES", "FitCase", "Replay", "batches_read", "worked_example"]

EPOCHS = 2  # every fit the checkers run, the student's and the reference, trains this many epochs
# The losses a step may compute by itself (6.2's variants): how each reads, and the other one, a known wrong target.
OWN_LOSSES = {"mse": ("squared", "tf.square"), "mae": ("absolute", "tf.abs")}


@lru_cache(maxsize=32)
def batches_read(case: FitCase) -> tuple:
    """`case`'s batches as tensors, read from its dataset once per case and process: iterating a dataset eagerly
    costs more than a small model's few steps on it, and a grading judge checks every student on the same cases."""
    return tuple(case.batches())


def worked_example() -> tuple[np.ndarray, np.ndarray]:
    """The notebook's deterministic problem: X = [1, 2, 3, 4] as a column, Y = 2X + 1."""
    x = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    return x, 2 * x + 1


@dataclass(frozen=True)
class FitCase:
    """Data and compile settings for one history comparison."""

    rows: int = 4
    features: int = 1
    batch_size: int = 4
    loss: str = "mse"
    metrics: tuple[str, ...] = ()
    seed: int = 0  # 0: the worked example
    policy: str = "float32"  # or "mixed_float16": `compile` then wraps the optimizer in a LossScaleOptimizer
    weighted: bool = False  # each row carries a sample weight, which `fit` hands to `train_step` with the batch
    hidden: int = 0  # the units of a Dense(hidden, tanh) before the Dense(1); 0: the Dense(1) alone

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        if self.seed == 0:
            return worked_example()
        rng = np.random.default_rng(self.seed)
        x = rng.normal(size=(self.rows, self.features)).astype(np.float32)
        w = rng.normal(size=(self.features, 1))
        return x, (x @ w + 0.5 + 0.1 * rng.normal(size=(self.rows, 1))).astype(np.float32)

    def weights(self) -> np.ndarray | None:
        """The rows' sample weights (between 0.25 and 2, none equal), or None for an unweighted case."""
        return np.linspace(0.25, 2.0, self.rows, dtype=np.float32) if self.weighted else None

    def batches(self) -> tf.data.Dataset:
        """The data in batches of `batch_size`, in order, with the weights as a third element when weighted.
        A dataset rather than arrays: under op determinism, `fit` on arrays whose last batch is partial
        makes TensorFlow log a C++ line to stderr."""
        weights = self.weights()
        parts = self.data() if weights is None else (*self.data(), weights)
        return tf.data.Dataset.from_tensor_slices(parts).batch(self.batch_size)

    def loss_object(self) -> keras.losses.Loss:
        """The compiled loss; a name with a word before it ("summed mse", "half mae") is a wrong loss a feedback
        alternative fits with."""
        word, _, name = self.loss.rpartition(" ")
        kind = {"mse": keras.losses.MeanSquaredError, "huber": keras.losses.Huber,
                "mae": keras.losses.MeanAbsoluteError}[name]
        loss = kind(reduction="sum") if word == "summed" else kind()
        factor = {"half": 0.5, "double": 2.0}.get(word)
        return loss if factor is None else (lambda y, p: factor * loss(y, p))

    def model(self, model_class: type = keras.Model) -> keras.Model:
        """The case's plain model, of `model_class`: a `Dense(hidden, activation="tanh")` first when `hidden`."""
        inputs = keras.Input((self.features,))
        hidden = keras.layers.Dense(self.hidden, activation="tanh")(inputs) if self.hidden else inputs
        return model_class(inputs, keras.layers.Dense(1)(hidden))

    def shapes(self) -> list[tuple[int, ...]]:
        """The shapes of the model's weights, in order."""
        dense = [(self.features, 1), (1,)]
        return [(self.features, self.hidden), (self.hidden,), (self.hidden, 1), (1,)] if self.hidden else dense

    def layers(self) -> str:
        """The layers the student's model should have, in words."""
        last = "`Dense(1)`"
        return f"a `Dense({self.hidden}, activation=\"tanh\")` then a {last}" if self.hidden else f"one {last} layer"

    def shown(self) -> str:
        return f"n_features={self.features}"

    def metric_options(self) -> dict:
        """`compile`'s metrics, as `weighted_metrics` (plain `metrics` ignore sample weights): new metric objects,
        named as `compile` names the strings. A metric given by its name is built inside the first trace of `fit`'s
        step, and a step that creates variables is traced twice; an object's variables exist already."""
        return {"weighted_metrics": [_named_metric(name) for name in self.metrics] or None}

    def describe(self, compiled: bool = True) -> str:
        """The case in words. `compiled`: the student's model is compiled with the case's loss and metrics (6.1);
        else (6.2: an optimizer only) they are said to be the plain model's, which the student's is compared with."""
        extra = ""
        if self.policy != "float32":
            extra += f", under the {self.policy!r} dtype policy"
        if self.weighted:
            extra += ", with a sample weight per row"
        options = f"loss={self.loss!r}" + (f", weighted_metrics={list(self.metrics)}" if self.metrics else "")
        rows = f"{self.rows} rows of {self.features} feature(s), batch_size={self.batch_size}"
        if compiled:
            return f"{rows}, {options}{extra}"
        return f"{rows}{extra}; the plain model compared with yours is compiled with {options}"

    def rtol(self, key: str) -> float:
        """The relative tolerance a reported number `key` is compared with. Keras computes a compiled metric in
        `y_pred`'s dtype, float16 under mixed_float16, so a step that casts `y_pred` to float32 before its own
        metric reports it a float16 rounding away (2e-4 measured on the 6.2 cases): 1e-3 there; else 1e-4."""
        return 1e-3 if self.policy == "mixed_float16" and key != "loss" else 1e-4

    @property
    def steps(self) -> int:
        """The number of batches in an epoch."""
        return -(-self.rows // self.batch_size)

    def fit(self, model: keras.Model, callbacks: tuple = ()) -> dict[str, list[float]]:
        """`model.fit` on these batches, in order, for EPOCHS epochs; the history. The dataset is repeated and
        each epoch is `steps` batches long: the same batches as fitting the dataset itself, but `fit` makes one
        iterator for the whole run instead of one per epoch, which is much of a small fit's time."""
        return model.fit(self.batches().repeat(), steps_per_epoch=self.steps, epochs=EPOCHS, verbose=0,
                         shuffle=False, callbacks=list(callbacks)).history

    @property
    def last_rows(self) -> int:
        """The number of rows in each epoch's last batch (smaller than `batch_size` when it does not divide)."""
        return self.rows - (self.rows - 1) // self.batch_size * self.batch_size


def _named_metric(name: str) -> keras.metrics.Metric:
    """The metric `compile` makes of the string `name` ("mae", "root_mean_squared_error"), under that name."""
    metric = keras.metrics.get(name)
    metric.name = name
    return metric


class Replay(Mapping):
    """`_replay(starts, case)`, computed on first use: only a reported number that disagrees with `fit` needs it."""

    def __init__(self, starts: list[list[np.ndarray]], case: FitCase) -> None:
        self._starts, self._case, self._found = starts, case, None

    def _values(self) -> dict[str, list[float]]:
        if self._found is None:
            self._found = _replay(self._starts, self._case)
        return self._found

    def __getitem__(self, key: str) -> list[float]:
        return self._values()[key]

    def __iter__(self):
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())


def _forward(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The case's model on `x` with `weights`: [Dense(hidden, tanh) kernel and bias,] Dense(1) kernel and bias."""
    *hidden, kernel, bias = weights
    return (np.tanh(x @ hidden[0] + hidden[1]) if hidden else x) @ kernel + bias


def _replay(starts: list[list[np.ndarray]], case: FitCase) -> dict[str, list[float]]:
    """Per epoch, what a wrong step would report: the mean prediction, the last batch's loss, the plain
    (unweighted) mean of the batch losses, and the mean of every batch loss so far (a loss metric that
    `fit` never resets)."""
    x, y = case.data()
    weights = case.weights()
    batches = [slice(i, i + case.batch_size) for i in range(0, len(x), case.batch_size)]
    loss = case.loss_object()
    mean_pred, last_loss, unweighted, running, seen = [], [], [], [], []
    for epoch in range(EPOCHS):
        preds = [_forward(start, x[part]) for part, start in
                 zip(batches, starts[epoch * len(batches):(epoch + 1) * len(batches)])]
        mean_pred.append(float(np.mean(np.concatenate(preds))))
        seen += [float(loss(y[part], pred) if weights is None else loss(y[part], pred, sample_weight=weights[part]))
                 for part, pred in zip(batches, preds)]
        last_loss.append(seen[-1])
        unweighted.append(float(np.mean(seen[-len(batches):])))
        running.append(float(np.mean(seen)))
    found = {"mean prediction": mean_pred, "last batch loss": last_loss, "unweighted mean": unweighted,
             "running mean": running}
    for name in case.metrics if weights is not None else ():  # each metric as a step that drops the weights reports it
        metric = {"mae": keras.metrics.MeanAbsoluteError, "mse": keras.metrics.MeanSquaredError}[name]()
        found[f"unweighted {name}"] = []
        for epoch in range(EPOCHS):
            metric.reset_state()
            for part, start in zip(batches, starts[epoch * len(batches):(epoch + 1) * len(batches)]):
                metric.update_state(y[part], _forward(start, x[part]))
            found[f"unweighted {name}"].append(float(metric.result()))
    return found
