from tensorflow.keras import optimizers


def get_opt(opt, lr):
    if opt == "adam":
        return optimizers.Adam(learning_rate=lr, clipnorm=1.0)
    return optimizers.RMSprop(learning_rate=lr, clipnorm=1.0)
