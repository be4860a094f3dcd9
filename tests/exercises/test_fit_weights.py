"""Exercise 6.1's word on dropped sample weights reads the student's `train_step` alone: a `test_step` that
unpacks them does not make a training step that never takes them out look as if it did."""
import keras
import tensorflow as tf

from answers import define
from tapelab.exercises.fit_match import _weights_taken

STEP = '''
def make_custom_model(n_features=1):
    class StudentModel(keras.Model):
        def train_step(self, data):
            {train}
            return {{}}

        def test_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            return {{}}

    return StudentModel
'''
NEVER = "never takes out the third element"


def _fn(train: str):
    return define(STEP.format(train=train), "weights-taken", {"tf": tf, "keras": keras})["make_custom_model"]


def test_a_train_step_that_keeps_two_elements_is_told_to_unpack_three():
    """Is `x, y = data[0], data[1]` (the weights left in `data`) told to unpack all three, although the test_step
    unpacks them?"""
    assert NEVER in _weights_taken(_fn("x, y = data[0], data[1]"))
    assert NEVER in _weights_taken(_fn("x, y = data"))


def test_a_train_step_that_takes_the_weights_out_is_told_only_to_pass_them_on():
    """Are the three ways to take the weights out recognised, so the message does not ask for what is there?"""
    for taken in ("x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)", "x, y, w = data",
                  "x, y, w = data[0], data[1], data[2]", "w = data[-1]"):
        assert _weights_taken(_fn(taken)) == "your step does not give them to the loss.", taken
