import tensorflow as tf


def build(model, learning_rate):
    opt = tf.keras.optimizers.legacy.Adam(learning_rate=learning_rate)  # BUG
    model.compile(optimizer=opt, loss="mse")
    return model
