"""Controls shared by the explorers: a function menu with an x slider, and the busy cue of long actions."""
from __future__ import annotations

import contextlib
import html
from collections.abc import Iterator
from typing import Any, Callable, Sequence

__all__ = ["BusyCue", "function_controls"]


def function_controls(available: Sequence[str], functions: str | Sequence[str] | None, x: float,
                      domain: tuple[float, float], prepare: Callable[[str], Any]) -> tuple[Any, Any]:
    """A Dropdown of the chosen function names and a FloatSlider for `x` over `domain`.

    `prepare(name)` is called for each chosen name: it rejects unknown names (ValueError) and can
    warm a cache, so that no redraw pays for it later.
    """
    import ipywidgets as widgets  # here, so that models need no widget stack

    names = list(available) if functions is None else ([functions] if isinstance(functions, str)
                                                        else list(functions))
    if not names:
        raise ValueError(f"no functions given; choose from: {', '.join(available)}")
    for name in names:
        prepare(name)
    lo, hi = domain
    if not lo <= x <= hi:
        raise ValueError(f"x = {x} is outside the plotted domain [{lo}, {hi}]")
    dropdown = widgets.Dropdown(options=names, value=names[0], description="f(x)")
    slider = widgets.FloatSlider(value=x, min=lo, max=hi, step=0.05, description="x", readout_format=".2f")
    return dropdown, slider


class BusyCue:
    """While a long action runs, every control of an explorer is disabled and a "working" note shows.

    ipywidgets sends each trait change to the page as it is made, even inside a handler, so the page
    greys the controls (a second click cannot queue behind the first) and shows the note before the
    work starts. Both are restored when the action ends, also when it raises. An action is long when
    it does more than redraw (training steps, a computation not cached yet): a redraw-only action
    (a slider step) skips the cue, which would only flicker and stall the drag.
    """

    css_class = "tapelab-busy"  # what a page (or the browser bench) finds the note by

    def __init__(self, controls: Sequence[Any]) -> None:
        import ipywidgets as widgets  # here, so that models need no widget stack

        self.controls = list(controls)
        self.label = widgets.HTML("", layout=widgets.Layout(margin="0 0 0 8px"))
        self.label.add_class(self.css_class)
        self._resting: list[bool] | None = None  # each control's own disabled state, while busy

    @property
    def active(self) -> bool:
        """Whether an action is running under the cue."""
        return self._resting is not None

    def set_disabled(self, control: Any, disabled: bool) -> None:
        """Set `control`'s own disabled state: at once, or when the running action ends.

        Explorers that enable or disable a control in their redraw call this, so the end of an
        action restores what the redraw decided, not what was there before it.
        """
        if self._resting is None:
            control.disabled = disabled
        else:
            self._resting[next(i for i, c in enumerate(self.controls) if c is control)] = disabled

    @contextlib.contextmanager
    def working(self, what: str, long: bool = True) -> Iterator[None]:
        """Show "⏳ `what`…" and disable every control for the block; restore both however it ends.

        With `long=False` (the action will only redraw, say from a cache) the block runs without the
        cue. Nested blocks run under the outer block's cue.
        """
        if not long or self._resting is not None:
            yield
            return
        self._resting = [bool(c.disabled) for c in self.controls]
        try:
            # The note first: each change is one message, so the page shows the note soonest.
            self.label.value = f"<i style='color:#555'>⏳ {html.escape(what)}…</i>"
            for control in self.controls:
                control.disabled = True
            yield
        finally:
            resting, self._resting = self._resting, None
            for control, disabled in zip(self.controls, resting):
                control.disabled = disabled
            self.label.value = ""
