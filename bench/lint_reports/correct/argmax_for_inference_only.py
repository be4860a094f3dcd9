import keras
from keras import ops
from keras.layers import Dense, Input, Lambda

inputs = Input((10,))
logits = Dense(3)(inputs)
model = keras.Model(inputs, logits)
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
labels = Lambda(lambda t: ops.argmax(t, axis=-1))(logits)
classifier = keras.Model(inputs, labels)
predicted = classifier.predict(ops.ones((4, 10)))
