import tensorflow as tf

y = tf.constant(2.0)
v = tf.Variable(3.0)
with tf.GradientTape(persistent=True) as tape:
    tape.watch(y)
    tape.watch(v)
    w = y * y * v
    grads = tape.gradient(w, y)
dgradsdv = tape.gradient(grads, v)
del tape
print(grads, dgradsdv)
