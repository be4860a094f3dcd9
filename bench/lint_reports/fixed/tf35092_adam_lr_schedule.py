import tensorflow as tf


class CustomSchedule(tf.keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, d_model, warmup_steps=4000):
        self.d_model, self.warmup_steps = tf.cast(d_model, tf.float32), warmup_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        return tf.math.rsqrt(self.d_model) * tf.math.minimum(tf.math.rsqrt(step), step * self.warmup_steps ** -1.5)


optimizer = tf.keras.optimizers.Adam(learning_rate=CustomSchedule(512), beta_1=0.9, beta_2=0.98)
