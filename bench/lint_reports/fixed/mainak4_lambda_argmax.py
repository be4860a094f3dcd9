import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense, Input, Lambda
from tensorflow.keras.models import Model
from tensorflow.keras.optimizers import SGD


def SoftArgMax():
    return Lambda(lambda q: tf.reduce_sum(tf.nn.softmax(q * 10.0, axis=2) * tf.range(3, dtype=tf.float32), axis=2))


inputs1 = Input(shape=(1, 1))
d = Dense(3)(inputs1)
out = SoftArgMax()(d)
model = Model(inputs=[inputs1], outputs=[out], name="test")
model.compile(SGD(0.1), loss="mae")
model.fit(x=[np.ones((100, 1, 1))], y=[np.zeros((100, 1))], batch_size=100, epochs=10)
