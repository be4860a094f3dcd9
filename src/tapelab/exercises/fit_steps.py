"""Exercises 6.1 and 6.2 of notebook 06_fit_vs_custom: section 3's `train_step` given sample weights and a
`test_step`, and the Keras 2 step fixed in the lower-level style with trackers of its own for the loss and a
metric, in `train_step` and `test_step`; both checked against plain `fit` (tapelab.exercises.fit_match) and
plain `evaluate` (tapelab.exercises.fit_evaluate)."""
from __future__ import annotations

from dataclasses import replace

from tapelab.checker.variants import Space
from tapelab.exercises.fit_cases import OWN_LOSSES, FitCase
from tapelab.exercises.fit_match import FitMatch
from tapelab.exercises.fit_evaluate import check_evaluate

__all__ = ["CustomTrainStep", "FixKeras2Step"]


_OUTPUT = 'Dense(1, kernel_initializer="zeros")'


def _layers(units: int) -> str:
    """The layers of 6.1's model in the task's words: the Dense(1) alone (units 0), or a tanh layer before it."""
    return f'a `Dense({units}, activation="tanh")` then a `{_OUTPUT}`' if units else f"one `{_OUTPUT}`"


class CustomTrainStep(FitMatch):
    number = "6.1"
    answer = "make_custom_model"
    replayable = True  # every use of the returned model goes through `run` (tapelab.exercises.fit_match)
    # The model's layers: the notebook's Dense(1) alone (units 0), or a Dense(units, tanh) before it in every other
    # variant; the visible and hidden cases are all fitted on the variant's model.
    space = Space(default={"units": 0}, draws={"units": lambda rng: int(rng.integers(2, 6))},
                  wording={"layers": lambda v: _layers(v["units"]),
                           "last": lambda v: f'keras.layers.Dense({v["units"]}, activation="tanh")(inputs)'
                           if v["units"] else "inputs"})
    statement = """Section 3's `CustomModel` unpacks `x, y = data` and has no `test_step`. Write
`make_custom_model(n_features=1)` that returns an instance, on `keras.Input((n_features,))` and
${layers}, of a `keras.Model` subclass defined **inside** the function that:

- takes a weight per row in `train_step`: `keras.utils.unpack_x_y_sample_weight(data)` gives
  `x, y, sample_weight` (`None` without weights);
- has a `test_step`, so that `evaluate` agrees with a plain `keras.Model`.

The test compiles it with `loss="mse"` and `weighted_metrics=["mae"]` and compares `fit` and
`evaluate` with a plain model's, with and without `sample_weight`, a smaller last batch and `mixed_float16`."""
    praise = "your `train_step` and `test_step` report what `fit` and `evaluate` report, weights and all."
    hints = (
        "Start from section 3's `train_step`: replace `x, y = data` by `x, y, sample_weight = "
        "keras.utils.unpack_x_y_sample_weight(data)` and add `sample_weight=sample_weight` to `compute_loss`.",
        "The compiled metrics take the weights too, `metric.update_state(y, y_pred, sample_weight=sample_weight)`, "
        "but the loss tracker still counts rows, `sample_weight=tf.shape(x)[0]`: the weights are inside the loss.",
        "`evaluate` calls `test_step(self, data)` once per batch, with `data` as `fit` gives it: it predicts, "
        "computes the loss and updates the metrics, but records no tape and applies nothing.",
    )

    @property
    def visible_cases(self) -> tuple[FitCase, ...]:
        """The worked example without weights, in one batch; then, weighted, several batches with a smaller last
        one (where a loss tracker that counts batches instead of rows shows), and the same under a mixed_float16
        policy; all on the variant's model."""
        return self._on_model(_VISIBLE_61, self.variant["units"])

    def outcome(self, answer=None, *, cases=None, expected=None, seed=None):
        """`FitMatch.outcome` on `cases` fitted on the checked variant's model (in `outcome`, which `check` calls:
        the grader's judge calls it itself)."""
        __tracebackhide__ = True
        units = (self.variant if seed is None else self.space.variant(seed))["units"]
        return super().outcome(answer, cases=None if cases is None else self._on_model(cases, units),
                               expected=expected, seed=seed)

    @staticmethod
    def _on_model(cases, units: int) -> tuple[FitCase, ...]:
        """`cases` (FitCases or their fields) fitted on the checked variant's model."""
        return tuple(replace(case if isinstance(case, FitCase) else FitCase(*case), hidden=units) for case in cases)

    def _check_under_policy(self, fn, case, facts):
        model = super()._check_under_policy(fn, case, facts)
        check_evaluate(self, fn, model, case)


_VISIBLE_61 = (FitCase(metrics=("mae",)), FitCase(5, 2, 2, "mse", ("mae",), 66, weighted=True),
               FitCase(8, 2, 3, "mse", ("mae",), 71, "mixed_float16", True))


# The metric 6.2's model tracks beside its loss, by the name `fit` reports it under: what it reads as, and its class.
TRACKED_METRICS = {"mae": ("mean absolute error", "MeanAbsoluteError"),
                   "mse": ("mean squared error", "MeanSquaredError"),
                   "root_mean_squared_error": ("root mean squared error", "RootMeanSquaredError")}


