"""Exercises of notebook 02_model_variables: one gradient norm per trained layer of a Keras model and a
hand-written SGD step with momentum; the custom training step with layer losses (2.3) lives in `tapelab.exercises.train_step`, the
training loop over batches (2.4) in `tapelab.exercises.training_loop` and the compiled running mean (2.5) in
`tapelab.exercises.compiled_state` and gradient accumulation (2.6) in `tapelab.exercises.accumulation`, the compiled warm-up (2.7) in
`tapelab.exercises.warmup_step`, all re-exported here, so the notebook imports all seven from one place."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.wrong_answers import Alternative, ratio_of, wrong_value
from tapelab.checker.compare import all_close, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.exercises.keras_cases import LOSSES, bn_case, dense_model, short_path, worked_example
from tapelab.exercises.accumulation import ex2_6
from tapelab.exercises.compiled_state import ex2_5
from tapelab.exercises.warmup_step import ex2_7
from tapelab.exercises.train_step import ex2_3
from tapelab.exercises.training_loop import ex2_4
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import none_feedback
from tapelab.checker.variants import Space

__all__ = ["ex2_1", "ex2_2", "ex2_3", "ex2_4", "ex2_5", "ex2_6", "ex2_7", "worked_example"]

_RTOL, _ATOL = 1e-3, 1e-5

# ---------------------------------------------------------------------------------------------
# Exercise 2.1: layer_gradient_norms(model, loss_fn, x, y), one gradient norm per trained layer

_LAYER_NAMES = ("dense", "batch_normalization", "dense_1")  # the names a first model gets: every message reads alike


def _gradient_case(spec):
    """(build, loss name, x, y): the worked example, or the Dense-BatchNormalization-Dense model with the layer at
    index `spec[3]` frozen (if given)."""
    if spec == "worked":
        x, y = worked_example()
        return (lambda: dense_model(name=_LAYER_NAMES[0])), "mse", x, y
    _, loss, seed, *frozen = spec
    made, x, y = bn_case(loss, seed, _LAYER_NAMES)

    def build():
        model = made()
        for index in frozen:
            model.layers[index].trainable = False
        return model

    return build, loss, x, y


def _all_close(expected, got) -> bool:
    return all_close(expected, got, _RTOL, _ATOL)


# The measure of a layer's gradients, by the variant's name: the task's words, the answer's code for the layer's
# gradients `g`, and the measure of NumPy arrays, signed (for the wrong answer that forgets `abs`) or not.
_MEASURES = {
    "norm": ("the global L2 norm of its gradients (`tf.linalg.global_norm`: the square root of the sum of all their "
             "squared entries)", "float(tf.linalg.global_norm(g))",
             lambda gs, f: float(np.sqrt(sum(np.sum(np.square(a)) for a in gs)))),
    "max": ("the largest absolute entry of its gradients (their max norm)",
            "float(tf.reduce_max([tf.reduce_max(tf.abs(t)) for t in g]))",
            lambda gs, f: float(max((np.max(f(a)) for a in gs), default=-np.inf))),
    "l1": ("the sum of the absolute values of all its gradients' entries (their L1 norm)",
           "float(sum(tf.reduce_sum(tf.abs(t)) for t in g))", lambda gs, f: float(sum(np.sum(f(a)) for a in gs))),
}


# Each measure with the step a student is likeliest to drop (the square root, the absolute value): the variant's own
# form of that wrong answer, for the catalogues of mistakes (tests/fresh_mistakes/), which are filled from the variant.
_SLIPS = {"norm": "float(sum(tf.reduce_sum(t ** 2) for t in g))",
          "max": "float(tf.reduce_max([tf.reduce_max(t) for t in g]))",
          "l1": "float(sum(tf.reduce_sum(t) for t in g))"}


def _measured(kind: str, grads, signed: bool = False) -> float:
    return _MEASURES[kind][2](grads, (lambda a: a) if signed else np.abs)


class LayerGradientNorms(Exercise):
    number = "2.1"
    answer = "layer_gradient_norms"
    replayable = True  # the model's layers are read in a run, before the stored expected values are looked up
    # The measure of each layer's gradients: their global L2 norm in the notebook's text; their max or L1 norm drawn.
    # Each answer's code runs on a layer with no gradients, so a wrong answer that keeps a frozen layer is named.
    space = Space(default={"measure": "norm"}, draws={"measure": lambda rng: str(rng.choice(["max", "l1"]))},
                  wording={"measure_text": lambda v: _MEASURES[v["measure"]][0],
                           "measure_code": lambda v: _MEASURES[v["measure"]][1],
                           "measure_slip": lambda v: _SLIPS[v["measure"]]})
    statement = ("Write `layer_gradient_norms(model, loss_fn, x, y)` that returns a dict with one entry for each layer "
                 "of `model` that has trainable weights (a frozen layer has none): the key is `layer.name`, the value "
                 "is ${measure_text}, the gradients of `loss_fn(y, preds)` on the batch `(x, y)` with respect to that "
                 "layer's trainable weights. The test uses the worked example and models with a `BatchNormalization` "
                 "layer, one with a layer frozen, and losses not symmetric in their arguments, so `training=True` and "
                 "`loss_fn(y, preds)` both matter.")
    visible_cases = ("worked", ("bn", "bce", 3, 0))
    praise = "one recording gave every trained layer's gradients, and each layer's measure of them."
    hints = (
        "Record the forward pass and the loss once. `tape.gradient` accepts any nest of sources, a dict of lists "
        "included, and answers in the same shape; `layer.trainable_weights` is empty for a frozen layer.",
        "Keep `layers = [layer for layer in model.layers if layer.trainable_weights]`; after the tape, "
        "`grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})`.",
    )

    def expectations(self, spec):
        """Each layer's gradients (of the weights that have one, a frozen layer's included) for the correct loss,
        and for its named wrong variants."""
        build, loss, x, y = _gradient_case(spec)

        def gradients(**variant):
            return lambda refs: refs.layer_gradients(build(), LOSSES[loss](), x, y, **variant)

        return {"gradients": gradients(), "inference mode": gradients(training=False),
                "swapped arguments": gradients(swapped=True)}

    def check_case(self, fn, spec, facts):
        build, loss, x, y = _gradient_case(spec)
        model = self.given(build)
        shown = (f"model, {type(LOSSES[loss]()).__name__}(), x of shape {tuple(x.shape)}, "
                 f"y of shape {tuple(y.shape)}")
        got = self.call(fn, model, LOSSES[loss](), x, y, shown=shown).value
        # The model as the call left it, read in a run (the grader's judge is served what the kernel read:
        # tapelab.checker.replay), before the case's stored expected values (a grading kernel never holds a hidden
        # case's): its variables' paths count Keras' models made in this process, never the same in the judge.
        layers = self.run(lambda: _layers_of(model), "Reading the model's layers after your call").value
        want, kind = self.expect(spec), self.variant["measure"]
        trained, names = layers["trained"], layers["names"]

        def by_layer(grads, signed=False, layers=trained) -> dict:
            return {names[i]: _measured(kind, grads[i], signed) for i in layers}

        expected = by_layer(want["gradients"])
        if got is None:
            raise Incorrect("`layer_gradient_norms` returned `None`. Did you forget to `return` the dict?",
                            cause="no-return")
        if not isinstance(got, dict):
            raise Incorrect(f"`layer_gradient_norms` returned a `{type(got).__name__}`, but should return a dict "
                            f"with the keys {sorted(expected)}, one per layer with trainable weights.")
        _check_keys(layers, expected, got)
        alternatives = [
            Alternative("inference mode", lambda: by_layer(want["inference mode"]), "inference-mode",
                        "These are the values of the model in inference mode. This model has a `BatchNormalization` "
                        "layer, which uses the batch's own statistics only while training. Did you call "
                        "`model(x, training=True)`?"),
            Alternative("loss_fn(preds, y)", lambda: by_layer(want["swapped arguments"]), "swapped-loss-arguments",
                        f"These are the values for `loss_fn(preds, y)`. {type(LOSSES[loss]()).__name__} is not "
                        "symmetric, and Keras losses take the targets first. Did you write `loss_fn(y, preds)`?"),
        ]
        if kind == "norm":
            alternatives.append(Alternative("sum of squares", {k: v * v for k, v in expected.items()},
                                            "norm-without-sqrt", "Each value is the square of the layer's norm: "
                                            "take the square root of the sum of squares."))
        else:
            alternatives.append(Alternative("signed", lambda: by_layer(want["gradients"], signed=True),
                                            "missing-abs", "These are the values of the signed entries: take "
                                            f"`tf.abs` of the gradients before the `{'reduce_max' if kind == 'max' else 'reduce_sum'}`."))
        if all(_is_zero(v) for v in got.values()) and not all(v == 0 for v in expected.values()):
            calls = facts.gradient_calls
            raise none_feedback(f"Every value is 0, but they should be {_rounded(expected)}.", facts,
                                calls[0] if len(calls) == 1 else None)
        problem = wrong_value("layer_gradient_norms(...)", expected, got, alternatives,
                              "Is each value the measure of the gradients of `loss_fn(y, preds)` of "
                              "`model(x, training=True)`, taken over all of that layer's trainable weights together?",
                              _RTOL, _ATOL)
        if problem:
            raise problem


def _layers_of(model) -> dict:
    """What the check reads of `model`'s layers: their names, the indices of those with trainable weights, the
    names of the frozen ones that have weights, and the paths of the model's trainable variables."""
    return {"names": [layer.name for layer in model.layers],
            "trained": [i for i, layer in enumerate(model.layers) if layer.trainable_weights],
            "frozen": [layer.name for layer in model.layers if layer.weights and not layer.trainable],
            "paths": [v.path for v in model.trainable_variables]}


