"""Behaviours of the fit-versus-custom-loop comparison: equal curves, clipping, caching, and the view."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.widgets.comparison import CLIP_MODES, THRESHOLDS, ComparisonExplorer, ComparisonModel, clip


@pytest.fixture(scope="module")
def model() -> ComparisonModel:
    return ComparisonModel()


@pytest.fixture(scope="module")
def explorer(model) -> ComparisonExplorer:
    return ComparisonExplorer(model=model)


def test_unclipped_custom_loop_gives_fits_losses(model):
    """Without clipping, does the tape loop reproduce fit's loss per epoch?"""
    state = model.state("none")
    assert state.same_as_fit
    np.testing.assert_allclose(state.custom_losses, state.fit_losses, rtol=1e-5)
    assert len(state.fit_losses) == model.epochs and state.fit_losses[-1] < state.fit_losses[0] / 100


@pytest.mark.parametrize("option", [{}, {"clipnorm": 1.0}])
def test_fit_of_the_repeated_batch_is_fit_on_the_arrays(model, option):
    """The model fits the full batch repeated, one batch an epoch (one iterator for the run): are its losses,
    bit for bit, those of `fit(x, y, batch_size=4)` for as many epochs, with and without clipping?"""
    inputs = keras.Input((2,))
    plain = keras.Model(inputs, keras.layers.Dense(1, kernel_initializer="zeros")(inputs))
    plain.compile(optimizer=keras.optimizers.SGD(model.learning_rate, **option), loss="mse", jit_compile=False,
                  run_eagerly=True)
    want = plain.fit(model.x, model.y, epochs=model.epochs, batch_size=len(model.x), verbose=0, shuffle=False)
    got = model._fit(*(next(iter(option.items())) if option else ("none", 0.0)))
    assert len(got) == model.epochs
    np.testing.assert_array_equal(got, want.history["loss"])


def test_first_gradient_is_the_analytic_one(model):
    """Is the first gradient, at zero weights, -2 mean(y x) for the kernel and -2 mean(y) for the bias?"""
    state = model.state("none")
    expected = np.concatenate([-2 * (model.x * model.y).mean(axis=0), [-2 * model.y.mean()]])
    np.testing.assert_allclose(state.grad_before, expected, rtol=1e-6)
    np.testing.assert_array_equal(state.grad_before, state.grad_after)


@pytest.mark.parametrize("mode", CLIP_MODES)
def test_first_gradient_is_the_trained_runs_first_gradient(model, mode):
    """Does `first_gradient`, which trains nothing, give the gradient before and after clipping that the
    tape loop of that setting recorded at its first step?"""
    before, after = model.first_gradient(mode, 1.0)
    state = model.state(mode, 1.0)
    np.testing.assert_array_equal(before, state.grad_before)
    np.testing.assert_array_equal(after, state.grad_after)
    with pytest.raises(ValueError, match="unknown clipping mode"):
        model.first_gradient("clip", 1.0)


@pytest.mark.parametrize("mode", CLIP_MODES[1:])
def test_clip_matches_the_keras_optimizer_option(mode):
    """Does `clip(grads, mode, t)` give the same SGD(1) step as the optimizer's own `mode=t` option?"""
    grads = [tf.constant([[3.0], [4.0]]), tf.constant([12.0])]
    variables = [tf.Variable(tf.zeros((2, 1))), tf.Variable(tf.zeros((1,)))]
    keras.optimizers.SGD(1.0, **{mode: 6.5 if mode != "clipvalue" else 1.0}).apply(grads, variables)
    mine = clip(grads, mode, 6.5 if mode != "clipvalue" else 1.0)
    for variable, clipped in zip(variables, mine):
        np.testing.assert_allclose(variable.numpy(), -clipped.numpy(), rtol=1e-6)


def test_global_clipping_keeps_direction_and_caps_length(model):
    """Does global_clipnorm give a gradient of norm t pointing the same way, while clipvalue bends it?"""
    state = model.state("global_clipnorm", 5.0)
    assert np.linalg.norm(state.grad_after) == pytest.approx(5.0, rel=1e-5)
    cosine = state.grad_after @ state.grad_before / np.linalg.norm(state.grad_after) / np.linalg.norm(state.grad_before)
    assert cosine == pytest.approx(1.0, abs=1e-6)
    bent = model.state("clipvalue", 5.0)
    assert np.abs(bent.grad_after).max() <= 5.0 + 1e-6
    assert not np.allclose(bent.grad_after / np.linalg.norm(bent.grad_after),
                           state.grad_before / np.linalg.norm(state.grad_before))


def test_tight_clipping_changes_the_curve_and_a_loose_one_does_not(model):
    """Does a threshold of 0.5 slow training against the unclipped run, while one above every gradient norm
    leaves the unclipped curve?"""
    tight, loose = model.state("global_clipnorm", 0.5), model.state("global_clipnorm", 50.0)
    assert tight.clipping_matters and tight.custom_losses[-1] > tight.unclipped_losses[-1]
    assert not loose.clipping_matters
    np.testing.assert_allclose(loose.custom_losses, loose.unclipped_losses, rtol=1e-5)


