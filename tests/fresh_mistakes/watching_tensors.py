"""Second-catalogue mistakes for 03_watching_tensors (tests/fresh_mistakes/__init__.py)."""
from answers import Fresh

MISTAKES = {
    "ex3_1_answer": [
        Fresh("returns the loss instead of its gradient", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = $c * tf.reduce_sum((logits - targets) ** 2)
    dloss_dlogits = tape.gradient(loss, logits)
    return loss
''', ("returned-value", "loss-for-gradient"), "You compute `dloss_dlogits` and then `return loss`: that is the "
           "loss, one number, not its gradient, one number per logit. Return `dloss_dlogits`."),
        Fresh("mean instead of the task's sum", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = $c * tf.reduce_mean((logits - targets) ** 2)
    return tape.gradient(loss, logits)
''', ("mean-target", "constant-factor"), "`tf.reduce_mean` divides the loss, and so every entry of its gradient, "
           "by the number of logits; the task's loss is a `tf.reduce_sum`."),
        Fresh("both gradients from a non-persistent tape", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
        loss = $c * tf.reduce_sum((logits - targets) ** 2)
    dloss_dw = tape.gradient(loss, w)
    dloss_dlogits = tape.gradient(loss, logits)
    return dloss_dlogits
''', "tape-used-twice", "The second `tape.gradient` call fails because a tape that is not persistent answers "
           "only once; the exercise needs only `tape.gradient(loss, logits)`."),
        Fresh("loss computed after the with block", '''
def logit_gradient(x, w, targets):
    with tf.GradientTape() as tape:
        logits = x @ w
    loss = $c * tf.reduce_sum((logits - targets) ** 2)
    return tape.gradient(loss, logits)
''', "outside-tape", "`loss = ...` is outside the `with tf.GradientTape()` block, so the tape never recorded it "
           "and `tape.gradient(loss, logits)` is None. Indent the loss into the block."),
    ],
    "ex3_2_answer": [
        Fresh("gradient of the mean output", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = tf.reduce_mean(model(points))
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "mean-target", "Averaging the outputs of the points divides each point's gradient by `steps`, so every attribution "
           "is `steps` times too small; differentiate `model(points)` itself (the tape takes the gradient of its "
           "sum)."),
        Fresh("watches a tensor of the points but feeds the NumPy points to the model", '''
def integrated_gradients(model, x, baseline, steps):
    points_np = baseline + np.asarray($alpha_code)[:, None] * (x - baseline)
    points = tf.constant(points_np)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points_np)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', ("not-connected", "wrong-source"), "You watch `points` but call the model on the NumPy array `points_np`, which becomes a different "
           "tensor; `y` does not come from `points`, so its gradient is None. Call `model(points)`."),
        Fresh("multiplied by x instead of (x - baseline)", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = $alpha_code
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * x
''', "missing-term", "The mean gradient is multiplied by `x`, which is right only for a zero baseline; the task multiplies "
           "by `(x - baseline)`."),
        Fresh("steps + 1 points from tf.linspace", '''
def integrated_gradients(model, x, baseline, steps):
    x = tf.constant(x)
    baseline = tf.constant(baseline)
    alphas = tf.linspace(0.0, 1.0, steps + 1)
    points = baseline + alphas[:, None] * (x - baseline)
    with tf.GradientTape() as tape:
        tape.watch(points)
        y = model(points)
    grads = tape.gradient(y, points)
    return tf.reduce_mean(grads, axis=0) * (x - baseline)
''', "path-points", "`tf.linspace(0.0, 1.0, steps + 1)` gives steps + 1 points with both ends of the path; the task names "
           "`steps` points, α = $alphas."),
    ],
    "ex3_3_answer": [
        Fresh("watched and gradient in the wrong order", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(weight)
        y = model(x)
    return tape.watched_variables(), tape.gradient(y, weight)
''', "swapped-results", "The pair is asked as `(gradient, watched)`; you return `tape.watched_variables()` first. "
           "Swap the two."),
        Fresh("gradient of the mean output", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(weight)
        y = tf.reduce_mean(model(x))
    return tape.gradient(y, weight), tape.watched_variables()
''', ("mean-target", "constant-factor"), "`tf.reduce_mean(model(x))` divides the gradient by the number of "
           "outputs; the tape already differentiates the sum of a non-scalar target, so use `y = model(x)`."),
        Fresh("watch_accessed_variables given to watch", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape() as tape:
        tape.watch(weight, watch_accessed_variables=False)
        y = model(x)
    return tape.gradient(y, weight), tape.watched_variables()
''', "weights-watched", "`watch_accessed_variables=False` is an option of the tape, not of `tape.watch` (hence the "
           "TypeError): write `tf.GradientTape(watch_accessed_variables=False)` and `tape.watch(weight)`."),
        Fresh("empty second tape to report watched", '''
def one_weight_gradient(model, x):
    weight = model.layers[$layer].$part.value
    with tf.GradientTape() as tape:
        y = model(x)
    gradient = tape.gradient(y, weight)
    with tf.GradientTape(watch_accessed_variables=False) as quiet:
        quiet.watch(weight)
    return gradient, quiet.watched_variables()
''', ("weights-watched", "not-from-tape"), "The gradient comes from a default `tape` that watched every weight; "
           "`quiet.watched_variables()` holds the weight only because `quiet` watched it and recorded nothing else. "
           "Use one tape with `watch_accessed_variables=False` for the gradient and return its `watched_variables()`."),
    ],
    "ex3_4_answer": [
        Fresh("one gradient per class, stacked first", '''
def softmax_jacobian(logits):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / $t)
        columns = [p[:, k] for k in range(p.shape[1])]
    rows = [tape.gradient(column, logits) for column in columns]
    del tape
    return tf.stack(rows)
''', "permuted-axes", "Stacking one gradient per class along axis 0 gives shape (classes, batch, classes); "
           "the values are right but the batch axis must come first: `tf.stack(rows, axis=1)`, or simply "
           "`tape.batch_jacobian(p, logits)`."),
        Fresh("diag_part of the full Jacobian", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / $t)
    full = tape.jacobian(p, logits)
    return tf.linalg.diag_part(full)
''', ("wrong-axis", "full-jacobian"), "`tf.linalg.diag_part` takes the diagonal of the last two axes of `full` "
           "(example and class of the logits), not of the two batch axes 0 and 2, so the numbers are wrong; use "
           "`tape.batch_jacobian(p, logits)`."),
        Fresh("softmax without the temperature", '''
def softmax_jacobian(logits):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits)
    return tape.batch_jacobian(p, logits)
''', "missing-term", "The task's softmax is of `logits / $t`; without the division the probabilities, and "
           "their Jacobian, are those of another function."),
        Fresh("Jacobian of slices taken after the tape", '''
def softmax_jacobian(logits):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        p = tf.nn.softmax(logits / $t)
    blocks = [tape.jacobian(p[i], logits[i]) for i in range(logits.shape[0])]
    del tape
    return tf.stack(blocks)
''', "sliced-source", "`logits[i]` and `p[i]` are new tensors made after the tape closed, so the tape never "
           "recorded them and every `tape.jacobian` is None; take `tape.batch_jacobian(p, logits)` of the whole "
           "batch instead."),
    ],
}
