import tensorflow as tf

x0 = tf.Variable(1.0, name="x0")
x1 = tf.constant(3.0)
x = x0 + x1
y = tf.constant(4.0)
with tf.GradientTape() as tape:
    z = x + y
tape_grad = tape.gradient(z, x)  # BUG
print(tape_grad)