@pytest.mark.parametrize("mode", CLIP_MODES[1:])
def test_clipped_loop_matches_fit_clipped_the_same_way(model, mode):
    """Like with like: does the loop clipped by hand give the losses of `fit` whose optimizer has `mode=t`,
    where the unclipped `fit` differs?"""
    state = model.state(mode, 1.0)
    assert state.same_as_fit and state.clipping_matters
    np.testing.assert_allclose(state.custom_losses, state.fit_losses, rtol=1e-5)


def test_settings_are_cached_and_arrays_read_only(model):
    """Is each setting computed once, 'none' shared across thresholds, and the arrays read-only?"""
    first = model.state("clipnorm", 2.0)
    count = model.cached
    again = model.state("clipnorm", 2.0)
    model.state("none", 1.0), model.state("none", 20.0)
    assert again.custom_losses is first.custom_losses
    assert model.cached <= count + 1
    assert not first.custom_losses.flags.writeable and not first.grad_after.flags.writeable


@pytest.mark.parametrize("args", [("sideways", 1.0), ("clipnorm", 0.0)])
def test_bad_settings_raise(model, args):
    """Do an unknown mode and a non-positive threshold raise ValueError?"""
    with pytest.raises(ValueError):
        model.state(*args)


def test_threshold_off_the_slider_raises(model):
    """Does building the view with a threshold the slider does not offer raise ValueError listing the choices?"""
    with pytest.raises(ValueError, match="choose from"):
        ComparisonExplorer(threshold=3.0, model=model)


def test_changing_mode_redraws_the_curve_bars_and_readout(explorer):
    """Does picking global_clipnorm put the clipped curve on the plot and change image and readout?"""
    explorer.dropdown.value = "none"
    explorer.slider.value = 0.5
    before_png, before_text = explorer.image.value, explorer.readout.value
    explorer.dropdown.value = "global_clipnorm"
    state = explorer.model.state("global_clipnorm", 0.5)
    np.testing.assert_array_equal(explorer._custom_line.get_ydata(), state.custom_losses)
    np.testing.assert_array_equal(explorer._fit_line.get_ydata(), state.fit_losses)
    np.testing.assert_array_equal(explorer._reference_line.get_ydata(), state.unclipped_losses)
    assert [bar.get_height() for bar in explorer._after_bars] == pytest.approx(list(state.grad_after))
    assert explorer.image.value != before_png and explorer.readout.value != before_text
    assert "global_clipnorm=0.5" in explorer.readout.value and "same losses" in explorer.readout.value
    assert "clipping changed training" in explorer.readout.value


def test_slider_is_disabled_without_clipping(explorer):
    """Is the threshold slider greyed out when the mode is 'none'?"""
    explorer.dropdown.value = "none"
    assert explorer.slider.disabled
    explorer.dropdown.value = "clipvalue"
    assert not explorer.slider.disabled


def test_every_slider_value_is_offered():
    """Does the slider offer exactly the thresholds the model caches?"""
    assert tuple(THRESHOLDS) == tuple(sorted(THRESHOLDS))


def test_explorer_is_silent_and_displays_as_a_widget(capfd, model):
    """Does building and updating the explorer print nothing, and display as a widget view?"""
    view = ComparisonExplorer(mode="clipnorm", threshold=2.0, model=model)
    view.slider.value = 10.0
    view.update()
    bundle = view._repr_mimebundle_()
    assert capfd.readouterr() == ("", "")
    assert "application/vnd.jupyter.widget-view+json" in bundle


def _uncached(explorer):
    """A (mode, threshold) whose loop has not run yet (the model is shared by the module), off the
    slider's current value so that moving the slider there is a change."""
    return next((m, t) for t in THRESHOLDS for m in CLIP_MODES[1:]
                if not explorer.model.has(m, t) and t != explorer.slider.value)


def test_a_new_setting_trains_under_the_cue_and_a_cached_one_redraws_without(explorer, model, spy_busy, busy_now):
    """Does a setting never run before show the cue while its loop trains, and going back to a cached one not?"""
    explorer.dropdown.value = "none"
    mode, threshold = _uncached(explorer)
    seen = spy_busy(explorer, model, "state")
    explorer.slider.value = threshold  # without clipping: cached, no cue
    explorer.dropdown.value = mode  # never run: trains under the cue
    explorer.dropdown.value = "none"  # cached again
    assert [s.busy for s in seen] == [False, True, False]
    assert f"{mode}={threshold:g}" in seen[1].cue and seen[0].idle and seen[2].idle


def test_the_slider_ends_enabled_after_training_a_mode_chosen_from_none(explorer, busy_now):
    """Switching from 'none' (slider off) to a new clipping mode: is the slider on once the loop has trained?"""
    explorer.dropdown.value = "none"
    mode, threshold = _uncached(explorer)
    explorer.slider.value = threshold
    assert explorer.slider.disabled
    explorer.dropdown.value = mode
    assert not explorer.slider.disabled and not explorer.dropdown.disabled and busy_now(explorer).idle
    explorer.dropdown.value = "none"
    assert explorer.slider.disabled
