import numpy as np
import tensorflow as tf

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def get_distance_between_samples_and_distribution(losses):
    return np.abs(np.mean(losses) - 1.0)


def loss(model, x, y):
    y_ = model(x)
    losses = []
    for i in range(y.shape[0]):
        item = loss_object(y_true=y[i], y_pred=y_[i])
        losses.append(float(item))  # BUG
    dis = get_distance_between_samples_and_distribution(losses)
    return tf.convert_to_tensor(dis, dtype=np.float32)


def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss(model, inputs, targets)
    return loss_value, tape.gradient(loss_value, model.trainable_variables)
