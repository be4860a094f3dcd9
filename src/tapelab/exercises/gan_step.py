"""Exercise 4.6 of notebook 04_persistent_tapes: one GAN step, each player trained on its own loss from one
forward pass.

The checker builds a small generator and discriminator (each with BatchNormalization, so `training=True`
matters) with weights drawn from the case's seed, runs the student's step once, and compares every weight of both
models with the reference step; each known slip is the reference step with one thing changed, so a match names
it from what the code did.
"""
from __future__ import annotations

import ast

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.compare import fmt
from tapelab.checker.messages import Incorrect
from tapelab.checker.replay import once_in_judge
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, wrong_value
from tapelab.exercises.nested_rule import TapeExercise

__all__ = ["ex4_6"]

_RTOL, _ATOL = 1e-4, 1e-5
# form -> (the Keras loss as code, its name in the task)
_FORMS = {"bce": ("BinaryCrossentropy(from_logits=True)", "the binary cross-entropy on logits"),
          "lsq": ("MeanSquaredError()", "the mean squared error (a least-squares GAN)")}
_TEXT = {"form": "bce", "label": 0.9}


def _label_code(label: float, like: str) -> str:
    """The labels tensor as code: `tf.ones_like(x)` for 1, `0.9 * tf.ones_like(x)` otherwise."""
    return f"tf.ones_like({like})" if label == 1 else f"{label:g} * tf.ones_like({like})"


def _models(seed: int, noise_dim: int):
    """A generator and a discriminator, each Dense, BatchNormalization, tanh, Dense(1), their trainable weights
    drawn from `seed`, so two calls give two identical pairs."""
    generator = keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                                  keras.layers.Activation("tanh"), keras.layers.Dense(1)])
    discriminator = keras.Sequential([keras.Input((1,)), keras.layers.Dense(5), keras.layers.BatchNormalization(),
                                      keras.layers.Activation("tanh"), keras.layers.Dense(1)])
    rng = np.random.default_rng(seed)
    for model in (generator, discriminator):
        for v in model.trainable_variables:
            if "gamma" not in v.path:
                v.assign(rng.normal(0.0, 0.6, v.shape).astype(np.float32))
    return generator, discriminator


def _restore(models, initial) -> None:
    """Put every weight of both models (BatchNormalization's moving statistics too) back to `initial`."""
    for model, values in zip(models, initial):
        for w, value in zip(model.weights, values):
            w.assign(value)


def _weights(models) -> list[list[np.ndarray]]:
    """Every weight of each model, as NumPy copies."""
    return [[w.numpy() for w in model.weights] for model in models]


def _right(pair, case, form: str, label: float):
    """(the pair's weights as built, the weights and losses after the reference step from them)."""
    initial = _weights(pair)
    return initial, _reference(pair, initial, case, form, label)


@once_in_judge
def _judged_right(case, form: str, label: float):
    """`_right` on a pair of the case's own, once per case and variant in the grader's judge."""
    return _right(_models(case[0], case[2]), case, form, label)


def _data(seed: int, batch: int, noise_dim: int):
    rng = np.random.default_rng(seed + 1000)
    real = tf.constant(3.0 + 0.5 * rng.normal(size=(batch, 1)), tf.float32)
    z = tf.constant(rng.normal(size=(batch, noise_dim)), tf.float32)
    return real, z


