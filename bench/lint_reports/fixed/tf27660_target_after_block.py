import tensorflow as tf


def f(x):
    return x ** 2


def grad(x):
    with tf.GradientTape() as t:
        t.watch(x)
        out = f(x)
    return t.gradient(out, x)


print(grad(tf.convert_to_tensor(9.0)))
