"""Every explorer can be read without seeing it: each control has a label a screen reader reads, and each
plot carries a text alternative (one sentence with the numbers the plot shows) that follows the controls."""
import ipywidgets as widgets
import pytest

from tapelab.widgets.comparison import ComparisonExplorer
from tapelab.widgets.higher_order import HigherOrderExplorer, TapeMemoryView
from tapelab.widgets.none_map import NoneMap
from tapelab.widgets.saliency import SaliencyExplorer
from tapelab.widgets.tangent import TangentExplorer
from tapelab.widgets.training import TrainingExplorer

CLASSES = (TangentExplorer, TrainingExplorer, SaliencyExplorer, HigherOrderExplorer, TapeMemoryView, NoneMap,
           ComparisonExplorer)


@pytest.fixture(scope="module")
def views():
    return {cls: cls() for cls in CLASSES}


def _parts(widget) -> list:
    found = [widget]
    for child in getattr(widget, "children", ()):
        found += _parts(child)
    return found


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_control_has_a_label(views, cls):
    controls = [w for w in _parts(views[cls].widget)
                if isinstance(w, (widgets.Button, widgets.ValueWidget)) and not isinstance(w, (widgets.HTML, widgets.Image))]
    assert controls
    for control in controls:
        assert (control.description or control.tooltip or "").strip(), f"{type(control).__name__} has no label"


@pytest.mark.parametrize("cls", [c for c in CLASSES if c is not NoneMap], ids=lambda cls: cls.__name__)
def test_every_plot_has_a_sentence_with_its_numbers(views, cls):
    images = [w for w in _parts(views[cls].widget) if isinstance(w, widgets.Image)]
    assert len(images) == 1 and images[0].value
    alt = images[0].tooltip
    assert alt.endswith(".") and any(ch.isdigit() for ch in alt) and "<" not in alt, alt


def test_the_tangent_plot_says_the_slope_at_the_slider(views):
    view = views[TangentExplorer]
    view.dropdown.value = "x^2"
    view.slider.value = 2.0
    assert "x = 2.00" in view.image.tooltip and "slope from the tape is 4.0000" in view.image.tooltip


def test_the_saliency_plot_says_when_there_is_no_gradient(views):
    view = views[SaliencyExplorer]
    view.watch.value = False
    assert "gradient is None" in view.image.tooltip
    view.watch.value = True
    assert "input gradient [" in view.image.tooltip


def test_the_training_plot_follows_the_steps(views):
    view = views[TrainingExplorer]
    assert "no step taken yet" in view.image.tooltip
    view.step_buttons[0].click()
    state = view.model.state()
    assert f"over {state.step} step(s)" in view.image.tooltip and f"{state.losses[-1]:.4g}" in view.image.tooltip


def test_the_memory_plot_says_what_is_alive(views):
    view = views[TapeMemoryView]
    view.slider.value = 4
    assert "4 in all" in view.image.tooltip and "alive" in view.image.tooltip
    view.button.click()
    assert "deleted and 0 of" in view.image.tooltip


def test_the_comparison_plot_gives_the_final_losses(views):
    view = views[ComparisonExplorer]
    state = view.update()
    assert f"{state.fit_losses[-1]:.4f} with fit" in view.image.tooltip
