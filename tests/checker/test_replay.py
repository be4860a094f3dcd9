"""The grader's judge (tapelab.checker.replay): the checks marked `replayable` give the same outcome judged from
their records as live in the kernel; values cross as JSON with their types; a record that does not fit its
check fails it, never passes it and never crashes the judge. `python tools/replayable.py` sweeps every
exercise with both catalogues of mistakes and more variants."""
import json
import math

import numpy as np
import pytest
import tensorflow as tf

from answers import define, exercise_named, mistakes, reference_answers, stub_answers, variant_reference
from mutation.inprocess import exercises, grade_twice
from tapelab.checker import replay
from tapelab.checker.messages import Feedback, Message
from tapelab.paths import assignment_names

SEED = 1000  # the first seed tools/named.py and tests/exercises/test_variants.py use
ALL = [(nb, e) for nb in assignment_names() for e in exercises(nb)]
REPLAYABLE = [(nb, e) for nb, e in ALL if exercise_named(e.test_id.removesuffix("_test")).replayable]
GRADED = [(nb, e, seed) for nb, e in REPLAYABLE
          for seed in (None, SEED)[:1 + exercise_named(e.test_id.removesuffix("_test")).space.varies]]


def _answers(notebook: str, answer_id: str, seed: int | None) -> list[tuple[str, str]]:
    """The reference, every catalogued mistake (on the notebook's numbers; `make test` stays bounded, and
    `tools/replayable.py --variants N` sweeps them on variants) and the stub."""
    found = mistakes(notebook, seed).get(answer_id, []) if seed is None else []
    return [("reference", variant_reference(notebook, answer_id, seed)),
            *((f"mistake {m.name}", m.code) for m in found), ("stub", stub_answers(notebook)[answer_id])]


def test_some_exercises_are_judged_outside_the_kernel():
    """Are the replayable checks a real share of the course (so the sweep below is no empty loop)?"""
    assert len(REPLAYABLE) >= 10


@pytest.mark.parametrize("notebook, exercise, seed", GRADED,
                         ids=[f"{e.test_id.removesuffix('_test')}-{seed or 'default'}" for _, e, seed in GRADED])
def test_judged_as_live(notebook, exercise, seed):
    """Does the judge give the reference, each catalogued mistake and the stub the outcome, failing part, message
    and cause the student's kernel gave, on the notebook's numbers and on a variant?"""
    differ, outcomes = [], []
    for label, code in _answers(notebook, exercise.answer_id, seed):
        live, judged = grade_twice(exercise, code, f"test_replay {label}", seed=seed)
        outcomes.append(live.outcome)
        if (live.outcome, live.part, live.message, live.cause) != (judged.outcome, judged.part, judged.message,
                                                                    judged.cause):
            differ.append(f"{label}: live {live.outcome} {live.cause} {live.message!r}\n"
                          f"    judged {judged.outcome} {judged.cause} {judged.message!r}")
    assert outcomes[0] == "passed" and outcomes[-1] == "not_attempted", outcomes  # graded for real
    assert not differ, "\n".join(differ)


STORED = [(nb, e) for nb, e in REPLAYABLE
          if exercise_named(e.test_id.removesuffix("_test")).expectations(
              exercise_named(e.test_id.removesuffix("_test")).visible_cases[0])]


def test_some_replayable_checks_use_stored_expected_values():
    assert len(STORED) >= 2  # the test below is no empty loop


@pytest.mark.parametrize("notebook, exercise", STORED, ids=[e.answer_id for _, e in STORED])
def test_a_kernel_that_holds_no_stored_values_records_all_the_judge_needs(notebook, exercise, monkeypatch):
    """A grading kernel never holds a hidden case's stored expected values (`replay.Withheld`: its check moves on
    to the next case): judged from what it recorded, do the reference, the first mistake and the stub get the
    outcome a kernel holding them shows?"""
    from tapelab.checker import expected

    real = expected.references
    answers = _answers(notebook, exercise.answer_id, None)
    for label, code in [answers[0], answers[1], answers[-1]]:
        live, _ = grade_twice(exercise, code, f"test_replay {label}")
        monkeypatch.setattr(expected, "references", lambda: None if replay.recording() else real())
        _, judged = grade_twice(exercise, code, f"test_replay {label} withheld")
        monkeypatch.setattr(expected, "references", real)
        assert (live.outcome, live.part, live.message, live.cause) == (judged.outcome, judged.part, judged.message,
                                                                        judged.cause), label


# -- values -------------------------------------------------------------------------------------------------
def _crossed(value):
    """`value` as the judge reads it: encoded, sent as JSON text, decoded."""
    return replay.decode(json.loads(json.dumps(replay.encode(value))))


@pytest.mark.parametrize("value", [None, True, False, 0, -7, 2**70, 1.5, -0.0, "tape", "", b"Sum",
                                   [1, (2.0, "x")], (1, [2, None]), {"a": [1.0], "b": {"c": (True,)}}, [], ()])
def test_python_values_keep_their_type(value):
    """Do Python values come back equal and of the same type, lists as lists and tuples as tuples, nested too?"""
    back = _crossed(value)
    assert back == value and repr(back) == repr(value)


def test_nan_and_infinities_come_back():
    """Do NaN and both infinities (no JSON number) come back as floats?"""
    back = _crossed([math.nan, math.inf, -math.inf])
    assert math.isnan(back[0]) and back[1:] == [math.inf, -math.inf] and all(type(v) is float for v in back)


