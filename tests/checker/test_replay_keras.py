"""A Keras variable (a layer's weight: not a tf.Variable, its dtype a name) travels through a check's record
(tapelab.checker.replay) as a Keras variable with its dtype, values and trainable flag: encoding it once raised
an AttributeError in the grading kernel, so a check whose run returned one (3.3's `watched` with a layer's
weight in it) failed with a traceback there."""
import keras
import numpy as np

from tapelab.checker import replay


def test_a_keras_variable_keeps_its_type_dtype_values_and_trainable_flag():
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    frozen = keras.Variable(np.arange(3, dtype="int32"), trainable=False)
    for variable in (layer.kernel, frozen):
        back = replay.decode(replay.encode(variable))
        assert type(back) is type(variable)
        assert back.dtype == variable.dtype
        assert back.trainable == variable.trainable
        np.testing.assert_array_equal(back.numpy(), variable.numpy())


def test_a_keras_variable_inside_a_tuple_round_trips():
    layer = keras.layers.Dense(1)
    layer.build((None, 2))
    back = replay.decode(replay.encode((layer.kernel.value, layer.kernel)))
    assert isinstance(back, tuple) and len(back) == 2
    assert type(back[1]) is type(layer.kernel)
    np.testing.assert_array_equal(back[0].numpy(), back[1].numpy())
