"""Widgets of notebook 04: f, f' and f'' from nested tapes, and the memory a persistent tape holds.

`HigherOrderModel` and `TapeMemoryModel` do the work with TensorFlow and know nothing about widgets;
`HigherOrderExplorer` and `TapeMemoryView` draw them, importing ipywidgets only when one is built.
"""
from __future__ import annotations

import html
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from tapelab.widgets.ask import ask_first
from tapelab.widgets.controls import function_controls
from tapelab.widgets.render import agg_figure, show

__all__ = ["HigherOrderExplorer", "HigherOrderModel", "HigherOrderState", "TapeMemoryModel", "TapeMemoryView"]

_CATALOGUE: dict[str, Callable[[tf.Tensor], tf.Tensor]] = {
    "x^3 - 3x": lambda x: x * x * x - 3.0 * x,
    "sin(x)": tf.sin,
    "exp(-x^2)": lambda x: tf.exp(-x * x),
    "tanh(x)": tf.tanh,
    "x^4/4 - x^2": lambda x: 0.25 * x**4 - x * x,
    "softplus(x)": tf.nn.softplus,
}


def _derivatives(fn: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """f, f' and f'' at every element of `x`, from two nested tapes (elementwise fn: sums are safe)."""
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        dy = inner.gradient(y, x)  # inside the outer block, so the outer tape records it
    return y, dy, outer.gradient(dy, x)


@dataclass(frozen=True)
class HigherOrderState:
    """What the explorer shows at one (function, x): the value and the two derivatives."""

    function: str
    x: float  # the float32 value the tapes actually saw
    f: float
    df: float
    d2f: float


class HigherOrderModel:
    """f, f' and f'' on a grid (computed once per function, vectorised) and at single points."""

    def __init__(self, domain: tuple[float, float] = (-2.5, 2.5), samples: int = 201) -> None:
        self.domain = domain
        self.samples = samples
        self._curves: dict[str, tuple[np.ndarray, ...]] = {}

    @property
    def names(self) -> list[str]:
        return list(_CATALOGUE)

    def curves(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(xs, f, f', f'') over the domain: one pass of nested tapes, cached as read-only arrays."""
        if name not in self._curves:
            lo, hi = (tf.constant(end, tf.float32) for end in self.domain)
            xs = tf.linspace(lo, hi, self.samples)
            arrays = (xs.numpy(), *(t.numpy() for t in _derivatives(self._lookup(name), xs)))
            for array in arrays:
                array.flags.writeable = False
            self._curves[name] = arrays
        return self._curves[name]  # type: ignore[return-value]

    def at(self, name: str, x: float) -> HigherOrderState:
        """f, f' and f'' at `x`, exactly as the nested tapes report them."""
        point = tf.constant(x, tf.float32)
        y, dy, d2y = _derivatives(self._lookup(name), point)
        return HigherOrderState(name, float(point), float(y), float(dy), float(d2y))

    def _lookup(self, name: str) -> Callable[[tf.Tensor], tf.Tensor]:
        if name not in _CATALOGUE:
            raise ValueError(f"unknown function {name!r}; choose from: {', '.join(_CATALOGUE)}")
        return _CATALOGUE[name]


def _readout(state: HigherOrderState) -> str:
    return (f"<b>{html.escape(state.function)}</b> at x = {state.x:.2f}: "
            f"f = {state.f:.4f}, f′ = {state.df:.4f}, f″ = {state.d2f:.4f}")


class HigherOrderExplorer:
    """Dropdown of functions and a slider for x; plots f, f' and f'' with the point marked on each."""

    def __init__(self, functions: str | Sequence[str] | None = None, x: float = 0.5, ask: Any = None,
                 truth: Any = None) -> None:
        import ipywidgets as widgets  # here, so the model needs no widget stack

        self.model = HigherOrderModel()
        self.dropdown, self.slider = function_controls(self.model.names, functions, x, self.model.domain,
                                                       self.model.curves)
        lo, hi = self.model.domain
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        view = widgets.VBox([widgets.HBox([self.dropdown, self.slider]), self.readout, self.image])
        self.widget, self.asking = ask_first(view, ask, truth)

        self.figure = agg_figure(figsize=(5.8, 3.6), dpi=100)
        self.figure.subplots_adjust(left=0.1, right=0.97, bottom=0.1, top=0.9)
        self._axes = self.figure.add_subplot()
        self._axes.set_xlim(lo, hi)
        self._axes.axhline(0.0, color="0.8", linewidth=0.8)
        self._lines = [self._axes.plot([], [], color=c, linewidth=w, label=label)[0]
                       for c, w, label in (("C0", 2.2, "f"), ("C1", 1.6, "f′"), ("C2", 1.6, "f″"))]
        self._points = [self._axes.plot([], [], "o", color=c)[0] for c in ("C0", "C1", "C2")]
        self._marker = self._axes.axvline(x, color="0.5", linestyle=":", linewidth=1)
        self._axes.legend(loc="upper left", fontsize=8)

        self.dropdown.observe(lambda _change: self.update(), names="value")
        self.slider.observe(lambda _change: self.update(), names="value")
        self.update()

    def update(self) -> HigherOrderState:
        """Redraw from the controls' current values: the one path every control change takes."""
        name = self.dropdown.value
        state = self.model.at(name, round(self.slider.value, 6) + 0.0)
        xs, *ys = self.model.curves(name)
        low = min(float(y.min()) for y in ys)
        high = max(float(y.max()) for y in ys)
        pad = 0.08 * (high - low)
        self._axes.set_ylim(low - pad, high + pad)
        self._axes.set_title(name)
        for line, point, y, value in zip(self._lines, self._points, ys, (state.f, state.df, state.d2f)):
            line.set_data(xs, y)
            point.set_data([state.x], [value])
        self._marker.set_xdata([state.x, state.x])
        self.readout.value = _readout(state)
        lo, hi = self.model.domain
        show(self.image, self.figure, f"Curves of {name} and of its first and second derivatives for x from "
             f"{lo:g} to {hi:g}, marked at x = {state.x:.2f}: f = {state.f:.4f}, f′ = {state.df:.4f}, "
             f"f″ = {state.d2f:.4f}.")
        return state

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        return self.widget._repr_mimebundle_(**kwargs)


class TapeMemoryModel:
    """A persistent tape over `steps` recorded operations, and how many of their outputs it keeps alive.

    Only weak references to the intermediates are kept here, so an intermediate counts as live
    exactly while the tape holds it.
    """

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._x = tf.Variable(tf.fill([size], 0.5), name="x")
        self._tape: tf.GradientTape | None = None
        self._refs: list[weakref.ref] = []

    def record(self, steps: int) -> int:
        """Drop any previous tape, record `steps` operations on a new persistent tape; return the live count."""
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        self.release()
        tape = tf.GradientTape(persistent=True)
        refs = []
        with tape:
            h = self._x
            for _ in range(steps):
                h = tf.sin(h)
                refs.append(weakref.ref(h))
            loss = tf.reduce_sum(h)  # a target to differentiate later: the tape keeps its whole past
        del h, loss  # the model keeps no strong reference to an intermediate: only the tape does
        self._tape, self._refs = tape, refs
        return self.live()

    def release(self) -> int:
        """`del tape`: drop the only reference to the tape; return how many intermediates survive."""
        self._tape = None
        return self.live()

    @property
    def tape_alive(self) -> bool:
        return self._tape is not None

    @property
    def recorded(self) -> int:
        return len(self._refs)

    def alive(self) -> list[bool]:
        """For each recorded intermediate, in order: is it still in memory?"""
        return [ref() is not None for ref in self._refs]

    def live(self) -> int:
        return sum(self.alive())

    def live_bytes(self) -> int:
        return self.live() * self.size * 4  # float32


class TapeMemoryView:
    """A slider for the number of recorded steps and a `del tape` button; shows which intermediates live."""

    max_steps = 40

    def __init__(self, steps: int = 10, ask: Any = None, truth: Any = None) -> None:
        import ipywidgets as widgets

        if not 0 <= steps <= self.max_steps:
            raise ValueError(f"steps must be between 0 and {self.max_steps}, got {steps}")
        self.model = TapeMemoryModel()
        self.slider = widgets.IntSlider(value=steps, min=0, max=self.max_steps, description="steps")
        self.button = widgets.Button(description="del tape", icon="trash")
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        view = widgets.VBox([widgets.HBox([self.slider, self.button]), self.readout, self.image])
        self.widget, self.asking = ask_first(view, ask, truth)

        self.figure = agg_figure(figsize=(5.8, 1.6), dpi=100)
        self.figure.subplots_adjust(left=0.04, right=0.98, bottom=0.3, top=0.8)
        self._axes = self.figure.add_subplot()
        self._axes.set_xlim(0.5, self.max_steps + 0.5)
        self._axes.set_ylim(0, 1)
        self._axes.set_yticks([])
        self._axes.set_xlabel("recorded step", fontsize=8)
        self._bars = self._axes.bar(range(1, self.max_steps + 1), [0.0] * self.max_steps, width=0.8)

        self.slider.observe(lambda _change: self.update(record=True), names="value")
        self.button.on_click(lambda _button: self.delete_tape())
        self.update(record=True)

    def delete_tape(self) -> int:
        """What the button does: release the tape, then redraw; returns the live count (0)."""
        self.model.release()
        return self.update(record=False)

    def update(self, record: bool = True) -> int:
        """Record a fresh tape for the slider's step count (if `record`), then redraw; returns live count."""
        if record:
            self.model.record(self.slider.value)
        alive = self.model.alive()
        for i, bar in enumerate(self._bars):
            bar.set_height(1.0 if i < len(alive) else 0.0)
            bar.set_color("C3" if i < len(alive) and alive[i] else "0.85")
        live = sum(alive)
        state = "alive" if self.model.tape_alive else "deleted"
        self._axes.set_title(f"tape {state}: {live} of {self.model.recorded} intermediates in memory", fontsize=9)
        self.readout.value = (f"Persistent tape <b>{state}</b>: {live} live intermediates, "
                              f"{self.model.live_bytes() / 1024:.0f} KiB held. "
                              + ("Press <code>del tape</code> to release them." if live else
                                 "Move the slider to record a new tape."))
        self.button.disabled = not self.model.tape_alive
        show(self.image, self.figure, f"One bar per recorded step, {self.model.recorded} in all: the tape is "
             f"{state} and {live} of the intermediates are in memory.")
        return live

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        return self.widget._repr_mimebundle_(**kwargs)
