import tensorflow as tf

optimizer = tf.keras.optimizers.Adam()


def train_on_batch(model, x, centers):
    with tf.GradientTape() as tape:
        tape.watch(model.trainable_variables)  # BUG
        h = model(x, training=True)
        loss = tf.reduce_mean(tf.reduce_min(tf.norm(h[:, None] - centers[None], axis=-1), axis=1))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
