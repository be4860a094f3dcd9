import keras


def current_lr(optimizer):
    if hasattr(optimizer, "lr"):
        return float(keras.ops.convert_to_numpy(optimizer.lr))
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))
