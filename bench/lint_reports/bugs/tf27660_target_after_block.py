import tensorflow as tf


def f(x):
    return x ** 2


def grad(x):
    with tf.GradientTape() as t:
        t.watch(x)
    return t.gradient(f(x), x)  # BUG


print(grad(tf.convert_to_tensor(9.0)))
