"""Exercises of notebook 06_fit_vs_custom: sample weights in a `train_step` and a `test_step`, two optimizers
for two layers, clipping by global norm, fixing a Keras 2 step in the lower-level style, and (from
`guarded_step`) a guarded step inside `tf.function`, and (from `evaluation`) a validation loop."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.wrong_answers import Alternative, matching_alternative, wrong_value
from tapelab.checker.compare import ATOL, RTOL, allclose, fmt, fmt_pair, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.exercises.dtype_policies import combined_dtypes, dtype_policy
from tapelab.exercises.evaluation import ex6_6
from tapelab.exercises.fit_match import worked_example
from tapelab.exercises.fit_steps import CustomTrainStep, FixKeras2Step
from tapelab.exercises.keras_cases import LOSS_SCALES, TwoLayerCase
from tapelab.exercises.guarded_step import GuardedStep
from tapelab.checker.messages import Incorrect
from tapelab.checker.replay import once_in_judge
from tapelab.checker.variants import Space

__all__ = ["ex6_1", "ex6_2", "ex6_3", "ex6_4", "ex6_5", "ex6_6", "worked_example"]


_POWER_WORDS = {1: "absolute", 2: "squared", 3: "cubed absolute", 4: "fourth-power absolute"}


def _power_words(p: int) -> dict:
    """How the loss mean(|error|^p) reads: `open` and `close` around the error in code (`tf.square(` and `)` for
    p = 2, else `tf.abs(` and `) ** p`), and its name."""
    close = ")" if p in (1, 2) else f") ** {p}"
    return {"open": "tf.square(" if p == 2 else "tf.abs(", "close": close,
            "loss_name": f"the mean {_POWER_WORDS[p]} error"}


class TwoOptimizers(Exercise):
    number = "6.4"
    replayable = True
    answer = "two_optimizer_step"
    # The loss, the mean of |y - y_pred| to the power p (2, the mean squared error, in the notebook's text): each
    # optimizer's step follows its gradient.
    space = Space(default={"p": 2}, draws={"p": lambda rng: int(rng.choice([1, 3, 4]))},
                  wording={name: (lambda v, name=name: _power_words(v["p"])[name])
                           for name in ("open", "close", "loss_name")})
    statement = """Write `two_optimizer_step(model, opt_a, opt_b, x, y)` for a `Sequential` model of two `Dense` layers: in one
