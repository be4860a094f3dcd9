"""Exercises of notebook 02_model_variables: gradients for a Keras model's variables and a hand-written
SGD step; the custom training step with layer losses (2.3) lives in `tapelab.exercises.train_step`, the
training loop over batches (2.4) in `tapelab.exercises.training_loop` and the compiled running mean (2.5) in
`tapelab.exercises.compiled_state` and gradient accumulation (2.6) in `tapelab.exercises.accumulation`, the compiled warm-up (2.7) in
`tapelab.exercises.warmup_step`, all re-exported here, so the notebook imports all seven from one place."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.wrong_answers import Alternative, ratio_of, wrong_value
from tapelab.checker.compare import agrees, all_close, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.exercises.keras_cases import LOSSES, bn_case, dense_model, short_path, worked_example
from tapelab.exercises.accumulation import ex2_6
from tapelab.exercises.compiled_state import ex2_5
from tapelab.exercises.warmup_step import ex2_7
from tapelab.exercises.train_step import ex2_3
from tapelab.exercises.training_loop import ex2_4
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import none_feedback
from tapelab.checker.variants import Space, term

__all__ = ["ex2_1", "ex2_2", "ex2_3", "ex2_4", "ex2_5", "ex2_6", "ex2_7", "worked_example"]

_RTOL, _ATOL = 1e-3, 1e-5

# ---------------------------------------------------------------------------------------------
# Exercise 2.1: model_gradients(model, loss_fn, x, y)

def _gradient_case(spec):
    if spec == "worked":
        x, y = worked_example()
        return (lambda: dense_model()), "mse", x, y
    _, loss, seed = spec
    build, x, y = bn_case(loss, seed)
    return build, loss, x, y


def _all_close(expected, got) -> bool:
    return all_close(expected, got, _RTOL, _ATOL)


def _weighted_loss(values) -> str:
    """How the task names the loss to differentiate: `loss_fn` itself, or the loss times its weight."""
    if values["w"] == 1:
        return "`loss_fn`"
    return f"the weighted loss `{term(values['w'], 'loss_fn(y, preds)')}` (a loss weight, as Keras' `loss_weights` gives)"


class ModelGradients(Exercise):
    number = "2.1"
    answer = "model_gradients"
    # The loss's weight w: the gradients of w * loss_fn(y, preds) (1 in the notebook's text).
    space = Space(default={"w": 1}, draws={"w": lambda rng: float(rng.choice([0.2, 0.5, 2, 3, 5]))},
                  wording={"wt": lambda v: term(v["w"], ""), "loss_text": _weighted_loss})
    statement = ("Write `model_gradients(model, loss_fn, x, y)` that returns the gradients of ${loss_text} on the "
                 "batch `(x, y)` with respect to `model.trainable_variables`, as a list in that order. The test "
                 "calls it on the worked example and on a model with a `BatchNormalization` layer and a loss that "
                 "is not symmetric in its two arguments, so `training=True` and the order `loss_fn(y, preds)` both "
                 "matter.")
    visible_cases = ("worked", ("bn", "bce", 3))
    praise = "one tape around the forward pass and the loss gave one gradient per trainable variable."
    hints = (
        "Open a tape, and inside it run the model and the loss: both must be recorded.",
        "Inside the tape: `preds = model(x, training=True)` then `loss = ${wt}loss_fn(y, preds)` (targets first).",
    )

    def expectations(self, spec):
        """The gradients of the correct loss, of its named variants, and the loss value itself."""
        build, loss, x, y = _gradient_case(spec)
        weight = self.variant["w"]

        def gradients(**variant):
            return lambda refs: refs.model_gradients(build(), LOSSES[loss](), x, y, weight=weight, **variant)

        return {"gradients": gradients(), "inference mode": gradients(training=False),
                "swapped arguments": gradients(swapped=True), "gradients of preds": gradients(target="preds"),
                "loss value": gradients(target="value")}

    def check_case(self, fn, spec, facts):
        build, loss, x, y = _gradient_case(spec)
        model = build()
        shown = (f"model, {type(LOSSES[loss]()).__name__}(), x of shape {tuple(x.shape)}, "
                 f"y of shape {tuple(y.shape)}")
        got = self.call(fn, model, LOSSES[loss](), x, y, shown=shown).value
        want = self.expect(spec)
        expected = want["gradients"]
        names = [short_path(v) for v in model.trainable_variables]
        if got is None:
            raise Incorrect("`model_gradients` returned `None`. Did you forget to `return` the gradients?",
                            cause="no-return")
        if not isinstance(got, (list, tuple)):
            returned_loss = agrees(want["loss value"], got, _RTOL, _ATOL)
            raise Incorrect(f"`model_gradients` returned a `{type(got).__name__}`, but should return a list "
                            f"of {len(expected)} gradients, one per entry of `model.trainable_variables`."
                            + (" It is the loss itself. Did you return `loss` instead of "
                               "`tape.gradient(loss, model.trainable_variables)`?" if returned_loss else ""),
                            cause="returned-value" if returned_loss else None)
        n_all = len(model.variables)
        if len(got) == n_all != len(expected):
            raise Incorrect(
                f"`model_gradients` returned {len(got)} gradients, one per entry of `model.variables`, "
                f"but should return {len(expected)}. This model's `BatchNormalization` layer holds "
                "non-trainable moving statistics. Did you differentiate with respect to "
                "`model.trainable_variables`?", cause="all-variables")
        if len(got) != len(expected):
            raise Incorrect(f"`model_gradients` returned {len(got)} gradients, but `model.trainable_variables` "
                            f"has {len(expected)} entries ({', '.join(names)}). Did you pass it as the sources?")
        if all(g is None for g in got):
            raise none_feedback("Every gradient is `None`.", facts, facts.returned_call())
        alternatives = (
            Alternative("inference mode", want.later("inference mode"),
                        "inference-mode",
                        "These are the gradients of the model in inference mode. This model has a "
                        "`BatchNormalization` layer, which uses the batch's own statistics only while training. "
                        "Did you call `model(x, training=True)`?"),
            Alternative("loss_fn(preds, y)", want.later("swapped arguments"),
                        "swapped-loss-arguments",
                        f"These are the gradients of `loss_fn(preds, y)`. {type(LOSSES[loss]()).__name__} is not "
                        "symmetric, and Keras losses take the targets first. Did you write `loss_fn(y, preds)`?"),
            Alternative("gradient of preds", want.later("gradients of preds"),
                        "wrong-target",
                        "These are the gradients of the predictions (of their sum), not of the loss. Did you pass "
                        "`preds` to `tape.gradient` instead of `loss`?"),
        )
        weight = self.variant["w"]
        if weight != 1:
            alternatives += (Alternative("unweighted loss", [g / weight for g in expected], "constant-factor",
                                         f"These are the gradients of `loss_fn(y, preds)` without its weight. The "
                                         f"task asks for those of `{weight:g} * loss_fn(y, preds)`: multiply the "
                                         "loss by its weight inside the tape, where the tape records it."),)
        problem = wrong_value("model_gradients(...)", expected, list(got), alternatives,
                              "Is each gradient in the order of `model.trainable_variables`, and is the loss "
                              f"`{self.variant['wt']}loss_fn(y, preds)` of `model(x, training=True)`?", _RTOL, _ATOL)
        if problem:
            raise problem


# ---------------------------------------------------------------------------------------------
# Exercise 2.2: manual_sgd_step(variables, grads, lr)

def _sgd_case(spec):
    """(variables, grads, lr): the worked example's first step, or seeded tf.Variables."""
    if spec == "worked":
        model = dense_model()
        return list(model.trainable_variables), [tf.constant([[-35.0]]), tf.constant([-12.0])], 0.1
    seed, lr = spec
    rng = np.random.default_rng(seed)
    shapes = [(3, 2), (2,), (2, 1), (1,)]
    variables = [tf.Variable(rng.normal(size=s), dtype=tf.float32, name=f"v{i}") for i, s in enumerate(shapes)]
    grads = [tf.constant(rng.normal(size=s), tf.float32) for s in shapes]
    return variables, grads, lr


