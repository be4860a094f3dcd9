import numpy as np
import tensorflow as tf

x_np = np.random.randint(10, size=(1, 4, 4, 1))
w_np = np.random.randint(10, size=(3, 3, 1, 1))
with tf.GradientTape(persistent=True) as g:
    x = tf.constant(x_np, dtype=tf.float32)
    w = tf.constant(w_np, dtype=tf.float32)
    g.watch(x)
    g.watch(w)
    y = tf.nn.conv2d(x, w, strides=(1, 1, 1, 1), padding="VALID")
dy_dx = g.gradient(y, x)
dy_dw = g.gradient(y, w)
del g
