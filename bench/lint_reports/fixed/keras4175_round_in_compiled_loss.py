import numpy as np
import keras
from keras import ops


def custom_loss(y_true, y_pred):
    return ops.mean(ops.abs(y_true - y_pred))


model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="sgd", loss=custom_loss)
model.fit(np.random.rand(64, 20), np.random.randint(0, 2, (64, 1)), epochs=2)
