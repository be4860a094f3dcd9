"""Realistic wrong answers for 03_watching_tensors, each with words its feedback must contain."""
from answers import Mistake

MISTAKES = {
    "ex3_1_answer": [
        Mistake("target and source swapped", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = $c * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(logits, loss)
''', "wrong way round"),
        Mistake("logits differentiated by themselves", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = $c * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(logits, logits)
''', "by itself"),
        Mistake("w made a constant, never watched", '''
def logit_gradient(x, w, targets):
    w = tf.constant(w)
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = $c * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(loss, logits)
''', "tape.watch"),
        Mistake("a tape that watches nothing by itself", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        logits = x @ w
        loss = $c * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(loss, logits)
''', "watch_accessed_variables=False"),
        Mistake("dloss/dw instead of dloss/dlogits", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = $c * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(loss, w)
''', "That is dloss/dw"),
    ],
    "ex3_2_answer": [
        Mistake("model called on points.numpy()", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points.numpy())
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "leaves TensorFlow"),
        Mistake("forward pass before the tape", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    y = model(points)
    with tf.GradientTape() as tape:
        tape.watch(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "before `tape`'s `with` block"),
        Mistake("watches the NumPy array", '''
def integrated_gradients(model, x, baseline, steps):
    with tf.GradientTape() as tape:
        tape.watch(x)
        alphas = $alpha_code
        points = baseline + alphas[:, None] * (x - baseline)
        y = model(points)
    grads = tape.gradient(y, x)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "A NumPy array cannot be watched"),
        Mistake("mean gradients not multiplied by (x - baseline)", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0)
''', "not yet multiplied"),
        Mistake("points built but never watched", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "tape.watch(points)"),
        Mistake("x watched, the points computed from it in the tape", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    with tf.GradientTape() as tape:
        tape.watch(x)
        points = baseline + alphas[:, None] * (x - baseline)
        y = model(points)
    grads = tape.gradient(y, x)
    return grads * (x - baseline)
''', "through the whole path"),
        Mistake("gradients summed over the points", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_sum(grads, axis=0) * (x - baseline)
''', "summed over"),
        Mistake("a tape and a model call per point", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    grads = []
    for alpha in $alpha_code:
        point = baseline + alpha * (x - baseline)
        with tf.GradientTape() as tape:
            tape.watch(point)
            y = model(point[None])
        grads.append(tape.gradient(y, point))
    return tf.reduce_mean(tf.stack(grads), axis=0) * (x - baseline)
''', "ran the model"),
        Mistake('averages over the features too', '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads) * (x - baseline)
''', 'Average over the points only'),
        Mistake('model.predict inside the tape', '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model.predict(points, verbose=0)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', '`model.predict(points, verbose=0)` returns a NumPy array'),
        Mistake('a path from zero instead of from the baseline', '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = alphas[:, None] * x
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "the task's points run from the baseline"),
    ],
    "ex3_3_answer": [
        Mistake("watches every weight instead of one", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(model.trainable_variables)
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "the one weight's TensorFlow variable"),
        Mistake("watches the Keras weight, not its `.value`", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(weight)
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', ".value)`"),
        Mistake("watches the input besides the weight", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.watch(weight)
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "watch_accessed_variables=False"),
        Mistake("returns the weight itself as watched", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(weight)
        y = model(x)
    return tape.gradient(y, weight), [weight]
''', "return `tape.watched_variables()`"),
        Mistake("default tape watches the weights", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape() as tape:
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "watch_accessed_variables=False"),
        Mistake("nothing watched at all", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "tape.watch(weight)"),
        Mistake("watched after the forward pass", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = model(x)
        tape.watch(weight)
    return tape.gradient(y, weight), tape.watched_variables()
''', "before computing"),
        Mistake("the input's gradient, as in section 7", '''
def one_weight_gradient(model, x):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = model(x)
    return tape.gradient(y, x), tape.watched_variables()
''', "with respect to the input `x`"),
    ],
    "ex3_4_answer": [
        Mistake("softmax before the tape", '''
def softmax_jacobian(logits):
    p = tf.nn.softmax(logits / $t)
    with tf.GradientTape() as tape:
        tape.watch(logits)
    return tape.batch_jacobian(p, logits)
''', "before `tape`'s `with` block"),
        Mistake("gradient instead of a Jacobian", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / $t)
    return tape.gradient(p, logits)
''', "sums over the outputs"),
        Mistake("full jacobian", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / $t)
    return tape.jacobian(p, logits)
''', "tape.batch_jacobian(p, logits)"),
        Mistake("logits never watched", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        p = tf.nn.softmax(logits / $t)
    return tape.batch_jacobian(p, logits)
''', "tape.watch(logits)"),
    ],
}
