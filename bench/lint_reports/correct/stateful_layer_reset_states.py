import keras

lstm = keras.layers.LSTM(8, stateful=True)
model = keras.Sequential([keras.Input(batch_shape=(1, 5, 3)), lstm, keras.layers.Dense(1)])
lstm.reset_states()
for layer in model.layers:
    if hasattr(layer, "reset_states"):
        layer.reset_states()
