"""Checking a custom `train_step` against plain `fit` (exercises 6.1 and 6.2): the same data, weights and
compile settings through both, then the history and the weights compared, and a wrong one told apart
from known wrong steps (a summed loss, a hard-coded loss, a loss metric fed the wrong values...)."""
from __future__ import annotations

import ast
import contextlib
import inspect
import re
import textwrap
import weakref
from copy import deepcopy
from dataclasses import replace
from functools import lru_cache

import keras
import numpy as np

from tapelab.checker.wrong_answers import Alternative, because
import tensorflow as tf

from tapelab.checker.compare import agrees, all_close, allclose, fmt, fmt_pair
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.exercises.dtype_policies import dtype_policy
from tapelab.exercises.fit_cases import EPOCHS, OWN_LOSSES, FitCase, Replay, batches_read, worked_example
from tapelab.quiet import Quiet

__all__ = ["EPOCHS", "OWN_LOSSES", "FitCase", "FitMatch", "weighted_failure", "worked_example"]

class UnscaledStep(keras.Model):
    """A reference for one wrong step: it differentiates the loss without `optimizer.scale_loss`."""

    def train_step(self, data):
        inputs, targets, weights = keras.utils.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            predicted = self(inputs, training=True)
            loss = self.compute_loss(inputs, targets, predicted, weights)
        self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
        return self.compute_metrics(inputs, targets, predicted, weights)


def _baseline(weights: list[np.ndarray], case: FitCase, model_class: type = keras.Model, run_eagerly: bool = True):
    """A plain functional model with `weights`, compiled and trained as `fit` trains it; history, final weights,
    replay. By default Keras's own `train_step` runs eagerly, batch by batch, in `fit`'s order (`_stepped`): the
    same numbers as a compiled `fit` (tests/exercises/test_fit_baseline.py compares both on every case), without
    tracing a graph or building `fit`'s callbacks and iterators for a model used once. Each is fitted once per
    process (6.1 and 6.2 share cases); the caller gets its own copy."""
    key = tuple((w.shape, w.dtype.str, w.tobytes()) for w in map(np.asarray, weights))
    return deepcopy(_fitted(key, case, model_class, run_eagerly))


@lru_cache(maxsize=64)
def _fitted(weights: tuple, case: FitCase, model_class: type, run_eagerly: bool):
    weights = [np.frombuffer(data, dtype).reshape(shape) for shape, dtype, data in weights]
    model = case.model(model_class)
    model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=case.loss_object(), **case.metric_options(),
                  jit_compile=False, run_eagerly=run_eagerly)
    if run_eagerly:
        history, starts = _stepped(model, case)
    else:
        starts: list[list[np.ndarray]] = []
        recorder = keras.callbacks.LambdaCallback(
            on_train_batch_begin=lambda *_, **__: starts.append(model.get_weights()))
        history = case.fit(model, (recorder,))
    return history, model.get_weights(), Replay(starts, case)


def _stepped(model: keras.Model, case: FitCase) -> tuple[dict[str, list[float]], list[list[np.ndarray]]]:
    """What `fit` does with a compiled model's own `train_step`, eagerly: each epoch resets the metrics, runs the
    step on each batch in order, and reports the metrics' results. The history, and the weights before each step."""
    history: dict[str, list[float]] = {}
    starts: list[list[np.ndarray]] = []
    batches = batches_read(case)
    for _ in range(EPOCHS):
        model.reset_metrics()
        for batch in batches:
            starts.append(model.get_weights())
            model.train_step(batch)
        for key, value in model.get_metrics_result().items():
            history.setdefault(key, []).append(float(value))
    return history, starts


def _weights_taken(fn) -> str:
    """What the code of `fn`'s `train_step` shows of the sample weights, `data`'s third element: never taken out of
    `data` (no `unpack_x_y_sample_weight`, no three names, no index 2 or -1 there), or, as far as the code tells,
    not given to the loss. Only `train_step` is read: a `test_step` that unpacks them does not weight the training."""
    try:
        tree = ast.parse(textwrap.dedent(_source(fn)))
    except SyntaxError:
        tree = None
    step = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "train_step"), None) \
        if tree else None
    if step is not None and not any(_takes_third(node) for node in ast.walk(step)):
        return ("`fit` hands `train_step` `(x, y, sample_weight)`, and your step never takes out the third element. "
                "Unpack all three with `x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)`.")
    return "your step does not give them to the loss."


