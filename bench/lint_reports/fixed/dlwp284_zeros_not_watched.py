import tensorflow as tf

x = tf.zeros(())
with tf.GradientTape() as tape:
    tape.watch(x)
    y = 2 * x + 3
grad_of_y_wrt_x = tape.gradient(y, x)
print(grad_of_y_wrt_x)
