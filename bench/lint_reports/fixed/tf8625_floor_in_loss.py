import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.005)


def train_step(x, y_true):
    with tf.GradientTape() as tape:
        y_prob = tf.sigmoid(model(x, training=True))
        loss_op = tf.reduce_mean(tf.abs(y_true - y_prob))
    grads = tape.gradient(loss_op, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
