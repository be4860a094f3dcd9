import keras
import tensorflow as tf


class EmbeddingModel(keras.Model):
    def train_step(self, data):
        anchors, positives = data[0], data[1]
        with tf.GradientTape() as tape:
            anchor_embeddings = self(anchors, training=True)
            positive_embeddings = self(positives, training=True)
            similarities = keras.ops.einsum("ae,pe->ap", anchor_embeddings, positive_embeddings)
            sparse_labels = keras.ops.arange(keras.ops.shape(anchors)[0])
            loss = self.compute_loss(y=sparse_labels, y_pred=similarities)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        return {"loss": loss}
