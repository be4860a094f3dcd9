import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
optimizer = tf.keras.optimizers.Adam()


def custom_loss(output, prediction):
    soft_correct = output * prediction + (1.0 - output) * (1.0 - prediction)
    return 1.0 - tf.reduce_mean(soft_correct)


def train_step(x, y):
    with tf.GradientTape() as tape:
        prediction = model(x, training=True)
        loss = custom_loss(y, prediction)
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
