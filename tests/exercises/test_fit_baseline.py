"""The reference `fit` that exercises 6.1 and 6.2 compare a student's step with runs Keras's step eagerly (no
graph to trace for a model used once): on every case the notebook checks, visible and hidden, it must give
the numbers a compiled `fit` gives, and the plain model's `evaluate` the numbers `evaluate` gives. And every
checker fit, the student's and the reference, fits a repeated dataset `steps` batches an epoch: it must give
the numbers of fitting the batches themselves."""
import ast
import json
from pathlib import Path

import keras
import numpy as np
import pytest

from tapelab.exercises.dtype_policies import dtype_policy
from tapelab.exercises.fit_evaluate import _plain_evaluate, _unweighted
from tapelab.exercises.fit_cases import batches_read
from tapelab.exercises.fit_match import EPOCHS, FitCase, _baseline
from tapelab.exercises.fit_vs_custom import ex6_1, ex6_2
from tapelab.grading.hidden import split

NOTEBOOK = Path(__file__).resolve().parents[2] / "solutions" / "06_fit_vs_custom.ipynb"


def _hidden_cases(grade_id: str) -> list[FitCase]:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    source = next("".join(c["source"]) for c in cells
                  if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)
    call = ast.parse(split(source)[1]).body[0].value
    return [FitCase(*case) for case in ast.literal_eval(next(k.value for k in call.keywords if k.arg == "cases"))]


CASES = sorted({*ex6_1.visible_cases, *ex6_2.visible_cases, *_hidden_cases("ex6_1_test"),
                *_hidden_cases("ex6_2_test")}, key=repr)


def test_the_hidden_cases_are_read():
    assert len(_hidden_cases("ex6_1_test")) == 2 and len(_hidden_cases("ex6_2_test")) == 2


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.describe())
def test_eager_reference_matches_a_compiled_fit(case):
    rng = np.random.default_rng(case.seed)
    weights = [rng.normal(size=(case.features, 1)).astype(np.float32), rng.normal(size=(1,)).astype(np.float32)]
    with dtype_policy(case.policy):
        eager = _baseline(weights, case)
        compiled = _baseline(weights, case, run_eagerly=False)
    (history, final, replay), (want_history, want_final, want_replay) = eager, compiled
    assert sorted(history) == sorted(want_history)
    for key in want_history:
        np.testing.assert_allclose(history[key], want_history[key], rtol=1e-6, atol=1e-7, err_msg=key)
    for got, want in zip(final, want_final):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for key in want_replay:
        np.testing.assert_allclose(replay[key], want_replay[key], rtol=1e-6, atol=1e-7, err_msg=key)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.describe())
def test_a_repeated_dataset_fits_as_the_dataset_itself(case):
    """`FitCase.fit` gives `fit` the batches repeated, `steps` to an epoch (one iterator for the run): the same
    history and weights as fitting the batches themselves for the same epochs."""
    rng = np.random.default_rng(case.seed + 1)
    weights = [rng.normal(size=(case.features, 1)).astype(np.float32), rng.normal(size=(1,)).astype(np.float32)]
    runs = []
    with dtype_policy(case.policy):
        for fit in (case.fit, lambda model: model.fit(case.batches(), epochs=EPOCHS, verbose=0,
                                                      shuffle=False).history):
            inputs = keras.Input((case.features,))
            model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
            model.set_weights(weights)
            model.compile(optimizer=keras.optimizers.SGD(0.1), loss=case.loss_object(),
                          metrics=list(case.metrics) or None, jit_compile=False, run_eagerly=True)
            runs.append((fit(model), model.get_weights()))
    (history, final), (want_history, want_final) = runs
    assert sorted(history) == sorted(want_history) and len(want_history["loss"]) == EPOCHS
    for key in want_history:
        np.testing.assert_array_equal(history[key], want_history[key], err_msg=key)
    for got, want in zip(final, want_final):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.describe())
