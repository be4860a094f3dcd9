import keras
from keras import backend as K


class OneCycle(keras.callbacks.Callback):
    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_train_batch_begin(self, batch, logs=None):
        lr = K.get_value(self.model.optimizer.learning_rate)  # BUG
        K.set_value(self.model.optimizer.learning_rate, self.schedule(batch, lr))  # BUG
