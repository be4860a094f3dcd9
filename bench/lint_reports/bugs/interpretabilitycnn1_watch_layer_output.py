import tensorflow as tf


class GradCAM:
    def __init__(self, model, layer_name):
        self.model = model
        self.layer_name = layer_name
        self.grad_model = tf.keras.Model(
            self.model.inputs, [self.model.get_layer(layer_name).output, self.model.output])

    def heatmap(self, image, class_index):
        with tf.GradientTape() as tape:
            tape.watch(self.grad_model.get_layer(self.layer_name).output)  # BUG
            conv_outputs, predictions = self.grad_model(tf.cast(image, tf.float32))
            loss = predictions[:, class_index]
        grads = tape.gradient(loss, conv_outputs)
        weights = tf.reduce_mean(grads, axis=(0, 1, 2))
        return tf.reduce_sum(weights * conv_outputs[0], axis=-1)
