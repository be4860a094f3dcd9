"""Behaviours of the tangent-line explorer: the model's tape slopes, its curve cache, and the view."""
import math

import pytest

from tapelab.widgets import TangentExplorer, TangentModel

DERIVATIVES = {
    "x^2": lambda x: 2 * x,
    "sin(x)": math.cos,
    "x^3 - 3x": lambda x: 3 * x * x - 3,
    "softplus(x)": lambda x: 1 / (1 + math.exp(-x)),
    "|x|": lambda x: math.copysign(1.0, x),
    "relu(x)": lambda x: float(x > 0),
}
POINTS = (-2.5, -1.0, 0.5, 2.0)


@pytest.fixture(scope="module")
def model() -> TangentModel:
    return TangentModel()


@pytest.fixture
def explorer() -> TangentExplorer:
    return TangentExplorer(x=1.0)


def test_slope_of_x_squared_at_2_is_4(model):
    """Does the slope at x=2 of x^2 equal 4?"""
    assert model.at("x^2", 2.0).slope == 4.0


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_slope_matches_analytic_derivative_away_from_kinks(model, name):
    """Does the tape's slope match the textbook derivative at points away from any kink?"""
    for x in POINTS:
        assert model.at(name, x).slope == pytest.approx(DERIVATIVES[name](x), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", ["|x|", "relu(x)"])
def test_kink_at_zero_reports_the_tapes_choice_with_a_note(model, name):
    """At the kink x=0, is the slope the tape's conventional 0, with a note saying so?"""
    state = model.at(name, 0.0)
    assert state.slope == 0.0
    assert "kink" in state.note and name in state.note


def test_smooth_points_carry_no_note(model):
    """Is the note empty wherever the function is differentiable?"""
    assert model.at("|x|", 0.5).note == ""
    assert model.at("x^2", 0.0).note == ""


def test_tangent_line_passes_through_the_point_with_the_slope(model):
    """Does the tangent line go through (x, f(x)) and rise at the tape's slope?"""
    state = model.at("x^3 - 3x", 1.5)
    (x0, x1), (y0, y1) = state.line_x, state.line_y
    assert (y1 - y0) / (x1 - x0) == pytest.approx(state.slope)
    assert y0 + state.slope * (state.x - x0) == pytest.approx(state.y)
    assert (x0, x1) == model.domain


def test_state_is_frozen(model):
    """Can a TangentState be changed after the fact? (It should not.)"""
    with pytest.raises(AttributeError):
        model.at("x^2", 1.0).slope = 0.0  # type: ignore[misc]


def test_curve_is_computed_once_and_reused(model):
    """Does asking for the same curve twice return the cached, read-only arrays?"""
    xs, ys = model.curve("sin(x)")
    again = model.curve("sin(x)")
    assert again[0] is xs and again[1] is ys
    assert len(xs) == model.samples and not ys.flags.writeable


def test_unknown_function_name_raises_and_lists_choices(model):
    """Does an unknown name raise ValueError that names every valid choice?"""
    with pytest.raises(ValueError) as err:
        TangentExplorer(functions=["x^2", "cosh(x)"])
    assert "cosh(x)" in str(err.value)
    assert all(name in str(err.value) for name in model.names)


@pytest.mark.parametrize("kwargs", [{"functions": []}, {"x": 3.5}])
def test_empty_choice_or_x_off_the_plot_raises(kwargs):
    """Does an empty function list, or an x outside the plotted domain, raise ValueError?"""
    with pytest.raises(ValueError):
        TangentExplorer(**kwargs)


def test_moving_the_slider_redraws_image_and_readout(explorer):
    """Does changing the slider change the Image's bytes and the readout text?"""
    before_png, before_text = explorer.image.value, explorer.readout.value
    explorer.slider.value = 2.0
    assert explorer.image.value != before_png
    assert explorer.readout.value != before_text and "2.00" in explorer.readout.value


def test_dropdown_changes_the_plotted_curve(explorer):
    """Does picking another function put that function's curve on the plot?"""
    before_png = explorer.image.value
    explorer.dropdown.value = "sin(x)"
    (curve,) = [line for line in explorer.figure.axes[0].get_lines() if line.get_label() == "curve"]
    assert list(curve.get_ydata()) == list(explorer.model.curve("sin(x)")[1])
    assert explorer.image.value != before_png


def test_slider_at_zero_on_a_kink_shows_the_note(explorer):
    """With |x| selected and the slider at 0, does the readout carry the kink note?"""
    explorer.dropdown.value = "|x|"
    explorer.slider.value = 0.0
    assert "kink" in explorer.readout.value


@pytest.mark.parametrize("noisy_zero", [1e-17, -1e-17, -0.0])
def test_slider_float_noise_near_zero_still_lands_on_the_kink(explorer, noisy_zero):
    """Does a slider value that is 0 up to float noise still count as the kink, slope +0?"""
    explorer.dropdown.value = "|x|"
    explorer.slider.value = noisy_zero
    state = explorer.update()
    assert state.x == 0.0 and math.copysign(1.0, state.slope) == 1.0 and state.note


def test_explorer_is_silent_and_displays_as_a_widget(capfd):
    """Does building and updating the explorer print nothing, and display as a widget view?"""
    view = TangentExplorer(functions="softplus(x)", x=-1.0)
    view.slider.value = 0.5
    view.update()
    bundle = view._repr_mimebundle_()
    assert capfd.readouterr() == ("", "")
    assert "application/vnd.jupyter.widget-view+json" in bundle