def test_eager_plain_evaluate_matches_evaluate(case):
    """Does the plain model's `evaluate` that 6.1 and 6.2 compare a student's `test_step` with (Keras's own
    `test_step` run batch by batch) report what `evaluate` itself reports, on every case?"""
    rng = np.random.default_rng(case.seed + 2)
    weights = [rng.normal(size=(case.features, 1)).astype(np.float32), rng.normal(size=(1,)).astype(np.float32)]
    with dtype_policy(case.policy):
        got = _plain_evaluate(weights, case, case.batches())
        model = case.model()
        model.set_weights(weights)
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss=case.loss_object(), **case.metric_options(),
                      jit_compile=False)
        want = model.evaluate(case.batches(), verbose=0, return_dict=True)
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], float(want[key]), rtol=1e-6, atol=1e-7, err_msg=key)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.describe())
def test_the_batches_read_once_evaluate_exactly_as_the_dataset(case):
    """6.1's check evaluates the plain model on the case's batches read once per case and process (a grading judge
    checks every student on the same cases): exactly what iterating the case's dataset gives, the last batch too."""
    rng = np.random.default_rng(case.seed + 3)
    weights = [rng.normal(size=shape).astype(np.float32) for shape in case.shapes()]
    read = batches_read(case)
    assert read is batches_read(case)  # read once
    assert _plain_evaluate(weights, case, read) == _plain_evaluate(weights, case, case.batches())
    assert (_plain_evaluate(weights, case, read[-1:])
            == _plain_evaluate(weights, case, case.batches().skip(case.steps - 1)))
    unweighted = case.batches().map(lambda x, y, *_: (x, y))  # the weights-dropped alternative's batches
    assert _plain_evaluate(weights, case, _unweighted(case)) == _plain_evaluate(weights, case, unweighted)


def _answer_61(*edits):
    """Exercise 6.1's reference (the notebook's variant) with each (old, new) edit made, defined in a namespace of
    its own: its `make_custom_model`."""
    import tapelab_answers
    import tensorflow as tf

    code = tapelab_answers.answer("6.1").solution
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new)
    namespace = {"keras": keras, "tf": tf, "np": np}
    exec(compile(code, "<6.1 answer>", "exec"), namespace)
    return namespace["make_custom_model"]


_EAGER_ONLY = ("            return {m.name: m.result() for m in self.metrics}",
               "            print(float(loss))\n            return {m.name: m.result() for m in self.metrics}")


def test_hidden_cases_trace_a_step_no_check_has_traced_and_only_that():
    """The hidden cases skip the trace only for a function the visible check has fitted in a graph: checked alone,
    a step that reads a tensor's value still fails them; after the visible check, the reference's hidden cases
    fit without a new trace."""
    from tapelab.checker.messages import Incorrect

    hidden = _hidden_cases("ex6_1_test")
    with pytest.raises(Incorrect, match="SymbolicTensor"):
        ex6_1.check(_answer_61(_EAGER_ONLY), cases=hidden)
    reference = _answer_61()
    ex6_1.check(reference)
    traced = []
    original = keras.Model.make_train_function
    try:
        keras.Model.make_train_function = lambda self, *a, **k: (traced.append(self.run_eagerly),
                                                                  original(self, *a, **k))[1]
        ex6_1.check(reference, cases=hidden)
    finally:
        keras.Model.make_train_function = original
    assert traced and not any(eager is False for eager in traced)


def test_a_case_says_whose_compile_options_it_names():
    """6.1's student compiles with the case's loss and metrics; 6.2's with an optimizer only, so its messages
    name them as the plain model's, never as the student's."""
    assert ex6_1.compile_loss and not ex6_2.compile_loss
    for case in ex6_1.visible_cases:
        own = case.describe(ex6_1.compile_loss)
        assert f"loss={case.loss!r}" in own and ";" not in own
    for case in ex6_2.visible_cases:
        yours, plain = case.describe(ex6_2.compile_loss).split("; ")
        assert "loss=" not in yours and "metrics" not in yours
        assert plain.startswith("the plain model compared with yours is compiled with") and f"loss={case.loss!r}" in plain


def test_a_traced_fit_creates_no_variable_while_tracing():
    """Is every variable of a model compiled with a case's metrics made before `fit` traces its step? A metric
    built inside the first trace (as one named by a string is) makes TensorFlow trace the step a second time."""
    import tensorflow as tf

    case = next(case for case in ex6_1.visible_cases if case.weighted)
    inside = []

    def creator(next_creator, **kwargs):
        inside.append(tf.inside_function())
        return next_creator(**kwargs)

    model = case.model()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=case.loss_object(), **case.metric_options(),
                  jit_compile=False)
    with tf.variable_creator_scope(creator):
        history = case.fit(model)
    assert sorted(history) == ["loss", *case.metrics] and not any(inside)
