"""Third-catalogue mistakes for 06_fit_vs_custom (tests/third_mistakes/__init__.py).

The model-building exercises (6.1, 6.2) share their frame: each mistake is that frame with the student's
`train_step` (and `__init__`) body put in, so that what differs is easy to see."""
import tapelab_answers

from answers import Reported

TF = "https://github.com/tensorflow/tensorflow/issues/"
KERAS = "https://github.com/keras-team/keras/issues/"


def _model(factory: str, body: str) -> str:
    """A `factory(n_features=1)` answer whose model class holds `body` (its methods, indented by 8)."""
    return f'''
def {factory}(n_features=1):
    class StudentModel(keras.Model):
{body.strip(chr(10))}

    inputs = keras.Input((n_features,))
    outputs = keras.layers.Dense(1, kernel_initializer="zeros")(inputs)
    return StudentModel(inputs, outputs)
'''


_UPDATE_METRICS = '''
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}'''

# Exercise 6.1's `test_step`, right, after each of its mistaken `train_step`s.
_TEST_STEP = '''

        def test_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            y_pred = self(x, training=False)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)''' + _UPDATE_METRICS

def _edited62(*edits: tuple[str, str]) -> str:
    """Exercise 6.2's reference, the notebook's variant, with each (old, new) edit made everywhere (each must
    apply)."""
    code = tapelab_answers.answer("6.2").solution
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new)
    return code

MISTAKES = {
    "ex6_1_answer": [
        Reported("every metric fed (y, y_pred), the loss tracker too", _model("make_custom_model", '''
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}''' + _TEST_STEP),
            "`self.metrics` includes the loss tracker, a `Mean`, which must be fed the loss; given `(y, y_pred)` it "
            "averages the targets weighted by the predictions, so the reported loss is not the loss. Update the "
            "tracker named \"loss\" with `loss` (weighted by the rows) and the others with `(y, y_pred)`.",
            TF + "55216"),
        Reported("the row weights dropped when unpacking", _model("make_custom_model", '''
        def train_step(self, data):
            x, y = data[0], data[1]
            sample_weight = None
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)''' + _UPDATE_METRICS + _TEST_STEP),
            "Taking only `data[0]` and `data[1]` throws away the weight per row that `fit` passes as a third "
            "element, so weighted losses and metrics differ from `fit`'s; unpack with "
            "`keras.utils.unpack_x_y_sample_weight(data)` and pass `sample_weight` on.",
            "https://github.com/keras-team/keras-io/pull/2188"),
        Reported("the loss not scaled under mixed precision", _model("make_custom_model", '''
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)''' + _UPDATE_METRICS + _TEST_STEP),
            "Under `mixed_float16` the optimizer is a `LossScaleOptimizer` that unscales the gradients it is "
            "given; differentiating the unscaled loss makes every step too small by the loss scale. Differentiate "
            "`self.optimizer.scale_loss(loss)`.", KERAS + "19479"),
        Reported("the batch's loss returned instead of the metrics", _model("make_custom_model", '''
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            return {"loss": loss}''' + _TEST_STEP),
            "Returning `{\"loss\": loss}` reports the last batch's loss, where `fit` reports the running mean of "
            "its metrics over the epoch (and the other metrics are never updated); update `self.metrics` and "
            "return their `result()`.", KERAS + "16836"),
    ],
    "ex6_2_answer": [
        Reported("y_pred not cast under mixed precision", _edited62(
            ("tf.cast(self(x, training=True), y.dtype)", "self(x, training=True)"),
            ("tf.cast(self(x, training=False), y.dtype)", "self(x, training=False)")),
            "Under `mixed_float16` the model's output is float16 while `y` is float32, so `y - y_pred` fails on "
            "mixed dtypes; cast first, `tf.cast(y_pred, y.dtype)`.", KERAS + "20894"),
        Reported("the TF 2 get_scaled_loss", _edited62(("self.optimizer.scale_loss(loss)",
                                                        "self.optimizer.get_scaled_loss(loss)")),
            "`get_scaled_loss` belongs to the TensorFlow 2 `LossScaleOptimizer`; Keras 3 optimizers have "
            "`scale_loss` instead, so this raises `AttributeError`.", KERAS + "19479"),
        Reported("test_step reports the batch loss and leaves the loss tracker alone", _edited62((
            "            return self.track(x, y, y_pred, loss)\n\n        def track",
            "            self.metric_tracker.update_state(y, y_pred)\n"
            "            logs = {m.name: m.result() for m in self.metrics}\n"
            "            logs[\"loss\"] = loss\n"
            "            return logs\n\n        def track")),
            "`test_step` never updates the loss tracker and puts the batch's own loss in its logs. Keras 3 "
            "reports the trackers' results when the logs' names are theirs, so `evaluate` gives the loss tracker's "
            "empty 0; update the loss tracker in `test_step` as in "
            "`train_step` and return the trackers' results.", "https://github.com/tensorflow/recommenders/issues/585"),
        Reported("a per-row loss vector from the Keras function", _edited62((
            "loss = tf.reduce_mean(tf.square(y - y_pred))", "loss = keras.losses.mean_squared_error(y, y_pred)")),
            "`keras.losses.mean_squared_error` returns one value per row; the tape differentiates their sum, so "
            "the step is batch-size times too large. Average over the batch with `tf.reduce_mean`.", KERAS + "16836"),
    ],
    "ex6_3_answer": [
        Reported("the factor written as min(norm, max) / norm", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(tf.cast(g, tf.float32))) for g in grads]))
    scale = tf.minimum(global_norm, max_norm) / global_norm
    return [g * tf.cast(scale, g.dtype) for g in grads]