def _reference(models, initial, case, form: str, label: float, slip: str = ""):
    """The weights of both models after one step from `initial`, and the two losses, for the reference step or one
    `slip`; the models are put back to `initial` after it, so one pair serves every step."""
    seed, batch, noise_dim, g_lr, d_lr = case
    g, d = models
    _restore(models, initial)
    g_opt, d_opt = keras.optimizers.SGD(g_lr), keras.optimizers.SGD(d_lr)
    real, z = _data(seed, batch, noise_dim)
    loss_fn = getattr(keras.losses, _FORMS[form][0].split("(")[0])(**({"from_logits": True} if form == "bce" else {}))
    with tf.GradientTape(persistent=True) as tape:
        fake = g(z, training=slip != "generator-inference")
        d_training = slip != "discriminator-inference"
        real_out, fake_out = d(real, training=d_training), d(fake, training=d_training)
        real_label = 1.0 if slip == "no-smoothing" else label
        d_loss = loss_fn(real_label * tf.ones_like(real_out), real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_label = {"smoothed-generator": label, "generator-label-0": 0.0}.get(slip, 1.0)
        g_loss = loss_fn(g_label * tf.ones_like(fake_out), fake_out)
        g_target = {"generator-on-d-loss": d_loss, "minimax": -d_loss}.get(slip, g_loss)
    g_vars, d_vars = g.trainable_variables, d.trainable_variables
    g_grads, d_grads = tape.gradient(g_target, g_vars), tape.gradient(d_loss, d_vars)
    if slip == "one-optimizer":  # the generator's step also moves the discriminator, along the generator's loss
        g_opt.apply(tape.gradient(g_loss, g_vars + d_vars), g_vars + d_vars)
    elif slip == "swapped-optimizers":
        d_opt.apply(g_grads, g_vars)
    elif slip != "no-generator-update":
        g_opt.apply(g_grads, g_vars)
    if slip == "swapped-optimizers":
        g_opt.apply(d_grads, d_vars)
    elif slip != "no-discriminator-update":
        d_opt.apply(d_grads, d_vars)
    del tape
    after = _weights(models)
    _restore(models, initial)
    return (*after, float(d_loss), float(g_loss))


def _distinct(values) -> bool:
    return values != _TEXT


class GanStep(TapeExercise):
    number = "4.6"
    answer = "gan_step"
    replayable = True  # every read of the kernel's state after a call goes through `run`
    # What the student writes: the loss (binary cross-entropy on logits or least squares) and the label of the
    # real samples in the discriminator's loss (one-sided label smoothing; 0.9 in the text).
    space = Space(default=_TEXT, draws={"form": lambda rng: str(rng.choice(sorted(_FORMS))),
                                        "label": lambda rng: float(rng.choice([0.9, 0.8, 0.7]))},
                  allowed=_distinct,
                  wording={"loss_code": lambda v: _FORMS[v["form"]][0], "loss_text": lambda v: _FORMS[v["form"]][1],
                           "real_labels": lambda v: _label_code(v["label"], "real_out"),
                           "label_text": lambda v: f"{v['label']:g}"})
    statement = ("Write `gan_step(generator, discriminator, g_opt, d_opt, real, z)`: one training step of each player, "
                 "from one forward pass. `real` is a batch of real samples, `z` a batch of noise. Call both models with "
                 "`training=True`: `fake = generator(z)`, `real_out` and `fake_out` are the discriminator's outputs for "
                 "`real` and `fake`. With `loss_fn = keras.losses.${loss_code}`, ${loss_text}, the discriminator's "
                 "loss labels real samples ${label_text} and fake ones 0: `d_loss = loss_fn(${real_labels}, real_out) + "
                 "loss_fn(tf.zeros_like(fake_out), fake_out)`; the generator's loss labels its samples 1, since it "
                 "wants to pass for real. `g_opt` applies the gradient of `g_loss` to the generator's trainable "
                 "variables, `d_opt` that of `d_loss` to the discriminator's. Return `(d_loss, g_loss)`.")
    visible_cases = ((3, 8, 2, 0.2, 0.1),)  # (seed, batch, noise dimension, g_opt's and d_opt's learning rates)
    praise = "each player followed its own loss from one forward pass, and neither optimizer touched the other's model."
    hints = (
        "Two tapes opened in one `with` statement (or one persistent tape) record the one forward pass; each "
        "player asks for the gradient of its own loss with respect to its own model's `trainable_variables`.",
        "Inside the block: `fake = generator(z, training=True)`, `real_out = discriminator(real, training=True)`, "
        "`fake_out = discriminator(fake, training=True)`, then `d_loss` as the task writes it and "
        "`g_loss = loss_fn(tf.ones_like(fake_out), fake_out)`.",
    )

    def check_case(self, fn, case, facts):
        seed, batch, noise_dim, g_lr, d_lr = case
        form, label = self.variant["form"], self.variant["label"]
        # The reference step runs on the student's pair before the student's call, which gets it back as it was
        # built; the grader's judge, served what the call did, builds no pair for it. The slips (needed only for a
        # wrong answer) run on a pair of their own, built once.
        pair = self.given(lambda: _models(seed, noise_dim))
        initial, right = _right(pair, case, form, label) if pair is not None else _judged_right(case, form, label)
        g, d = pair or (None, None)
        real, z = _data(seed, batch, noise_dim)
        shown = f"generator, discriminator, SGD({g_lr}), SGD({d_lr}), real, z (a batch of {batch})"
        call = self.call(fn, g, d, keras.optimizers.SGD(g_lr), keras.optimizers.SGD(d_lr), real, z, shown=shown)
        # read in a run: the grader's judge is served the weights the kernel read (tapelab.checker.replay)
        g_after, d_after = self.run(lambda: _weights((g, d)), "Reading both models' weights after your step").value
        slip_pair = []  # built when the first slip is asked for: a right answer needs none

        def slipped(slip, part):
            def value():
                if not slip_pair:
                    slip_pair.append(_models(seed, noise_dim))
                return _reference(slip_pair[0], initial, case, form, label, slip)[part]
            return value

        problem = wrong_value("the discriminator's weights", right[1], d_after, [
            Alternative("unchanged", initial[1], "no-update",
                        "The discriminator did not move. Did you call `d_opt.apply(d_grads, "
                        "discriminator.trainable_variables)`?"),
            Alternative("the generator's optimizer on both models", slipped("one-optimizer", 1), "one-optimizer",
                        "They are what you get when `g_opt` also applies the gradient of `g_loss` to the "
                        "discriminator's variables: the generator's step then trains the discriminator to be fooled. "
                        "Give `g_opt` only `generator.trainable_variables`."),
            Alternative("the optimizers swapped", slipped("swapped-optimizers", 1), "swapped-optimizers",
                        "The discriminator moved at the generator's learning rate: `g_opt` applied its gradients. "
                        "Apply them with `d_opt`."),
            Alternative("generator in inference mode", slipped("generator-inference", 1), "inference-mode",
                        "They are what you get with the generator in inference mode: its BatchNormalization layer "
                        "then uses its moving statistics, so the discriminator sees other fake samples. Did you call "
                        "`generator(z, training=True)`?"),
            Alternative("discriminator in inference mode", slipped("discriminator-inference", 1), "inference-mode",
                        "They are what the discriminator gives in inference mode: its BatchNormalization layer then "
                        "uses its moving statistics instead of each batch's own. Did you call "
                        "`discriminator(real, training=True)` and `discriminator(fake, training=True)`?"),
            Alternative("real labels 1", slipped("no-smoothing", 1), "gan-labels",
                        f"They are what real samples labelled 1 give; the task labels them {label:g}: "
                        f"`{_label_code(label, 'real_out')}`."),
        ], "Does `d_opt` apply the gradient of `d_loss` (real labelled "
           f"{label:g}, fake 0) to `discriminator.trainable_variables`?", _RTOL, _ATOL)
        if problem:
            raise problem
        follows_d = self._generator_on_d_loss(facts)
        problem = wrong_value("the generator's weights", right[0], g_after, [
            Alternative("unchanged", initial[0], "no-update",
                        "The generator did not move. Did you call `g_opt.apply(g_grads, "
                        "generator.trainable_variables)`?"),
            Alternative("the discriminator's loss", slipped("generator-on-d-loss", 0),
                        "wrong-target" if follows_d else "gan-labels",
                        f"The generator moved to help the discriminator: the target of `{follows_d}` is computed from "
                        "`real`, so it is the discriminator's loss, not the generator's. The generator's own loss "
                        "labels its samples 1: "
                        "`g_loss = loss_fn(tf.ones_like(fake_out), fake_out)`." if follows_d else
                        "The generator moved to make its samples look fake: its loss labels them 0. It wants to pass "
                        "for real: `g_loss = loss_fn(tf.ones_like(fake_out), fake_out)`."),
            Alternative("minus the discriminator's loss", slipped("minimax", 0), "wrong-target",
                        "That is the step of the minimax loss, −`d_loss`; the task's generator loss labels its "
                        "samples 1 instead: `g_loss = loss_fn(tf.ones_like(fake_out), fake_out)`."),
            Alternative("smoothed generator labels", slipped("smoothed-generator", 0), "gan-labels",
                        f"Your generator's loss labels its samples {label:g}, the smoothing of the real samples in "
                        "the discriminator's loss; the generator's labels stay 1."),
            Alternative("generator in inference mode", slipped("generator-inference", 0), "inference-mode",
                        "They are what the generator gives in inference mode: its BatchNormalization layer then "
                        "uses its moving statistics instead of the batch's own. Did you call "
                        "`generator(z, training=True)`?"),
            Alternative("the optimizers swapped", slipped("swapped-optimizers", 0), "swapped-optimizers",
                        "The generator moved at the discriminator's learning rate: `d_opt` applied its gradients. "
                        "Apply them with `g_opt`."),
        ], "Does `g_opt` apply the gradient of `g_loss` (the generator's samples labelled 1) to "
           "`generator.trainable_variables`?", _RTOL, _ATOL)
        if problem:
            raise problem
        got = call.value
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise Incorrect(f"Your weights are right, but `gan_step` returned {fmt(got) if got is not None else '`None`'}"
                            "; it should return the two losses, `(d_loss, g_loss)`.",
                            cause="no-return" if got is None else None)
        problem = wrong_value("the returned `(d_loss, g_loss)`", [right[2], right[3]], list(got), [
            Alternative("swapped", [right[3], right[2]], "swapped-results", "Return `(d_loss, g_loss)`, in this order.")],
            "Did you return the losses computed inside the tape?", _RTOL, _ATOL)
        if problem:
            raise problem
        self._reject_gradient_inside_with(facts, call.logs)
        kept = [b.name for b in facts.tape_blocks if b.persistent and b.name not in facts.deleted]
        if kept:
            raise Incorrect(f"Your values are right, but your persistent tape `{kept[0]}` is never deleted: it keeps "
                            f"the whole forward pass until it goes. `del {kept[0]}` after the last `gradient` call, as "
                            "in Exercise 4.2.", cause="tape-not-released")

    @staticmethod
    def _generator_on_d_loss(facts) -> str | None:
        """A `gradient` call whose sources are the generator's variables and whose target the code computes from
        the real samples (so from the discriminator's loss), as written; None if the code shows none."""
        for c in facts.gradient_calls:
            if any(_model_of(facts, s) == "generator" for s in c.sources) and "real" in facts.upstream(c.target):
                return c.text()
        return None


def _model_of(facts, expr: str, depth: int = 3) -> str | None:
    """"generator" or "discriminator" when `expr` names one model's variables, directly or through an
    assignment (`g_vars, d_vars = generator..., discriminator...` is read item by item)."""
    named = [m for m in ("generator", "discriminator") if m in expr]
    if len(named) == 1 or depth == 0:
        return named[0] if len(named) == 1 else None
    for a in facts.assignments_of(expr):
        value = ast.parse(a.value, mode="eval").body
        if len(a.names) > 1 and isinstance(value, ast.Tuple) and len(value.elts) == len(a.names):
            return _model_of(facts, ast.unparse(value.elts[a.names.index(expr)]), depth - 1)
        return _model_of(facts, a.value, depth - 1)
    return None


ex4_6 = GanStep()
