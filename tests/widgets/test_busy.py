"""Behaviours of the busy cue on its own: controls disabled and a note shown while a long action runs,
both restored however it ends."""
import ipywidgets as widgets
import pytest

from tapelab.widgets.controls import BusyCue


@pytest.fixture
def controls() -> list:
    return [widgets.Button(description="Step"), widgets.Dropdown(options=["a", "b"]),
            widgets.FloatSlider(value=1.0)]


@pytest.fixture
def busy(controls) -> BusyCue:
    return BusyCue(controls)


def test_controls_are_disabled_and_the_note_shown_while_the_block_runs(busy, controls):
    """Inside `working`, is every control disabled and the note showing what runs?"""
    with busy.working("training 25 steps"):
        assert [c.disabled for c in controls] == [True, True, True]
        assert "training 25 steps" in busy.label.value and busy.active
    assert [c.disabled for c in controls] == [False, False, False]
    assert busy.label.value == "" and not busy.active


def test_controls_and_note_are_restored_after_an_exception(busy, controls):
    """When the action raises, does the exception pass through with the controls enabled and the note gone?"""
    with pytest.raises(RuntimeError, match="boom"):
        with busy.working("training"):
            raise RuntimeError("boom")
    assert [c.disabled for c in controls] == [False, False, False] and busy.label.value == ""


def test_a_control_disabled_before_the_action_stays_disabled_after(busy, controls):
    """Does the end of an action give back each control's own state, not 'enabled' for all?"""
    controls[2].disabled = True
    with busy.working("training"):
        pass
    assert [c.disabled for c in controls] == [False, False, True]


def test_set_disabled_during_the_action_takes_effect_when_it_ends(busy, controls):
    """If the action's redraw enables or disables a control, does that state (not the one before) win?"""
    controls[2].disabled = True
    with busy.working("training"):
        busy.set_disabled(controls[2], False)
        busy.set_disabled(controls[0], True)
        assert controls[2].disabled  # still greyed while the action runs
    assert [c.disabled for c in controls] == [True, False, False]


def test_set_disabled_outside_an_action_applies_at_once(busy, controls):
    """Without a running action, does set_disabled change the control straight away?"""
    busy.set_disabled(controls[1], True)
    assert controls[1].disabled


def test_a_short_action_runs_without_the_cue(busy, controls):
    """With long=False, does the block run with the controls enabled and no note?"""
    with busy.working("redrawing", long=False):
        assert [c.disabled for c in controls] == [False, False, False] and busy.label.value == ""
        assert not busy.active


def test_a_nested_block_keeps_the_outer_cue_until_the_outer_block_ends(busy, controls):
    """Does leaving an inner `working` block leave the outer action's cue in place?"""
    with busy.working("resetting"):
        with busy.working("redrawing"):
            pass
        assert all(c.disabled for c in controls) and "resetting" in busy.label.value
    assert not any(c.disabled for c in controls) and busy.label.value == ""


def test_the_page_is_sent_the_busy_state_before_the_work_and_the_rest_state_after(busy, controls, monkeypatch):
    """Are the disabled flags and the note sent to the front end as they change, before the action's work?"""
    events = []
    for widget in [*controls, busy.label]:
        def send(data=None, buffers=None, widget=widget, **_):
            if data and data.get("method") == "update":
                events.append((widget, dict(data["state"])))
        monkeypatch.setattr(widget.comm, "send", send)
    with busy.working("training"):
        events.append("work")
    work = events.index("work")
    before, after = events[:work], events[work + 1:]
    assert {(id(w), s.get("disabled")) for w, s in before if "disabled" in s} == {(id(c), True) for c in controls}
    assert any(w is busy.label and "training" in s.get("value", "") for w, s in before)
    assert {(id(w), s.get("disabled")) for w, s in after if "disabled" in s} == {(id(c), False) for c in controls}
    assert any(w is busy.label and s.get("value") == "" for w, s in after)
