from tensorflow.keras import optimizers


def get_opt(opt, lr):
    if opt == "adam":
        return optimizers.Adam(lr=lr, clipnorm=1.0)  # BUG
    return optimizers.RMSprop(learning_rate=lr, clipnorm=1.0)
