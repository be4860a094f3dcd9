import tensorflow as tf


class Regressor(tf.Module):
    def __init__(self):
        self.w = tf.Variable(tf.ones([2, 1]))
        self.b = tf.Variable(0.0)

    def predict(self, x):
        return tf.matmul(x, self.w) + self.b


reg = Regressor()
x = tf.random.normal([8, 2])
y = tf.random.normal([8, 1])
with tf.GradientTape() as tape:
    loss = tf.reduce_mean((reg.predict(x) - y) ** 2)
grads = tape.gradient(loss, [reg.w, reg.b])
