"""The input-gradient explorer of notebook 03: a function of two inputs, its gradient field, and
what the tape returns at one point with and without `tape.watch` on the (constant) input.

`SaliencyModel` does the maths with TensorFlow and knows nothing about widgets or plots;
`SaliencyExplorer` draws it, importing ipywidgets only when one is built.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from tapelab.widgets.ask import ask_first
from tapelab.widgets.controls import BusyCue
from tapelab.widgets.render import agg_figure, show

__all__ = ["SaliencyExplorer", "SaliencyModel", "SaliencyState", "Background"]

# A fixed 2 -> 3 -> 1 tanh network: weights typed in once, so the surface is the same everywhere.
_W1 = tf.constant([[1.5, 0.5, -1.2], [-1.0, 2.0, 0.8]], tf.float32)
_B1 = tf.constant([0.2, -0.5, 0.3], tf.float32)
_W2 = tf.constant([[1.0], [-0.8], [1.2]], tf.float32)


def _tanh_net(x: tf.Tensor) -> tf.Tensor:
    return tf.squeeze(tf.tanh(x @ _W1 + _B1) @ _W2, axis=-1)


# Each function maps points of shape (n, 2) to values of shape (n,), with TensorFlow ops only.
_CATALOGUE: dict[str, Callable[[tf.Tensor], tf.Tensor]] = {
    "bowl: x1² + x2²": lambda x: tf.reduce_sum(x * x, axis=-1),
    "saddle: x1² − x2²": lambda x: x[:, 0] ** 2 - x[:, 1] ** 2,
    "tanh network": _tanh_net,
}


@dataclass(frozen=True)
class SaliencyState:
    """What the tape reports at one point: f, and the input gradient or None if x was not watched."""

    function: str
    x1: float
    x2: float
    value: float
    gradient: tuple[float, float] | None
    watched: bool

    @property
    def norm(self) -> float | None:
        """The length of the gradient, or None when there is no gradient."""
        return None if self.gradient is None else float(np.hypot(*self.gradient))


@dataclass(frozen=True)
class Background:
    """What does not move with the point: f on a fine grid, and gradient arrows on a coarse one."""

    extent: tuple[float, float, float, float]
    values: np.ndarray  # (fine, fine), rows along x2
    arrow_x: np.ndarray  # (coarse * coarse,) positions of the arrows
    arrow_y: np.ndarray
    arrow_u: np.ndarray  # gradient components at those positions
    arrow_v: np.ndarray


def _gradient_on(fn: Callable[[tf.Tensor], tf.Tensor], points: np.ndarray, watch: bool = True):
    """f at each point and the tape's gradient with respect to the points (None if unwatched)."""
    x = tf.constant(points, tf.float32)
    with tf.GradientTape() as tape:
        if watch:
            tape.watch(x)
        y = fn(x)
    return y, tape.gradient(y, x)


class SaliencyModel:
    """The explorer's maths: the tape's input gradient at a point, and each function's background."""

    def __init__(self, domain: tuple[float, float] = (-2.0, 2.0), fine: int = 81, coarse: int = 11) -> None:
        self.domain, self.fine, self.coarse = domain, fine, coarse
        self._backgrounds: dict[str, Background] = {}

    @property
    def names(self) -> list[str]:
        """The catalogue's function names, in display order."""
        return list(_CATALOGUE)

    def at(self, name: str, x1: float, x2: float, watch: bool = True) -> SaliencyState:
        """f(x1, x2) and df/dx from a tape on a constant input, watched only if `watch` is true."""
        y, grad = _gradient_on(self._lookup(name), np.array([[x1, x2]]), watch)
        gradient = None if grad is None else (float(grad[0, 0]), float(grad[0, 1]))
        return SaliencyState(name, float(x1), float(x2), float(y[0]), gradient, watch)

    def background(self, name: str) -> Background:
        """Heat map values and the gradient field of `name`; computed once, then shared read-only."""
        if name not in self._backgrounds:
            fn = self._lookup(name)
            lo, hi = self.domain
            fine = np.linspace(lo, hi, self.fine)
            g1, g2 = np.meshgrid(fine, fine)  # rows along x2, as imshow wants
            values = fn(tf.constant(np.stack([g1.ravel(), g2.ravel()], axis=1), tf.float32)).numpy()
            coarse = np.linspace(lo, hi, self.coarse)
            c1, c2 = np.meshgrid(coarse, coarse)
            points = np.stack([c1.ravel(), c2.ravel()], axis=1)
            _, grads = _gradient_on(fn, points)
            grads = grads.numpy()
            arrays = (values.reshape(g1.shape), points[:, 0], points[:, 1], grads[:, 0], grads[:, 1])
            for array in arrays:
                array.flags.writeable = False
            self._backgrounds[name] = Background((lo, hi, lo, hi), *arrays)
        return self._backgrounds[name]

    def arrow_scale(self, name: str) -> float:
        """Gradient units per unit of x: the longest arrow of the field spans 0.9 of a grid step."""
        bg = self.background(name)
        longest = float(np.max(np.hypot(bg.arrow_u, bg.arrow_v)))
        step = (self.domain[1] - self.domain[0]) / (self.coarse - 1)
        return longest / (0.9 * step) if longest > 0 else 1.0

    def _lookup(self, name: str) -> Callable[[tf.Tensor], tf.Tensor]:
        if name not in _CATALOGUE:
            raise ValueError(f"unknown function {name!r}; choose from: {', '.join(_CATALOGUE)}")
        return _CATALOGUE[name]


