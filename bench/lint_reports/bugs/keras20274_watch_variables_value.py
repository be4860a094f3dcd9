import tensorflow as tf


def compute_loss(model, x, data):
    return tf.reduce_mean(tf.square(model(x) - data))


def get_grad(model, x_train, data_train):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(model.trainable_variables.value)  # BUG
        loss = compute_loss(model, x_train, data_train)
    g = tape.gradient(loss, model.trainable_variables.value)  # BUG
    del tape
    return loss, g
