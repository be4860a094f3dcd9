"""Third-catalogue mistakes for 03_watching_tensors (tests/third_mistakes/__init__.py)."""
from answers import Reported

TF = "https://github.com/tensorflow/tensorflow/issues/"

MISTAKES = {
    "ex3_1_answer": [
        Reported("logits computed before the tape", '''
def logit_gradient(x, w, targets):
    logits = x @ w
    with tf.GradientTape() as tape:
        loss = 0.5 * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(loss, logits)
''', "`logits` is a tensor computed before the tape opened, and nothing watches it, so dloss/dlogits is None; "
            "compute `logits` inside the block, where the variable `w` makes the tape record it.", TF + "29942"),
        Reported("the logits turned into NumPy inside the loss", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = 0.5 * tf.reduce_sum((logits.numpy() - targets) ** 2)
    return tape.gradient(loss, logits)
''', "`logits.numpy()` leaves TensorFlow: the loss is computed from a NumPy copy the tape cannot follow, so "
            "it does not depend on `logits` on the record and the gradient is None; keep `logits` a tensor.",
                 TF + "36596"),
        Reported("loss recomputed from x @ w instead of from logits", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = 0.5 * tf.reduce_sum((x @ w - targets) ** 2)
    return tape.gradient(loss, logits)
''', "The loss is computed from a new product `x @ w`, not from the tensor `logits`, so the loss does not "
            "depend on `logits` and the gradient is None; write the loss with `logits`.", TF + "24849"),
        Reported("dloss/dlogits as dloss/dw over dlogits/dw from one tape", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = 0.5 * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(loss, w) / tape.gradient(logits, w)
''', "An ordinary tape answers one `gradient` call and is then released, so the second call raises (and the "
            "ratio would not be dloss/dlogits anyway); the tape gives it directly: `tape.gradient(loss, logits)`.",
                 TF + "46487"),
    ],
    "ex3_2_answer": [
        Reported("the NumPy array watched as it is", '''
def integrated_gradients(model, x, baseline, steps):
    with tf.GradientTape() as tape:
        tape.watch(x)
        alphas = tf.range(1, steps + 1, dtype=tf.float32) / steps
        points = baseline + alphas[:, None] * (x - baseline)
        y = model(points)
    grads = tape.gradient(y, x)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "`x` is a NumPy array, and a tape can only watch tensors, so `tape.watch(x)` raises; convert the "
            "inputs with `tf.constant` first, and watch the batch of points the model runs on.", "https://github.com/PAIR-code/saliency/issues/88"),
        Reported("the mean gradients not multiplied by (x - baseline)", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = tf.range(1, steps + 1, dtype=tf.float32) / steps
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0)
''', "The average gradient along the path is only half of the formula: integrated gradients multiply it by "
            "how far each feature moved, `(x - baseline)`, without which the attributions do not add up to f(x) − "
            "f(baseline).", "https://github.com/sicara/tf-explain/pull/185"),
        Reported("model.predict inside the tape", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = tf.range(1, steps + 1, dtype=tf.float32) / steps
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model.predict(points, verbose=0)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "`model.predict` runs its own loop and returns a NumPy array, outside what the tape records, so the "
            "gradient is None; call the model directly, `model(points)`.", "https://github.com/PAIR-code/saliency/issues/88"),
        Reported("the outputs averaged over the points", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = tf.range(1, steps + 1, dtype=tf.float32) / steps
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = tf.reduce_mean(model(points))
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "Averaging the outputs over the batch of points divides every point's gradient by `steps`; each "
            "output depends on its own point, so differentiate `model(points)` itself.", TF + "25476"),
    ],
    "ex3_3_answer": [
        Reported("the default tape, which also watches the other weights", '''
def one_weight_gradient(model, x):
    weight = model.layers[0].kernel.value
    with tf.GradientTape() as tape:
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "A default tape watches every trainable variable it touches, so `watched_variables()` lists all the model's "
            "weights, not the one asked; open it with `watch_accessed_variables=False` and watch the kernel.",
            "https://github.com/tensorflow/probability/issues/695"),
        Reported("nothing watched at all", '''
def one_weight_gradient(model, x):
    weight = model.layers[0].kernel.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "With `watch_accessed_variables=False` the tape records only what you watch, and the kernel is never watched, "
            "so the gradient is None; add `tape.watch(weight)` before calling the model.",
            "https://github.com/fchollet/deep-learning-with-python-notebooks/pull/284"),
        Reported("the kernel copied into a new variable and watched", '''
def one_weight_gradient(model, x):
    weight = tf.Variable(model.layers[0].kernel)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(weight)
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "`tf.Variable(model.layers[0].kernel)` makes a new variable with the kernel's values; the model still computes "
            "with its own kernel, so `y` does not depend on the copy and the gradient is None; watch "
            "`model.layers[0].kernel` itself.", TF + "53541"),
        Reported("the model called in the gradient call, after the block", '''
def one_weight_gradient(model, x):
    weight = model.layers[0].kernel.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(weight)
    return tape.gradient(model(x), weight), tape.watched_variables()
''', "`model(x)` runs as the argument of `tape.gradient`, after the block closed, so nothing was recorded and "
            "the gradient is None; compute `y = model(x)` inside the block.", TF + "27660"),
    ],
    "ex3_4_answer": [
        Reported("the full Jacobian over the whole batch", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / 2)
    return tape.jacobian(p, logits)
''', "`tape.jacobian` differentiates every probability of every example with respect to every logit of every "
            "example, shape (batch, classes, batch, classes), mostly zeros; `tape.batch_jacobian(p, logits)` keeps "
            "the per-example blocks.", "https://github.com/pytorch/pytorch/issues/37129"),
        Reported("gradient, which sums the outputs", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / 2)
    return tape.gradient(p, logits)
''', "`tape.gradient` of a non-scalar target differentiates the sum of its outputs, and each example's "
            "probabilities sum to 1, so it gives zeros of shape (batch, classes); the task wants one row per class: "
            "`tape.batch_jacobian(p, logits)`.", TF + "4897"),
        Reported("batch_jacobian of an unwatched constant", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        p = tf.nn.softmax(logits / 2)
    return tape.batch_jacobian(p, logits)
''', "`logits` is a constant and was never watched, so the tape has no path from `logits` to `p` and the "
            "result is zeros; call `tape.watch(logits)` before the softmax.", TF + "50661"),
        Reported("one jacobian per example, slices taken after the block", '''
def softmax_jacobian(logits):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / 2)
    result = tf.stack([tape.jacobian(p[i], logits[i]) for i in range(logits.shape[0])])
    del tape
    return result
''', "`p[i]` and `logits[i]` are sliced after the block, so the tape never saw them: `logits[i]` is a new "
            "tensor that `p[i]` does not depend on, and each Jacobian is None. `tape.batch_jacobian(p, logits)` is "
            "this loop done right.", TF + "54347"),
    ],
}
