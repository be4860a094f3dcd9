import tensorflow as tf

inputs = tf.keras.Input(shape=(28, 28))
outputs = tf.keras.layers.Dense(10)(tf.keras.layers.Flatten()(inputs))
model = tf.keras.Model(inputs, outputs)
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def train_step(images, labels):
    with tf.GradientTape() as tape:
        predictions = model(images)
        tape.watch(model.inputs)
        loss = loss_object(labels, predictions)
    print(tape.gradient(loss, model.inputs))  # BUG
