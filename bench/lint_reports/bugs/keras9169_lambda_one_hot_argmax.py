import keras
from keras import ops
from keras.layers import Dense, Input, Lambda

M = 16


def decode_signal(x):
    x = ops.softmax(x)
    y = ops.one_hot(ops.argmax(x), M)  # BUG
    return y


input_layer = Input(shape=(M,))
relay = Dense(M, activation="relu")(input_layer)
relay = Dense(M)(relay)
relay_decoded = Lambda(decode_signal, output_shape=(M,))(relay)
model = keras.Model(input_layer, relay_decoded)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss="categorical_crossentropy")
model.fit(onehot_symbols, onehot_symbols, epochs=1000, shuffle=True, verbose=False)
