"""Exercise 2.3 of notebook 02_model_variables: a custom training step with the layer losses, in training
mode, and (in a variant) the gradients clipped to a global norm before the optimizer applies them.

Its expected values come from the reference steps of the answers distribution
(`tapelab_answers.references.train_steps`), stored for the notebook's own cases (tapelab.checker.expected).
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.compare import all_close, allclose, fmt_pair, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, because, wrong_value
from tapelab.exercises.keras_cases import LOSSES, bn_case, dense_model, worked_example

__all__ = ["ex2_3"]

_RTOL, _ATOL = 1e-3, 1e-5


def _all_close(expected, got) -> bool:
    return all_close(expected, got, _RTOL, _ATOL)


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


def _clip(max_norm: float, line: str) -> str:
    """`line` with the variant's `max_norm` in it, or nothing where the step clips nothing (0, the notebook's)."""
    return line.format(max_norm) if max_norm else ""


class TrainStep(Exercise):
    number = "2.3"
    answer = "train_step"
    # The gradients' clipping: together to a global norm of at most max_norm before the update (0, no clipping, in
    # the notebook's text). The worked example's first gradients have a norm of 37, so every drawn limit bites.
    space = Space(default={"max_norm": 0}, draws={"max_norm": lambda rng: float(rng.choice([0.5, 1, 2, 5]))},
                  wording={"clip": lambda v: _clip(v["max_norm"], "\n    grads, _ = tf.clip_by_global_norm(grads, {:g})"),
                           "clip_text": lambda v: _clip(v["max_norm"], ", clipped together to a global norm of at most "
                                                        "{0:g} (`tf.clip_by_global_norm(grads, {0:g})`)"),
                           "clip_hint": lambda v: _clip(v["max_norm"], "`grads, _ = tf.clip_by_global_norm(grads, "
                                                        "{:g})`, then "),
                           "lines": lambda v: ("Five lines: forward pass and loss under a tape, gradients, their "
                                               "clipping" if v["max_norm"] else
                                               "Four lines: forward pass and loss under a tape, gradients")})
    statement = ("Write `train_step(model, optimizer, loss_fn, x, y)` that performs one full training step on the batch "
                 "`(x, y)`: forward pass with `training=True`, the loss `loss_fn(y, preds)` plus the layer losses "
                 "`sum(model.losses)`, gradients with respect to `model.trainable_variables`${clip_text}, and the "
                 "update by `optimizer`. Return the total loss.")
    # Every structure the text names, on inputs of its own: a kernel and an activity regularizer, a
    # stateful optimizer, and a BatchNormalization layer (training=True matters there).
    visible_cases = ("worked", "worked-l2", (7, 3, 2, "activity", "adam", 2), ("bn", 12, "sgd", 3))
    praise = "your step records the forward pass and every loss, and lets the optimizer apply the gradients."
    hints = (
        "${lines}, then the optimizer; return the loss.",
        "Inside the tape: `preds = model(x, training=True)`, then `loss = loss_fn(y, preds) + sum(model.losses)` "
        "so a regularizer's penalty is part of what you minimise.",
    )

    def expectations(self, spec):
        """The variables after the correct steps and their losses, the data losses alone, and the variables
        after each named wrong step."""
        build, make_opt, loss, x, y, steps, _ = _train_case(spec)
        max_norm = self.variant["max_norm"]
        clip = {"max_norm": max_norm} if max_norm else {}

        def trained(part, **variant):
            return lambda refs: refs.train_steps(build(), make_opt(), LOSSES[loss](), x, y, steps,
                                                 **{**clip, **variant})[part]

        found = {"variables": trained(0), "losses": trained(1),
                 "data losses": lambda refs: refs.data_losses(build(), make_opt(), LOSSES[loss](), x, y, steps, **clip),
                 "no layer losses": trained(0, layer_losses=False), "inference mode": trained(0, training=False),
                 "uphill": trained(0, sign=-1.0)}
        if max_norm:
            found.update({"unclipped": trained(0, max_norm=0), "clipped each": trained(0, per_tensor=True)})
        return found

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
        max_norm = self.variant["max_norm"]
        clipping = f"`grads, _ = tf.clip_by_global_norm(grads, {max_norm:g})`"
        if max_norm:
            alternatives += (
                Alternative("unclipped", want.later("unclipped"), "not-clipped",
                            f"They are what the optimizer gives with the gradients unclipped. Clip them together to a "
                            f"global norm of at most {max_norm:g} before applying them: {clipping}."),
                Alternative("clipped each", want.later("clipped each"), "per-tensor-clip",
                            "Each gradient was clipped on its own, not together with the others. The task clips them "
                            f"together, by their global norm, which keeps their direction: {clipping}."),
            )
        problem = wrong_value("model.trainable_variables", expected, after, alternatives,
                              "Does each call compute the loss of `model(x, training=True)` under the tape"
                              + (f", clip the gradients with {clipping}" if max_norm else "")
                              + " and apply the gradients with the optimizer it was given?", _RTOL, _ATOL)
        raise Incorrect(f"After {steps} calls on {label}, {problem}", cause=problem.cause)


ex2_3 = TrainStep()
