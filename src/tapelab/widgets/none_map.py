"""The None-gradient map of notebook 05: pick a broken step, see every variable's gradient status.

`NoneMapModel` builds a small network per bug and runs `tapelab.diagnose` on its step; it knows
nothing about widgets. `NoneMap` draws the report as coloured bars (ok green, zero amber, None red)
with the diagnosis beside each, in an ipywidgets HTML view.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Callable

import keras
import numpy as np
import tensorflow as tf

from tapelab.diagnose import Report, diagnose
from tapelab.widgets.ask import ask_first
from tapelab.widgets.controls import BusyCue

__all__ = ["NoneMap", "NoneMapModel", "Row"]

COLOURS = {"ok": "#2f855a", "zero": "#d69e2e", "None": "#c53030", "non_finite": "#6b46c1", "untracked": "#c05621"}
_X = tf.constant([[1.0, 2.0], [-1.0, 0.5], [0.5, -1.5]])
_Y = tf.constant([[1.0], [0.0], [2.0]])


def _params(w1_init: float = 0.5, trainable_b2: bool = True) -> dict[str, tf.Variable]:
    rng = np.random.default_rng(0)
    return {
        "w1": tf.Variable(w1_init * rng.normal(size=(2, 3)), dtype=tf.float32, name="w1"),
        "b1": tf.Variable(tf.zeros(3) if w1_init > 0 else -5.0 * tf.ones(3), name="b1"),
        "w2": tf.Variable(rng.normal(size=(3, 1)), dtype=tf.float32, name="w2"),
        "b2": tf.Variable(tf.zeros(1), name="b2", trainable=trainable_b2),
    }


def _healthy(p):
    def loss_fn():
        w1, b1, w2, b2 = p["w1"], p["b1"], p["w2"], p["b2"]
        hidden = tf.nn.relu(_X @ w1 + b1)
        return tf.reduce_mean((hidden @ w2 + b2 - _Y) ** 2)
    return loss_fn


def _stop_gradient(p):
    def loss_fn():
        w1, b1, w2, b2 = p["w1"], p["b1"], p["w2"], p["b2"]
        hidden = tf.stop_gradient(tf.nn.relu(_X @ w1 + b1))
        return tf.reduce_mean((hidden @ w2 + b2 - _Y) ** 2)
    return loss_fn


def _argmax(p):
    def loss_fn():
        w1, b1, w2, b2 = p["w1"], p["b1"], p["w2"], p["b2"]
        winner = tf.cast(tf.argmax(_X @ w1 + b1, axis=1), tf.float32)[:, None]
        return tf.reduce_mean((winner * w2[0] + b2 - _Y) ** 2)
    return loss_fn


def _numpy(p):
    def loss_fn():
        w1, b1, w2, b2 = p["w1"], p["b1"], p["w2"], p["b2"]
        hidden = np.maximum((_X @ w1 + b1).numpy(), 0.0)
        return tf.reduce_mean((hidden @ w2 + b2 - _Y) ** 2)
    return loss_fn


def _outside(p):
    loss = _healthy(p)()
    return lambda: loss


def _untracked_model() -> keras.Model:
    class Scaled(keras.layers.Layer):
        def __init__(self):
            super().__init__(name="scaled")
            self.dense = keras.layers.Dense(1, kernel_initializer="zeros")
            self.scale = tf.Variable(2.0, name="scale")  # Keras 3 does not track this

        def call(self, x):
            return self.dense(x) * self.scale

    return keras.Sequential([keras.Input((2,)), Scaled()])


@dataclass(frozen=True)
class _Bug:
    description: str
    build: Callable[[], tuple[Callable, Any, Any]]  # () -> (loss_fn, variables, model)


def _plain(step: Callable, **params: Any) -> Callable[[], tuple[Callable, Any, Any]]:
    def build():
        p = _params(**params)
        return step(p), p, None
    return build


def _keras_build():
    model = _untracked_model()
    return (lambda: tf.reduce_mean((model(_X) - _Y) ** 2)), None, model


BUGS: dict[str, _Bug] = {
    "healthy step": _Bug("The correct step: every gradient flows.", _plain(_healthy)),
    "loss outside the tape": _Bug("The loss was computed before the tape started.", _plain(_outside)),
    "stop_gradient on the hidden layer": _Bug("`tf.stop_gradient` wraps the hidden activations.",
                                              _plain(_stop_gradient)),
    "argmax in the forward pass": _Bug("The output uses the index of the largest hidden unit.", _plain(_argmax)),
    "NumPy relu": _Bug("The relu is computed with `np.maximum` on `.numpy()` values.", _plain(_numpy)),
    "frozen bias": _Bug("`b2` was created with `trainable=False`.", _plain(_healthy, trainable_b2=False)),
    "dead relu": _Bug("The hidden biases start at -5, so every relu input is negative.",
                      _plain(_healthy, w1_init=-0.1)),
    "untracked tf.Variable": _Bug("A Keras 3 layer stores its scale in a plain `tf.Variable`.", _keras_build),
}


@dataclass(frozen=True)
class Row:
    """One variable as the map draws it: its name, gradient status, bar colour and the diagnosis."""

    name: str
    status: str
    colour: str
    cause: str  # the tapelab.causes code diagnose established, "" when it established none
    explanation: str


class NoneMapModel:
    """The map's logic: one small network and broken step per bug, diagnosed once and cached."""

    def __init__(self) -> None:
        self._reports: dict[str, Report] = {}

    @property
    def bugs(self) -> list[str]:
        return list(BUGS)

    def description(self, bug: str) -> str:
        return self._lookup(bug).description

    def report(self, bug: str) -> Report:
        """tapelab.diagnose's report for `bug`'s step (computed on first request)."""
        if bug not in self._reports:
            loss_fn, variables, model = self._lookup(bug).build()
            self._reports[bug] = diagnose(loss_fn, variables, model=model)
        return self._reports[bug]

    def diagnosed(self, bug: str) -> bool:
        """Whether `bug`'s report is cached, so that showing it runs no TensorFlow."""
        return bug in self._reports

    def rows(self, bug: str) -> list[Row]:
        return [Row(e.name, e.status, COLOURS[e.status], e.cause or "", e.explanation or "gradient flows")
                for e in self.report(bug).entries]

    def _lookup(self, bug: str) -> _Bug:
        if bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r}; choose from: {', '.join(BUGS)}")
        return BUGS[bug]


