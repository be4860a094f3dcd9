import keras
from keras.layers import LSTM, Dense

model = keras.Sequential([keras.Input((3, 1)), LSTM(50, activation="relu"), Dense(1)])
optimizer = keras.optimizers.Adam(lr=1e-5)  # BUG
model.compile(optimizer=optimizer, loss="mse")
