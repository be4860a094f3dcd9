import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense, Input, Lambda
from tensorflow.keras.models import Model
from tensorflow.keras.optimizers import SGD


def ArgMax():
    return Lambda(lambda q: tf.math.argmax(q, 2))  # BUG


inputs1 = Input(shape=(1, 1))
d = Dense(3)(inputs1)
out = ArgMax()(d)
model = Model(inputs=[inputs1], outputs=[out], name="test")
model.compile(SGD(0.1), loss="mae")
model.fit(x=[np.ones((100, 1, 1))], y=[np.zeros((100, 1))], batch_size=100, epochs=10)
