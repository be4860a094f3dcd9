from keras import Input, Model, ops
from keras.optimizers import Adam


def define_gan(g_model, d_model, timestep):
    d_model.trainable = False
    a = Input(shape=(timestep,))
    b = g_model(a)
    c = ops.argmax(b, axis=-1)  # BUG
    output_d = d_model(c)
    model = Model(inputs=a, outputs=output_d)
    model.compile(loss=["binary_crossentropy"], optimizer=Adam(learning_rate=0.0002, beta_1=0.5))
    return model
