import keras
from keras import ops
from keras.layers import Input, Lambda


def build_combined(generator, discriminator, h, w, c):
    discriminator.trainable = False
    img = Input(shape=(h, w, c))
    out1 = generator(img)
    out2 = Lambda(lambda x: ops.cast(ops.expand_dims(ops.argmax(x)), dtype="float32"))(out1)  # BUG
    valid = discriminator(out2)
    combined = keras.Model(img, valid)
    combined.compile(loss="binary_crossentropy", optimizer="adam")
    return combined
