"""Exercise 6.6's root variant: the root mean squared error over every row. Are the two slips only that variant
allows named (the mean without its root, a root per batch averaged), and does Keras's own metric agree with the
root of the mean over every row that the task states as `fit`'s `val_root_mean_squared_error`?"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from mutation.inprocess import exercises, grade
from tapelab.exercises.evaluation import ex6_6

EXERCISE = {e.answer_id: e for e in exercises("06_fit_vs_custom")}["ex6_6_answer"]
ROOT_SEED = next(seed for seed in range(1, 100) if ex6_6.space.variant(seed)["root"])

_LOOP = '''
def evaluate(model, dataset):
    total, count = 0.0, 0
    for x, y in dataset:
{body}
    return {result}
'''
NO_ROOT = _LOOP.format(body='''        errors = tf.square(y - model(x, training=False))
        total += float(tf.reduce_sum(errors))
        count += int(tf.size(errors))''', result="total / count")
ROOT_PER_BATCH = _LOOP.format(body='''        rmse = np.sqrt(float(tf.reduce_mean(tf.square(y - model(x, training=False)))))
        total += rmse * len(x)
        count += len(x)''', result="total / count")


@pytest.mark.parametrize("code,cause", [(NO_ROOT, "root-missing"), (ROOT_PER_BATCH, "root-per-batch")],
                         ids=["no root", "root per batch"])
def test_root_variant_names_the_slip(code, cause):
    """Is a root variant's answer that forgets the root, or takes one per batch, rejected with its cause?"""
    verdict = grade(EXERCISE, code, cause, seed=ROOT_SEED)
    assert verdict.outcome == "incorrect" and verdict.part == "visible", verdict
    assert verdict.cause == cause, verdict


def test_the_root_mean_answer_is_what_keras_reports():
    """Does `evaluate` with `metrics=["root_mean_squared_error"]` give the root of the mean over every row, on
    batches whose last one is smaller?"""
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(10, 2)).astype(np.float32), rng.normal(size=(10, 1)).astype(np.float32)
    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(loss="mse", metrics=["root_mean_squared_error"], run_eagerly=True)
    scores = model.evaluate(tf.data.Dataset.from_tensor_slices((x, y)).batch(4), verbose=0, return_dict=True)
    by_hand = np.sqrt(np.mean(np.square(y - model(x, training=False).numpy())))
    assert np.isclose(scores["root_mean_squared_error"], by_hand, rtol=1e-5)
