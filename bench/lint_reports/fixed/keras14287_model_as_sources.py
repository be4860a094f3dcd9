import tensorflow as tf
from tensorflow.keras.losses import mean_squared_error
from tensorflow.keras.optimizers import RMSprop


class Agent:
    def __init__(self, branch_models, gamma=0.9):
        self.branch_2_model = branch_models
        self.gamma = gamma

    def learn_mu(self, state, target, action_index):
        training_model = self.branch_2_model[action_index]
        with tf.GradientTape() as tape:
            pred = training_model(state)
            label = state + self.gamma * target
            loss = mean_squared_error(label, pred)
        grads = tape.gradient(loss, training_model.trainable_variables)
        RMSprop().apply_gradients(zip(grads, training_model.trainable_variables))
