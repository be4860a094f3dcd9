"""True positives and near misses of the rules on sources, on what `fit` trains and on Keras 3 removals
(test_rules.py runs them with its own cases)."""

# rule code -> (source with the pitfall, line it is reported on, a near miss that is right)
CASES = {
    "all-variables": ("""
        model = keras.Sequential([keras.layers.Dense(2), keras.layers.BatchNormalization()])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        grads = tape.gradient(loss, model.variables)
        """, 4, """
        model = keras.Sequential([keras.layers.Dense(2), keras.layers.BatchNormalization()])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        print(len(model.variables))
        """),
    "symbolic-source": ("""
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x))
        grads = tape.gradient(loss, model.inputs)
        """, 4, """
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="d")])
        features = keras.Model(model.inputs, model.get_layer("d").output)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(features(x))
        grads = tape.gradient(loss, x)
        """),
    "int-dtype": ("""
        n = tf.Variable(3)
        with tf.GradientTape() as tape:
            loss = tf.cast(n, tf.float32) * 2.0
        g = tape.gradient(loss, n)
        """, 1, """
        w = tf.Variable(3.0)
        step = tf.Variable(0)
        with tf.GradientTape() as tape:
            loss = w * 2.0
        g = tape.gradient(loss, w)
        step.assign_add(1)
        class Counter(keras.layers.Layer):
            def build(self, shape):
                self.seen = self.add_weight(shape=(), dtype="int32", trainable=False)
        """),
    "not-connected": ("""
        v = tf.Variable(1.0)
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            v.assign_add(x)
            loss = v * v
        g = tape.gradient(loss, x)
        """, 7, """
        v = tf.Variable(1.0)
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            updated = v + x
            loss = updated * updated
        g = tape.gradient(loss, x)
        """),
    "keras3-watch-variables": ("""
        import tensorflow as tf
        with tf.GradientTape() as tape:
            tape.watch(model.trainable_variables)
            loss = tf.reduce_sum(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        """, 3, """
        import tensorflow as tf
        class Net(tf.Module):
            def __init__(self):
                self.w = tf.Variable(1.0)
        net = Net()
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(net.trainable_variables)
            loss = net.w * 2.0
        grads = tape.gradient(loss, net.trainable_variables)
        """),
    "keras2-model-reset-states": ("""
        import keras
        model = keras.Sequential([keras.Input(batch_shape=(1, 4, 2)), keras.layers.LSTM(3, stateful=True)])
        model.reset_states()
        """, 3, """
        import keras
        lstm = keras.layers.LSTM(3, stateful=True)
        model = keras.Sequential([keras.Input(batch_shape=(1, 4, 2)), lstm])
        lstm.reset_states()
        for layer in model.layers:
            if hasattr(layer, "reset_states"):
                layer.reset_states()
        """),
    "keras2-backend-value": ("""
        from keras import backend as K
        lr = K.get_value(model.optimizer.learning_rate)
        """, 2, """
        import keras
        from mylib import backend as K
        lr = K.get_value(model.optimizer.learning_rate)
        keras.backend.clear_session()
        """),
}