def _takes_third(node: ast.AST) -> bool:
    """Whether `node` takes a third element out: `unpack_x_y_sample_weight(...)`, three names assigned at once, or
    an index 2 or -1."""
    if isinstance(node, ast.Call):
        return getattr(node.func, "attr", getattr(node.func, "id", None)) == "unpack_x_y_sample_weight"
    if isinstance(node, ast.Assign):
        return any(isinstance(t, (ast.Tuple, ast.List)) and len(t.elts) == 3 for t in node.targets)
    if isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index = ast.Constant(-index.operand.value) if isinstance(index.operand, ast.Constant) else index
        return isinstance(index, ast.Constant) and index.value in (2, -1)
    return False


def weighted_failure(problem: Incorrect, case: FitCase, method: str, step: str, fn) -> None:
    """Raise the cause of `problem`, an error of `method` ("fit", "evaluate") on a weighted case, when its text
    and `fn`'s code prove one: `x, y = data` given three elements, or a loss tracker given the rows' weights."""
    if not case.weighted:
        return
    text = str(problem)
    if "too many values to unpack (expected 2)" in text:
        also = " (`fit(..., class_weight=...)` does the same)" if method == "fit" else ""
        raise Incorrect(f"{problem.observed or problem} Given sample weights, `{method}` hands `{step}` "
                        f"`(x, y, sample_weight)`, so `x, y = data` fails{also}. Unpack with `x, y, sample_weight = "
                        "keras.utils.unpack_x_y_sample_weight(data)`, which also works without weights.",
                        cause="sample-weight-unpack") from None
    if ("BroadcastTo" in text or "Incompatible shapes" in text) and re.search(
            r"update_state\(\s*\w*loss\w*\s*,\s*sample_weight\s*=\s*(?!tf\.shape)\w", _source(fn)):
        raise Incorrect(f"{problem.observed or problem} The loss is one number per batch, and that line gives its "
                        "tracker one weight per row: the shapes do not broadcast. `fit` weights each batch's loss "
                        "by its rows (the rows' weights are already inside the loss), so the tracker takes "
                        "`sample_weight=tf.shape(x)[0]`; the other metrics take `sample_weight`.",
                        cause="tracker-given-row-weights") from None


def _model_kind(model, step: str) -> tuple[bool, bool]:
    """Whether `model` is a `keras.Model`, and whether its class overrides `step` ("train_step", "test_step")."""
    is_model = isinstance(model, keras.Model)
    return is_model, is_model and getattr(type(model), step) is not getattr(keras.Model, step)


def _among(fn, functions: weakref.WeakSet) -> bool:
    try:
        return fn in functions
    except TypeError:  # no weak reference to it: never added
        return False


