import numpy as np
import tensorflow as tf
import keras


class BugTestLayer(keras.layers.Layer):
    def build(self, input_shape):
        self.var = self.add_variable((1,), initializer="zeros", dtype=tf.int32)  # BUG

    def call(self, inputs):
        return inputs * self.var


input_layer = keras.Input((1,), dtype=tf.int32)
model = keras.Model(inputs=[input_layer], outputs=[BugTestLayer()(input_layer)])
values = np.array([[i] for i in range(1000)])
model.compile(loss=[keras.losses.MeanSquaredError()], optimizer=keras.optimizers.RMSprop())
model.fit(values, values, batch_size=1, epochs=2)
