"""A model whose train_step hands its gradients (and its whole batch) to a guard; `build` makes one for replay."""
import keras
import tensorflow as tf


class RecordedModel(keras.Model):
    """Two Dense layers; train_step guarded, passing `batch=data` so a flight recorder can keep it."""

    def __init__(self, guard=None, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(4, activation="relu", name="hidden")
        self.out = keras.layers.Dense(1, name="out")
        self.guard = guard

    def call(self, x):
        return self.out(self.hidden(x))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
        self.guard(tape.gradient(loss, self.trainable_variables), self.trainable_variables, loss=loss, batch=data)
        for metric in self.metrics:
            metric.update_state(loss) if metric.name == "loss" else metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def build(guard=None, jit_compile=False) -> RecordedModel:
    """The model, built for 3 features and compiled with an MSE loss (what `--model flight_models:build` runs)."""
    keras.utils.set_random_seed(0)
    model = RecordedModel(guard)
    model(tf.zeros((1, 3)))  # builds the layers
    model.compile(optimizer=guard.optimizer if guard else "sgd", loss="mse", jit_compile=jit_compile)
    return model
