"""Second-catalogue mistakes for 06_fit_vs_custom (tests/fresh_mistakes/__init__.py)."""
import tapelab_answers

from answers import Fresh


def _edited62(*edits: tuple[str, str]) -> str:
    """Exercise 6.2's reference template (any variant) with each (old, new) edit made everywhere (each must apply)."""
    code = tapelab_answers.answer("6.2").template
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new)
    return code

MISTAKES = {
    "ex6_1_answer": [
        Fresh("the scaled loss fed to the loss tracker", '''
def make_custom_model(n_features=1):
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
                loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            y_pred = self(x, training=False)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input((n_features,))
    outputs = keras.layers.Dense(1, kernel_initializer="zeros")(${last})
    return CustomModel(inputs, outputs)
''', "constant-factor", "You overwrote `loss` with `self.optimizer.scale_loss(loss)`, so under mixed precision the "
            "loss tracker records the loss times the loss scale; keep `loss` for the metric and differentiate a "
            "separate `scaled_loss`."),
        Fresh("loss weighted by the number of features", '''
def make_custom_model(n_features=1):
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[1])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            y_pred = self(x, training=False)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input((n_features,))
    outputs = keras.layers.Dense(1, kernel_initializer="zeros")(${last})
    return CustomModel(inputs, outputs)
''', ("loss-not-weighted", "wrong-axis"), "`tf.shape(x)[1]` is the number of features, the same for every batch, "
            "so the epoch loss is a plain mean of batch losses; weight by the rows, `tf.shape(x)[0]`."),
        Fresh("compute_loss called like a Keras loss, (y, y_pred)", '''
def make_custom_model(n_features=1):
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y, y_pred, sample_weight=sample_weight)
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            y_pred = self(x, training=False)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input((n_features,))
    outputs = keras.layers.Dense(1, kernel_initializer="zeros")(${last})
    return CustomModel(inputs, outputs)
''', "compute-loss-positional", "`self.compute_loss(y, y_pred, sample_weight=sample_weight)` binds `y` to `x` and `y_pred` to `y`, leaving "
            "`y_pred` empty; call it with keywords, `self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)`."),
        Fresh("the subclass defined but a plain keras.Model returned", '''
def make_custom_model(n_features=1):
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            y_pred = self(x, training=False)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input((n_features,))
    outputs = keras.layers.Dense(1, kernel_initializer="zeros")(${last})
    return keras.Model(inputs, outputs)
''', "no-train-step", "You return `keras.Model(inputs, outputs)`, so `fit` runs Keras's own step and your "
            "`CustomModel.train_step` never runs; return `CustomModel(inputs, outputs)`."),
    ],
    "ex6_2_answer": [
        Fresh("half the mean error", _edited62(("tf.reduce_mean(${fn}", "0.5 * tf.reduce_mean(${fn}")),
              "constant-factor", "The `0.5 *` in your loss halves both the reported loss and every gradient; Keras's "
              "`\"$loss\"` is the plain mean of the $error errors."),
        Fresh("the other error as the loss", _edited62(("${fn}(y - y_pred)", "${other_fn}(y - y_pred)")),
              "wrong-target", "Your loss is `tf.reduce_mean(${other_fn}(...))`, the mean ${other_error} error; the "
              "exercise asks for the mean ${error} error, `tf.reduce_mean(${fn}(...))`."),
        Fresh("self.compute_loss with no compiled loss", _edited62((
            "loss = tf.reduce_mean(${fn}(y - y_pred))", "loss = self.compute_loss(x=x, y=y, y_pred=y_pred)")),
              "keras2-compiled-loss", "The model is compiled with an optimizer only, so `self.compute_loss` has no "
              "loss to compute and raises; write the mean ${error} error yourself in the step."),
        Fresh("the loss multiplied by the batch size for the tracker", _edited62((
            "update_state(loss, sample_weight=tf.shape(x)[0])", "update_state(loss * tf.shape(x)[0])")),
              "dtype-clash", "`loss * tf.shape(x)[0]` multiplies a float32 loss by an int32 row count, which "
              "TensorFlow refuses; and weighting is the tracker's job: `update_state(loss, "
              "sample_weight=tf.shape(x)[0])`."),
    ],
    "ex6_3_answer": [
        Fresh("the ratio upside down", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))
    scale = tf.minimum(1.0, global_norm / max_norm)
    return [g * scale for g in grads]
''', "not-clipped", "Your factor is `global_norm / max_norm`: it is 1 exactly when the gradients are too large, "
            "and shrinks the small ones; the factor is `max_norm / global_norm`, capped at 1."),
        Fresh("one flat tensor by tf.concat", '''
def clip_gradients(grads, max_norm):
    flat = tf.concat(grads, axis=0)
    global_norm = tf.sqrt(tf.reduce_sum(tf.square(flat)))
    scale = tf.minimum(1.0, max_norm / global_norm)
    return [g * scale for g in grads]
''', "shape-clash", "`tf.concat(grads, axis=0)` only works when every gradient has the same rank and trailing "
            "shape; a vector and a matrix cannot be joined, so flatten each first (`tf.reshape(g, [-1])`) or sum "
            "the squares per tensor."),
        Fresh("mean of the squares instead of their sum", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.reduce_mean(tf.square(g)) for g in grads]))
    scale = tf.minimum(1.0, max_norm / global_norm)
    return [g * scale for g in grads]
''', "constant-factor", "`tf.reduce_mean(tf.square(g))` divides each tensor's sum of squares by its size, so "
            "your global norm is too small and you clip too little; the norm needs `tf.reduce_sum`."),
        Fresh("the norm from tf.linalg.global_norm", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.linalg.global_norm(grads)
    scale = tf.minimum(1.0, max_norm / global_norm)
    return [g * scale for g in grads]
''', "library-clip", "The exercise asks you to compute the global norm yourself; `tf.linalg.global_norm` is the "
            "library doing it, so write `tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))`."),
    ],
    "ex6_4_answer": [
        Fresh("the loss averaged over the batch axis only", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(${open}y - y_pred${close}, axis=0)
        scaled_a, scaled_b = opt_a.scale_loss(loss), opt_b.scale_loss(loss)
    opt_a.apply(tape.gradient(scaled_a, first), first)
    opt_b.apply(tape.gradient(scaled_b, others), others)
    return loss
''', "extra-axis", "`tf.reduce_mean(..., axis=0)` keeps the output axis, so you return a loss of shape (1,) "
            "instead of a scalar; drop `axis=0` to average over everything."),
        Fresh("the scaled loss returned", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(${open}y - y_pred${close})
        loss_a, loss_b = opt_a.scale_loss(loss), opt_b.scale_loss(loss)
    opt_a.apply(tape.gradient(loss_a, first), first)
    opt_b.apply(tape.gradient(loss_b, others), others)
    return loss_a
''', "constant-factor", "You return `loss_a`, the loss times `opt_a`'s loss scale, so under mixed precision the "
            "value is thousands of times too large; return the unscaled `loss`."),
        Fresh("scale_loss called after the tape closed", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(${open}y - y_pred${close})
    grads_a = tape.gradient(opt_a.scale_loss(loss), first)
    grads_b = tape.gradient(opt_b.scale_loss(loss), others)
    opt_a.apply(grads_a, first)
    opt_b.apply(grads_b, others)
    return loss
''', ("outside-tape", "no-gradients"), "`opt_a.scale_loss(loss)` runs after the `with` block, so the tape never "
            "recorded the multiplication by the scale and the gradients are None under mixed precision; compute "
            "both scaled losses inside the block."),
        Fresh("apply_gradients with (variable, gradient) pairs", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(${open}y - y_pred${close})
        scaled_a, scaled_b = opt_a.scale_loss(loss), opt_b.scale_loss(loss)
    grads_a = tape.gradient(scaled_a, first)
    grads_b = tape.gradient(scaled_b, others)
    opt_a.apply_gradients(zip(first, grads_a))
    opt_b.apply_gradients(zip(others, grads_b))
    return loss
''', "zip-order", "`zip(first, grads_a)` pairs each variable with its gradient in the wrong order; "
            "`apply_gradients` wants `(gradient, variable)` pairs: `zip(grads_a, first)`."),
    ],
    "ex6_5_answer": [
        Fresh("tf.math.is_nan instead of is_finite", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    ok = tf.shape(x)[0] > 0
    ok = ok & tf.logical_not(tf.math.is_nan(loss))
    for g in grads:
        ok = ok & tf.logical_not(tf.reduce_any(tf.math.is_nan(g)))

    def apply():
        optimizer.apply(grads, variables)
        return tf.constant(True)

    return tf.cond(ok, apply, lambda: tf.constant(False))
''', ("gradients-not-checked", "loss-not-checked"), "`tf.math.is_nan` lets infinities through, so an overflowing "
            "loss or gradient is applied; test `tf.math.is_finite`, which is False for NaN and for Inf."),
        Fresh("tf.reduce_all over checks of different shapes", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    checks = [tf.shape(x)[0] > 0, tf.math.is_finite(loss)] + [tf.math.is_finite(g) for g in grads]
    ok = tf.reduce_all(checks)

    def apply():
        optimizer.apply(grads, variables)
        return tf.constant(True)

    return tf.cond(ok, apply, lambda: tf.constant(False))
''', "shape-clash", "`tf.reduce_all(checks)` must stack your list into one tensor, but it mixes scalars with "
            "a kernel-shaped and a bias-shaped mask; reduce each gradient's mask first, `tf.reduce_all(tf.math.is_finite(g))`."),
        Fresh("only None gradients refused", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    if any(g is None for g in grads):
        return tf.constant(False)
    optimizer.apply(grads, variables)
    return tf.constant(True)
''', ("gradients-not-checked", "loss-not-checked"), "Checking for `None` (as in notebook 05) catches a "
            "disconnected loss, not this one: your step applies NaN and Inf gradients and empty batches; test the "
            "rows, `tf.math.is_finite(loss)` and every gradient, and branch with `tf.cond`."),
        Fresh("tf.cond given the call, not a function", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    ok = tf.shape(x)[0] > 0
    ok = ok & tf.math.is_finite(loss)
    for g in grads:
        ok = ok & tf.reduce_all(tf.math.is_finite(g))
    return tf.cond(ok, optimizer.apply(grads, variables), lambda: tf.constant(False))
''', "applied-anyway", "`optimizer.apply(grads, variables)` is called while building the `tf.cond`, before any "
            "check, and its result (None) is not a function; wrap the update in a function that `tf.cond` calls "
            "only when `ok` is True."),
    ],
    "ex6_6_answer": [
        Fresh("a Mean metric fed each batch's mean, unweighted", '''
def evaluate(model, dataset):
    val_loss = keras.metrics.Mean()
    for x, y in dataset:
        val_loss.update_state(tf.reduce_mean($fn(y - model(x, training=False))))
    return ${open}float(val_loss.result())${close}
''', "loss-not-weighted", "A `Mean` fed one batch mean per batch averages the batch means: the short last batch "
            "counts as much as a full one. Pass `sample_weight=len(x)` to `update_state`, or add up the errors of "
            "every row and divide by the number of rows."),
        Fresh("the total never divided", '''
def evaluate(model, dataset):
    total = 0.0
    for x, y in dataset:
        total += float(tf.reduce_sum($fn(y - model(x, training=False))))
    return ${open}total${close}
''', "sum-not-mean", "That is the sum of every row's error; the mean divides it by the number of rows."),
        Fresh("a predict helper that keeps training mode", '''
def evaluate(model, dataset):
    def predict(x):
        return model(x, training=True)

    total, count = 0.0, 0
    for x, y in dataset:
        errors = $fn(y - predict(x))
        total += float(tf.reduce_sum(errors))
        count += int(tf.size(errors))
    return ${open}total / count${close}
''', "training-mode", "The helper calls the model with `training=True`: `BatchNormalization` uses each batch's own "
            "statistics and moves its moving ones, and `Dropout` drops inputs. Evaluate with `training=False`."),
        Fresh("the batch size read from the first batch", '''
def evaluate(model, dataset):
    total, batches, batch_size = 0.0, 0, None
    for x, y in dataset:
        if batch_size is None:
            batch_size = x.shape[0]
        total += float(tf.reduce_sum($fn(y - model(x, training=False))))
        batches += 1
    return ${open}total / (batches * batch_size)${close}
''', "rows-miscounted", "Multiplying the number of batches by the first batch's size counts the short last batch "
            "as full: count each batch's own rows."),
    ],
}
