import keras
from keras import ops


class OneCycle(keras.callbacks.Callback):
    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_train_batch_begin(self, batch, logs=None):
        lr = float(ops.convert_to_numpy(self.model.optimizer.learning_rate))
        self.model.optimizer.learning_rate.assign(self.schedule(batch, lr))
