"""Off-screen matplotlib for the course widgets: Agg figures rendered to PNG bytes, no pyplot."""
from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["agg_figure", "png_bytes", "show"]


def agg_figure(**kwargs: Any) -> Figure:
    """A Figure bound to an Agg canvas, so drawing never touches pyplot or the notebook backend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # here: importers may not plot
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """Render `fig` to PNG bytes for an ipywidgets.Image, the same bytes on any matplotlib version."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})  # no version stamp
    return buffer.getvalue()


def show(image: Any, fig: Figure, alt: str) -> None:
    """Put `fig` into the ipywidgets.Image `image` with its text alternative `alt`: one sentence saying what
    the plot shows, with the numbers that matter. An Image has no `alt`; its tooltip becomes the img
    element's title, which screen readers read as the image's name."""
    image.value = png_bytes(fig)
    image.tooltip = alt