tape compute ${loss_name}
`tf.reduce_mean(${open}y - tf.cast(model(x, training=True), y.dtype)${close})`, then update the first layer's
variables with `opt_a` and all the other trainable variables with `opt_b`. Return the loss."""
    # Two optimizers of different kinds over two steps, a first layer without bias and a
    # BatchNormalization between the layers, each on inputs of its own; then mixed_float16, where each
    # optimizer is a LossScaleOptimizer with a scale of its own and the model's output is float16.
    visible_cases = ((3, 4, 8, "sgd", "sgd", 1, 21), (2, 3, 6, "sgd", "sgd", 1, 20, False, True),
                     (2, 3, 5, "momentum", "adam", 2, 25), (3, 4, 8, "sgd", "sgd", 2, 26, True, False, "mixed_float16"))
    praise = "each optimizer moved exactly its own layer, by its own rule."
    hints = (
        "Take each part's variables from its layers: `first = model.layers[0].trainable_variables`, and the "
        "others from `model.layers[1:]`; never by position in one list.",
        "Compute the loss once, under one persistent tape, and in the same block `opt_a.scale_loss(loss)` and "
        "`opt_b.scale_loss(loss)`; differentiate the first for `first`, the second for `others` (`scale_loss` "
        "returns the loss unchanged for a plain optimizer, and a `LossScaleOptimizer` unscales by its own scale).",
    )

    def case_key(self, case):
        return super().case_key(_two_layer(case))

    def expectations(self, case):
        """The weights after the correct steps and the loss before each; under mixed precision also the
        weights after each wrongly scaled step (the loss never scaled, or one optimizer's scale for all)."""
        case = _two_layer(case)
        runs: dict[str, tuple] = {}  # one reference run gives both the weights and the losses

        def steps(part, scaled_by="own"):
            def compute(refs):
                if scaled_by not in runs:
                    with dtype_policy(case.policy):
                        model, (opt_a, opt_b), (_, x, y) = case.model(), case.optimizers(), case.draw()
                        runs[scaled_by] = refs.two_optimizer_steps(model, opt_a, opt_b, x, y, case.steps, scaled_by,
                                                                   self.variant["p"])
                return runs[scaled_by][part]
            return compute

        found = {"weights": steps(0), "losses": steps(1)}
        if case.policy == "mixed_float16":
            found |= {f"scaled by {who}": steps(0, who) for who in ("none", "a", "b")}
        return found

    def check_case(self, fn, case, facts):
        case = _two_layer(case)
        with dtype_policy(case.policy):
            self._check_under_policy(fn, case)

    def _check_under_policy(self, fn, case):
        weights, x, y = case.draw()
        model, (opt_a, opt_b) = self.given(case.model), case.optimizers()
        n, names = _variables(model) if model is not None else _judged_variables(case)  # before the student's code
        expect = self.expect(case)
        first = f"Dense({case.hidden}{'' if case.bias else ', use_bias=False'})"
        policy = f", under the {case.policy!r} dtype policy" if case.policy != "float32" else ""
        shown = (f"a {first}+{'BatchNormalization+' if case.norm else ''}Dense(1) model, opt_a={_named(opt_a)}, "
                 f"opt_b={_named(opt_b)}, x of shape {tuple(x.shape)}{policy}")
        returned = [self.call(fn, model, opt_a, opt_b, x, y, shown=shown).value for _ in range(case.steps)]
        moving, after, rates = self.run(lambda: ([w.numpy() for w in model.non_trainable_weights],
                                                 [w.numpy() for w in model.trainable_variables],
                                                 [float(o.learning_rate) for o in (opt_a, opt_b)]),
                                        "Reading the model's weights and the optimizers after your steps").value
        losses = expect["losses"]  # after every run: a grading kernel never holds a hidden case's (replay.Withheld)
        steps_text = f" after {case.steps} steps" if case.steps > 1 else ""
        if case.norm:
            if all(np.array_equal(w, start) for w, start in zip(moving, (np.zeros(case.hidden), np.ones(case.hidden)))):
                raise Incorrect(f"The model ({shown}) has a `BatchNormalization` layer, and its moving mean and "
                                f"variance never changed{steps_text}: your step ran the model in inference mode, "
                                "where it normalizes with the moving statistics instead of the batch's. Did you "
                                "call `model(x, training=True)` inside the tape?", cause="inference-mode")
        if case.policy == "mixed_float16" and any(_dtype_name(value) == "float16" for value in returned):
            raise Incorrect(f"`two_optimizer_step` returned a float16 loss (on {shown}): "
                            f"{self.variant['loss_name']} was computed in float16. Keras computes losses in float32 "
                            "under `mixed_float16`, and "
                            f"for a reason: a float16 loss times `opt_a`'s loss scale ({int(LOSS_SCALES[0])}) "
                            "overflows once the loss reaches 2 (float16 stops at 65504), and the `LossScaleOptimizer` "
                            "then skips the step. Did you cast `y` to float16? Cast the prediction up instead: "
                            "`tf.cast(model(x, training=True), y.dtype)`.", cause="float16-loss")
        count = len(names)
        got = [w - w0 for w, w0 in zip(after, weights)]
        want = [w - w0 for w, w0 in zip(expect["weights"], weights)]
        wrong = [i for i in range(count) if not allclose(want[i], got[i], rtol=1e-3, atol=1e-6)]
        if not wrong:
            self._check_returned(returned, losses, shown, LOSS_SCALES if case.policy == "mixed_float16" else ())
            return
        if case.policy == "mixed_float16":
            self._check_scaled(expect, weights, want, got, names, steps_text, shown)
        i = wrong[0]
        ratios = [_ratio(want[i], got[i]) for i in range(count)]
        lr_a, lr_b = rates
        if case.a == case.b == "sgd":
            first_by_b = all(_near(ratios[i], lr_b / lr_a) for i in range(n))
            second_by_a = all(_near(ratios[i], lr_a / lr_b) for i in range(n, count))
            if first_by_b and second_by_a:
                raise Incorrect(f"The first layer moved {lr_b / lr_a:g} times and the second {lr_a / lr_b:g} times "
                                "as far as they should: the optimizers are swapped. `opt_a` (learning rate "
                                f"{lr_a:g}) must update the first layer and `opt_b` ({lr_b:g}) the second.",
                                cause="swapped-optimizers")
            if second_by_a and not any(i < n for i in wrong):
                raise Incorrect(f"The second layer moved {lr_a / lr_b:g} times as far as it should, as if `opt_a` "
                                "updated it. Did you pass all the variables to `opt_a`? Only the first layer's "
                                "belong to it; give the second layer's to `opt_b`.", cause="one-optimizer")
            by_other = [i for i in wrong if _near(ratios[i], lr_a / lr_b if i >= n else lr_b / lr_a)]
            if not case.bias and by_other == wrong:
                raise Incorrect(f"In this model ({shown}) the first layer has {n} trainable variable(s), the second "
                                f"{count - n}, and some variables moved by the other optimizer's learning rate. Did "
                                "you split the variables at a fixed index, or count another layer's variables? Take them from "
                                "the layers instead: `model.layers[0].trainable_variables` for `opt_a`, the other "
                                "layers' for `opt_b`.", cause="fixed-split")
        if not np.any(got[i]):
            raise Incorrect(f"The {names[i]} did not change{steps_text}, but should move by {fmt(want[i])}. "
                            "Did you apply gradients to every variable, each with its layer's optimizer?",
                            cause="no-update")
        moved, should = fmt_pair(got[i], want[i], 1e-3, 1e-6)
        words = self.variant
        raise Incorrect(f"The {names[i]} moved by {moved}{steps_text}, but should move by {should} (on {shown}). "
                        f"Is your loss {words['loss_name']} `tf.reduce_mean({words['open']}y - model(x)"
                        f"{words['close']})`, and did "
                        "each optimizer get its own layer's variables and gradients, in order?")

    @staticmethod
    def _check_scaled(expect, weights, want, got, names, steps_text, shown):
        """Under mixed precision: are the moves those of a step that scales its loss wrongly, or not at all?"""
        def moves(scaled_by: str):
            return lambda: [w - w0 for w, w0 in zip(expect[f"scaled by {scaled_by}"], weights)]

        scale_a, scale_b = (int(s) for s in LOSS_SCALES)
        own = ("Each `LossScaleOptimizer` keeps a scale of its own, and the two drift apart in training (each halves "
               "its scale when its own gradients overflow). Differentiate `opt_a.scale_loss(loss)` for the first "
               "layer's variables and `opt_b.scale_loss(loss)` for the others: one persistent tape gives both.")
        found = matching_alternative(want, got, [
            Alternative("loss not scaled", moves("none"), "loss-not-scaled",
                        "Those are the moves of a step that never scales its loss. Each optimizer here is a "
                        "`LossScaleOptimizer`, whose `apply` divides the gradients by its loss scale "
                        f"({scale_a} for `opt_a`, {scale_b} for `opt_b`), so the weights barely move. Did you "
                        "differentiate `opt_a.scale_loss(loss)` for the first layer's variables and "
                        "`opt_b.scale_loss(loss)` for the others?"),
            Alternative("opt_a's scale for every variable", moves("a"), "one-loss-scale",
                        f"Those are the moves of a step that scales the loss once, by `opt_a`'s scale ({scale_a}), "
                        f"for every variable: `opt_b` divides its gradients by its own scale ({scale_b}), so the "
                        f"second layer's gradients come out {scale_a // scale_b} times too large. {own}"),
            Alternative("opt_b's scale for every variable", moves("b"), "one-loss-scale",
                        f"Those are the moves of a step that scales the loss once, by `opt_b`'s scale ({scale_b}), "
                        f"for every variable: `opt_a` divides its gradients by its own scale ({scale_a}), so the "
                        f"first layer's gradients come out {scale_a // scale_b} times too small. {own}"),
        ], 1e-3, 1e-6)
        if found is None or found.cause == "constant-factor":
            return
        layer = "second" if found.name.startswith("opt_a") else "first"  # the layer whose gradients are off
        i = next(i for i, name in enumerate(names) if name.startswith(layer)
                 and not allclose(want[i], got[i], rtol=1e-3, atol=1e-6))
        moved, should = fmt_pair(got[i], want[i], 1e-3, 1e-6)
        raise Incorrect(f"The {names[i]} moved by {moved}{steps_text}, but should move by {should} (on {shown}). "
                        f"{found.says}", cause=found.cause)

    def _check_returned(self, returned, losses, shown, scales=()):
        for step, (got, want) in enumerate(zip(returned, losses), start=1):
            at = f" at step {step}" if len(losses) > 1 else ""
            if got is None:
                raise Incorrect("`two_optimizer_step` returned `None`, but should return the loss. Did you forget "
                                "`return loss`?", cause="no-return")
            try:
                value = np.asarray(to_numpy(got), np.float64)
            except Exception:
                value = None
            if value is None or value.size != 1:
                raise Incorrect(f"`two_optimizer_step` returned {fmt(got) if value is not None else type(got).__name__}"
                                f"{at}, but should return the loss, one number ({want:.6g} here). Did you return "
                                "the scalar `loss` from the tape?")
            if value.ndim:
                raise Incorrect(f"`two_optimizer_step` returned a tensor of shape {value.shape}{at}, but the loss is "
                                "one number, of shape (): an axis of size 1 was kept. Reduce over every axis (`tf."
                                "reduce_mean(...)` with no `axis`), so that the loss is a scalar.", cause="extra-axis")
            scaled = [(k, opt) for k, opt in zip(scales, ("opt_a", "opt_b")) if want and allclose(
                want * k, float(value.ravel()[0]), rtol=1e-3, atol=1e-6)]
            if scaled:
                k, opt = scaled[0]
                raise Incorrect(f"Your weights are right, but `two_optimizer_step` returned {fmt(got)}{at}, which is "
                                f"the loss ({want:.6g}) times {int(k)}, `{opt}`'s loss scale: you returned the scaled "
                                "loss. Return the `loss` itself; the scaled one exists only for the gradient.",
                                cause="constant-factor")
            if not allclose(want, float(value.ravel()[0]), rtol=1e-4, atol=1e-6):
                got_text, want_text = fmt_pair(float(value.ravel()[0]), want, 1e-4, 1e-6)
                raise Incorrect(f"Your weights are right, but `two_optimizer_step` returned {got_text}"
                                f"{at} where the loss ({self.variant['loss_name']} before the update, on {shown}) is "
                                f"{want_text}. Return the `loss` you computed inside the tape, unchanged.")


def _variables(model: keras.Model) -> tuple[int, list[str]]:
    """How many trainable variables the model's first layer has, and each trainable variable as messages name it."""
    n = len(model.layers[0].trainable_variables)
    return n, [f"{'first' if i < n else 'second'} layer's {v.name}" for i, v in enumerate(model.trainable_variables)]


@once_in_judge
def _judged_variables(case: TwoLayerCase) -> tuple[int, list[str]]:
    """`_variables` of the case's model, in the grader's judge, which builds no model for the student's calls."""
    return _variables(case.model())


def _two_layer(case) -> TwoLayerCase:
    """A case of 6.4 as the class, whether written as one or as the tuple of its fields (in a test cell)."""
    return case if isinstance(case, TwoLayerCase) else TwoLayerCase(*case)


def _named(optimizer: keras.optimizers.Optimizer) -> str:
    """`SGD`, or `LossScaleOptimizer(SGD, loss scale 2048)`: what a student needs to know of an optimizer."""
    inner = getattr(optimizer, "inner_optimizer", None)
    if inner is None:
        return type(optimizer).__name__
    scale = int(float(optimizer.scale_loss(tf.constant(1.0))))
    return f"{type(optimizer).__name__}({type(inner).__name__}, loss scale {scale})"


def _dtype_name(value) -> str | None:
    """`float16`, `float32`... for a tensor or an array; None for anything without a dtype."""
    try:
        return tf.as_dtype(value.dtype).name
    except (AttributeError, TypeError):
        return None


def _ratio(want: np.ndarray, got: np.ndarray) -> float:
    mask = np.abs(want) > 1e-7
    return float(np.median(got[mask] / want[mask])) if mask.any() else float("nan")


def _near(ratio: float, target: float) -> bool:
    return bool(np.isfinite(ratio)) and abs(ratio - target) < 1e-2 * abs(target)


def _float16_norm(arrays, max_norm, dtype) -> list[Alternative]:
    """The clipped gradients of a norm computed in float16, when its squares overflow there (else none)."""
    if dtype != "float16":
        return []
    with np.errstate(over="ignore"):
        squares = np.float16(sum(np.sum(np.square(a.astype(np.float16)), dtype=np.float16) for a in arrays))
    if np.isfinite(squares):
        return []
    return [Alternative("norm in float16", [a * 0.0 for a in arrays], "float16-norm-overflow",
                        "Your gradients came back as zeros: you squared them in float16, where anything above "
                        "65504 is infinite (an entry of 256 or more), so your global norm is infinite and the "
                        "factor `max_norm / global_norm` is 0. Compute the norm in float32, "
                        "`tf.square(tf.cast(g, tf.float32))`, and cast the factor back, `tf.cast(scale, g.dtype)`.")]


class ClipGlobalNorm(Exercise):
    number = "6.3"
    replayable = True
    answer = "clip_gradients"
    fixed_because = ("`clip_gradients` is a procedure for any gradients and any `max_norm` it is given (the bound is "
                     "its argument, not a number of its own), and clipping by the global norm is one fixed "
                     "definition, the one Keras's `global_clipnorm` uses: only the test's inputs could change, not "
                     "what you write.")
    # (values, max_norm[, dtype]). Clipped where per-tensor and per-entry clipping differ (first, so they are
    # told apart), the gradients above, left alone (norm below max_norm), all zeros (a norm of 0), and
    # float16 gradients (a model under the "float16" policy), where a float32 tensor in the code breaks, and
    # float16 gradients whose squares overflow float16 (entries of 256 or more) although no clipping is due.
    visible_cases = ((([3.0, 4.0], [0.5, 12.0]), 6.5), (([3.0, 4.0], [12.0]), 6.5), (([1.0, -2.0], [[0.5]]), 4.0),
                     (([0.0], [0.0, 0.0]), 2.0), (([0.5, -1.0], [[2.0], [1.5]]), 1.25, "float16"),
                     (([300.0, 400.0],), 1000.0, "float16"))
    praise = "you scale every gradient by the same factor, and only when the global norm is too large."
    hints = (
        "The global norm is the norm of all gradients put together: the square root of the sum of every "
        "squared entry of every tensor.",
        "In float32, whatever the gradients' dtype: `global_norm = tf.sqrt(tf.add_n([tf.reduce_sum("
        "tf.square(tf.cast(g, tf.float32))) for g in grads]))`; every gradient is multiplied by the same `scale`, "
        "cast to its dtype.",
    )

    def check_case(self, fn, case, facts):
        values, max_norm, *dtype = case
        dtype = dtype[0] if dtype else "float32"
        arrays = [np.asarray(v, np.float64) for v in values]
        grads = [tf.constant(a, dtype) for a in arrays]
        shown = f"{'' if dtype == 'float32' else dtype + ' '}grads of shapes {[tuple(a.shape) for a in arrays]}, " \
                f"max_norm={max_norm}"
        rtol, atol = (4e-3, 1e-3) if dtype == "float16" else (RTOL, ATOL)  # float16 keeps about 3 digits
        try:
            got = self.call(fn, grads, max_norm, shown=shown).value
        except Incorrect as problem:
            if dtype == "float32" or problem.cause not in (None, "dtype-clash") or \
                    combined_dtypes(str(problem)) != {dtype, "float32"}:
                raise
            raise Incorrect(f"{problem.observed or problem} The gradients here are {dtype}, and a float32 tensor in your code met them "
                            "(`max_norm` is a Python number). Gradients come in the dtype of their variables: "
                            "compute the norm in float32, but cast the factor back before you scale a gradient, "
                            "`g * tf.cast(scale, g.dtype)`.", cause="hardcoded-float32") from None
        norm = float(np.sqrt(sum(np.sum(a * a) for a in arrays)))
        expected = [a * min(1.0, max_norm / norm) if norm else a for a in arrays]
        if got is None:
            raise Incorrect("`clip_gradients` returned `None`. Did you forget `return`?", cause="no-return")
        library = "library-clip" if facts.calls_to("clip_by_global_norm") or facts.calls_to("global_norm") else None
        if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], (list, tuple)):
            raise Incorrect("`clip_gradients` returned a pair `(list, norm)`, but should return the list of clipped "
                            "gradients only. Did you return the tuple of `tf.clip_by_global_norm` whole, instead of "
                            "its first item? (And then write the clipping yourself, as the exercise asks.)",
                            cause=library)
        if not isinstance(got, (list, tuple)):
            raise Incorrect(f"`clip_gradients` returned a `{type(got).__name__}`, but should return a list with one "
                            f"tensor per gradient ({len(arrays)} here). Did you return the tuple of "
                            "`tf.clip_by_global_norm` whole, instead of its first item?", cause=library)
        if norm == 0 and any(g is not None and not np.all(np.isfinite(to_numpy(g))) for g in got):
            raise Incorrect(f"With all-zero gradients (on {shown}) your values are NaN or Inf: the global norm is "
                            "0 there. Did you divide by it without `tf.minimum(1.0, max_norm / global_norm)`?",
                            cause="zero-norm-nan")
        alternatives = self._alternatives(arrays, max_norm, norm) + _float16_norm(arrays, max_norm, dtype)
        problem = wrong_value("clipped", expected, list(got), alternatives,
                              "Did you compute one global norm over all the tensors and scale each by "
                              "`min(1, max_norm / norm)`?", rtol, atol)
        if problem:
            raise problem
        changed = sorted({name for name in map(_dtype_name, got) if name not in (None, dtype)})
        if changed:
            raise Incorrect(f"Your values are right, but `clip_gradients` returned {' and '.join(changed)} tensors "
                            f"for {dtype} gradients (on {shown}). A clipped gradient keeps its gradient's dtype, the "
                            "dtype of its variable: if you compute in another dtype, cast each result back, "
                            "`tf.cast(..., g.dtype)`.", cause="dtype-changed")
        if library:
            raise Incorrect("Your values are right, but this exercise asks you to write the clipping yourself, "
                            "without `tf.clip_by_global_norm` or `tf.linalg.global_norm`: compute the global norm and one scale factor.",
                            cause=library)

    @staticmethod
    def _alternatives(arrays, max_norm, norm) -> list[Alternative]:
        def scaled(scale):
            return [a * scale(a) for a in arrays]

        return [
            Alternative("unscaled", arrays, "not-clipped",
                        f"Your gradients came back unchanged, but their global norm {norm:.4g} exceeds "
                        f"max_norm={max_norm}. Scale them by `min(1, max_norm / global_norm)`: a `tf.minimum`, "
                        "so that the factor is below 1 exactly when clipping is needed."),
            Alternative("per entry", lambda: [np.clip(a, -max_norm, max_norm) for a in arrays], "per-entry-clip",
                        "You clipped each entry to the range [-max_norm, max_norm] (`clip_by_value`): that changes "
                        "the direction of the gradient. Scale every gradient by one factor, "
                        "`min(1, max_norm / global_norm)`, instead."),
            Alternative("per tensor", lambda: scaled(lambda a: min(1.0, max_norm / np.linalg.norm(a))
                                                      if np.linalg.norm(a) else 1.0), "per-tensor-clip",
                        "You clipped each tensor by its own norm (per tensor vs global): that is `clipnorm`. "
                        "Clip by the GLOBAL norm, the norm of all the gradients together, with one common scale."),
            Alternative("always scaled", lambda: scaled(lambda a: max_norm / norm), "clip-scales-up",
                        f"The global norm is {norm:.4g}, already at most max_norm={max_norm}, yet you scaled the "
                        "gradients up. Clip only when the norm exceeds `max_norm`: scale by "
                        "`min(1, max_norm / global_norm)`."),
            Alternative("no square root", lambda: scaled(lambda a: min(1.0, max_norm / norm ** 2)),
                        "norm-without-sqrt", "You divided by the sum of squares. Did you forget the square root "
                        "in the global norm?"),
        ]


ex6_1 = CustomTrainStep()
ex6_2 = FixKeras2Step()
ex6_3 = ClipGlobalNorm()
ex6_4 = TwoOptimizers()
ex6_5 = GuardedStep()
