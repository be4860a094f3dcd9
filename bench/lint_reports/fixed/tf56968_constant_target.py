import tensorflow as tf

ones = tf.ones([1, 128, 128, 1], tf.float32)
with tf.GradientTape() as tape:
    tape.watch(ones)
    class_channel = tf.reduce_sum(ones * 4.4328732)
grads = tape.gradient(class_channel, ones)
print("grads: ", grads)