def _check_keys(layers: dict, expected: dict, got: dict) -> None:
    """Raise Incorrect when `got` has other keys than `expected`: a frozen layer's, a variable's path, or others.
    `layers` is what `_layers_of` read of the model."""
    extra, missing = sorted(set(got) - set(expected), key=str), sorted(set(expected) - set(got))
    frozen = layers["frozen"]
    if any(name in frozen for name in extra):
        name = next(name for name in extra if name in frozen)
        raise Incorrect(f"Your dict has an entry for `{name}`, a frozen layer (its `trainable` is False): an optimizer "
                        f"never updates it, and `model.layers[{layers['names'].index(name)}]"
                        ".trainable_weights` is empty. Keep only the layers with trainable weights.",
                        cause="frozen-included")
    if extra or missing:
        paths = set(layers["paths"])
        per_variable = bool(extra) and set(got) == paths
        if per_variable:
            raise Incorrect(f"Your dict has one entry per trainable variable, keyed by its path, but should have the "
                            f"keys {sorted(expected)}: one per layer with trainable weights, named by `layer.name`, "
                            "with that layer's weights measured together.", cause="per-variable-not-per-layer")
        raise Incorrect(f"Your dict has the keys {sorted(map(str, got))}, but should have {sorted(expected)}: one "
                        "per layer with trainable weights, named by `layer.name`.")


def _is_zero(value) -> bool:
    try:
        return bool(np.all(to_numpy(value) == 0))
    except (TypeError, ValueError):
        return False


def _rounded(values: dict) -> str:
    return "{" + ", ".join(f"{k!r}: {v:.4g}" for k, v in values.items()) + "}"


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
    replayable = True  # every read of the kernel's state after a call goes through `run`
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
        # read in a run: the grader's judge is served the values the kernel read (tapelab.checker.replay)
        got = by_name(*self.run(lambda: ([v.numpy() for v in kept], [v.numpy() for v in kept_vel]),
                                "Reading your variables and velocities after the steps").value)
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


ex2_1 = LayerGradientNorms()
ex2_2 = ManualSgdStep()
