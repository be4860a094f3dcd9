"""Exercises 6.1 and 6.2 of notebook 06_fit_vs_custom: a custom `train_step` that matches `fit`, and the Keras 2
step fixed in the lower-level style; both checked against plain `fit` (tapelab.exercises.fit_match)."""
from __future__ import annotations

from dataclasses import replace

from tapelab.checker.variants import Space
from tapelab.exercises.fit_match import OWN_LOSSES, FitCase, FitMatch

__all__ = ["CustomTrainStep", "FixKeras2Step"]


class CustomTrainStep(FitMatch):
    number = "6.1"
    answer = "make_custom_model"
    fixed_because = ("your `train_step` must do what `fit`'s own step does with whatever `compile` chose (loss, "
                     "metrics, optimizer, dtype policy, sample weights): the test compiles your model itself and "
                     "compares it with `fit` from your model's own starting weights, so no number in your code "
                     "could make one variant's answer differ from another's.")
    # Several batches per epoch, a second metric and a loss other than MSE, on data of their own; a last
    # batch smaller than the others (fit weights batch losses by rows); a mixed_float16 policy (loss scaling);
    # a weight per row (fit hands train_step (x, y, sample_weight)), last so that other mistakes show first.
    visible_cases = (FitCase(), FitCase(8, 2, 4, "huber", ("mae",), 60), FitCase(5, 2, 2, "mse", ("mae",), 66),
                     FitCase(8, 2, 3, "mse", (), 67, "mixed_float16"), FitCase(6, 2, 4, "mse", ("mae",), 68,
                                                                              weighted=True))
    praise = "your `train_step` reproduces `fit` number for number."
    hints = (
        "Define `class CustomModel(keras.Model):` inside the function, build it from `keras.Input` and a "
        "`Dense(1, kernel_initializer=\"zeros\")`, and return the instance.",
        "In `train_step`: `x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)`; under a tape "
        "compute `y_pred = self(x, training=True)`, "
        "`loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)` and "
        "`scaled_loss = self.optimizer.scale_loss(loss)` "
        "(a no-op unless mixed precision wrapped the optimizer); differentiate `scaled_loss`, then "
        "`self.optimizer.apply(grads, self.trainable_variables)`.",
    )


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
