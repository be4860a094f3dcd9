"""Exercise 2.3 of notebook 02_model_variables: a fine-tuning step that keeps the weights near where they started
(an L2-SP pull towards `anchors`), on top of the layer losses, in training mode, with a layer frozen in some models.

Its expected values come from the reference steps of the answers distribution
(`tapelab_answers.references.anchored_steps`), stored for the notebook's own cases (tapelab.checker.expected).
"""
from __future__ import annotations

import ast
import inspect
import textwrap

import keras
import numpy as np
import tensorflow as tf

from tapelab.checker.compare import all_close, allclose, fmt_pair, to_numpy
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.replay import once_in_judge
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, because, wrong_value
from tapelab.exercises.keras_cases import LOSSES, bn_case, dense_model, worked_example

__all__ = ["ex2_3"]

_RTOL, _ATOL = 1e-3, 1e-5
_OPTIMIZERS = {"sgd": lambda: keras.optimizers.SGD(0.05), "adam": lambda: keras.optimizers.Adam(0.05)}


def _all_close(expected, got) -> bool:
    return all_close(expected, got, _RTOL, _ATOL)


def _seeded_model(seed: int, n_in: int, hidden: int, n_out: int, regularizer: str, frozen: bool):
    """Dense(hidden, tanh) (frozen if `frozen`; none for hidden 0), then Dense(n_out) with an L2 `regularizer`
    ("kernel" or "activity", as `dense_model` gives it), all weights seeded."""
    def build() -> keras.Model:
        penalty = {f"{regularizer}_regularizer": keras.regularizers.L2(0.1)} if regularizer else {}
        layers = [keras.layers.Dense(hidden, activation="tanh")] if hidden else []
        model = keras.Sequential([keras.Input((n_in,)), *layers, keras.layers.Dense(n_out, **penalty)])
        weights = np.random.default_rng(seed + 1000)
        for v in model.trainable_variables:
            v.assign(weights.normal(scale=0.5, size=v.shape))
        if frozen and hidden:
            model.layers[0].trainable = False
        return model

    return build


@once_in_judge
def _case(spec):
    """(build_model, make_optimizer, x, y, anchors, steps, label) for a case; `anchors` one tensor per trainable
    variable of the built model, drawn apart from its start so that the pull is felt from the first step."""
    if spec == "worked":
        x, y = worked_example()
        anchors = [tf.constant([[1.5]]), tf.constant([0.5])]
        return dense_model, _OPTIMIZERS["sgd"], x, y, anchors, 3, "the worked example"
    if spec[0] == "bn":
        _, seed, optimizer, steps = spec
        build, x, y = bn_case("mse", seed)
        label = "a Dense-BatchNormalization-Dense model"
    else:
        seed, n_in, hidden, n_out, regularizer, optimizer, steps, frozen = spec
        build = _seeded_model(seed, n_in, hidden, n_out, regularizer, frozen)
        rng = np.random.default_rng(seed)
        x = tf.constant(rng.normal(size=(6, n_in)), tf.float32)
        y = tf.constant(rng.normal(size=(6, n_out)), tf.float32)
        label = (f"a model with a frozen Dense({hidden}) layer, then Dense({n_out})" if frozen and hidden else
                 f"a Dense({hidden})-Dense({n_out}) model" if hidden else f"a Dense({n_out}) model on {n_in} inputs")
        label += f" with a{'n' if regularizer[0] in 'aeiou' else ''} {regularizer} regularizer" if regularizer else ""
    rng = np.random.default_rng(seed + 7)
    anchors = [tf.constant(v.numpy() + rng.normal(scale=0.5, size=v.shape), tf.float32)
               for v in build().trainable_variables]
    return build, _OPTIMIZERS[optimizer], x, y, anchors, steps, label


