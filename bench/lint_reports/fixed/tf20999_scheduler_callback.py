import numpy as np
from keras import ops
from keras.callbacks import Callback


class LearningRateScheduler(Callback):
    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = float(ops.convert_to_numpy(self.model.optimizer.learning_rate))
        lr = self.schedule(epoch, lr)
        if not isinstance(lr, (float, np.float32, np.float64)):
            raise ValueError('The output of the "schedule" function should be float.')
        self.model.optimizer.learning_rate.assign(lr)
