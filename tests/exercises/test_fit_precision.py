"""Exercises 6.3 and 6.4 under other precisions: a case run under `mixed_float16` leaves the global dtype
policy as it found it, TensorFlow's dtype errors are read right, and correct answers written another way
than the reference are not rejected for their dtype or their tapes."""
import keras
import pytest
import tensorflow as tf

from answers import mistakes
from mutation.inprocess import exercises, grade
from tapelab.exercises.dtype_policies import combined_dtypes, float16_mismatch
from tapelab.checker.messages import Incorrect

NOTEBOOK = "06_fit_vs_custom"
EXERCISES = {e.answer_id: e for e in exercises(NOTEBOOK)}
MISTAKES = {m.name: m for m in mistakes(NOTEBOOK)["ex6_4_answer"]}

TWO_TAPES = '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape() as tape_a, tf.GradientTape() as tape_b:
        loss = tf.reduce_mean(tf.square(tf.cast(model(x, training=True), tf.float32) - y))
        scaled_a = opt_a.scale_loss(loss)
        scaled_b = opt_b.scale_loss(loss)
    opt_a.apply(tape_a.gradient(scaled_a, first), first)
    opt_b.apply(tape_b.gradient(scaled_b, others), others)
    return loss
'''
NORM_OF_ONE_VECTOR = '''
def clip_gradients(grads, max_norm):
    flat = tf.concat([tf.reshape(tf.cast(g, tf.float32), [-1]) for g in grads], axis=0)
    scale = tf.minimum(1.0, max_norm / tf.norm(flat))
    return [g * tf.cast(scale, g.dtype) for g in grads]
'''


def _raised(thunk) -> str:
    try:
        thunk()
    except Exception as error:  # the text TensorFlow gives the student
        return str(error)
    raise AssertionError("expected TensorFlow to refuse the dtypes")


@pytest.mark.parametrize("answer", ["reference", "float16 prediction minus float32 target",
                                    "loss never scaled under mixed precision"])
def test_mixed_precision_case_restores_the_float32_policy(answer):
    """After 6.4's check runs its mixed_float16 cases, passed, failed by the checker or raising in the
    student's code, do layers built in a later cell compute in float32 again?"""
    exercise = EXERCISES["ex6_4_answer"]
    code = exercise.reference if answer == "reference" else MISTAKES[answer].code
    verdict = grade(exercise, code, answer)
    assert verdict.outcome == ("passed" if answer == "reference" else "incorrect"), verdict
    assert keras.mixed_precision.global_policy().name == "float32"
    assert keras.layers.Dense(1).compute_dtype == "float32"


def test_dtype_errors_are_read_in_eager_graph_and_division_forms():
    """Does `combined_dtypes` name both dtypes from each of TensorFlow's wordings of a dtype clash?"""
    half, single, double = (tf.constant(1.0, d) for d in (tf.float16, tf.float32, tf.float64))
    eager = _raised(lambda: single - half)
    graph = _raised(lambda: tf.function(lambda a, b: a - b)(single, half))
    divided = _raised(lambda: tf.math.truediv(single, double))
    assert combined_dtypes(eager) == combined_dtypes(graph) == {"float16", "float32"}
    assert combined_dtypes(divided) == {"float32", "float64"}
    assert combined_dtypes("Incompatible shapes: [2] vs. [3]") == frozenset()


def test_float16_mismatch_names_only_an_unexplained_float16_float32_clash():
    """Is the float16 cast named for a float16/float32 clash only, and never over a cause already established?"""
    clash = _raised(lambda: tf.constant(1.0) - tf.constant(1.0, tf.float16))
    named = float16_mismatch(Incorrect(f"Calling raised `{clash}`."))
    assert named is not None and named.cause == "float16-mismatch" and "tf.cast(y_pred, y.dtype)" in str(named)
    assert float16_mismatch(Incorrect(f"raised `{clash}`.", cause="no-gradients")) is None
    other = _raised(lambda: tf.constant(1.0) - tf.constant(1.0, tf.float64))
    assert float16_mismatch(Incorrect(f"raised `{other}`.")) is None


@pytest.mark.parametrize("answer_id,code", [("ex6_4_answer", TWO_TAPES), ("ex6_3_answer", NORM_OF_ONE_VECTOR)],
                         ids=["6.4 two tapes, prediction cast to float32", "6.3 tf.norm of one float32 vector"])
def test_correct_answers_written_otherwise_pass(answer_id, code):
    """Does a right answer that differs from the reference (two tapes instead of one persistent tape; `tf.norm`
    of every gradient flattened into one float32 vector) pass the whole test cell?"""
    verdict = grade(EXERCISES[answer_id], code, "written otherwise")
    assert verdict.passed, verdict
