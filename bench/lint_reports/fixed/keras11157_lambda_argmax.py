import keras
from keras.layers import LSTM, Dense, Embedding, Input

vocabulary, latent_dim, steps = 5000, 64, 20
encoder_inputs = Input(shape=(steps,))
encoder_outputs = Embedding(vocabulary, latent_dim)(encoder_inputs)
encoder_outputs = LSTM(latent_dim, return_sequences=True)(encoder_outputs)
encoder_outputs = Dense(latent_dim, activation="softmax")(encoder_outputs)
decoder_outputs = Dense(vocabulary, activation="softmax")(LSTM(latent_dim, return_sequences=True)(encoder_outputs))
model = keras.Model(encoder_inputs, decoder_outputs)
model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy")
model.fit(train_data, train_label, epochs=10)
