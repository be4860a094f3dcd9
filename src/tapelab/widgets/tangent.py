"""The tangent-line explorer of notebook 01: pick a function and an x, see the tape's slope.

`TangentModel` does the maths with TensorFlow and knows nothing about widgets or plots;
`TangentExplorer` draws it, importing ipywidgets and matplotlib only when one is built.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from tapelab.widgets.ask import ask_first
from tapelab.widgets.controls import function_controls
from tapelab.widgets.render import agg_figure, show

__all__ = ["TangentExplorer", "TangentModel", "TangentState"]


@dataclass(frozen=True)
class _Function:
    """A scalar function written with TensorFlow ops, and the x values where it has a kink."""

    fn: Callable[[tf.Tensor], tf.Tensor]
    kinks: tuple[float, ...] = ()


_CATALOGUE: dict[str, _Function] = {
    "x^2": _Function(lambda x: x * x),
    "sin(x)": _Function(tf.sin),
    "x^3 - 3x": _Function(lambda x: x * x * x - 3.0 * x),
    "|x|": _Function(tf.abs, kinks=(0.0,)),
    "relu(x)": _Function(tf.nn.relu, kinks=(0.0,)),
    "softplus(x)": _Function(tf.nn.softplus),
}


@dataclass(frozen=True)
class TangentState:
    """What the explorer shows for one (function, x): the point, the tape's slope, the tangent."""

    function: str
    x: float  # the float32 value the tape actually saw
    y: float
    slope: float
    line_x: tuple[float, float]  # the tangent's endpoints, at the edges of the plotted domain
    line_y: tuple[float, float]
    note: str = ""  # set only at a kink, where no derivative exists yet the tape returns a value


class TangentModel:
    """The explorer's maths: f(x) and the tape's df/dx on a float32 tf.Variable, plus curves."""

    def __init__(self, domain: tuple[float, float] = (-3.0, 3.0), samples: int = 241) -> None:
        self.domain = domain
        self.samples = samples
        self._x = tf.Variable(0.0, dtype=tf.float32, name="x")  # reused: one variable, many x
        self._curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def names(self) -> list[str]:
        """The catalogue's function names, in display order."""
        return list(_CATALOGUE)

    def at(self, name: str, x: float) -> TangentState:
        """f, the tape's slope and the tangent line at `x`, exactly as tf.GradientTape reports."""
        function = self._lookup(name)
        self._x.assign(x)
        with tf.GradientTape() as tape:
            y = function.fn(self._x)
        slope = float(tape.gradient(y, self._x))
        x, y = float(self._x.numpy()), float(y)
        lo, hi = self.domain
        note = ""
        if x in function.kinks:
            note = (f"x = {x:g} is a kink of {name}: no derivative exists there, "
                    f"so the tape picks one value ({slope:g}) by convention.")
        return TangentState(name, x, y, slope, (lo, hi),
                            (y + slope * (lo - x), y + slope * (hi - x)), note)

    def curve(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Samples (xs, ys) of `name` over the domain; computed once, then shared read-only."""
        if name not in self._curves:
            lo, hi = (tf.constant(end, tf.float32) for end in self.domain)
            xs = tf.linspace(lo, hi, self.samples)
            arrays = (xs.numpy(), self._lookup(name).fn(xs).numpy())
            for array in arrays:
                array.flags.writeable = False
            self._curves[name] = arrays
        return self._curves[name]

    def _lookup(self, name: str) -> _Function:
        """The catalogue entry for `name`, or a ValueError that lists the valid names."""
        if name not in _CATALOGUE:
            raise ValueError(f"unknown function {name!r}; choose from: {', '.join(_CATALOGUE)}")
        return _CATALOGUE[name]


def _snap(value: float) -> float:
    """A slider value without float noise (1e-17 for 0) or -0.0, so x = 0 hits a kink exactly."""
    return round(value, 6) + 0.0  # adding 0.0 turns -0.0 into 0.0


def _readout(state: TangentState) -> str:
    """The HTML line under the controls: f(x), the tape's slope, and the note at a kink."""
    text = (f"<b>{html.escape(state.function)}</b> at x = {state.x:.2f}: "
            f"f(x) = {state.y:.4f}, slope from the tape = {state.slope:.4f}")
    if state.note:
        text += f"<br><i>{html.escape(state.note)}</i>"
    return text


class TangentExplorer:
    """Slider for x, dropdown of functions, readout and plot; shows itself in a notebook cell."""

    def __init__(self, functions: str | Sequence[str] | None = None, x: float = 1.0, ask: Any = None,
                 truth: Any = None) -> None:
        import ipywidgets as widgets  # here, not at the top, so the model needs no widget stack

        self.model = TangentModel()
        self.dropdown, self.slider = function_controls(self.model.names, functions, x, self.model.domain,
                                                       self.model.curve)
        lo, hi = self.model.domain
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        view = widgets.VBox([widgets.HBox([self.dropdown, self.slider]),
                             self.readout, self.image])
        self.widget, self.asking = ask_first(view, ask, truth)

        self.figure = agg_figure(figsize=(5.5, 3.4), dpi=100)
        self.figure.subplots_adjust(left=0.1, right=0.97, bottom=0.1, top=0.9)
        self._axes = self.figure.add_subplot()
        self._axes.set_xlim(lo, hi)
        self._axes.axhline(0.0, color="0.8", linewidth=0.8)
        self._axes.axvline(0.0, color="0.8", linewidth=0.8)
        (self._curve,) = self._axes.plot([], [], color="C0", linewidth=2, label="curve")
        (self._tangent,) = self._axes.plot([], [], "--", color="C1", label="tangent")
        (self._point,) = self._axes.plot([], [], "o", color="black", label="point")

        self.dropdown.observe(lambda _change: self.update(), names="value")
        self.slider.observe(lambda _change: self.update(), names="value")
        self.update()

    def update(self) -> TangentState:
        """Redraw from the controls' current values: the one path every control change takes."""
        name = self.dropdown.value
        state = self.model.at(name, _snap(self.slider.value))
        xs, ys = self.model.curve(name)
        low, high = float(ys.min()), float(ys.max())
        pad = 0.1 * (high - low)
        self._axes.set_ylim(low - pad, high + pad)
        self._axes.set_title(name)
        self._curve.set_data(xs, ys)
        self._tangent.set_data(state.line_x, state.line_y)
        self._point.set_data([state.x], [state.y])
        self.readout.value = _readout(state)
        lo, hi = self.model.domain
        show(self.image, self.figure, f"Plot of {name} for x from {lo:g} to {hi:g}, with its tangent at x = "
             f"{state.x:.2f}, where f(x) = {state.y:.4f} and the slope from the tape is {state.slope:.4f}.")
        return state

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        """Display as the widget, so the explorer can be the last expression of a cell."""
        return self.widget._repr_mimebundle_(**kwargs)