''', "For all-zero gradients the factor is 0 / 0, NaN, so zero gradients come back as NaN instead of "
            "unchanged; write it as `tf.minimum(1.0, max_norm / global_norm)`, which is 1 when the norm is 0.",
            "https://github.com/google-deepmind/optax/pull/1752"),
        Reported("each gradient clipped by its own norm", '''
def clip_gradients(grads, max_norm):
    clipped = []
    for g in grads:
        norm = tf.sqrt(tf.reduce_sum(tf.square(tf.cast(g, tf.float32))))
        scale = tf.minimum(1.0, max_norm / norm)
        clipped.append(g * tf.cast(scale, g.dtype))
    return clipped
''', "Each gradient is scaled by its own norm, so they no longer share one factor and the global norm can "
            "still exceed `max_norm`; compute one norm over all of them.", "https://github.com/magenta/magenta/pull/1025"),
        Reported("float16 squares summed in float16", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.cast(tf.reduce_sum(tf.square(g)), tf.float32) for g in grads]))
    scale = tf.minimum(1.0, max_norm / global_norm)
    return [g * tf.cast(scale, g.dtype) for g in grads]
''', "The squares are taken before the cast: a float16 entry in the hundreds squares past float16's maximum, "
            "the norm becomes inf and the factor 0, so those gradients come back zero. Cast each gradient to "
            "float32 before squaring.", TF + "21363"),
        Reported("always rescaled to max_norm", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(tf.cast(g, tf.float32))) for g in grads]))
    scale = max_norm / global_norm
    return [g * tf.cast(scale, g.dtype) for g in grads]
''', "Without the `tf.minimum(1.0, ...)` the gradients are rescaled to norm `max_norm` even when they were "
            "smaller, so small gradients get larger; clipping must leave them unchanged.", TF + "22048"),
    ],
    "ex6_4_answer": [
        Reported("one optimizer for every variable", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(tf.square(y - y_pred))
        scaled = opt_a.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    opt_a.apply(grads, model.trainable_variables)
    return loss
''', "All the variables are updated by `opt_a`, so the second layer moves with the first optimizer's rate and "
            "state; update the first layer with `opt_a` and the others with `opt_b`.",
            "https://github.com/eriklindernoren/Keras-GAN/issues/128"),
        Reported("two gradient calls on an ordinary tape", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape() as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(tf.square(y - y_pred))
        scaled_a, scaled_b = opt_a.scale_loss(loss), opt_b.scale_loss(loss)
    opt_a.apply(tape.gradient(scaled_a, first), first)
    opt_b.apply(tape.gradient(scaled_b, others), others)
    return loss
''', "An ordinary tape gives one set of gradients, so the second `tape.gradient` raises; open it with "
            "`persistent=True` since each optimizer needs its own scaled loss.", "https://github.com/tensorflow/docs/pull/842"),
        Reported("variables split by position in one list", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    variables = model.trainable_variables
    first, others = variables[:2], variables[2:]
    with tf.GradientTape(persistent=True) as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(tf.square(y - y_pred))
        scaled_a, scaled_b = opt_a.scale_loss(loss), opt_b.scale_loss(loss)
    opt_a.apply(tape.gradient(scaled_a, first), first)
    opt_b.apply(tape.gradient(scaled_b, others), others)
    return loss
''', "`variables[:2]` assumes the first layer has a kernel and a bias; when it has no bias the second layer's "
            "kernel goes to `opt_a`. Take the variables from the layers: `model.layers[0].trainable_variables`.",
            TF + "37079"),
        Reported("one scaled loss for both optimizers", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        y_pred = tf.cast(model(x, training=True), y.dtype)
        loss = tf.reduce_mean(tf.square(y - y_pred))
        scaled = opt_a.scale_loss(loss)
    opt_a.apply(tape.gradient(scaled, first), first)
    opt_b.apply(tape.gradient(scaled, others), others)
    return loss
''', "Both gradients come from `opt_a`'s scaled loss, but `opt_b` unscales by its own scale; once the two "
            "scales differ, the second layer's step is wrong. Differentiate `opt_b.scale_loss(loss)` for its variables.",
            KERAS + "19479"),
    ],
    "ex6_5_answer": [
        Reported("a NumPy test of the loss inside tf.function", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    if np.isfinite(loss.numpy()) and all(np.all(np.isfinite(g.numpy())) for g in grads):
        optimizer.apply(grads, variables)
        return tf.constant(True)
    return tf.constant(False)
''', "While `tf.function` traces the step a tensor has no value, so `loss.numpy()` raises; test with "
            "`tf.math.is_finite` and choose with `tf.cond` (or an `if` on the tensor itself).", TF + "40916"),
        Reported("only the loss checked", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)

    def apply():
        optimizer.apply(grads, variables)
        return tf.constant(True)

    return tf.cond(tf.math.is_finite(loss), apply, lambda: tf.constant(False))
