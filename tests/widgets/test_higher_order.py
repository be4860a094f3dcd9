"""Behaviours of notebook 04's widgets: f, f', f'' from nested tapes, and a persistent tape's memory."""
import math

import numpy as np
import pytest

from tapelab.widgets.higher_order import HigherOrderExplorer, HigherOrderModel, TapeMemoryModel, TapeMemoryView

SECOND = {
    "x^3 - 3x": lambda x: 6 * x,
    "sin(x)": lambda x: -math.sin(x),
    "exp(-x^2)": lambda x: (4 * x * x - 2) * math.exp(-x * x),
    "tanh(x)": lambda x: -2 * math.tanh(x) * (1 - math.tanh(x) ** 2),
    "x^4/4 - x^2": lambda x: 3 * x * x - 2,
    "softplus(x)": lambda x: math.exp(-x) / (1 + math.exp(-x)) ** 2,
}
FIRST = {
    "x^3 - 3x": lambda x: 3 * x * x - 3,
    "sin(x)": math.cos,
    "exp(-x^2)": lambda x: -2 * x * math.exp(-x * x),
    "tanh(x)": lambda x: 1 - math.tanh(x) ** 2,
    "x^4/4 - x^2": lambda x: x**3 - 2 * x,
    "softplus(x)": lambda x: 1 / (1 + math.exp(-x)),
}


@pytest.fixture(scope="module")
def model() -> HigherOrderModel:
    return HigherOrderModel()


def test_catalogue_covers_every_tested_function(model):
    """Does every function in the explorer have a textbook derivative to test against?"""
    assert sorted(model.names) == sorted(SECOND)


@pytest.mark.parametrize("name", sorted(SECOND))
def test_point_values_match_textbook_derivatives(model, name):
    """Do the nested tapes give the textbook f' and f'' at several points?"""
    for x in (-2.0, -0.5, 0.25, 1.5):
        state = model.at(name, x)
        assert state.df == pytest.approx(FIRST[name](x), rel=1e-4, abs=1e-5)
        assert state.d2f == pytest.approx(SECOND[name](x), rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("name", sorted(SECOND))
def test_grid_curves_agree_with_point_values(model, name):
    """Does the vectorised grid give, at each grid point, what the single-point computation gives?"""
    xs, f, df, d2f = model.curves(name)
    for i in (0, len(xs) // 3, len(xs) - 1):
        state = model.at(name, float(xs[i]))
        assert (f[i], df[i], d2f[i]) == pytest.approx((state.f, state.df, state.d2f), rel=1e-5, abs=1e-6)


def test_curves_are_computed_once_and_read_only(model):
    """Are the curves cached (the same arrays come back) and protected from writes?"""
    first = model.curves("sin(x)")
    again = model.curves("sin(x)")
    assert all(a is b for a, b in zip(first, again))
    assert len(first[0]) == model.samples and not any(a.flags.writeable for a in first)


def test_unknown_function_raises_and_lists_choices(model):
    """Does an unknown name raise a ValueError naming every valid choice?"""
    with pytest.raises(ValueError) as err:
        model.at("cosh(x)", 0.0)
    assert all(name in str(err.value) for name in model.names)


@pytest.mark.parametrize("kwargs", [{"functions": []}, {"x": 9.0}, {"functions": ["nope"]}])
def test_explorer_rejects_bad_arguments(kwargs):
    """Does the explorer refuse an empty list, an unknown function or an x off the plot?"""
    with pytest.raises(ValueError):
        HigherOrderExplorer(**kwargs)


def test_slider_and_dropdown_redraw_readout_and_image():
    """Does moving the slider or picking a function change the readout and the picture?"""
    view = HigherOrderExplorer(x=0.5)
    png, text = view.image.value, view.readout.value
    view.slider.value = 1.0
    assert view.image.value != png and "1.00" in view.readout.value and view.readout.value != text
    png = view.image.value
    view.dropdown.value = "tanh(x)"
    assert view.image.value != png and "tanh" in view.readout.value
    lines = {line.get_label(): line for line in view.figure.axes[0].get_lines()}
    plotted = [lines[label].get_ydata() for label in ("f", "f′", "f″")]
    for got, want in zip(plotted, view.model.curves("tanh(x)")[1:]):
        np.testing.assert_array_equal(got, want)


def test_each_slider_move_redraws():
    """Does every move of the x slider redraw the picture? (Its speed is measured in bench/notebooks.py.)"""
    view = HigherOrderExplorer(functions="sin(x)")
    view.update()
    pictures = [view.image.value]
    for value in (0.1, 0.2, 0.3):
        view.slider.value = value
        pictures.append(view.image.value)
    assert len(set(pictures)) == len(pictures)


def test_persistent_tape_keeps_one_intermediate_per_step():
    """Does a live persistent tape hold every recorded intermediate, growing with the step count?"""
    memory = TapeMemoryModel(size=100)
    assert [memory.record(n) for n in (0, 3, 12)] == [0, 3, 12]
    assert memory.tape_alive and all(memory.alive())


def test_del_tape_releases_every_intermediate():
    """After `del tape` (release), is the live count 0 without any garbage collection?"""
    memory = TapeMemoryModel(size=100)
    memory.record(8)
    assert memory.release() == 0 and not memory.tape_alive and memory.recorded == 8


def test_recording_again_releases_the_previous_tape():
    """Does a new recording free the old tape's intermediates instead of piling them up?"""
    memory = TapeMemoryModel(size=100)
    memory.record(5)
    old = list(memory._refs)
    memory.record(2)
    assert all(ref() is None for ref in old) and memory.live() == 2


def test_negative_steps_raise():
    """Is a negative step count refused?"""
    with pytest.raises(ValueError):
        TapeMemoryModel(size=10).record(-1)


def test_memory_view_slider_grows_count_and_button_drops_it_to_zero():
    """Does the slider grow the live count and the `del tape` button drop it to 0, disabling itself?"""
    view = TapeMemoryView(steps=4)
    assert view.model.live() == 4
    view.slider.value = 15
    assert view.model.live() == 15 and "15 live" in view.readout.value
    png = view.image.value
    view.button.click()
    assert view.model.live() == 0 and "deleted" in view.readout.value
    assert view.button.disabled and view.image.value != png
    view.slider.value = 6
    assert view.model.live() == 6 and not view.button.disabled


def test_memory_view_rejects_steps_off_the_slider():
    """Is a starting step count outside the slider's range refused?"""
    with pytest.raises(ValueError):
        TapeMemoryView(steps=TapeMemoryView.max_steps + 1)


def test_widgets_are_silent_and_display_as_widgets(capfd):
    """Do both widgets build and update without printing, and display as widget views?"""
    views = [HigherOrderExplorer(x=-1.0), TapeMemoryView(steps=3)]
    views[0].slider.value = 0.5
    views[1].button.click()
    assert capfd.readouterr() == ("", "")
    for view in views:
        assert "application/vnd.jupyter.widget-view+json" in view._repr_mimebundle_()