def _source(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


class FitMatch(Exercise):
    """Build the student's model, fit it for EPOCHS epochs, compare history and weights with plain `fit`.

    One case of each check fits the student's model as `fit` does by default, with `train_step` traced into a
    graph (the notebook tells students not to add `@tf.function`: `fit` compiles the step), so a step that
    works only eagerly fails there; the others run it eagerly, `run_eagerly=True`: the same numbers without
    tracing a graph for a model fitted once. The traced one is the first case with the most batches: one trace
    serves several steps. A function whose step has already trained in a graph in this kernel (the test cell's
    visible check, just before its hidden cases) is not traced again: the trace tells a step that works only
    eagerly from one that works in both, whatever the inputs, and costs more than an eager case."""

    compile_loss = True  # 6.2 compiles with an optimizer only
    _traced: FitCase | None = None  # the case of this check whose fit traces the student's step
    _graph_fitted: weakref.WeakSet | None = None  # the functions whose models `fit` has trained in a graph

    def outcome(self, answer=None, *, cases=None, expected=None, seed=None):
        """`Exercise.outcome`, with the case to trace chosen first: here rather than in `check`, since the grader's
        judge (tapelab.checker.replay) calls `outcome` itself."""
        __tracebackhide__ = True
        chosen = [case if isinstance(case, FitCase) else FitCase(*case)
                  for case in (self.visible_cases if cases is None else cases)]
        self._traced = max(chosen, key=lambda case: case.steps, default=None)
        if self._graph_fitted is None:
            self._graph_fitted = weakref.WeakSet()
        return super().outcome(answer, cases=cases, expected=expected, seed=seed)

    def check_case(self, fn, case, facts):
        case = case if isinstance(case, FitCase) else FitCase(*case)
        with dtype_policy(case.policy):
            self._check_under_policy(fn, case, facts)

    def _check_under_policy(self, fn, case, facts):
        # Every use of the model the student's function returned goes through `run`: the grader's judge
        # (tapelab.checker.replay) is served what the kernel's model did and showed, and never holds the model.
        model = self.call(fn, case.features, shown=case.shown()).value
        name = f"{self.answer}({case.shown()})"
        is_model, own_step = self.run(lambda: _model_kind(model, "train_step"), "Reading your model").value
        if not is_model:
            raise Incorrect(f"`{name}` returned a `{type(model).__name__}`, but should return a `keras.Model`. "
                            "Did you forget `return`, or return the class instead of an instance?",
                            cause="no-return" if model is None else None)
        if not own_step:
            raise Incorrect(f"`{name}` returned a model whose class does not override `train_step`. "
                            "Did you define `def train_step(self, data):` inside your `keras.Model` subclass?",
                            cause="no-train-step")
        initial = self.run(lambda: model.get_weights(), "Reading your model's weights").value
        shapes, want_shapes = [tuple(w.shape) for w in initial], case.shapes()
        if shapes != want_shapes:
            raise Incorrect(f"`{name}` has weights of shapes {shapes}, but should have {case.layers()}: "
                            f"{want_shapes}. Did you build it on `keras.Input(({case.features},))`"
                            f"{' with the layers the task names' if case.hidden else ''}?")
        with Quiet():
            expected, expected_weights, replay = _baseline(initial, case)
        compiled = dict(loss=case.loss_object()) if self.compile_loss else {}
        metrics = case.metric_options() if self.compile_loss else {}  # an optimizer only: the step tracks its own
        traced = case == self._traced and not _among(fn, self._graph_fitted)
        self.run(lambda: model.compile(optimizer=keras.optimizers.SGD(0.1), **metrics, jit_compile=False,
                                       run_eagerly=not traced, **compiled), "Compiling your model")
        try:
            trained = self.run(lambda: case.fit(model),
                               f"Training your model with `fit` ({case.describe(self.compile_loss)})")
        except Incorrect as problem:
            weighted_failure(problem, case, "fit", "train_step", fn)
            raise
        if traced:
            with contextlib.suppress(TypeError):  # a callable that takes no weak reference is traced every time
                self._graph_fitted.add(fn)
        history, logs = trained.value, trained.logs
        got_weights = self.run(lambda: model.get_weights(), "Reading your model's weights after `fit`").value
        self._compare(fn, case, facts, history, logs, got_weights, initial, expected, expected_weights, replay)
        return model

    def _compare(self, fn, case, facts, history, logs, got_weights, initial, expected, expected_weights, replay):
        where = f" (on {case.describe(self.compile_loss)})"
        if "loss" in expected and "loss" not in history:
            raise Incorrect(f"`history.history` has keys {sorted(history)}, but `fit` gives {sorted(expected)}{where}. "
                            "Did you name your loss metric `\"loss\"`? `fit` reports each metric under its name: "
                            "create it as `keras.metrics.Mean(name=\"loss\")`.", cause="loss-metric-name")
        if sorted(history) != sorted(expected):
            raise Incorrect(f"`history.history` has keys {sorted(history)}, but `fit` gives {sorted(expected)}"
                            f"{where}. Did you update every metric in `self.metrics` and return "
                            "`{m.name: m.result() for m in self.metrics}`?", cause="metrics-not-returned")
        if case.policy == "mixed_float16" and not all_close(expected_weights, got_weights, rtol=1e-4, atol=1e-4):
            self._check_scaled(case, initial, expected_weights, got_weights, where)
        names = ["hidden kernel", "hidden bias", "kernel", "bias"][-len(initial):]
        for wname, start, want, got in zip(names, initial, expected_weights, got_weights):
            if allclose(start, got) and not allclose(start, want):
                raise Incorrect(f"The `{wname}` never changed during training{where}, but `fit` moves it to "
                                f"{fmt(want)}. Did you compute and apply gradients for every variable in "
                                "`self.trainable_variables`?", cause="no-update")
        if all_close(expected_weights, got_weights, rtol=1e-4, atol=1e-4):
            self._compare_reported(case, facts, history, logs, expected, replay, where)
            return
        losses, want_losses = history["loss"], expected["loss"]
        ratio = losses[0] / want_losses[0] if want_losses[0] else 0.0
        if abs(ratio - case.batch_size) < 1e-3 * case.batch_size and case.batch_size > 1:
            first, fits = fmt_pair(losses[0], want_losses[0])
            raise Incorrect(f"Your first epoch's loss is {first}, {case.batch_size} times `fit`'s "
                            f"{fits}{where}. Did you sum the squared errors over the batch "
                            "instead of taking their mean?", cause="sum-not-mean")
        (got_kernel, want_kernel), (got_bias, want_bias) = (fmt_pair(g, w, 1e-4, 1e-4) for g, w in
                                                            zip(got_weights[-2:], expected_weights[-2:]))
        ends = (f"Your weights end at {got_kernel} and {got_bias}, but `fit` ends at {want_kernel} and "
                f"{want_bias}{where}.")
        def weights_with(loss: str):
            def fitted() -> list[np.ndarray]:
                with Quiet():
                    return _baseline(initial, replace(case, loss=loss))[1]
            return fitted

        summed = Alternative("summed over the batch", weights_with(
            f"summed {case.loss if case.loss in OWN_LOSSES else 'mse'}"), "sum-not-mean",
                             "Those are the weights of a step whose loss is summed over the batch: the tape "
                             "differentiates the sum of a per-example loss. Did you average over the batch, "
                             "`tf.reduce_mean(...)`, before taking the gradient?")
        def unweighted() -> list[np.ndarray]:
            with Quiet():
                return _baseline(initial, replace(case, weighted=False))[1]

        alternatives = [summed] + ([Alternative(
            "sample weights dropped", unweighted, "sample-weight-ignored",
            f"Those are the weights `fit` reaches without the sample weights: {_weights_taken(fn)} Pass them "
            "to the loss, `self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)`.")]
                                   if case.weighted else []) + ([Alternative("mean squared error", weights_with("mse"),
                                    "hardcoded-loss",
                                    "Those are the weights of a step that minimises the mean squared error, not "
                                    f"the compiled {case.loss!r} loss. Did you hard-code a loss? Call "
                                    "`self.compute_loss(x=x, y=y, y_pred=y_pred)` so the step uses the loss "
                                    "given to `compile`.")] if self.compile_loss else [])
        if case.loss in OWN_LOSSES:  # a factor on the loss, or the other loss, fitted the same way
            error, other = OWN_LOSSES[case.loss][0], next(k for k in OWN_LOSSES if k != case.loss)
            other_error = OWN_LOSSES[other][0]
            alternatives += [Alternative(f"{factor} the mean {error} error", weights_with(f"{word} {case.loss}"),
                                         "constant-factor",
                                         f"Those are the weights of a step whose loss is {factor} the mean {error} "
                                         "error: a constant factor on the loss scales every gradient (with SGD, it "
                                         "acts as another learning rate). Drop the factor.")
                             for word, factor in (("half", "half"), ("double", "twice"))]
            alternatives += [Alternative(f"mean {other_error} error", weights_with(other), "wrong-target",
                                         f"Those are the weights of a step that minimises the mean {other_error} "
                                         f"error, not the mean {error} error: the step differentiates another loss. "
                                         f"Use the {error} error, `tf.reduce_mean({OWN_LOSSES[case.loss][1]}"
                                         "(y - y_pred))`.")]
        says, code = because(expected_weights, got_weights, alternatives,
                             "Is your step computing the gradient of the mean loss over the batch, and applying "
                             "`self.optimizer.apply(grads, self.trainable_variables)` once?", 1e-4, 1e-4)
        raise Incorrect(f"{ends} {says}", cause=code)

    def _check_scaled(self, case, initial, expected_weights, got_weights, where):
        """Under mixed precision: are the weights those of a step that never scales its loss?"""
        def unscaled() -> list[np.ndarray]:
            with Quiet():
                return _baseline(initial, case, UnscaledStep)[1]

        says, code = because(expected_weights, got_weights, [Alternative(
            "loss not scaled", unscaled, "loss-not-scaled",
            "Those are the weights of a step that never scales its loss. Under `mixed_float16`, `compile` wraps "
            "the optimizer in a `LossScaleOptimizer`, whose `apply` divides every gradient by the loss scale "
            f"({2 ** 15} at first): take the gradient of `self.optimizer.scale_loss(loss)` inside the tape, "
            "or the weights barely move.")], "", 1e-4, 1e-4)
        if code:
            got_kernel, want_kernel = fmt_pair(got_weights[-2], expected_weights[-2], 1e-4, 1e-4)
            raise Incorrect(f"Your kernel ends at {got_kernel}, but `fit` ends at {want_kernel}{where}. {says}",
                            cause=code)

    def _compare_reported(self, case, facts, history, logs, expected, replay, where):
        """The weights are right; are the numbers the step reports right too?"""
        for key in sorted(expected):
            got, want = history[key], expected[key]
            if agrees(want, got, case.rtol(key), 1e-4):
                continue
            got_text, want_text = fmt_pair(got, want, case.rtol(key), 1e-4)
            shown = f"`history['{key}']` is {got_text}, but `fit` gives {want_text}{where}."
            trains = " Your model trains correctly (its weights match `fit`'s), so the bug is in what it reports."
            if not np.any(np.asarray(got)) and facts.found and facts.calls_to("update_state"):
                raise Incorrect(shown + trains + " Your code updates a metric, but `fit` reports only the "
                                "metrics the model tracks. Is your tracker an attribute of the model "
                                "(`self.loss_tracker`, created in `__init__`), and, if you wrote a `metrics` "
                                "property, listed there?",
                                cause="metric-not-tracked")
            if not np.any(np.asarray(got)):
                raise Incorrect(shown + trains + " Did you forget to update the metrics? Call "
                                "`update_state` on each metric before returning their results.",
                                cause="metric-not-updated")
            if key == "loss" and (any("compiled_loss" in line for line in logs) or facts.calls_to("compiled_loss")):
                raise Incorrect(shown + trains + " That is the Keras 2 `self.compiled_loss` idiom: in Keras 3 it "
                                "reports the wrong number. Use `self.compute_loss(x=x, y=y, y_pred=y_pred)` (or your "
                                "own loss) and update the loss metric with it.", cause="keras2-compiled-loss")
            alternatives = (Alternative("metric without weights", replay[f"unweighted {key}"], "sample-weight-ignored",
                                        "That is what the metric reports without the sample weights. Did you pass "
                                        "them to its `update_state(y, y_pred, sample_weight=sample_weight)`?"),
                            ) if f"unweighted {key}" in replay else () if key != "loss" else (
                Alternative("mean prediction", replay["mean prediction"], "predictions-tracked",
                            "These are the mean predictions. Did you pass `y_pred` to the loss tracker's "
                            "`update_state` instead of the loss?"),
                Alternative("last batch loss", replay["last batch loss"], "batch-loss-reported",
                            "These are the losses of each epoch's last batch. Did you return the batch's `loss` "
                            "instead of the metric's `result()`, the mean over the epoch?"),
                Alternative("unweighted mean", replay["unweighted mean"], "loss-not-weighted",
                            "Each epoch's value is the plain mean of its batch losses, but `fit` weights each "
                            f"batch's loss by its number of rows (the last batch here has {case.last_rows}, "
                            f"the others {case.batch_size}). Pass the batch size to the loss metric: "
                            "`update_state(loss, sample_weight=tf.shape(x)[0])`."),
                Alternative("running mean", replay["running mean"], "metric-not-reset",
                            "Each epoch's value is the mean over this and every earlier epoch: the loss metric "
                            "was never reset. `fit` resets the metrics in `model.metrics` at the start of "
                            "each epoch: is your tracker an attribute of the model, created in `__init__`, "
                            "and, if you wrote a `metrics` property, listed there?"),
            )
            says, code = because(want, got, alternatives, "Did you update each metric with the right values "
                                 "(the loss metric with the loss, the others with `y` and `y_pred`)?", case.rtol(key), 1e-4)
            raise Incorrect(f"{shown}{trains} {says}", cause=code)