''', "Only the loss is tested: with inputs so large that the loss is finite but a gradient overflows, the "
            "infinite gradients are applied. Require every gradient to be finite as well.", KERAS + "16552"),
        Reported("check_numerics, which raises instead of skipping", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    tf.debugging.check_numerics(loss, "loss")
    for g in grads:
        tf.debugging.check_numerics(g, "gradient")
    optimizer.apply(grads, variables)
    return tf.constant(True)
''', "`check_numerics` raises on a NaN or inf, so a bad batch stops training instead of being skipped; test "
            "with `tf.math.is_finite` and return False without applying.", "https://github.com/tensorflow/tensorflow/pull/27733"),
        Reported("NaN tested, infinity missed", '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    ok = tf.logical_not(tf.math.is_nan(loss))
    for g in grads:
        ok = ok & tf.logical_not(tf.reduce_any(tf.math.is_nan(g)))

    def apply():
        optimizer.apply(grads, variables)
        return tf.constant(True)

    return tf.cond(ok, apply, lambda: tf.constant(False))
''', "`tf.math.is_nan` lets infinities through: an overflowing loss or gradient is applied. Test with "
            "`tf.math.is_finite`, which rejects both.", TF + "21363"),
    ],
    "ex6_6_answer": [
        Reported("validation run in training mode", '''
def evaluate(model, dataset):
    total, count = 0.0, 0
    for x, y in dataset:
        predictions = model(x, training=True)
        errors = tf.square(y - predictions)
        total += float(tf.reduce_sum(errors))
        count += int(tf.size(errors))
    return total / count
''', "The validation pass calls the model with `training=True`: `BatchNormalization` normalises each batch by its own "
            "statistics and moves its moving ones, and `Dropout` drops inputs, so the loss is noisy and evaluating "
            "changes the model. Call `model(x, training=False)`.", TF + "33771"),
        Reported("the plain mean of the batch losses", '''
def evaluate(model, dataset):
    losses_val = []
    for x, y in dataset:
        losses_val.append(float(tf.reduce_mean(tf.square(y - model(x, training=False)))))
    return float(np.mean(losses_val))
''', "`np.mean` of the batch losses counts the short last batch as much as a full one, so its few rows weigh "
            "more than the others. Weight each batch loss by its rows, or add up every row's error and divide by "
            "the number of rows.", "https://github.com/https-deeplearning-ai/tensorflow-3/issues/3"),
        Reported("the last validation batch's loss logged", '''
def evaluate(model, dataset):
    for x, y in dataset:
        val_loss = tf.reduce_mean(tf.square(y - model(x, training=False)))
    return float(val_loss)
''', "Only the loss of the last validation batch survives the loop; the value must combine every batch, each row "
            "counted once.", "https://github.com/NVIDIA/DeepLearningExamples/pull/299"),
        Reported("the batch means summed", '''
def evaluate(model, dataset):
    val_loss = 0.0
    for x, y in dataset:
        val_loss += float(tf.reduce_mean(tf.square(y - model(x, training=False))))
    return val_loss
''', "Adding up the batch means gives a number that grows with the number of batches; the validation loss is the "
            "mean over every row: the sum of the row errors divided by the number of rows.",
            "https://github.com/davidnabergoj/torchflows/issues/7"),
    ],
}