def _other(loss: str) -> str:
    """The loss a step computes by hand that is not `loss`: a known wrong target."""
    return next(name for name in OWN_LOSSES if name != loss)


def _distinct(v) -> bool:
    """A drawn variant tracks a metric other than its loss, and is not the text's own (whose answer would pass)."""
    return TRACKED_METRICS[v["metric"]][0] != f"mean {OWN_LOSSES[v['loss']][0]} error" and (
        v["loss"], v["metric"]) != ("mse", "mae")


_VISIBLE_62 = (FitCase(), FitCase(5, 2, 2, "mse", (), 66),
               FitCase(8, 2, 3, "mse", (), 67, "mixed_float16"))


class FixKeras2Step(FitMatch):
    number = "6.2"
    answer = "make_tracked_model"
    replayable = True  # every use of the returned model goes through `run` (tapelab.exercises.fit_match)
    compile_loss = False
    # What the model trains on and what it tracks beside it: the loss it computes itself (squared in the notebook's
    # text, OWN_LOSSES) and a second metric by Keras's name for it (TRACKED_METRICS), never the loss itself.
    space = Space(default={"loss": "mse", "metric": "mae"},
                  draws={"loss": lambda rng: str(rng.choice(list(OWN_LOSSES))),
                         "metric": lambda rng: str(rng.choice(list(TRACKED_METRICS)))},
                  allowed=_distinct,
                  wording={"error": lambda v: OWN_LOSSES[v["loss"]][0], "fn": lambda v: OWN_LOSSES[v["loss"]][1],
                           "other_error": lambda v: OWN_LOSSES[_other(v["loss"])][0],
                           "other_fn": lambda v: OWN_LOSSES[_other(v["loss"])][1],
                           "metric_name": lambda v: TRACKED_METRICS[v["metric"]][0],
                           "metric_class": lambda v: TRACKED_METRICS[v["metric"]][1]})
    statement = """Fix `Keras2Model` in the lower-level style: write `make_tracked_model(n_features=1)` returning an
instance, on `keras.Input((n_features,))` and one `Dense(1, kernel_initializer="zeros")`, of a `keras.Model`
subclass defined inside it. Compiled with an optimizer only, it:

- trains on the **mean ${error} error**, computed itself on `y_pred` cast to `y`'s dtype, differentiating
  `self.optimizer.scale_loss(loss)`;
- reports it as `"loss"` and the **${metric_name}** as `"${metric}"`, each from its own tracker;
- has a `test_step`, so `evaluate` reports both.

The test compares `fit` (2 epochs) and `evaluate` with a plain model given `loss="${loss}"`,
`metrics=["${metric}"]`, on several batches, a smaller last batch and `mixed_float16`."""
    praise = "your own trackers report what `fit` and `evaluate` report, and the Keras 2 bug is gone."
    hints = (
        "Compiled with an optimizer only, the model has no loss and no metrics but yours. In `__init__` create "
        "`self.loss_tracker = keras.metrics.Mean(name=\"loss\")` and a second tracker, "
        "`keras.metrics.${metric_class}(name=\"${metric}\")`; Keras tracks both and resets them each epoch.",
        "Inside the tape: `y_pred = tf.cast(self(x, training=True), y.dtype)`, "
        "`loss = tf.reduce_mean(${fn}(y - y_pred))`, and differentiate `self.optimizer.scale_loss(loss)`. Update "
        "the loss tracker with `sample_weight=tf.shape(x)[0]` and the metric with `update_state(y, y_pred)`.",
        "`evaluate` calls `test_step(self, data)`: the same loss and updates on `self(x, training=False)`, no tape, "
        "no `apply`. Both steps return `{m.name: m.result() for m in self.metrics}`; a small method of your class "
        "can do the updates for both.",
    )

    @property
    def visible_cases(self) -> tuple[FitCase, ...]:
        """The worked example in one batch, several batches with a smaller last one, and the same under a
        mixed_float16 policy; with the variant's loss and metric."""
        return self._tracking(_VISIBLE_62, self.variant)

    def outcome(self, answer=None, *, cases=None, expected=None, seed=None):
        """`FitMatch.outcome` on `cases` compared with the checked variant's plain model (in `outcome`, which `check`
        calls: the grader's judge calls it itself)."""
        __tracebackhide__ = True
        variant = self.variant if seed is None else self.space.variant(seed)
        return super().outcome(answer, cases=None if cases is None else self._tracking(cases, variant),
                               expected=expected, seed=seed)

    @staticmethod
    def _tracking(cases, variant) -> tuple[FitCase, ...]:
        """`cases` (FitCases or their fields) compared with a plain model compiled with the variant's loss and
        metric."""
        return tuple(replace(case if isinstance(case, FitCase) else FitCase(*case), loss=variant["loss"],
                             metrics=(variant["metric"],)) for case in cases)

    def _check_under_policy(self, fn, case, facts):
        model = super()._check_under_policy(fn, case, facts)
        check_evaluate(self, fn, model, case)