def _decayed(g: str, v: str, wd: float) -> str:
    """The step's direction as code writes it: the gradient `g`, plus `wd` times the variable `v` if wd > 0."""
    return f"({g} + {wd:g} * {v})" if wd else g


class ManualSgdStep(Exercise):
    number = "2.2"
    answer = "manual_sgd_step"
    # The weight decay wd: each variable moves by lr * (g + wd * v), as SGD(weight_decay=wd) does (0, plain SGD,
    # in the notebook's text). The worked example's variables are zeros, which no decay moves: the second case's not.
    space = Space(default={"wd": 0}, draws={"wd": lambda rng: float(rng.choice([0.2, 0.3, 0.5, 0.8]))},
                  wording={"grad": lambda v: _decayed("g", "v", v["wd"]),
                           "grad0": lambda v: _decayed("grads[0]", "variables[0]", v["wd"]),
                           "gradi": lambda v: _decayed("grads[i]", "variables[i]", v["wd"]),
                           "grad_first": lambda v: _decayed("grads[0]", "v", v["wd"]),
                           "rule": lambda v: f"v ← v − lr·(g + {v['wd']:g}·v)" if v["wd"] else "v ← v − lr·g",
                           "sgd": lambda v: "SGD with weight decay" if v["wd"] else "Plain SGD",
                           "by": lambda v: (f"(its gradient from `grads` plus {v['wd']:g} times the variable "
                                            "itself: a weight decay)") if v["wd"] else "its gradient from `grads`",
                           "optimizer": lambda v: (f"keras.optimizers.SGD(learning_rate=lr, weight_decay={v['wd']:g})"
                                                   if v["wd"] else "keras.optimizers.SGD(learning_rate=lr)")})
    statement = ("Write `manual_sgd_step(variables, grads, lr)` that updates each variable in the list `variables` in "
                 "place by minus `lr` times ${by} (same order), using `assign_sub`. It need not return anything. "
                 "The test compares your variables with what `${optimizer}` does to copies of them, on the worked "
                 "example and on other variables.")
    visible_cases = ("worked", (3, 0.05))  # a second learning rate: a hard-coded 0.1 fails here
    praise = "your hand-written step moves every variable exactly as `keras.optimizers.SGD` does."
    hints = (
        "Gradient descent moves each variable a small step against its gradient: ${rule}.",
        "Pair each variable with its gradient using `zip(variables, grads)`, and change the variable in place.",
    )

    def check_case(self, fn, spec, facts):
        variables, grads, lr = _sgd_case(spec)
        wd = self.variant["wd"]
        kept = list(variables)  # our own references, whatever the function does to the list
        before = [v.numpy().copy() for v in kept]
        shown = f"{len(kept)} variables, their gradients, lr={lr}"
        self.call(fn, variables, grads, lr, shown=shown)
        copies = [tf.Variable(b) for b in before]
        (keras.optimizers.SGD(learning_rate=lr, weight_decay=wd) if wd else
         keras.optimizers.SGD(learning_rate=lr)).apply(grads, copies)
        after = [v.numpy() for v in kept]
        expected = [c.numpy() for c in copies]
        grad = self.variant["grad"]
        if _all_close(expected, after):
            if facts.found and not (facts.calls_to("assign_sub") or facts.calls_to("assign")):
                raise Incorrect("Exercise 2.2: your variables end up right, but this exercise is the step by "
                                f"hand. Update each variable with `v.assign_sub(lr * {grad})` instead of an optimizer.",
                                cause="optimizer-not-by-hand")
            return
        names = [_short_name(v) for v in kept]

        def by_name(values) -> dict:
            return dict(zip(names, values))

        directions = [to_numpy(g) + wd * b if wd else to_numpy(g) for g, b in zip(grads, before)]
        steps = [lr * d for d in directions]
        in_place = facts.found and any(facts.calls_to(m) for m in ("assign_sub", "assign", "assign_add"))
        unchanged = (Alternative("no update", by_name(before), "no-update",
                                 "The variables did not change. Did you call `assign_sub` on each of them?")
                     if in_place or not facts.found else
                     Alternative("rebound", by_name(before), "replaced-by-tensor",
                                 f"The variables did not change. Did you write `v = v - lr * {grad}`? That rebinds "
                                 "the name to a new tensor and leaves the variable alone: change it in place with "
                                 f"`v.assign_sub(lr * {grad})`."))
        # `v.assign(lr * g)` from a zero start is also `before + lr * g`: the code tells the two apart
        replaced = facts.found and facts.calls_to("assign") and not (facts.calls_to("assign_sub")
                                                                    or facts.calls_to("assign_add"))
        alternatives = (
            unchanged,
            Alternative("uphill", by_name(b + d for b, d in zip(before, steps)), "uphill-step",
                        "Your step went uphill, along the gradient. Did you use `assign_add`? Descent subtracts: "
                        f"`v.assign_sub(lr * {grad})`.", lambda: not replaced),
            Alternative("replaced by the step", by_name(steps), "assign-replaces",
                        f"Each variable now holds the step `lr * {grad}` itself: `v.assign(...)` replaces the value "
                        f"with its argument. Subtract the step from it with `v.assign_sub(lr * {grad})`.",
                        lambda: bool(replaced)),
            Alternative("whole gradient", by_name(b - d for b, d in zip(before, directions)), "no-learning-rate",
                        "Each variable moved by the whole gradient. Did you multiply the gradient by `lr`?"),
            *(Alternative(f"only {names[i]}", by_name(e if k == i else b
                                                      for k, (b, e) in enumerate(zip(before, expected))),
                          "no-update", f"Only `{names[i]}` moved; the other variables did not change. Did you "
                          "update every variable in the list, each with its own gradient?")
              for i in range(len(names)) if len(names) > 1),
        )
        if wd:
            plain = [b - lr * to_numpy(g) for b, g in zip(before, grads)]
            alternatives += (
                Alternative("no weight decay", by_name(plain), "missing-term", f"Each variable moved by `lr * g` "
                            f"alone: the weight decay is missing. Subtract `lr * {grad}`, the gradient plus {wd:g} "
                            "times the variable, scaled by `lr`."),
                Alternative("decay without lr", by_name(p - wd * b for p, b in zip(plain, before)), "no-learning-rate",
                            f"The weight decay moved each variable by `{wd:g} * v`, not scaled by `lr`. Multiply the "
                            f"whole direction by the learning rate: `lr * {grad}`."),
                Alternative("decay reversed", by_name(p + lr * wd * b for p, b in zip(plain, before)), "sign-flipped",
                            f"The weight decay pushed each variable away from zero. The decay is added to the "
                            f"gradient, `lr * {grad}`, so that subtracting it shrinks the variable."),
            )
        ratio = ratio_of([e - b for e, b in zip(expected, before)], [a - b for a, b in zip(after, before)])
        if ratio is not None:
            alternatives += (Alternative("another step size", by_name(after), "constant-factor",
                                         f"Every variable moved {ratio:.4g} times as far as `lr={lr}` gives. Did you "
                                         "use the `lr` you were given, and no other factor?"),)
        problem = wrong_value("variables", by_name(expected), by_name(after), alternatives,
                              f"Did you subtract `lr * {grad}` from each variable, paired with its own gradient?",
                              _RTOL, _ATOL)
        if problem:
            raise problem


def _short_name(variable) -> str:
    return short_path(variable) if "/" in getattr(variable, "path", "") else variable.name.split(":")[0]


ex2_1 = ModelGradients()
ex2_2 = ManualSgdStep()
