"""The error table of `tapelab.checker.explanations`, checked against the errors TensorFlow and Keras really raise."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.checker.error_causes import error_cause


class LossToEveryMetric(keras.Model):
    """A custom `train_step` that feeds the loss to every metric of `self.metrics`, the compiled ones included."""

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
        self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
        for metric in self.metrics:
            metric.update_state(loss)
        return {metric.name: metric.result() for metric in self.metrics}


def test_loss_fed_to_the_compiled_metrics_is_explained():
    """Is Keras 3's "CompileMetrics.update_state() missing 'y_pred'" explained as the loss fed to every metric?"""
    inputs = keras.Input((2,))
    model = LossToEveryMetric(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    with pytest.raises(TypeError) as raised:
        model.fit(np.ones((4, 2), "float32"), np.ones((4, 1), "float32"), batch_size=4, epochs=1, verbose=0)
    why = error_cause(raised.value)
    assert why is not None and why.cause == "metric-fed-loss"
    assert "update_state(y, y_pred)" in why.text


def _target_from_the_float(x):
    xv = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = 3 * x**3 - 2 * x**2 + x  # from the float `x`, not from `xv`
    return tape.gradient(y, xv)


@pytest.mark.parametrize("x", [2.0, 1.0, 3.0, -1.0, 0.5])
def test_a_python_number_as_target_is_explained_whatever_its_value(x):
    """TensorFlow fails on a Python float target in several ways, by its value (no `_id`, no `dtype`, no DType
    for it): each is traced to the code fact that the target was computed without the source."""
    from tapelab.checker.code_facts import CodeFacts

    with pytest.raises((AttributeError, TypeError)) as raised:
        _target_from_the_float(x)
    why = error_cause(raised.value, CodeFacts.of(_target_from_the_float))
    assert why is not None and why.cause == "not-connected", (str(raised.value), why)