def _readout(state: SaliencyState) -> str:
    """The HTML line under the controls: f, the input gradient, or why there is none."""
    head = (f"<b>{html.escape(state.function)}</b> at x = ({state.x1:.2f}, {state.x2:.2f}): "
            f"f = {state.value:.4f}, ")
    if state.gradient is None:
        return head + ("gradient = <b>None</b>. <i>The input is a constant and <code>tape.watch(x)</code> was "
                       "not called, so the tape recorded nothing to differentiate.</i>")
    g1, g2 = state.gradient
    return head + f"gradient = [{g1:.4f}, {g2:.4f}], length {state.norm:.4f}"


class SaliencyExplorer:
    """Function menu, sliders for x1 and x2, a 'watch the input' box, readout and plot.

    A new function redraws the whole background (heat map, contours, arrow field; computed on
    first use), so the menu shows the busy cue; the sliders and the box only move the point.
    """

    def __init__(self, function: str | None = None, x1: float = 1.0, x2: float = 0.5, watch: bool = True,
                 ask: Any = None, truth: Any = None) -> None:
        import ipywidgets as widgets  # here, not at the top, so the model needs no widget stack

        self.model = SaliencyModel()
        name = function or self.model.names[0]
        self.model.background(name)  # validates the name before any control exists
        lo, hi = self.model.domain
        for label, value in (("x1", x1), ("x2", x2)):
            if not lo <= value <= hi:
                raise ValueError(f"{label} = {value} is outside the plotted domain [{lo}, {hi}]")

        self.dropdown = widgets.Dropdown(options=self.model.names, value=name, description="f")
        slider = dict(min=lo, max=hi, step=0.05, readout_format=".2f", continuous_update=True)
        self.x1 = widgets.FloatSlider(value=x1, description="x1", **slider)
        self.x2 = widgets.FloatSlider(value=x2, description="x2", **slider)
        self.watch = widgets.Checkbox(value=watch, description="watch the input (tape.watch(x))", indent=False,
                                      layout=widgets.Layout(width="auto"))
        self.busy = BusyCue([self.dropdown, self.x1, self.x2, self.watch])
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        view = widgets.VBox([widgets.HBox([self.dropdown, self.watch, self.busy.label]),
                             widgets.HBox([self.x1, self.x2]), self.readout, self.image])
        self.widget, self.asking = ask_first(view, ask, truth)

        self.figure = agg_figure(figsize=(5.2, 4.6), dpi=90)
        self.figure.subplots_adjust(left=0.11, right=0.97, bottom=0.1, top=0.92)
        self._axes = ax = self.figure.add_subplot()
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        self._heat = ax.imshow(np.zeros((2, 2)), origin="lower", extent=(lo, hi, lo, hi), cmap="viridis",
                               alpha=0.85, interpolation="bilinear")
        self._contours = None
        arrows = dict(angles="xy", scale_units="xy", scale=1.0)
        bg = self.model.background(name)  # the arrow positions are the same grid for every function
        self._field = ax.quiver(bg.arrow_x, bg.arrow_y, np.zeros_like(bg.arrow_x), np.zeros_like(bg.arrow_y),
                                color="white", width=0.004, **arrows)
        self._arrow = ax.quiver([0.0], [0.0], [0.0], [0.0], color="#d62728", width=0.012, zorder=4, **arrows)
        (self._point,) = ax.plot([], [], "o", color="#d62728", markeredgecolor="white", zorder=5)
        self._drawn: str | None = None

        self.dropdown.observe(lambda change: self._function_changed(change["new"]), names="value")
        for control in (self.x1, self.x2, self.watch):
            control.observe(lambda _change: self.update(), names="value")
        self.update()

    def _function_changed(self, name: str) -> None:
        with self.busy.working(f"drawing the gradient field of {name}"):
            self.update()

    def _draw_background(self, name: str) -> None:
        """Swap in `name`'s heat map, contours and arrow field (only when the function changes)."""
        bg = self.model.background(name)
        self._heat.set_data(bg.values)
        self._heat.set_clim(float(bg.values.min()), float(bg.values.max()))
        if self._contours is not None:
            self._contours.remove()
        lo, hi = self.model.domain
        grid = np.linspace(lo, hi, self.model.fine)
        self._contours = self._axes.contour(grid, grid, bg.values, levels=10, colors="white",
                                            linewidths=0.6, alpha=0.6)
        scale = self.model.arrow_scale(name)
        self._field.set_UVC(bg.arrow_u / scale, bg.arrow_v / scale)
        self._axes.set_title(f"{name}: the arrows are the input gradient")
        self._drawn = name

    def update(self) -> SaliencyState:
        """Redraw from the controls' current values: the one path every control change takes."""
        name = self.dropdown.value
        if name != self._drawn:
            self._draw_background(name)
        state = self.model.at(name, round(self.x1.value, 6), round(self.x2.value, 6), watch=self.watch.value)
        self._point.set_data([state.x1], [state.x2])
        self._arrow.set_offsets([[state.x1, state.x2]])
        if state.gradient is None:
            self._arrow.set_visible(False)
        else:
            scale = self.model.arrow_scale(name)
            self._arrow.set_UVC([state.gradient[0] / scale], [state.gradient[1] / scale])
            self._arrow.set_visible(True)
        self.readout.value = _readout(state)
        arrow = ("no arrow: the input was not watched, so its gradient is None" if state.gradient is None else
                 "the input gradient [{:.4f}, {:.4f}] as an arrow".format(*state.gradient))
        show(self.image, self.figure, f"Heat map and contours of {name} over x1 and x2, with the point "
             f"({state.x1:.2f}, {state.x2:.2f}), where f = {state.value:.4f}, and {arrow}.")
        return state

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        """Display as the widget, so the explorer can be the last expression of a cell."""
        return self.widget._repr_mimebundle_(**kwargs)
