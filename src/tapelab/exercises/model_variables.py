"""Exercises of notebook 02_model_variables: gradients for a Keras model's variables and a hand-written
SGD step with momentum; the custom training step with layer losses (2.3) lives in `tapelab.exercises.train_step`, the
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
# Exercise 2.2: manual_sgd_step(variables, velocities, grads, lr), SGD with momentum by hand

_SECOND_STEP = [tf.constant([[-20.0]]), tf.constant([-6.5])]  # the worked example's second gradients


def _sgd_case(spec):
    """(variables, two steps' gradients, lr): the worked example, or seeded tf.Variables."""
    if spec == "worked":
        model = dense_model()
        return list(model.trainable_variables), [[tf.constant([[-35.0]]), tf.constant([-12.0])], _SECOND_STEP], 0.1
    seed, lr = spec
    rng = np.random.default_rng(seed)
    shapes = [(3, 2), (2,), (2, 1), (1,)]
    variables = [tf.Variable(rng.normal(size=s), dtype=tf.float32, name=f"v{i}") for i, s in enumerate(shapes)]
    steps = [[tf.constant(rng.normal(size=s), tf.float32) for s in shapes] for _ in range(2)]
    return variables, steps, lr


def _momentum_run(before, steps, lr, m, velocity, move, keep=True):
    """Variables and velocities after the steps, when each step sets the velocity to `velocity(vel, g)` (kept
    only if `keep`) and the variable to `move(v, old velocity, new velocity)`: one wrong answer per rule."""
    values, vels = [b.copy() for b in before], [np.zeros_like(b) for b in before]
    for grads in steps:
        for i, g in enumerate(grads):
            new = velocity(vels[i], to_numpy(g))
            values[i] = move(values[i], vels[i], new)
            vels[i] = new if keep else vels[i]
    return values, vels


class ManualSgdStep(Exercise):
    number = "2.2"
    answer = "manual_sgd_step"
    # The momentum m of the velocity update vel <- m*vel - lr*g (Keras' SGD(momentum=m)); 0.9 in the text.
    space = Space(default={"m": 0.9}, draws={"m": lambda rng: float(rng.choice([0.5, 0.6, 0.75, 0.8, 0.95]))})
    statement = ("SGD with momentum keeps a velocity for each variable. Write `manual_sgd_step(variables, velocities, "
                 "grads, lr)` that, for each variable `v` with its velocity `vel` (a `tf.Variable` of the same shape, "
                 "zero at the start) and its gradient `g` (the three lists in the same order), first sets `vel` to "
                 "${m}·vel − lr·g, then adds the new `vel` to `v`, both in place. It need not return anything. The "
                 "test takes two steps, on the worked example and on other variables, and compares your variables and "
                 "velocities with what `keras.optimizers.SGD(learning_rate=lr, momentum=${m})` does to copies of them.")
    visible_cases = ("worked", (3, 0.05))  # a second learning rate: a hard-coded 0.1 fails here
    praise = "your hand-written step moves every variable and velocity exactly as Keras' SGD with momentum does."
    hints = (
        "Momentum is state that outlives one step: the velocity remembers the past steps, and the variable moves "
        "by the velocity, not by the gradient alone. Both must change in place, so use the variables' own methods.",
        "Loop over `zip(variables, velocities, grads)`; update the velocity with `vel.assign(...)` before "
        "`v.assign_add(vel)`.",
    )

    def check_case(self, fn, spec, facts):
        kept, steps, lr = _sgd_case(spec)
        m = self.variant["m"]
        kept_vel = [tf.Variable(tf.zeros_like(v)) for v in kept]
        before = [v.numpy().copy() for v in kept]
        for k, grads in enumerate(steps, start=1):
            self.call(fn, list(kept), list(kept_vel), grads, lr,  # fresh lists each step, as an optimizer passes
                      shown=f"{len(kept)} variables, their velocities and step {k}'s gradients, lr={lr}")
        copies = [tf.Variable(b) for b in before]
        optimizer = keras.optimizers.SGD(learning_rate=lr, momentum=m)
        for grads in steps:
            optimizer.apply(grads, copies)
        names = [_short_name(v) for v in kept]
        labels = names + [f"velocity of {n}" for n in names]

        def by_name(values, vels) -> dict:
            return dict(zip(labels, [*values, *vels]))

        def rule(velocity, move=lambda v, old, new: v + new, keep=True) -> dict:
            return by_name(*_momentum_run(before, steps, lr, m, velocity, move, keep))

        expected = by_name([c.numpy() for c in copies], [s.numpy() for s in optimizer.momentums])
        got = by_name([v.numpy() for v in kept], [v.numpy() for v in kept_vel])
        assigned = facts.found and (facts.calls_to("assign") or facts.calls_to("assign_add")
                                    or facts.calls_to("assign_sub"))
        if _all_close(list(expected.values()), list(got.values())):
            if facts.found and not assigned:
                raise Incorrect("Exercise 2.2: your variables and velocities end up right, but this exercise is the "
                                "step by hand. Update them with `vel.assign(...)` and `v.assign_add(vel)` instead of "
                                "an optimizer.", cause="optimizer-not-by-hand")
            return
        no_velocity = "Did you set each velocity in place with `vel.assign(...)`?" if not facts.found or facts.calls_to(
            "assign") == 0 else "Is it set in place, in every step?"
        alternatives = (
            Alternative("nothing changed", by_name(before, [np.zeros_like(b) for b in before]),
                        "no-update" if assigned else "replaced-by-tensor",
                        "Neither the variables nor the velocities changed. " + (
                            "Did you change each in place, with `assign` and `assign_add`?" if assigned else
                            "Your code changes none of them in place: a line like `v = v + vel` only rebinds the "
                            "name to a new tensor. Use `vel.assign(...)` and `v.assign_add(vel)`.")),
            Alternative("velocities kept at zero", rule(lambda vel, g: m * vel - lr * g, keep=False),
                        "replaced-by-tensor" if facts.found and facts.calls_to("assign") == 0 else "no-update",
                        "The variables moved, but every velocity is still zero, so each step was plain SGD. "
                        + no_velocity),
            Alternative("variables not moved", rule(lambda vel, g: m * vel - lr * g, lambda v, old, new: v),
                        "no-update" if facts.found and facts.calls_to("assign_add") else "replaced-by-tensor",
                        "The velocities are right, but the variables did not move. " + (
                            "Is `v.assign_add(vel)` reached for every variable?" if facts.found and
                            facts.calls_to("assign_add") else "Your code never changes them in place: add each "
                            "velocity to its variable with `v.assign_add(vel)`.")),
            Alternative("no momentum", rule(lambda vel, g: -lr * g), "missing-term",
                        f"Each velocity holds only −lr·g, the last step: the term {m:g}·vel, the memory of the past "
                        f"steps, is missing. Set `vel` to `{m:g} * vel - lr * g`."),
            Alternative("uphill", rule(lambda vel, g: m * vel + lr * g), "uphill-step",
                        "Your steps went uphill, along the gradients: each velocity gained +lr·g. Momentum "
                        f"descends: `{m:g} * vel - lr * g`."),
            Alternative("velocity subtracted", rule(lambda vel, g: m * vel - lr * g, lambda v, old, new: v - new),
                        "sign-flipped", "The velocities are right, but each variable moved against its velocity, "
                        "uphill. The velocity already points downhill: add it, `v.assign_add(vel)`."),
            Alternative("whole gradient", rule(lambda vel, g: m * vel - g), "no-learning-rate",
                        "Each velocity gained the whole gradient. Did you multiply the gradient by `lr`?"),
            Alternative("old velocity", rule(lambda vel, g: m * vel - lr * g, lambda v, old, new: v + old), "stale-value",
                        "The velocities are right, but each variable moved by the velocity it had before this step "
                        "(zero in the first). Update the velocity first, then add the new one to the variable."),
            Alternative("replaced by the velocity", rule(lambda vel, g: m * vel - lr * g, lambda v, old, new: new),
                        "assign-replaces", "Each variable now holds its velocity itself: `v.assign(vel)` replaces the "
                        "value. Add the velocity to it with `v.assign_add(vel)`."),
            Alternative("velocity as m*vel + g", rule(lambda vel, g: m * vel + g, lambda v, old, new: v - lr * new),
                        "constant-factor", f"Your variables move right, but each velocity holds `{m:g} * vel + g`, "
                        "the gradient's running sum, which the variable then leaves scaled by `−lr`. The task and "
                        f"Keras keep the step itself in the velocity: `{m:g} * vel - lr * g`."),
        )
        ratio = ratio_of([e - b for e, b in zip(expected.values(), [*before, *(0 * b for b in before)])],
                         [a - b for a, b in zip(got.values(), [*before, *(0 * b for b in before)])])
        if ratio is not None:
            alternatives += (Alternative("another step size", got, "constant-factor",
                                         f"Every variable and velocity moved {ratio:.4g} times as far as `lr={lr}` "
                                         "gives. Did you use the `lr` you were given, and no other factor?"),)
        problem = wrong_value("variables and velocities", expected, got, alternatives,
                              f"Did you set each velocity to `{m:g} * vel - lr * g` and then add it to its variable, "
                              "each with its own gradient?", _RTOL, _ATOL)
        if problem:
            raise problem


def _short_name(variable) -> str:
    return short_path(variable) if "/" in getattr(variable, "path", "") else variable.name.split(":")[0]


ex2_1 = ModelGradients()
ex2_2 = ManualSgdStep()
