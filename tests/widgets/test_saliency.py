"""Behaviours of the input-gradient explorer: the model's tape gradients, the None gradient of an
unwatched input, the cached background, and the view's controls."""
import numpy as np
import pytest

from tapelab.checker.oracle import numeric_gradient
from tapelab.widgets.saliency import SaliencyExplorer, SaliencyModel

BOWL, SADDLE, NET = "bowl: x1² + x2²", "saddle: x1² − x2²", "tanh network"
POINTS = ((1.0, 0.5), (-1.5, 0.25), (0.0, -2.0))


@pytest.fixture(scope="module")
def model() -> SaliencyModel:
    return SaliencyModel()


@pytest.fixture
def explorer() -> SaliencyExplorer:
    return SaliencyExplorer(x1=1.0, x2=0.5)


def _value(model, name):
    return lambda p: model.at(name, float(p[0]), float(p[1])).value


def test_bowl_gradient_is_twice_the_point(model):
    """Is the bowl's input gradient at (1, 0.5) equal to (2, 1), with f = 1.25?"""
    state = model.at(BOWL, 1.0, 0.5)
    assert state.gradient == pytest.approx((2.0, 1.0)) and state.value == pytest.approx(1.25)


def test_saddle_gradient_has_opposite_signs(model):
    """Does the saddle's gradient at (1.5, 0.5) point up in x1 and down in x2: (3, -1)?"""
    assert model.at(SADDLE, 1.5, 0.5).gradient == pytest.approx((3.0, -1.0))


@pytest.mark.parametrize("name", [BOWL, SADDLE, NET])
def test_gradient_matches_central_differences(model, name):
    """Does the tape's input gradient agree with a central difference of the same function?"""
    for point in POINTS:
        expected = numeric_gradient(_value(model, name), np.array(point), h=1e-3)
        assert model.at(name, *point).gradient == pytest.approx(tuple(expected), rel=1e-3, abs=1e-3)


@pytest.mark.parametrize("name", [BOWL, NET])
def test_unwatched_input_gives_none_but_keeps_the_value(model, name):
    """Without tape.watch on the constant input, is the gradient None while f is still computed?"""
    watched, unwatched = model.at(name, 0.5, -0.5), model.at(name, 0.5, -0.5, watch=False)
    assert unwatched.gradient is None and unwatched.norm is None and not unwatched.watched
    assert unwatched.value == watched.value


def test_background_is_computed_once_and_read_only(model):
    """Does asking twice for a background return the same cached, read-only arrays?"""
    first = model.background(SADDLE)
    assert model.background(SADDLE) is first
    assert first.values.shape == (model.fine, model.fine)
    assert first.arrow_u.shape == (model.coarse**2,)
    assert not first.values.flags.writeable and not first.arrow_u.flags.writeable


def test_background_field_agrees_with_pointwise_gradients(model):
    """Is each arrow of the field the gradient the tape gives at that arrow's position?"""
    bg = model.background(NET)
    for i in (0, 17, 60, 120):
        state = model.at(NET, float(bg.arrow_x[i]), float(bg.arrow_y[i]))
        assert state.gradient == pytest.approx((bg.arrow_u[i], bg.arrow_v[i]), rel=1e-5, abs=1e-6)


def test_heat_map_rows_run_along_x2(model):
    """Is values[row, col] the function at (x1 = col position, x2 = row position)?"""
    bg = model.background(SADDLE)
    assert bg.values[0, -1] == pytest.approx(4.0 - 4.0)  # x1 = 2, x2 = -2
    assert bg.values[model.fine // 2, -1] == pytest.approx(4.0)  # x1 = 2, x2 = 0


def test_unknown_function_raises_and_lists_choices(model):
    """Does an unknown name raise ValueError naming every valid choice?"""
    with pytest.raises(ValueError) as err:
        model.at("cone", 0.0, 0.0)
    assert all(name in str(err.value) for name in model.names)


@pytest.mark.parametrize("kwargs", [{"function": "cone"}, {"x1": 2.5}, {"x2": -3.0}])
def test_explorer_rejects_unknown_function_or_point_off_the_plot(kwargs):
    """Does the explorer refuse an unknown function or a point outside the plotted square?"""
    with pytest.raises(ValueError):
        SaliencyExplorer(**kwargs)


def test_moving_a_slider_redraws_image_and_readout(explorer):
    """Does moving x1 change the picture, the readout and the red arrow's position?"""
    before_png, before_text = explorer.image.value, explorer.readout.value
    explorer.x1.value = -1.25
    assert explorer.image.value != before_png and explorer.readout.value != before_text
    assert "-1.25" in explorer.readout.value
    assert tuple(explorer._arrow.get_offsets()[0]) == pytest.approx((-1.25, 0.5))


def test_unticking_watch_hides_the_arrow_and_says_none(explorer):
    """With 'watch the input' off, does the arrow disappear and the readout say the gradient is None?"""
    explorer.watch.value = False
    assert not explorer._arrow.get_visible()
    assert "None" in explorer.readout.value and "tape.watch(x)" in explorer.readout.value
    explorer.watch.value = True
    assert explorer._arrow.get_visible() and "None" not in explorer.readout.value


def test_changing_function_swaps_the_background_once(explorer, monkeypatch):
    """Does a new function redraw heat map and field, while a slider move reuses them?"""
    explorer.dropdown.value = NET
    assert np.array_equal(explorer._heat.get_array(), explorer.model.background(NET).values)
    draws = []
    monkeypatch.setattr(explorer, "_draw_background", lambda name: draws.append(name))
    explorer.x2.value = -0.75
    assert draws == []


def test_explorer_is_silent_and_displays_as_a_widget(capfd):
    """Does building and updating the explorer print nothing, and display as a widget view?"""
    view = SaliencyExplorer(function=SADDLE, x1=-1.0, x2=1.0, watch=False)
    view.watch.value = True
    view.x2.value = 0.0
    bundle = view._repr_mimebundle_()
    assert capfd.readouterr() == ("", "")
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_a_new_function_redraws_under_the_cue_and_a_slider_move_without(explorer, spy_busy, busy_now):
    """Does switching function (a whole new background) show the cue, and moving x1 or the box not?"""
    seen = spy_busy(explorer, explorer.model, "at")
    explorer.dropdown.value = SADDLE
    explorer.x1.value = -0.5
    explorer.watch.value = False
    assert [s.busy for s in seen] == [True, False, False]
    assert SADDLE in seen[0].cue and seen[1].idle and not any(seen[1].disabled)
    assert busy_now(explorer).idle and not any(busy_now(explorer).disabled)