# label -> (rule code, source, line): further true positives, one finding each
MORE_PITFALLS = {
    "a Lambda layer with argmax in a model the module compiles": ("non-differentiable", """
        inputs = keras.Input((4,))
        hidden = keras.layers.Dense(3)(inputs)
        picked = keras.layers.Lambda(lambda t: keras.ops.argmax(t, axis=-1))(hidden)
        model = keras.Model(inputs, picked)
        model.compile(optimizer="adam", loss="mse")
        """, 3),
    "a Lambda of a function of the module that rounds, last in a compiled Sequential": ("non-differentiable", """
        def sample(t):
            return tf.floor(t + 0.5)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Lambda(sample)])
        model.compile(optimizer="adam", loss="mse")
        """, 2),
    "a loss given to compile that rounds the prediction": ("non-differentiable", """
        def loss_fn(y_true, y_pred):
            return keras.ops.mean(keras.ops.abs(y_true - keras.ops.round(y_pred)))
        model.compile(optimizer="sgd", loss=loss_fn)
        """, 2),
    "a loss given to compile that never reads y_pred": ("not-connected", """
        def trend(y_true, y_pred):
            return keras.ops.sum(y_true[:, 1:] - y_true[:, :-1])
        model.compile(optimizer="adam", loss=trend)
        """, 2),
    "the forward pass run before the tape and kept in a list": ("outside-tape", """
        outputs = []
        for x in batches:
            outputs.append(model(x))
        with tf.GradientTape() as tape:
            losses = []
            for out in outputs:
                losses.append(tf.reduce_mean(out ** 2))
            loss = sum(losses)
        grads = tape.gradient(loss, model.trainable_variables)
        """, 9),
    "a target computed after the block by a function of the module": ("outside-tape", """
        def f(x):
            return x ** 2
        def grad(x):
            with tf.GradientTape() as t:
                t.watch(x)
            return t.gradient(f(x), x)
        """, 6),
    "NumPy inside a loss function of the module called in the tape": ("numpy-in-path", """
        def custom_loss(y_true, y_pred):
            return tf.convert_to_tensor(np.mean((y_pred.numpy() - y_true) ** 2))
        with tf.GradientTape() as tape:
            loss = custom_loss(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        """, 5),
    "a tensor computed before the tape, never watched": ("not-watched", """
        r = tf.add(v, tf.random.uniform(tf.shape(v)))
        with tf.GradientTape() as tape:
            kl = tf.reduce_sum(r * r)
        g = tape.gradient(kl, r)
        """, 4),
    "model as the sources": ("symbolic-source", """
        def learn(training_model, state):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(training_model(state))
            grads = tape.gradient(loss, training_model)
            opt.apply_gradients(zip(grads, training_model.trainable_variables))
        """, 4),
    "a layer's symbolic output watched": ("symbolic-source", """
        with tf.GradientTape() as tape:
            tape.watch(grad_model.get_layer(name).output)
            conv, preds = grad_model(image)
            loss = preds[:, 0]
        grads = tape.gradient(loss, conv)
        """, 2),
    "an integer trainable weight of a layer": ("int-dtype", """
        class Scale(keras.layers.Layer):
            def build(self, shape):
                self.k = self.add_variable((1,), initializer="zeros", dtype=tf.int32)
        """, 3),
}

# label -> (rule code, source): classes of false alarm that must stay silent
FALSE_ALARMS = {
    "a tape name rebound by unpacking a helper's result, then asked once per loop pass": ("tape-used-twice", """
        x = tf.Variable(3.0)
        with tf.GradientTape() as tape:
            y = x * x
        g = tape.gradient(y, x)
        for step in range(3):
            tape, loss = record(x)
            g = tape.gradient(loss, x)
        """),
    "a distribution built before the tape by a factory classmethod": ("outside-tape", """
        mean, var = tf.Variable(0.4), tf.Variable(0.02)
        prior = tfd.Beta.experimental_from_mean_variance(mean, var)
        with tf.GradientTape() as tape:
            loss = -tf.reduce_mean(prior.log_prob(samples))
        grads = tape.gradient(loss, [mean, var])
        """),
    "optimizer.lr read under hasattr(optimizer, 'lr')": ("keras2-lr", """
        import keras
        def current_lr(optimizer):
            if hasattr(optimizer, "lr"):
                return optimizer.lr
            return optimizer.learning_rate
        """),
    "an argmax Lambda in a model that is only used to predict": ("non-differentiable", """
        inputs = keras.Input((10,))
        logits = keras.layers.Dense(3)(inputs)
        model = keras.Model(inputs, logits)
        model.compile(optimizer="adam", loss="mse")
        labels = keras.layers.Lambda(lambda t: keras.ops.argmax(t, axis=-1))(logits)
        classifier = keras.Model(inputs, labels)
        """),
    "a Lambda with argmax first in a Sequential, before any trained layer": ("non-differentiable", """
        model = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda t: tf.argmax(t)),
                                  keras.layers.Embedding(4, 2)])
        model.compile(optimizer="adam", loss="mse")
        """),
    "a gradient with respect to a tensor computed inside the tape": ("not-watched", """
        with tf.GradientTape() as tape:
            h = tf.matmul(x, w)
            loss = tf.reduce_sum(h ** 2)
        g = tape.gradient(loss, h)
        """),
}
