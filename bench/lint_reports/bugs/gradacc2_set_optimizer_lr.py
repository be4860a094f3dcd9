import keras
from keras import ops


class GradientAccumulation(keras.optimizers.Optimizer):
    def __init__(self, optimizer, steps_per_update=1, **kwargs):
        super().__init__(learning_rate=optimizer.learning_rate, **kwargs)
        self.optimizer = optimizer
        self.steps_per_update = steps_per_update

    def fake_step(self, update_cond):
        self.optimizer.lr = ops.where(update_cond, self.optimizer.lr, 0.0)  # BUG
