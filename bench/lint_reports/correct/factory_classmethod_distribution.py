import tensorflow as tf
import tensorflow_probability as tfp

tfd = tfp.distributions
mean = tf.Variable(0.4)
variance = tf.Variable(0.02)
optimizer = tf.keras.optimizers.Adam(1e-2)


def step(samples):
    prior = tfd.Beta.experimental_from_mean_variance(mean, variance)
    with tf.GradientTape() as tape:
        loss = -tf.reduce_mean(prior.log_prob(samples))
    grads = tape.gradient(loss, [mean, variance])
    optimizer.apply_gradients(zip(grads, [mean, variance]))
