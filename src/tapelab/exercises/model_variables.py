"""Exercises of notebook 02_model_variables: gradients for a Keras model's variables, a hand-written
SGD step and the custom training step with layer losses; the training loop over batches (2.4) lives in
`tapelab.exercises.training_loop` and the compiled running mean (2.5) in `tapelab.exercises.compiled_state`,
both re-exported here, so the notebook imports all five from one place."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.wrong_answers import Alternative, because, ratio_of, wrong_value
from tapelab.checker.compare import agrees, all_close, allclose, fmt_pair, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.exercises.keras_cases import LOSSES, bn_case, dense_model, short_path, worked_example
from tapelab.exercises.compiled_state import ex2_5
from tapelab.exercises.training_loop import ex2_4
from tapelab.checker.messages import Incorrect
from tapelab.checker.explanations import none_feedback

__all__ = ["ex2_1", "ex2_2", "ex2_3", "ex2_4", "ex2_5", "worked_example"]

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


class ModelGradients(Exercise):
    number = "2.1"
    answer = "model_gradients"
    visible_cases = ("worked", ("bn", "bce", 3))
    praise = "one tape around the forward pass and the loss gave one gradient per trainable variable."
    hints = (
        "Open a tape, and inside it run the model and the loss: both must be recorded.",
        "Inside the tape: `preds = model(x, training=True)` then `loss = loss_fn(y, preds)` (targets first).",
    )

    def expectations(self, spec):
        """The gradients of the correct loss, of its named variants, and the loss value itself."""
        build, loss, x, y = _gradient_case(spec)

        def gradients(**variant):
            return lambda refs: refs.model_gradients(build(), LOSSES[loss](), x, y, **variant)

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
        problem = wrong_value("model_gradients(...)", expected, list(got), alternatives,
                              "Is each gradient in the order of `model.trainable_variables`, and is the loss "
                              "`loss_fn(y, preds)` of `model(x, training=True)`?", _RTOL, _ATOL)
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


class ManualSgdStep(Exercise):
    number = "2.2"
    answer = "manual_sgd_step"
    visible_cases = ("worked", (3, 0.05))  # a second learning rate: a hard-coded 0.1 fails here
    praise = "your hand-written step moves every variable exactly as `keras.optimizers.SGD` does."
    hints = (
        "Gradient descent moves each variable a small step against its gradient: v ← v − lr·g.",
        "Pair each variable with its gradient using `zip(variables, grads)`, and change the variable in place.",
    )

    def check_case(self, fn, spec, facts):
        variables, grads, lr = _sgd_case(spec)
        kept = list(variables)  # our own references, whatever the function does to the list
        before = [v.numpy().copy() for v in kept]
        shown = f"{len(kept)} variables, their gradients, lr={lr}"
        self.call(fn, variables, grads, lr, shown=shown)
        copies = [tf.Variable(b) for b in before]
        keras.optimizers.SGD(learning_rate=lr).apply(grads, copies)
        after = [v.numpy() for v in kept]
        expected = [c.numpy() for c in copies]
        if _all_close(expected, after):
            if facts.found and not (facts.calls_to("assign_sub") or facts.calls_to("assign")):
                raise Incorrect("Exercise 2.2: your variables end up right, but this exercise is the step by "
                                "hand. Update each variable with `v.assign_sub(lr * g)` instead of an optimizer.",
                                cause="optimizer-not-by-hand")
            return
        names = [_short_name(v) for v in kept]

        def by_name(values) -> dict:
            return dict(zip(names, values))

        steps = [lr * to_numpy(g) for g in grads]
        in_place = facts.found and any(facts.calls_to(m) for m in ("assign_sub", "assign", "assign_add"))
        unchanged = (Alternative("no update", by_name(before), "no-update",
                                 "The variables did not change. Did you call `assign_sub` on each of them?")
                     if in_place or not facts.found else
                     Alternative("rebound", by_name(before), "replaced-by-tensor",
                                 "The variables did not change. Did you write `v = v - lr * g`? That rebinds the "
                                 "name to a new tensor and leaves the variable alone: change it in place with "
                                 "`v.assign_sub(lr * g)`."))
        # `v.assign(lr * g)` from a zero start is also `before + lr * g`: the code tells the two apart
        replaced = facts.found and facts.calls_to("assign") and not (facts.calls_to("assign_sub")
                                                                    or facts.calls_to("assign_add"))
        alternatives = (
            unchanged,
            Alternative("uphill", by_name(b + d for b, d in zip(before, steps)), "uphill-step",
                        "Your step went uphill, along the gradient. Did you use `assign_add`? Descent subtracts: "
                        "`v.assign_sub(lr * g)`.", lambda: not replaced),
            Alternative("replaced by the step", by_name(steps), "assign-replaces",
                        "Each variable now holds the step `lr * g` itself: `v.assign(...)` replaces the value with its "
                        "argument. Subtract the step from it with `v.assign_sub(lr * g)`.", lambda: bool(replaced)),
            Alternative("whole gradient", by_name(b - to_numpy(g) for b, g in zip(before, grads)), "no-learning-rate",
                        "Each variable moved by the whole gradient. Did you multiply the gradient by `lr`?"),
            *(Alternative(f"only {names[i]}", by_name(e if k == i else b
                                                      for k, (b, e) in enumerate(zip(before, expected))),
                          "no-update", f"Only `{names[i]}` moved; the other variables did not change. Did you "
                          "update every variable in the list, each with its own gradient?")
              for i in range(len(names)) if len(names) > 1),
        )
        ratio = ratio_of([e - b for e, b in zip(expected, before)], [a - b for a, b in zip(after, before)])
        if ratio is not None:
            alternatives += (Alternative("another step size", by_name(after), "constant-factor",
                                         f"Every variable moved {ratio:.4g} times as far as `lr={lr}` gives. Did you "
                                         "use the `lr` you were given, and no other factor?"),)
        problem = wrong_value("variables", by_name(expected), by_name(after), alternatives,
                              "Did you subtract `lr * g` from each variable, paired with its own gradient?",
                              _RTOL, _ATOL)
        if problem:
            raise problem


def _short_name(variable) -> str:
    return short_path(variable) if "/" in getattr(variable, "path", "") else variable.name.split(":")[0]


# ---------------------------------------------------------------------------------------------
# Exercise 2.3: train_step(model, optimizer, loss_fn, x, y)

def _train_case(spec):
    """(build_model, make_optimizer, loss name, x, y, steps, label) for a case."""
    if spec in ("worked", "worked-l2"):
        x, y = worked_example()
        regularizer = "kernel" if spec == "worked-l2" else ""
        return (lambda: dense_model(regularizer=regularizer), lambda: keras.optimizers.SGD(0.1),
                "mse", x, y, 3, "the worked example" + (" with an L2 kernel regularizer" if regularizer else ""))
    if spec[0] == "bn":  # BatchNormalization: training=True normalises with the batch's own statistics
        _, seed, optimizer, steps = spec
        build, x, y = bn_case("mse", seed)
        make_opt = {"sgd": lambda: keras.optimizers.SGD(0.05),
                    "adam": lambda: keras.optimizers.Adam(0.05)}[optimizer]
        return build, make_opt, "mse", x, y, steps, "a Dense-BatchNormalization-Dense model"
    seed, n_in, n_out, regularizer, optimizer, steps = spec
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(6, n_in)), tf.float32)
    y = tf.constant(rng.normal(size=(6, n_out)), tf.float32)
    make_opt = {"sgd": lambda: keras.optimizers.SGD(0.05),
                "adam": lambda: keras.optimizers.Adam(0.05)}[optimizer]
    return (lambda: dense_model(n_in, n_out, regularizer), make_opt, "mse", x, y, steps,
            f"a Dense({n_out}) model on {n_in} inputs" + (f" with an {regularizer} regularizer" if regularizer else ""))


class TrainStep(Exercise):
    number = "2.3"
    answer = "train_step"
    # Every structure the text names, on inputs of its own: a kernel and an activity regularizer, a
    # stateful optimizer, and a BatchNormalization layer (training=True matters there).
    visible_cases = ("worked", "worked-l2", (7, 3, 2, "activity", "adam", 2), ("bn", 12, "sgd", 3))
    praise = "your step records the forward pass and every loss, and lets the optimizer apply the gradients."
    hints = (
        "Four lines: forward pass and loss under a tape, gradients, then the optimizer; return the loss.",
        "Inside the tape: `preds = model(x, training=True)`, then `loss = loss_fn(y, preds) + sum(model.losses)` "
        "so a regularizer's penalty is part of what you minimise.",
    )

    def expectations(self, spec):
        """The variables after the correct steps and their losses, the data losses alone, and the variables
        after each named wrong step."""
        build, make_opt, loss, x, y, steps, _ = _train_case(spec)

        def trained(part, **variant):
            return lambda refs: refs.train_steps(build(), make_opt(), LOSSES[loss](), x, y, steps, **variant)[part]

        return {"variables": trained(0), "losses": trained(1),
                "data losses": lambda refs: refs.data_losses(build(), make_opt(), LOSSES[loss](), x, y, steps),
                "no layer losses": trained(0, layer_losses=False), "inference mode": trained(0, training=False),
                "uphill": trained(0, sign=-1.0)}

    def check_case(self, fn, spec, facts):
        build, make_opt, loss, x, y, steps, label = _train_case(spec)
        model, optimizer = build(), make_opt()
        shown = "model, optimizer, loss_fn, x, y"
        returned = []
        for _ in range(steps):
            returned.append(self.call(fn, model, optimizer, LOSSES[loss](), x, y, shown=shown).value)
        want = self.expect(spec)
        expected, expected_losses = want["variables"], want["losses"]
        after = [v.numpy() for v in model.trainable_variables]
        if not _all_close(expected, after):
            self._explain_variables(build, want, steps, label, expected, after)
        if any(r is None for r in returned):
            raise Incorrect("Your variables are right, but `train_step` returned `None`. "
                            "Did you forget `return loss`?", cause="no-return")
        try:
            got_losses = [float(to_numpy(r)) for r in returned]
        except (TypeError, ValueError):
            raise Incorrect("Your variables are right, but `train_step` should return the loss as a scalar "
                            f"tensor, not a `{type(returned[0]).__name__}`.") from None
        data_only = Alternative("data loss only", want.later("data losses"),
                                "layer-losses-missing",
                                "Those are the data losses alone. Return the total you minimised, "
                                "`loss_fn(y, preds) + sum(model.losses)`.")
        if not allclose(expected_losses, got_losses, _RTOL, _ATOL):
            shown, should = fmt_pair(got_losses, expected_losses, _RTOL, _ATOL)
            says, code = because(expected_losses, got_losses, [data_only],
                                 "Did you return the loss of this step, computed inside the tape?", _RTOL, _ATOL)
            raise Incorrect(f"Your variables are right, but the returned losses are {shown}, and should be "
                            f"{should}. {says}", cause=code)

    def _explain_variables(self, build, want, steps, label, expected, after):
        alternatives = (
            Alternative("unchanged", [v.numpy() for v in build().trainable_variables], "no-update",
                        "The variables never changed. Did you apply the gradients with "
                        "`optimizer.apply(grads, model.trainable_variables)`?"),
            Alternative("no layer losses", want.later("no layer losses"), "layer-losses-missing",
                        "They are what you get without the layer losses: this model has a regularizer. "
                        "Did you add `sum(model.losses)` to the loss, reading it inside the tape? Read before "
                        "the `with` block, the penalty is a constant to the tape, and adds no gradient."),
            Alternative("inference mode", want.later("inference mode"), "inference-mode",
                        "They are what the model gives in inference mode: its `BatchNormalization` layer then "
                        "uses its moving statistics instead of the batch's own. Did you call "
                        "`model(x, training=True)` inside the tape?"),
            Alternative("uphill", want.later("uphill"), "uphill-step",
                        "Your steps went uphill: the loss grew. Did you change the sign of the gradients? "
                        "The optimizer already subtracts them."),
        )
        problem = wrong_value("model.trainable_variables", expected, after, alternatives,
                              "Does each call compute the loss of `model(x, training=True)` under the tape and "
                              "apply the gradients with the optimizer it was given?", _RTOL, _ATOL)
        raise Incorrect(f"After {steps} calls on {label}, {problem}", cause=problem.cause)


ex2_1 = ModelGradients()
ex2_2 = ManualSgdStep()
ex2_3 = TrainStep()