@pytest.mark.parametrize("array", [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1.5, np.nan, -np.inf]),
                                   np.array([[1, -2]], np.int32), np.array([3], np.int64), np.array([True, False]),
                                   np.array([1 + 2j], np.complex64), np.zeros((0, 4), np.float16),
                                   np.array(2.5, np.float64)])
def test_numpy_arrays_keep_dtype_shape_and_values(array):
    """Does an array (a 0-d one included) come back an array of the same dtype, shape and values?"""
    back = _crossed(array)
    assert type(back) is np.ndarray and back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back, array)


@pytest.mark.parametrize("scalar", [np.float32(1.25), np.float64(-3.5), np.int32(7), np.int64(-2), np.bool_(True)])
def test_numpy_scalars_stay_scalars(scalar):
    """Does a NumPy scalar come back a scalar of its own type (not an array, not a Python number)?"""
    back = _crossed(scalar)
    assert type(back) is type(scalar) and back == scalar


@pytest.mark.parametrize("tensor", [tf.constant([[1.0, 2.0]], tf.float32), tf.constant(3.25, tf.float64),
                                    tf.constant([4, -5, 6], tf.int32)])
def test_eager_tensors_keep_dtype_shape_and_values(tensor):
    """Does an eager tensor come back a tensor of the same dtype, shape and values?"""
    back = _crossed(tensor)
    assert tf.is_tensor(back) and not isinstance(back, tf.Variable)
    assert back.dtype == tensor.dtype and back.shape == tensor.shape
    np.testing.assert_array_equal(back.numpy(), tensor.numpy())


def test_a_variable_stays_a_variable():
    """Does a tf.Variable come back a Variable with its dtype, values and trainability?"""
    back = _crossed(tf.Variable([1.0, 2.0], dtype=tf.float64, trainable=False))
    assert isinstance(back, tf.Variable) and back.dtype == tf.float64 and not back.trainable
    np.testing.assert_array_equal(back.numpy(), [1.0, 2.0])


def test_indexed_slices_keep_values_indices_and_shape():
    """Does an IndexedSlices (an embedding's gradient) come back as one, with its parts?"""
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([3], tf.int64), tf.constant([5, 2], tf.int64))
    back = _crossed(slices)
    assert isinstance(back, tf.IndexedSlices)
    for part in ("values", "indices", "dense_shape"):
        assert getattr(back, part).dtype == getattr(slices, part).dtype
        np.testing.assert_array_equal(getattr(back, part).numpy(), getattr(slices, part).numpy())


def test_an_unknown_object_keeps_its_type_name_and_repr():
    """Does an object of no known form come back as an object of a class of its name, showing its repr?"""
    class Tracker:
        def __repr__(self):
            return "Tracker(3 calls)"

    back = _crossed([Tracker()])[0]
    assert type(back).__name__ == "Tracker" and repr(back) == "Tracker(3 calls)"


# -- records that do not fit -----------------------------------------------------------------------------
@pytest.fixture
def record(monkeypatch) -> str:
    """The record of Exercise 1.1's visible check on its reference, taken as a grading kernel takes it."""
    monkeypatch.setenv("TAPELAB_RECORD", "1")
    replay.taken()
    namespace = define(reference_answers("01_basic_tape")["ex1_1_answer"], "test_replay record", {"tf": tf})
    assert isinstance(type(exercise_named("ex1_1"))().outcome(namespace["cubic_slope"]), Message)
    taken = replay.taken()
    monkeypatch.delenv("TAPELAB_RECORD")
    assert len(taken) == 1
    return taken[0]


def _judged(text: str | None):
    return replay.judge(type(exercise_named("ex1_1"))(), {}, text)


def test_the_record_as_taken_is_judged_correct(record):
    """Does the judge pass the reference's own record (so the forgeries below fail for what they change)?"""
    assert isinstance(_judged(record), Message) and _judged(record).kind == "correct"


def _forged(record: str, change) -> str:
    data = json.loads(record)
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("forge", [
    pytest.param(lambda r: r[: len(r) // 2], id="broken JSON"),
    pytest.param(lambda r: "[1, 2]", id="not a record"),
    pytest.param(lambda r: None, id="no record"),
    pytest.param(lambda r: _forged(r, lambda d: d["runs"].pop()), id="fewer runs"),
    pytest.param(lambda r: _forged(r, lambda d: d["runs"].clear()), id="no runs"),
    pytest.param(lambda r: _forged(r, lambda d: d["runs"][0].update(value={"weird": 1})), id="unknown value form"),
    pytest.param(lambda r: _forged(r, lambda d: d["runs"][0].update(value={"numpy": {"dtype": "<U3", "shape": [1],
                                                                                      "data": "YWJj"}})),
                 id="array of strings"),
    pytest.param(lambda r: _forged(r, lambda d: d["runs"][0].update(value={"numpy": {"dtype": "<f4", "shape": [9],
                                                                                      "data": "AAAA"}})),
                 id="array of the wrong size"),
    pytest.param(lambda r: _forged(r, lambda d: d["runs"].__setitem__(0, "value")), id="a run of no form"),
    pytest.param(lambda r: _forged(r, lambda d: d.update(answer={"missing": True})), id="missing answer"),
])
def test_a_record_that_does_not_fit_fails_the_check(record, forge):
    """Does a broken or forged record give a failure the student is shown, never Correct and never a crash?"""
    found = _judged(forge(record))
    assert isinstance(found, Feedback) and found.exercise == "1.1" and str(found)
