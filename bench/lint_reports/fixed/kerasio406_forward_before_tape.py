import numpy as np
import tensorflow as tf
from tensorflow import keras

num_actions, gamma, max_steps = 2, 0.99, 1000
inputs = keras.Input(shape=(4,))
common = keras.layers.Dense(128, activation="relu")(inputs)
model = keras.Model(inputs, [keras.layers.Dense(num_actions, activation="softmax")(common),
                             keras.layers.Dense(1)(common)])
optimizer = keras.optimizers.Adam(learning_rate=0.01)
huber_loss = keras.losses.Huber()


def run_episode(env):
    state = env.reset()
    with tf.GradientTape() as tape:
        action_probs_history, critic_value_history, rewards_history = [], [], []
        for timestep in range(max_steps):
            state = tf.expand_dims(tf.convert_to_tensor(state), 0)
            action_probs, critic_value = model(state)
            critic_value_history.append(critic_value[0, 0])
            action = np.random.choice(num_actions, p=np.squeeze(action_probs))
            action_probs_history.append(tf.math.log(action_probs[0, action]))
            state, reward, done = env.step(action)
            rewards_history.append(reward)
            if done:
                break
        returns = []
        discounted = 0.0
        for r in rewards_history[::-1]:
            discounted = r + gamma * discounted
            returns.insert(0, discounted)
        history = zip(action_probs_history, critic_value_history, returns)
        actor_losses, critic_losses = [], []
        for log_prob, value, ret in history:
            diff = ret - value
            actor_losses.append(-log_prob * diff)
            critic_losses.append(huber_loss(tf.expand_dims(value, 0), tf.expand_dims(ret, 0)))
        loss_value = sum(actor_losses) + sum(critic_losses)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
