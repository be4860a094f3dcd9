import tensorflow as tf

x = tf.constant([1.0, 2.0, 3.0])
y = tf.constant([2.0, 4.0, 6.0])
w = tf.Variable(3)  # BUG
b = tf.Variable(0)  # BUG
with tf.GradientTape() as tape:
    pred = tf.cast(w, tf.float32) * x + tf.cast(b, tf.float32)
    loss = tf.reduce_mean(tf.square(pred - y))
print(tape.gradient(loss, [w, b]))
