"""The fit-versus-custom-loop comparison of notebook 06, with a gradient-clipping control.

`ComparisonModel` trains one small linear model twice for each clipping setting (cached): with
`compile` + `fit`, the optimizer given the same clipping option (`clipnorm=t`, ...), and with a raw
`tf.GradientTape` loop that clips by hand, so like is compared with like; the unclipped `fit` run is
kept as the reference that shows what clipping does to training. It knows nothing
about widgets. `ComparisonExplorer` draws the two loss curves and the first step's gradient
before and after clipping, importing ipywidgets and matplotlib only when one is built.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Sequence

import keras
import numpy as np
import tensorflow as tf

from tapelab.widgets.ask import ask_first
from tapelab.widgets.controls import BusyCue
from tapelab.widgets.render import agg_figure, show

__all__ = ["CLIP_MODES", "ComparisonExplorer", "ComparisonModel", "ComparisonState", "clip"]

CLIP_MODES = ("none", "clipnorm", "global_clipnorm", "clipvalue")
THRESHOLDS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
PARAMETERS = ("w1", "w2", "b")


def clip(grads: Sequence[tf.Tensor], mode: str, threshold: float) -> list[tf.Tensor]:
    """Clip like the Keras optimizer option `mode` (clipnorm, global_clipnorm, clipvalue) set to `threshold`."""
    if mode == "none":
        return list(grads)
    if mode == "clipnorm":
        return [tf.clip_by_norm(g, threshold) for g in grads]
    if mode == "global_clipnorm":
        return tf.clip_by_global_norm(list(grads), threshold)[0]
    if mode == "clipvalue":
        return [tf.clip_by_value(g, -threshold, threshold) for g in grads]
    raise ValueError(f"unknown clipping mode {mode!r}; choose from: {', '.join(CLIP_MODES)}")


@dataclass(frozen=True)
class ComparisonState:
    """What the view shows for one clipping setting."""

    mode: str
    threshold: float
    fit_losses: np.ndarray  # per epoch, from compile + fit with the optimizer's own option for this clipping
    custom_losses: np.ndarray  # per epoch, from the tape loop with this clipping
    unclipped_losses: np.ndarray  # per epoch, from compile + fit without clipping: the reference
    grad_before: np.ndarray  # first step's gradient (w1, w2, b), unclipped
    grad_after: np.ndarray  # the same gradient after clipping

    @property
    def same_as_fit(self) -> bool:
        return bool(np.allclose(self.fit_losses, self.custom_losses, rtol=1e-5, atol=1e-6))

    @property
    def clipping_matters(self) -> bool:
        """Whether this clipping changed training, against the unclipped run."""
        return not bool(np.allclose(self.unclipped_losses, self.fit_losses, rtol=1e-5, atol=1e-6))


class ComparisonModel:
    """Dense(1) on 4 rows of 2 features, zero init, SGD, MSE, full batch: by fit and by a tape loop, both
    clipped the same way."""

    def __init__(self, epochs: int = 30, learning_rate: float = 0.05) -> None:
        self.epochs, self.learning_rate = epochs, learning_rate
        self.x = np.array([[1.0, 1.0], [2.0, -1.0], [3.0, 1.0], [4.0, -1.0]], np.float32)
        self.y = (self.x @ np.array([[2.0], [-1.0]], np.float32) + 1.0).astype(np.float32)
        self._cache: dict[tuple[str, float], tuple[np.ndarray, ...]] = {}
        self.fit_losses = self._fit("none", 0.0)  # the unclipped reference

    def _fit(self, mode: str, threshold: float) -> np.ndarray:
        """compile + fit, the optimizer clipping with its own option `mode=threshold`."""
        inputs = keras.Input((2,))
        model = keras.Model(inputs, keras.layers.Dense(1, kernel_initializer="zeros")(inputs))
        option = {} if mode == "none" else {mode: threshold}
        # run_eagerly: thirty one-batch epochs train faster eagerly than fit's graph takes to trace
        model.compile(optimizer=keras.optimizers.SGD(self.learning_rate, **option), loss="mse", jit_compile=False,
                      run_eagerly=True)
        # The full batch, repeated, one batch an epoch: the batches of fit(x, y, batch_size=4), but fit keeps
        # one iterator for all the epochs instead of making one per epoch, which is most of this fit's time.
        batches = tf.data.Dataset.from_tensors((self.x, self.y)).repeat()
        history = model.fit(batches, steps_per_epoch=1, epochs=self.epochs, verbose=0, shuffle=False)
        return _frozen(np.array(history.history["loss"]))

    def state(self, mode: str = "none", threshold: float = 5.0) -> ComparisonState:
        """Both loss curves and the first gradient for one clipping setting (computed once, then cached)."""
        if mode not in CLIP_MODES:
            raise ValueError(f"unknown clipping mode {mode!r}; choose from: {', '.join(CLIP_MODES)}")
        if threshold <= 0:
            raise ValueError(f"the clipping threshold must be positive, not {threshold}")
        key = _key(mode, threshold)
        if key not in self._cache:
            fitted = self.fit_losses if key[0] == "none" else self._fit(*key)
            self._cache[key] = (fitted, *self._custom(*key))
        fitted, losses, before, after = self._cache[key]
        return ComparisonState(mode, float(threshold), fitted, losses, self.fit_losses, before, after)

    def first_gradient(self, mode: str = "none", threshold: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
        """The first step's gradient (w1, w2, b) before and after clipping, without training anything."""
        if mode not in CLIP_MODES:
            raise ValueError(f"unknown clipping mode {mode!r}; choose from: {', '.join(CLIP_MODES)}")
        kernel, bias = tf.Variable(tf.zeros((2, 1))), tf.Variable(tf.zeros((1,)))
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.constant(self.y) - (tf.constant(self.x) @ kernel + bias)))
        grads = tape.gradient(loss, [kernel, bias])
        return _flat(grads), _flat(clip(grads, *_key(mode, threshold)))

    def _custom(self, mode: str, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The raw loop: loss under a tape, gradients, clipping, then the SGD update by hand."""
        kernel = tf.Variable(tf.zeros((2, 1)))
        bias = tf.Variable(tf.zeros((1,)))
        x, y = tf.constant(self.x), tf.constant(self.y)
        losses, first = [], None
        for _ in range(self.epochs):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(y - (x @ kernel + bias)))
            grads = tape.gradient(loss, [kernel, bias])
            clipped = clip(grads, mode, threshold)
            if first is None:
                first = (_flat(grads), _flat(clipped))
            kernel.assign_sub(self.learning_rate * clipped[0])
            bias.assign_sub(self.learning_rate * clipped[1])
            losses.append(float(loss))
        return _frozen(np.array(losses)), *first

    @property
    def cached(self) -> int:
        """How many clipping settings have been computed so far."""
        return len(self._cache)

    def has(self, mode: str, threshold: float) -> bool:
        """Whether this setting's runs have trained already, so that `state` only reads the cache."""
        return _key(mode, threshold) in self._cache


def _key(mode: str, threshold: float) -> tuple[str, float]:
    """The cache key of a setting: without clipping the threshold does not matter."""
    return mode, 0.0 if mode == "none" else float(threshold)


def _flat(grads: Sequence[tf.Tensor]) -> np.ndarray:
    return _frozen(np.concatenate([np.ravel(g.numpy()) for g in grads]))


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _readout(state: ComparisonState) -> str:
    before, after = (float(np.linalg.norm(g)) for g in (state.grad_before, state.grad_after))
    setting = "no clipping" if state.mode == "none" else f"{state.mode}={state.threshold:g}"
    option = "" if state.mode == "none" else f" with <code>{html.escape(setting)}</code>"
    verdict = (f"the custom loop gives the same losses as <code>fit</code>{option}" if state.same_as_fit else
               f"the custom loop differs from <code>fit</code>{option}")
    effect = ("" if state.mode == "none" else
              "; clipping changed training" if state.clipping_matters else "; clipping changed nothing here")
    return (f"<b>{html.escape(setting)}</b>: first gradient norm {before:.3f} → {after:.3f}; "
            f"final loss fit {state.fit_losses[-1]:.4f}, custom {state.custom_losses[-1]:.4f}, unclipped "
            f"{state.unclipped_losses[-1]:.4f}; {verdict}{effect}.")


def _alt(state: ComparisonState) -> str:
    setting = "no clipping" if state.mode == "none" else f"{state.mode}={state.threshold:g}"
    return (f"Left: the loss per epoch over {len(state.fit_losses)} epochs with {setting}, ending at "
            f"{state.fit_losses[-1]:.4f} with fit, {state.custom_losses[-1]:.4f} with the tape loop and "
            f"{state.unclipped_losses[-1]:.4f} with fit unclipped. Right: the first gradient (w1, w2, b), "
            f"{_vector(state.grad_before)} before clipping and {_vector(state.grad_after)} after.")


def _vector(values: np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


class ComparisonExplorer:
    """Dropdown of clipping modes, threshold slider, readout, and a two-panel plot; shows itself in a cell.

    A setting not seen yet trains the custom loop again (long: the busy cue shows); one seen before
    is read from the model's cache and only redrawn.
    """

    def __init__(self, mode: str = "none", threshold: float = 5.0, model: ComparisonModel | None = None,
                 ask: Any = None, truth: Any = None) -> None:
        import ipywidgets as widgets  # here, not at the top, so the model needs no widget stack

        self.model = model or ComparisonModel()
        if threshold not in THRESHOLDS:
            raise ValueError(f"threshold {threshold} is not on the slider; choose from: {THRESHOLDS}")
        self.model.state(mode, threshold)  # validates mode and warms the cache
        self.dropdown = widgets.Dropdown(options=list(CLIP_MODES), value=mode, description="clipping")
        self.slider = widgets.SelectionSlider(options=list(THRESHOLDS), value=threshold, description="threshold")
        self.busy = BusyCue([self.dropdown, self.slider])
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        view = widgets.VBox([widgets.HBox([self.dropdown, self.slider, self.busy.label]),
                             self.readout, self.image])
        self.widget, self.asking = ask_first(view, ask, truth)

        self.figure = agg_figure(figsize=(8.0, 3.0), dpi=72)
        self.figure.subplots_adjust(left=0.08, right=0.98, bottom=0.15, top=0.88, wspace=0.3)
        self._loss_axes, self._grad_axes = self.figure.subplots(1, 2)
        epochs = np.arange(1, self.model.epochs + 1)
        self._loss_axes.set_yscale("log")
        self._loss_axes.set_xlabel("epoch")
        self._loss_axes.set_title("loss per epoch")
        (self._reference_line,) = self._loss_axes.plot(epochs, self.model.fit_losses, ":", color="0.5",
                                                       label="fit, unclipped")
        (self._fit_line,) = self._loss_axes.plot(epochs, self.model.fit_losses, color="C0", linewidth=3,
                                                 alpha=0.5, label="fit, same clipping")
        (self._custom_line,) = self._loss_axes.plot(epochs, self.model.fit_losses, "--", color="C1",
                                                    label="custom loop")
        self._loss_axes.legend(loc="upper right")
        positions = np.arange(len(PARAMETERS))
        self._before_bars = self._grad_axes.bar(positions - 0.2, np.zeros(3), 0.4, color="0.6", label="before")
        self._after_bars = self._grad_axes.bar(positions + 0.2, np.zeros(3), 0.4, color="C1", label="after")
        self._grad_axes.set_xticks(positions, [f"dL/d{p}" for p in PARAMETERS])
        self._grad_axes.axhline(0.0, color="0.3", linewidth=0.8)
        self._grad_axes.set_title("first step's gradient")
        self._grad_axes.legend(loc="lower right")

        self.dropdown.observe(lambda _change: self._changed(), names="value")
        self.slider.observe(lambda _change: self._changed(), names="value")
        self.update()

    def _changed(self) -> None:
        """A control moved: redraw, under the busy cue if the new setting has to train first."""
        mode, threshold = self.dropdown.value, self.slider.value
        setting = "no clipping" if mode == "none" else f"{mode}={threshold:g}"
        with self.busy.working(f"training fit and the custom loop with {setting}",
                               long=not self.model.has(mode, threshold)):
            self.update()

    def update(self) -> ComparisonState:
        """Redraw from the controls' current values: the one path every control change takes."""
        state = self.model.state(self.dropdown.value, self.slider.value)
        self.busy.set_disabled(self.slider, state.mode == "none")
        self._fit_line.set_ydata(state.fit_losses)
        self._custom_line.set_ydata(state.custom_losses)
        curves = (state.fit_losses, state.custom_losses, state.unclipped_losses)
        low, high = min(c.min() for c in curves), max(c.max() for c in curves)
        self._loss_axes.set_ylim(low / 2, high * 2)
        for bars, values in ((self._before_bars, state.grad_before), (self._after_bars, state.grad_after)):
            for bar, value in zip(bars, values):
                bar.set_height(value)
        extent = float(np.abs(state.grad_before).max()) * 1.15
        self._grad_axes.set_ylim(-extent, extent)
        self.readout.value = _readout(state)
        show(self.image, self.figure, _alt(state))
        return state

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        """Display as the widget, so the explorer can be the last expression of a cell."""
        return self.widget._repr_mimebundle_(**kwargs)