def _code(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render_html(bug: str, description: str, rows: list[Row]) -> str:
    """The map as HTML: one coloured bar per variable, the diagnosis beside it."""
    bars = "".join(
        "<div style='display:flex;align-items:flex-start;margin:3px 0'>"
        f"<div style='flex:0 0 170px;background:{r.colour};color:white;padding:4px 8px;border-radius:3px'>"
        f"<b>{html.escape(r.name)}</b>: {r.status}</div>"
        f"<div style='padding:4px 10px'>{f'<code>{r.cause}</code>: ' if r.cause else ''}"
        f"{_code(r.explanation)}</div></div>"
        for r in rows)
    return f"<div><p><b>{html.escape(bug)}</b>: {_code(description)}</p>{bars}</div>"


class NoneMap:
    """Dropdown of bugs above the map; shows itself in a notebook cell.

    A bug shown for the first time builds its network and runs the diagnosis, under the busy cue.
    """

    def __init__(self, bug: str | None = None, ask: Any = None, truth: Any = None) -> None:
        import ipywidgets as widgets  # here, not at the top, so the model needs no widget stack

        self.model = NoneMapModel()
        bug = self.model.bugs[0] if bug is None else bug
        self.model.description(bug)  # validates the name
        self.dropdown = widgets.Dropdown(options=self.model.bugs, value=bug, description="bug",
                                         layout=widgets.Layout(width="420px"))
        self.busy = BusyCue([self.dropdown])
        self.view = widgets.HTML()
        view = widgets.VBox([widgets.HBox([self.dropdown, self.busy.label]), self.view])
        self.widget, self.asking = ask_first(view, ask, truth)
        self.dropdown.observe(lambda change: self._changed(change["new"]), names="value")
        self.update()

    def _changed(self, bug: str) -> None:
        with self.busy.working(f"diagnosing {bug!r}", long=not self.model.diagnosed(bug)):
            self.update()

    def update(self) -> list[Row]:
        """Redraw from the dropdown's value: the one path a control change takes."""
        bug = self.dropdown.value
        rows = self.model.rows(bug)
        self.view.value = render_html(bug, self.model.description(bug), rows)
        return rows

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        return self.widget._repr_mimebundle_(**kwargs)
