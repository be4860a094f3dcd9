import tensorflow as tf


class Adam:
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08):
        self.learning_rate, self.beta1, self.beta2, self.epsilon = learning_rate, beta1, beta2, epsilon

    def _create_tf_optimizer(self, global_step):
        return tf.keras.optimizers.Adam(
            learning_rate=self.learning_rate, beta_1=self.beta1, beta_2=self.beta2, epsilon=self.epsilon)
