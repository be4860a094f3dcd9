"""Behaviours of the training-step explorer: the model's loop, its divergence report, and the view."""
import math

import pytest

from tapelab.widgets.training import LEARNING_RATES, TrainingExplorer, TrainingModel, readout


@pytest.fixture
def model() -> TrainingModel:
    return TrainingModel()


@pytest.fixture
def explorer() -> TrainingExplorer:
    return TrainingExplorer()


def test_three_steps_reproduce_the_worked_example(model):
    """Do three SGD(0.1) steps give the notebook's losses [41, 18.415, 8.274] and w 2.72, b 0.953?"""
    state = model.step(3)
    assert state.losses == pytest.approx((41.0, 18.415, 8.27435), rel=1e-5)
    assert state.values == pytest.approx((2.72, 0.953), rel=1e-5)
    assert state.names == ("dense/kernel", "dense/bias")


def test_first_gradient_norms_are_those_of_minus_35_and_minus_12(model):
    """Are the bars after step 1 the norms of the worked example's gradients -35 and -12?"""
    assert model.step().grad_norms == pytest.approx((35.0, 12.0))


def test_stable_limit_separates_the_menus_rates(model):
    """Is the example's rate below the SGD stability limit and the 'too high' rates above it?"""
    assert 0.1 < model.stable_limit < 0.15
    for label, rate in LEARNING_RATES:
        assert ("too high" in label) == (rate > model.stable_limit)


def test_a_stable_rate_converges_without_alarm(model):
    """With rate 0.1, does the loss keep falling, with no growth or divergence reported?"""
    state = model.step(60)
    assert state.losses[-1] < 1e-2 * state.losses[0]
    assert not state.growing and not state.diverged
    assert "Diverged" not in readout(state) and "growing" not in readout(state)


def test_a_too_high_rate_grows_then_diverges_and_stops(model):
    """With rate 0.5, is growth reported, then divergence once the loss is not finite, and no further step taken?"""
    model.set_learning_rate(0.5)
    state = model.step(5)
    assert state.growing and not state.diverged and "growing" in readout(state)
    state = model.step(100)
    assert state.diverged and not all(map(math.isfinite, (state.losses[-1], *state.grad_norms)))
    assert "Diverged" in readout(state) and "Reset" in readout(state)
    assert model.step(10).step == state.step


def test_reset_restores_step_zero_and_zero_variables(model):
    """After a divergence, does reset give step 0, zero variables and a loss of 41 again?"""
    model.set_learning_rate(0.5)
    model.step(100)
    state = model.reset()
    assert state.step == 0 and state.values == (0.0, 0.0) and not state.diverged
    assert model.step().losses == (41.0,)


def test_changing_the_rate_keeps_the_history(model):
    """Does a new learning rate apply from the next step without erasing the losses so far?"""
    before = model.step(2).losses
    state = model.set_learning_rate(0.01)
    assert state.losses == before and state.learning_rate == 0.01
    assert model.step().losses[:2] == before


@pytest.mark.parametrize("bad", [0.0, -0.1])
def test_a_non_positive_rate_is_refused(model, bad):
    """Is a zero or negative learning rate rejected with ValueError?"""
    with pytest.raises(ValueError):
        model.set_learning_rate(bad)


def test_zero_steps_is_refused(model):
    """Does asking for 0 steps raise ValueError?"""
    with pytest.raises(ValueError):
        model.step(0)


def test_a_rate_not_in_the_menu_is_refused():
    """Does building the explorer with a rate outside its menu raise ValueError naming the choices?"""
    with pytest.raises(ValueError, match="0.01"):
        TrainingExplorer(learning_rate=0.07)


def test_step_buttons_advance_and_redraw(explorer):
    """Do the Step and Step x10 buttons add 1 and 10 steps, and change the image and readout?"""
    before_png = explorer.image.value
    explorer.step_buttons[0].click()
    assert explorer.model.state().step == 1 and "Step 1" in explorer.readout.value
    explorer.step_buttons[1].click()
    assert explorer.model.state().step == 11
    assert explorer.image.value != before_png


def test_loss_curve_shows_every_finite_loss(explorer):
    """Does the loss line hold one point per step, at the model's losses?"""
    explorer.step(5)
    (curve,) = [line for line in explorer.figure.axes[0].get_lines() if line.get_label() == "loss"]
    assert list(curve.get_ydata()) == pytest.approx(list(explorer.model.state().losses))


def test_rate_menu_and_reset_button(explorer):
    """Does choosing 0.5 lead to a divergence message, and Reset clear it back to step 0?"""
    explorer.rate.value = 0.5
    explorer.step(25)
    explorer.step(25)
    assert "Diverged" in explorer.readout.value
    explorer.reset_button.click()
    assert explorer.model.state().step == 0 and "Step 0" in explorer.readout.value
    assert explorer.model.learning_rate == 0.5


def test_explorer_is_silent_and_displays_as_a_widget(capfd):
    """Does building, stepping to divergence and resetting print nothing, and display as a widget view?"""
    view = TrainingExplorer(learning_rate=0.5)
    view.step(50)
    view.reset()
    bundle = view._repr_mimebundle_()
    assert capfd.readouterr() == ("", "")
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_step_x25_greys_every_control_and_shows_the_cue_while_it_trains(explorer, spy_busy, busy_now):
    """While Step ×25 trains, are the menu and all buttons disabled and the cue shown, and back after?"""
    seen = spy_busy(explorer, explorer.model, "step")
    explorer.step_buttons[2].click()
    assert len(seen) == 1 and seen[0].busy and "25 steps" in seen[0].cue
    assert explorer.model.state().step == 25
    after = busy_now(explorer)
    assert after.idle and not any(after.disabled)


@pytest.mark.parametrize("act, method", [(lambda view: view.reset_button.click(), "reset"),
                                         (lambda view: setattr(view.rate, "value", 0.01), "set_learning_rate")])
def test_reset_and_the_rate_menu_run_under_the_cue(explorer, spy_busy, busy_now, act, method):
    """Do Reset and a new rate (both run TensorFlow before redrawing) show the cue while they run?"""
    seen = spy_busy(explorer, explorer.model, method)
    act(explorer)
    assert len(seen) == 1 and seen[0].busy
    assert busy_now(explorer).idle and not any(busy_now(explorer).disabled)


def test_controls_come_back_after_a_step_that_raises(explorer, monkeypatch, busy_now):
    """If training raises, does the error reach the caller with every control enabled and no cue left?"""
    def broken(n):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(explorer.model, "step", broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        explorer.step(25)
    assert busy_now(explorer).idle and not any(busy_now(explorer).disabled)
