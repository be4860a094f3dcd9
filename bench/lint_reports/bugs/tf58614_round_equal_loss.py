import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
optimizer = tf.keras.optimizers.Adam()


def custom_loss(output, prediction):
    correct_count = tf.math.count_nonzero(tf.math.equal(tf.round(prediction), output))  # BUG
    incorrect_count = tf.size(prediction, out_type=tf.int64) - correct_count
    return tf.cast(incorrect_count, tf.float32) / tf.cast(tf.size(prediction), tf.float32)


def train_step(x, y):
    with tf.GradientTape() as tape:
        prediction = model(x, training=True)
        loss = custom_loss(y, prediction)
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
