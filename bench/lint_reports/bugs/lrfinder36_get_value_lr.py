import keras
from keras import backend as K


class LRFinder:
    def __init__(self, model):
        self.model = model

    def find(self, x_train, y_train, start_lr, end_lr, batch_size=64, epochs=1):
        original_lr = K.get_value(self.model.optimizer.lr)  # BUG
        K.set_value(self.model.optimizer.lr, start_lr)  # BUG
        self.model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs)
        K.set_value(self.model.optimizer.lr, original_lr)  # BUG
