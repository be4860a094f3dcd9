import tensorflow as tf

G = tf.keras.Sequential([tf.keras.layers.Dense(50, activation="elu"), tf.keras.layers.Dense(100)])
D = tf.keras.Sequential([tf.keras.layers.Dense(50, activation="elu"), tf.keras.layers.Dense(1, activation="sigmoid")])
criterion = tf.keras.losses.BinaryCrossentropy()
g_optimizer = tf.keras.optimizers.SGD(learning_rate=1e-3)


def get_moments(d):
    mean = tf.reduce_mean(d)
    diffs = d - mean
    std = tf.math.reduce_std(d)
    return tf.stack([mean, std, tf.reduce_mean(diffs ** 3), tf.reduce_mean(diffs ** 4)])


def generator_step(gen_input):
    with tf.GradientTape() as tape:
        g_fake_data = G(gen_input)
        dg_fake_decision = D(tf.reshape(get_moments(g_fake_data), (1, 4)))
        g_error = criterion(tf.ones([1, 1]), dg_fake_decision)
    grads = tape.gradient(g_error, G.trainable_variables)
    g_optimizer.apply_gradients(zip(grads, G.trainable_variables))
