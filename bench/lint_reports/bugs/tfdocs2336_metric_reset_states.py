import tensorflow as tf

train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
test_loss = tf.keras.metrics.Mean(name="test_loss")
for epoch in range(5):
    for x, y in []:
        pass
    print(f"Epoch {epoch + 1}, Test Loss: {test_loss.result()}")
    test_loss.reset_states()  # BUG
    train_accuracy.reset_states()  # BUG
