import tensorflow as tf

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")


def loss(model, x, y):
    y_ = model(x)
    losses = loss_object(y_true=y, y_pred=y_)
    return tf.abs(tf.reduce_mean(losses) - 1.0)


def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss(model, inputs, targets)
    return loss_value, tape.gradient(loss_value, model.trainable_variables)
