import tensorflow as tf

x = tf.zeros(())
with tf.GradientTape() as tape:
    y = 2 * x + 3
grad_of_y_wrt_x = tape.gradient(y, x)  # BUG
print(grad_of_y_wrt_x)
