"""Exercises 6.1 and 6.2 of notebook 06_fit_vs_custom: section 3's `train_step` given sample weights and a
`test_step`, and the Keras 2 step fixed in the lower-level style; both checked against plain `fit`
(tapelab.exercises.fit_match), 6.1 against plain `evaluate` too (tapelab.exercises.fit_evaluate)."""
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
        """The worked example without weights; then, weighted, several batches, a smaller last batch and a
        mixed_float16 policy; all on the variant's model."""
        return self._on_model(_VISIBLE_61, self.variant["units"])

    def check(self, answer=None, *, cases=None, expected=None, seed=None) -> None:
        __tracebackhide__ = True
        units = (self.variant if seed is None else self.space.variant(seed))["units"]
        super().check(answer, cases=None if cases is None else self._on_model(cases, units), expected=expected,
                      seed=seed)

    @staticmethod
    def _on_model(cases, units: int) -> tuple[FitCase, ...]:
        """`cases` (FitCases or their fields) fitted on the checked variant's model."""
        return tuple(replace(case if isinstance(case, FitCase) else FitCase(*case), hidden=units) for case in cases)

    def _check_under_policy(self, fn, case, facts):
        model = super()._check_under_policy(fn, case, facts)
        check_evaluate(self, fn, model, case)


_VISIBLE_61 = (FitCase(metrics=("mae",)), FitCase(6, 2, 2, "mse", ("mae",), 68, weighted=True),
               FitCase(5, 2, 2, "mse", ("mae",), 66, weighted=True),
               FitCase(8, 2, 3, "mse", ("mae",), 71, "mixed_float16", True))


def _other(loss: str) -> str:
    """The loss a step computes by hand that is not `loss`: a known wrong target."""
    return next(name for name in OWN_LOSSES if name != loss)


_VISIBLE_62 = (FitCase(), FitCase(8, 2, 4, "mse", (), 60), FitCase(5, 2, 2, "mse", (), 66),
               FitCase(8, 2, 3, "mse", (), 67, "mixed_float16"))


class FixKeras2Step(FitMatch):
    number = "6.2"
    answer = "make_tracked_model"
    compile_loss = False
    # The loss the step computes itself and `fit` is compared with: the mean squared error in the notebook's text,
    # the mean absolute error in every other variant (the losses a short step computes by hand, OWN_LOSSES).
    space = Space(default={"loss": "mse"}, draws={"loss": lambda rng: "mae"},
                  wording={"error": lambda v: OWN_LOSSES[v["loss"]][0], "fn": lambda v: OWN_LOSSES[v["loss"]][1],
                           "other_error": lambda v: OWN_LOSSES[_other(v["loss"])][0],
                           "other_fn": lambda v: OWN_LOSSES[_other(v["loss"])][1]})
    statement = """- computes the **mean ${error} error** itself (no `compiled_loss`, no `compiled_metrics`), casting `y_pred`
  to `y`'s dtype first (float16 under `mixed_float16`);
- differentiates `self.optimizer.scale_loss(loss)`, as section 4 showed;
- updates the tracker with `sample_weight=tf.shape(x)[0]`.

The test compiles it with `optimizer=SGD(0.1)` only and compares 2 epochs' `loss` and weights with
`fit(loss="${loss}")`, with several batches, a smaller last batch and `mixed_float16`."""
    praise = "your own loss tracker reports what `fit` reports, and the Keras 2 bug is gone."
    hints = (
        "The model is compiled with an optimizer only: there is no compiled loss, so compute the mean $error "
        "error yourself inside the tape, `tf.reduce_mean($fn(y - tf.cast(y_pred, y.dtype)))`, and "
        "differentiate `self.optimizer.scale_loss(loss)` so that a `mixed_float16` run is scaled too.",
        "Create `self.loss_tracker = keras.metrics.Mean(name=\"loss\")` in `__init__`, update it in "
        "`train_step` with `update_state(loss, sample_weight=tf.shape(x)[0])` (a smaller last batch counts by "
        "its rows, as `fit` counts it).",
        "`train_step` returns `{\"loss\": self.loss_tracker.result()}`. An attribute of the model is tracked, "
        "so `fit` resets it every epoch by itself; a `metrics` property returning `[self.loss_tracker]` is optional.",
    )

    @property
    def visible_cases(self) -> tuple[FitCase, ...]:
        """Several batches per epoch, a smaller last batch, and a mixed_float16 policy; with the variant's loss."""
        return self._with_loss(_VISIBLE_62, self.variant["loss"])

    def check(self, answer=None, *, cases=None, expected=None, seed=None) -> None:
        __tracebackhide__ = True
        loss = (self.variant if seed is None else self.space.variant(seed))["loss"]
        super().check(answer, cases=None if cases is None else self._with_loss(cases, loss), expected=expected,
                      seed=seed)

    @staticmethod
    def _with_loss(cases, loss: str) -> tuple[FitCase, ...]:
        """`cases` (FitCases or their fields) compared with `fit` on the checked variant's `loss`."""
        return tuple(replace(case if isinstance(case, FitCase) else FitCase(*case), loss=loss) for case in cases)
