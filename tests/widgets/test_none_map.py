"""Behaviours of the None-gradient map: the model's diagnoses per bug, the HTML, and the view."""

import pytest

from tapelab.widgets.none_map import COLOURS, NoneMap, NoneMapModel, render_html

EXPECTED = {
    "healthy step": {"w1": "ok", "b1": "ok", "w2": "ok", "b2": "ok"},
    "loss outside the tape": {"w1": "outside-tape", "b2": "outside-tape"},
    "stop_gradient on the hidden layer": {"w1": "stop-gradient", "b1": "stop-gradient", "w2": "ok"},
    "argmax in the forward pass": {"w1": "non-differentiable", "w2": "ok"},
    "NumPy relu": {"w1": "numpy-in-path", "b1": "numpy-in-path", "b2": "ok"},
    "frozen bias": {"b2": "not-trainable", "w1": "ok"},
    "dead relu": {"w1": "zero-gradient", "b2": "ok"},
    "untracked tf.Variable": {"scaled.scale": "untracked-variable"},
}


@pytest.fixture(scope="module")
def model() -> NoneMapModel:
    return NoneMapModel()


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_each_bug_is_diagnosed_with_its_cause(model, bug):
    """Does every bug in the menu get the cause it was built to show, variable by variable?"""
    causes = {row.name: row.cause or "ok" for row in model.rows(bug)}
    for name, cause in EXPECTED[bug].items():
        assert causes[name] == cause, (bug, name, causes)


def test_menu_covers_every_bug(model):
    """Does the dropdown offer exactly the catalogued bugs?"""
    assert sorted(model.bugs) == sorted(EXPECTED)


def test_rows_are_coloured_by_status(model):
    """Is each row's colour the one for its status (ok green, zero amber, None red)?"""
    rows = model.rows("dead relu") + model.rows("frozen bias")
    assert {r.status for r in rows} == {"ok", "zero", "None"}
    assert all(r.colour == COLOURS[r.status] for r in rows)


def test_report_is_cached(model):
    """Is each bug diagnosed once and then reused?"""
    assert model.report("frozen bias") is model.report("frozen bias")


def test_unknown_bug_lists_the_choices(model):
    """Does an unknown bug raise ValueError naming every valid one?"""
    with pytest.raises(ValueError) as err:
        model.rows("typo bug")
    assert all(bug in str(err.value) for bug in model.bugs)


def test_html_puts_each_variable_with_its_explanation(model):
    """Does the HTML hold a bar per variable, in its colour, with the diagnosis as code-formatted text?"""
    rows = model.rows("stop_gradient on the hidden layer")
    page = render_html("stop", "a test", rows)
    assert page.count(COLOURS["None"]) == 2 and page.count(COLOURS["ok"]) == 2
    assert "<code>tf.stop_gradient" in page


def test_html_names_each_diagnosed_cause_by_its_code(model):
    """Does the map show each variable's cause code, the one Exercise 5.1 answers with, and none for a healthy one?"""
    rows = model.rows("loss outside the tape") + model.rows("healthy step")
    page = render_html("both", "a test", rows)
    assert page.count("<code>outside-tape</code>") == sum(r.cause == "outside-tape" for r in rows) > 0
    assert all(f"<code>{r.cause}</code>" in page for r in rows if r.cause)


def test_dropdown_change_redraws_silently(capfd):
    """Does choosing another bug redraw the map, silently? (Its speed is measured in bench/notebooks.py.)"""
    view = NoneMap(bug="healthy step")
    view.dropdown.value = "frozen bias"
    assert "not trainable" in view.view.value or "trainable=False" in view.view.value
    frozen_page = view.view.value
    view.dropdown.value = "healthy step"
    assert view.view.value != frozen_page
    view.dropdown.value = "frozen bias"
    assert view.view.value == frozen_page
    assert capfd.readouterr() == ("", "")
    assert "application/vnd.jupyter.widget-view+json" in view._repr_mimebundle_()


def test_unknown_initial_bug_raises():
    """Does building the map on an unknown bug fail clearly?"""
    with pytest.raises(ValueError):
        NoneMap(bug="nope")


def test_a_bug_diagnosed_for_the_first_time_shows_the_cue_and_a_second_time_not(spy_busy, busy_now):
    """Is the menu greyed with the cue while a bug's diagnosis first runs, and not when it is shown again?"""
    view = NoneMap(bug="healthy step")
    seen = spy_busy(view, view.model, "rows")
    view.dropdown.value = "dead relu"
    view.dropdown.value = "healthy step"
    view.dropdown.value = "dead relu"
    assert [s.busy for s in seen] == [True, False, False]
    assert "dead relu" in seen[0].cue and busy_now(view).idle and not view.dropdown.disabled
