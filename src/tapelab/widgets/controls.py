"""Controls shared by the explorers that plot a function of x: a function menu and an x slider."""
from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["function_controls"]


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
