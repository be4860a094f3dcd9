import tensorflow as tf
from tensorflow.keras import layers


def compute_kld(p_logit, q_logit):
    p = tf.nn.softmax(p_logit)
    q = tf.nn.softmax(q_logit)
    return tf.reduce_sum(p * (tf.math.log(p + 1e-16) - tf.math.log(q + 1e-16)), axis=1)


def adversarial_direction(v, p_logit):
    r = tf.random.uniform(shape=tf.shape(v), minval=0.001, maxval=0.005)
    r = tf.add(v, r)
    with tf.GradientTape() as tape:
        tape.watch(r)
        h1 = layers.LSTM(units=128)(r)
        p_logit_r = layers.Dense(units=10)(h1)
        kl = compute_kld(p_logit, p_logit_r)
    return tape.gradient(kl, r)
