import numpy as np
import tensorflow as tf

model = tf.keras.applications.VGG19(weights=None)


def custom_loss(y_true, y_pred):
    p = y_pred.numpy()  # BUG
    return tf.convert_to_tensor(np.mean((p - y_true) ** 2))


def input_gradient(image, label):
    image = tf.convert_to_tensor(image)
    with tf.GradientTape() as tape:
        tape.watch(image)
        prediction = model(image)
        loss = custom_loss(label, prediction)
    return tape.gradient(loss, image)
