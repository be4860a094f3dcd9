import keras


class LRFinder:
    def __init__(self, model):
        self.model = model

    def find(self, x_train, y_train, start_lr, end_lr, batch_size=64, epochs=1):
        original_lr = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
        self.model.optimizer.learning_rate.assign(start_lr)
        self.model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs)
        self.model.optimizer.learning_rate.assign(original_lr)
