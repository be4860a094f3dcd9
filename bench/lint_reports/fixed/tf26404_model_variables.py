import tensorflow as tf

model = tf.keras.applications.ResNet50(weights=None)
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)


def train_step(x, label):
    with tf.GradientTape() as tape:
        prediction = model(x, training=True)
        loss = tf.reduce_mean(tf.square(prediction - label))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
