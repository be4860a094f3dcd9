"""The training-step explorer of notebook 02: step a custom loop and watch the loss and gradients.

`TrainingModel` runs the loop (a tape, `tape.gradient`, `optimizer.apply`) on a Keras Dense layer
and knows nothing about widgets or plots; `TrainingExplorer` draws it, importing ipywidgets and
matplotlib only when one is built.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Sequence

import keras
import numpy as np
import tensorflow as tf

from tapelab.widgets.ask import ask_first
from tapelab.widgets.controls import BusyCue
from tapelab.widgets.render import agg_figure, show

__all__ = ["TrainingExplorer", "TrainingModel", "TrainingState", "LEARNING_RATES"]

# (label, rate): the worked example is stable below 2 / (largest Hessian eigenvalue), about 0.12.
LEARNING_RATES: tuple[tuple[str, float], ...] = (
    ("0.01", 0.01),
    ("0.03", 0.03),
    ("0.1 (the worked example)", 0.1),
    ("0.15 (too high)", 0.15),
    ("0.5 (far too high)", 0.5),
)


@dataclass(frozen=True)
class TrainingState:
    """What the explorer shows after some steps: history, latest gradients, variables, health."""

    step: int
    learning_rate: float
    losses: tuple[float, ...]  # losses[i] is the loss step i+1 measured, before its update
    names: tuple[str, ...]  # short variable paths, e.g. "dense/kernel"
    grad_norms: tuple[float, ...]  # the latest step's gradient norm per variable (empty before step 1)
    values: tuple[float, ...]  # each variable's current value (first element of each)
    stable_limit: float  # SGD diverges on this problem for rates above this
    diverged: bool  # the loss or a variable stopped being finite
    growing: bool  # the loss went up over the last steps

    @property
    def last_loss(self) -> float | None:
        return self.losses[-1] if self.losses else None


class TrainingModel:
    """A custom training loop for Dense(1) on (x, y) with MSE and SGD, stepped on demand."""

    def __init__(self, x: Any = None, y: Any = None, learning_rate: float = 0.1) -> None:
        if x is None:
            x = np.array([[1.0], [2.0], [3.0], [4.0]])
            y = 2.0 * x + 1.0
        self.x = tf.constant(np.asarray(x, np.float32).reshape(len(x), -1))
        self.y = tf.constant(np.asarray(y, np.float32).reshape(len(x), -1))
        self.model = keras.Sequential([keras.Input((self.x.shape[1],)),
                                       keras.layers.Dense(self.y.shape[1], kernel_initializer="zeros")])
        self.loss_fn = keras.losses.MeanSquaredError()
        self.names = tuple(_short_path(v) for v in self.model.trainable_variables)
        self.stable_limit = _sgd_stable_limit(self.x.numpy())
        self.learning_rate = float(learning_rate)
        self.reset()

    def reset(self) -> TrainingState:
        """Zero the variables and start a fresh optimizer and history."""
        for v in self.model.trainable_variables:
            v.assign(tf.zeros(v.shape, v.dtype))
        self.optimizer = keras.optimizers.SGD(learning_rate=self.learning_rate)
        self._losses: list[float] = []
        self._grad_norms: tuple[float, ...] = ()
        self._diverged = False
        return self.state()

    def set_learning_rate(self, learning_rate: float) -> TrainingState:
        """Use `learning_rate` from the next step on; the history so far is kept."""
        if not learning_rate > 0:
            raise ValueError(f"the learning rate must be positive, got {learning_rate}")
        self.learning_rate = float(learning_rate)
        self.optimizer.learning_rate.assign(self.learning_rate)
        return self.state()

    def step(self, n: int = 1) -> TrainingState:
        """Run `n` training steps (fewer if the loop diverges) and return the new state."""
        if n < 1:
            raise ValueError(f"the number of steps must be at least 1, got {n}")
        variables = self.model.trainable_variables
        for _ in range(n):
            if self._diverged:
                break
            with tf.GradientTape() as tape:
                preds = self.model(self.x, training=True)
                loss = self.loss_fn(self.y, preds)
            grads = tape.gradient(loss, variables)
            self._losses.append(float(loss))
            self._grad_norms = tuple(float(tf.norm(g)) for g in grads)
            if not (math.isfinite(self._losses[-1]) and all(map(math.isfinite, self._grad_norms))):
                self._diverged = True
                break
            self.optimizer.apply(grads, variables)
            if not all(bool(tf.reduce_all(tf.math.is_finite(v))) for v in variables):
                self._diverged = True
        return self.state()

    def state(self) -> TrainingState:
        losses = tuple(self._losses)
        recent = [l for l in losses[-3:] if math.isfinite(l)]
        growing = len(recent) >= 2 and recent[-1] > recent[0] and recent[-1] > losses[0] * 1e-3
        values = tuple(float(v.numpy().reshape(-1)[0]) for v in self.model.trainable_variables)
        return TrainingState(len(losses), self.learning_rate, losses, self.names, self._grad_norms,
                             values, self.stable_limit, self._diverged, growing)


def _short_path(variable) -> str:
    """`dense/kernel` for `sequential_3/dense_7/kernel`."""
    layer, name = variable.path.split("/")[-2:]
    return f"{layer.rstrip('_0123456789')}/{name}"


def _sgd_stable_limit(x: np.ndarray) -> float:
    """2 / the largest eigenvalue of the MSE Hessian of a linear model on `x` (with a bias column)."""
    a = np.hstack([x.astype(np.float64), np.ones((len(x), 1))])
    hessian = 2.0 * a.T @ a / len(x)
    return float(2.0 / np.linalg.eigvalsh(hessian).max())


def readout(state: TrainingState) -> str:
    """The HTML line under the controls: step, loss, variables, and what the loss is doing."""
    if not state.losses:
        text = (f"Step 0, learning rate {state.learning_rate:g}. Press a step button to train. "
                f"On this problem SGD is stable below a rate of about {state.stable_limit:.3f}.")
        return html.escape(text)
    values = ", ".join(f"{n} = {v:.4g}" for n, v in zip(state.names, state.values))
    text = (f"<b>Step {state.step}</b>, learning rate {state.learning_rate:g}: "
            f"loss {state.last_loss:.4g}; {html.escape(values)}")
    if state.diverged:
        text += ("<br><b style='color:#b00020'>Diverged:</b> the loss, its gradients or the variables are no longer finite "
                 f"(inf or nan). Each step overshot the minimum by more than the last, because the rate "
                 f"{state.learning_rate:g} is above about {state.stable_limit:.3f}. Press Reset and pick a "
                 "smaller rate.")
    elif state.growing:
        text += ("<br><b style='color:#b00020'>The loss is growing:</b> the rate "
                 f"{state.learning_rate:g} is above about {state.stable_limit:.3f}, so each step overshoots; "
                 "keep stepping and it will overflow.")
    return text


def _alt(state: TrainingState) -> str:
    if not state.losses:
        return (f"Empty plots of the loss per step and of the gradient norms: step 0 at learning rate "
                f"{state.learning_rate:g}, no step taken yet.")
    norms = ", ".join(f"{n} {g:.4g}" for n, g in zip(state.names, state.grad_norms))
    trend = " The loss diverged." if state.diverged else " The loss is growing." if state.growing else ""
    return (f"Left: the loss over {state.step} step(s) at learning rate {state.learning_rate:g}, from "
            f"{state.losses[0]:.4g} to {state.losses[-1]:.4g}. Right: the latest gradient norm per variable, "
            f"{norms}.{trend}")


class TrainingExplorer:
    """Step buttons, a learning-rate menu, a reset button, a readout, the loss curve and gradient bars.

    Every control runs TensorFlow before it redraws, so each action shows the busy cue.
    """

    def __init__(self, learning_rate: float = 0.1, rates: Sequence[tuple[str, float]] = LEARNING_RATES,
                 steps: Sequence[int] = (1, 10, 25), ask: Any = None, truth: Any = None) -> None:
        import ipywidgets as widgets  # here, not at the top, so the model needs no widget stack

        rates = list(rates)
        if learning_rate not in [r for _, r in rates]:
            raise ValueError(f"learning rate {learning_rate} is not one of the menu's: "
                             f"{', '.join(str(r) for _, r in rates)}")
        self.model = TrainingModel(learning_rate=learning_rate)
        self.rate = widgets.Dropdown(options=rates, value=learning_rate, description="rate")
        self.step_buttons = [widgets.Button(description=f"Step ×{n}" if n > 1 else "Step") for n in steps]
        self.reset_button = widgets.Button(description="Reset", button_style="warning")
        self.busy = BusyCue([self.rate, *self.step_buttons, self.reset_button])
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        view = widgets.VBox([widgets.HBox([self.rate, *self.step_buttons, self.reset_button,
                                           self.busy.label]),
                             self.readout, self.image])
        self.widget, self.asking = ask_first(view, ask, truth)

        self.figure = agg_figure(figsize=(7.6, 3.0), dpi=90)
        self.figure.subplots_adjust(left=0.08, right=0.98, bottom=0.15, top=0.88, wspace=0.3)
        self._loss_axes, self._grad_axes = self.figure.subplots(1, 2, width_ratios=(2, 1))
        self._loss_axes.set_yscale("log")
        self._loss_axes.set_xlabel("step")
        self._loss_axes.set_title("loss (log scale)")
        (self._curve,) = self._loss_axes.plot([], [], "o-", color="C0", markersize=3, label="loss")
        self._grad_axes.set_yscale("log")
        self._grad_axes.set_title("gradient norm, last step")
        positions = np.arange(len(self.model.names))
        self._bars = self._grad_axes.bar(positions, np.ones(len(positions)), color=["C1", "C2", "C3", "C4"]
                                         [: len(positions)], label="gradient norms")
        self._grad_axes.set_xticks(positions, self.model.names)
        from matplotlib.ticker import NullLocator  # here: importers of the model need no matplotlib

        for axes in (self._loss_axes, self._grad_axes):
            axes.yaxis.set_minor_locator(NullLocator())  # log-scale minor ticks cost a third of a redraw

        self._alarm = self._loss_axes.text(0.98, 0.95, "", transform=self._loss_axes.transAxes, ha="right",
                                           va="top", color="#b00020")
        self._inf_labels = [self._grad_axes.text(p, 0.5, "", transform=self._grad_axes.get_xaxis_transform(),
                                                 ha="center", color="#b00020") for p in positions]

        for n, button in zip(steps, self.step_buttons):
            button.on_click(lambda _button, n=n: self.step(n))
        self.reset_button.on_click(lambda _button: self.reset())
        self.rate.observe(lambda change: self._set_rate(change["new"]), names="value")
        self.update()

    def step(self, n: int = 1) -> TrainingState:
        """Train `n` more steps, then redraw."""
        with self.busy.working(f"training {n} step{'s' if n > 1 else ''}"):
            self.model.step(n)
            return self.update()

    def reset(self) -> TrainingState:
        """Back to step 0 with zero variables, keeping the chosen rate."""
        with self.busy.working("resetting"):
            self.model.reset()
            return self.update()

    def _set_rate(self, rate: float) -> None:
        with self.busy.working(f"switching to rate {rate:g}"):
            self.model.set_learning_rate(rate)
            self.update()

    def update(self) -> TrainingState:
        """Redraw from the model's state: the one path every control change takes."""
        state = self.model.state()
        steps = np.arange(1, state.step + 1)
        losses = np.array(state.losses, dtype=np.float64)
        finite = np.isfinite(losses) & (losses > 0)
        self._curve.set_data(steps[finite], losses[finite])
        self._loss_axes.set_xlim(0.5, max(10, state.step) + 0.5)
        if finite.any():
            low, high = losses[finite].min(), losses[finite].max()
            self._loss_axes.set_ylim(low / 2, high * 2)
        norms = np.array(state.grad_norms or [np.nan] * len(state.names), dtype=np.float64)
        shown = np.where(np.isfinite(norms) & (norms > 0), norms, np.nan)
        for bar, label, norm, height in zip(self._bars, self._inf_labels, norms, shown):
            bar.set_height(height if np.isfinite(height) else 0.0)
            bar.set_visible(bool(np.isfinite(height)))
            label.set_text("not finite" if state.grad_norms and not np.isfinite(norm) else "")
        if np.isfinite(shown).any():
            self._grad_axes.set_ylim(np.nanmin(shown) / 3, np.nanmax(shown) * 3)
        colour = "#b00020" if state.diverged or state.growing else "black"
        self._loss_axes.title.set_color(colour)
        self._alarm.set_text("diverged" if state.diverged else "growing" if state.growing else "")
        self.readout.value = readout(state)
        show(self.image, self.figure, _alt(state))
        return state

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        """Display as the widget, so the explorer can be the last expression of a cell."""
        return self.widget._repr_mimebundle_(**kwargs)
