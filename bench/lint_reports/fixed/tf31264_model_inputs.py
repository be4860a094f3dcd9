import tensorflow as tf

inputs = tf.keras.Input(shape=(28, 28))
outputs = tf.keras.layers.Dense(10)(tf.keras.layers.Flatten()(inputs))
model = tf.keras.Model(inputs, outputs)
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def train_step(images, labels):
    images = tf.convert_to_tensor(images)
    with tf.GradientTape() as tape:
        tape.watch(images)
        predictions = model(images)
        loss = loss_object(labels, predictions)
    print(tape.gradient(loss, images))
