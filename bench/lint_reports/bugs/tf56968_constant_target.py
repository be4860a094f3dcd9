import tensorflow as tf

ones = tf.ones([1, 128, 128, 1], tf.float32)
with tf.GradientTape() as tape:
    class_channel = tf.constant([4.4328732], dtype=tf.float32)  # BUG
grads = tape.gradient(class_channel, ones)  # BUG
print("grads: ", grads)
