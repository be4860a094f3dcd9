from keras.optimizers import Adam


def compile_model(model, lr=0.001):
    model.compile(loss="mse", optimizer=Adam(lr=lr))  # BUG
    return model
