import tensorflow as tf

n = 10
x = tf.random.normal([n, 2])
y = x * 3 + 2 + tf.random.normal([n, 2])
model = tf.keras.Sequential([tf.keras.layers.Dense(units=1, activation="relu")])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
with tf.GradientTape() as tape:
    error = model.predict(x) - y  # BUG
    loss_value = tf.reduce_mean(tf.square(error))
grads = tape.gradient(loss_value, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
