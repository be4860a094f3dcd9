import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam()


def complicated_loss(y, pred):
    return tf.reduce_mean(tf.square(np.sort(pred, axis=0) - y))


def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = complicated_loss(y, pred.numpy())  # BUG
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