class AnchoredStep(Exercise):
    number = "2.3"
    replayable = True
    answer = "train_step"
    # The pull's strength alpha. Never 1, where the pull written without its factor would pass.
    space = Space(default={"alpha": 0.1}, draws={"alpha": lambda rng: float(rng.choice([0.05, 0.2, 0.25, 0.5]))},
                  allowed=lambda v: v["alpha"] != 1)
    statement = ("Write `train_step(model, optimizer, loss_fn, x, y, anchors)`: one step on the batch `(x, y)` that "
                 "minimises `loss_fn(y, preds)` with `preds = model(x, training=True)`, plus `sum(model.losses)`, plus "
                 "the pull ${alpha}·Σ `tf.reduce_sum(tf.square(v - a))` over each trainable variable `v` and its anchor "
                 "`a`, and updates `model.trainable_variables` with `optimizer`. `anchors` holds one tensor per entry "
                 "of `model.trainable_variables`, in that order. Return the total loss.")
    # The worked example, a frozen first layer with a kernel regularizer behind it (variables of many entries,
    # anchors only for those that train), an activity regularizer, and a BatchNormalization layer.
    visible_cases = ("worked", (7, 3, 4, 2, "kernel", "sgd", 2, True), (3, 2, 0, 3, "activity", "sgd", 2, False),
                     ("bn", 12, "sgd", 3))
    praise = "your step pulls each trainable variable towards its anchor, on top of the data and layer losses."
    hints = (
        "The step of section 4 with a third term: forward pass and the three losses under one tape, gradients, "
        "the optimizer; return the total.",
        "Inside the tape, after the forward pass: `pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in "
        "zip(model.trainable_variables, anchors))`, computed there so that the tape sees how it depends on `v`.",
    )

    def expectations(self, spec):
        """The variables, losses and loss parts of the correct steps, and the variables after each named wrong step."""
        build, make_opt, x, y, anchors, steps, _ = _case(spec)
        alpha = self.variant["alpha"]

        def run(part, **wrong):
            return lambda refs: refs.anchored_steps(build(), make_opt(), LOSSES["mse"](), x, y, anchors, steps, alpha,
                                                    **wrong)[part]

        return {"variables": run(0), "losses": run(1), "parts": run(2),
                "no layer losses": run(0, layer_losses=False), "no pull": run(0, pull=0.0),
                "pull unscaled": run(0, pull=1 / alpha), "pull halved": run(0, pull=0.5),
                "pull averaged": run(0, reduce="mean"), "inference mode": run(0, training=False),
                "uphill": run(0, sign=-1.0), "forward outside": run(0, forward_outside=True)}

    def check_case(self, fn, spec, facts):
        build, make_opt, x, y, anchors, steps, label = _case(spec)
        model, optimizer = self.given(build), self.given(make_opt)
        returned = [self.call(fn, model, optimizer, LOSSES["mse"](), x, y, anchors,
                              shown="model, optimizer, loss_fn, x, y, anchors").value for _ in range(steps)]
        after = self.run(lambda: [v.numpy() for v in model.trainable_variables],
                         "Reading the model's variables after your steps").value
        want = self.expect(spec)
        if not _all_close(want["variables"], after):
            self._explain_variables(fn, build, want, steps, label, after, facts)
        if any(r is None for r in returned):
            raise Incorrect("Your variables are right, but `train_step` returned `None`. "
                            "Did you forget `return loss`?", cause="no-return")
        try:
            got = [float(to_numpy(r)) for r in returned]
        except (TypeError, ValueError):
            raise Incorrect("Your variables are right, but `train_step` should return the loss as a scalar "
                            f"tensor, not a `{type(returned[0]).__name__}`.") from None
        expected = want["losses"]
        if not allclose(expected, got, _RTOL, _ATOL):
            parts = want["parts"]
            shown, should = fmt_pair(got, expected, _RTOL, _ATOL)
            says, code = because(expected, got, [
                Alternative("data loss only", [d for d, _, _ in parts], "missing-term",
                            "Those are the data losses alone: return the whole loss you differentiated, layer "
                            "losses and pull included."),
                Alternative("without the pull", [d + l for d, l, _ in parts], "missing-term",
                            "Those are the totals without the pull: return the whole loss you differentiated.")],
                "Did you return the loss of this step, computed inside the tape?", _RTOL, _ATOL)
            raise Incorrect(f"Your variables are right, but the returned losses are {shown}, and should be "
                            f"{should}. {says}", cause=code)

    def _explain_variables(self, fn, build, want, steps, label, after, facts):
        alpha = self.variant["alpha"]
        pull = "`sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))`"
        alternatives = (
            Alternative("unchanged", [v.numpy() for v in build().trainable_variables], "no-update",
                        "The variables never changed. Did you apply the gradients with "
                        "`optimizer.apply(grads, model.trainable_variables)`?"),
            Alternative("no layer losses", want.later("no layer losses"), "layer-losses-missing",
                        "They are what you get without the layer losses: this model has a regularizer. "
                        "Did you add `sum(model.losses)` to the loss, reading it inside the tape? Read before "
                        "the `with` block, the penalty is a constant to the tape, and adds no gradient."),
            Alternative("no pull", want.later("no pull"), "missing-term",
                        self._no_pull(fn, facts, f"{alpha:g} * {pull}")),
            Alternative("pull unscaled", want.later("pull unscaled"), "constant-factor",
                        f"They are what the pull gives without its factor {alpha:g}: multiply it by {alpha:g}."),
            Alternative("pull halved", want.later("pull halved"), "constant-factor",
                        f"They are what the pull gives at half its strength, {alpha / 2:g}·Σ‖v − anchor‖². The task's "
                        f"factor is {alpha:g}, with no ½ in front."),
            Alternative("pull averaged", want.later("pull averaged"), "mean-target",
                        "They are what the pull gives with each variable's squares averaged, not summed: "
                        "‖v − anchor‖² is `tf.reduce_sum(tf.square(v - anchor))`; `reduce_mean` divides each "
                        "variable's share by its number of entries."),
            Alternative("inference mode", want.later("inference mode"), "inference-mode",
                        "They are what the model gives in inference mode: its `BatchNormalization` layer then "
                        "uses its moving statistics instead of the batch's own. Did you call "
                        "`model(x, training=True)` inside the tape?"),
            Alternative("forward outside", want.later("forward outside"), *self._off_tape(facts)),
            Alternative("uphill", want.later("uphill"), "uphill-step",
                        "Your steps went uphill: the loss grew. Did you change the sign of the gradients? "
                        "The optimizer already subtracts them."),
        )
        problem = wrong_value("model.trainable_variables", want["variables"], after, alternatives,
                              "Does each call compute the data loss, the layer losses and the pull under the tape, "
                              "and apply the gradients with the optimizer it was given?", _RTOL, _ATOL)
        raise Incorrect(f"After {steps} calls on {label}, {problem}", cause=problem.cause)

    @staticmethod
    def _off_tape(facts) -> tuple[str, str]:
        """The cause and words for a data loss the tape did not record, as far as the code shows why."""
        moved = ("They are what you get when the data loss adds no gradient: only the pull (and a kernel "
                 "regularizer's penalty, where there is one) moved the variables. ")
        if facts.found and any(facts.calls_to(name) for name in ("numpy", "asarray", "array")):
            return "numpy-in-path", moved + ("A NumPy value between `model(x, training=True)` and the loss is a "
                                             "constant to the tape: keep that path in TensorFlow operations.")
        return "outside-tape", moved + "Did you call `model(x, training=True)` inside the `with` block?"

    @staticmethod
    def _no_pull(fn, facts, pull: str) -> str:
        """Why the pull adds no gradient, as far as the code shows it: `anchors` never read, or read only outside
        the tape (the lines come from the same source the facts were read from)."""
        lines = _lines_reading(fn, "anchors")
        if facts.found and lines == []:
            return f"They are what you get without the pull: your step never reads `anchors`. Add {pull} to the loss."
        if facts.found and lines and facts.tapes and not any(t.contains(n) for n in lines for t in facts.tape_blocks):
            return ("They are what you get without the pull's gradient: you compute the pull before the `with` "
                    "block, where it is a constant to the tape. Compute it inside, after the forward pass.")
        return (f"They are what you get without the pull's gradient. Is the pull, {pull}, computed inside the tape "
                "and added to the loss you differentiate?")


def _lines_reading(fn, name: str) -> list[int] | None:
    """The source lines of `fn` (counted as CodeFacts counts them) that read `name`; None where it cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                   and isinstance(n.ctx, ast.Load)})


ex2_3 = AnchoredStep()
