import keras
from keras.layers import LSTM, Dense

model = keras.Sequential([keras.Input((3, 1)), LSTM(50, activation="relu"), Dense(1)])
optimizer = keras.optimizers.Adam(learning_rate=1e-5)
model.compile(optimizer=optimizer, loss="mse")
