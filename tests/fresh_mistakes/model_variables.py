"""Second-catalogue mistakes for 02_model_variables (tests/fresh_mistakes/__init__.py)."""
from answers import Fresh

MISTAKES = {
    "ex2_1_answer": [
        Fresh("one gradient call per layer on a non-persistent tape", '''
def layer_gradient_norms(model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    norms = {}
    for layer in model.layers:
        if layer.trainable_weights:
            g = tape.gradient(loss, layer.trainable_weights)
            norms[layer.name] = ${measure_code}
    return norms
''', "tape-used-twice", "A non-persistent tape answers one `gradient` call, so the second layer's call raises; "
            "ask once, with every trained layer's weights in one nest (a dict by layer name), or make the tape "
            "persistent."),
        Fresh("model.predict inside the tape", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        preds = model.predict(x, verbose=0)
        loss = loss_fn(y, preds)
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: ${measure_code} for name, g in grads.items()}
''', ("predict-in-tape", "numpy-in-path"), "`model.predict` returns a NumPy array (and runs in inference mode), so "
            "the tape records nothing from the weights to `loss` and every gradient is None; call "
            "`model(x, training=True)` inside the tape."),
        Fresh("every layer's weights, the frozen layer's too", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.weights]
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, {layer.name: layer.weights for layer in layers})
    grads = {name: [t for t in g if t is not None] for name, g in grads.items()}
    return {name: ${measure_code} for name, g in grads.items()}
''', "frozen-included", "`layer.weights` still lists a frozen layer's kernel and bias, and the tape still "
            "differentiates them, so the frozen layer gets an entry (dropping the `None` gradients of batch norm's "
            "moving statistics hides the other symptom); take `layer.trainable_weights`, empty for a frozen layer, "
            "and keep only the layers where it is not."),
        Fresh("the measure without its last step", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: ${measure_slip} for name, g in grads.items()}
''', ("norm-without-sqrt", "missing-abs"), "The measure drops a step of its definition: the global norm is the "
            "square root of the sum of squares, and the max and L1 norms take the absolute value of each entry first; "
            "compute the measure the task defines."),
    ],
    "ex2_2_answer": [
        Fresh("variable moved before the velocity is updated", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        v.assign_add(vel)
        vel.assign($m * vel - lr * g)
''', "stale-value", "You add `vel` to `v` before updating `vel`, so each step moves the variable by the previous "
            "step's velocity (zero at first); update `vel` first, then `v.assign_add(vel)`."),
        Fresh("learning rate made a float64 tensor", '''
def manual_sgd_step(variables, velocities, grads, lr):
    lr = tf.constant(lr, dtype=tf.float64)
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign($m * vel - lr * g)
        v.assign_add(vel)
''', "dtype-clash", "`tf.constant(lr, dtype=tf.float64)` cannot be multiplied by the float32 gradients; leave `lr` "
            "a Python number, which takes the gradient's dtype."),
        Fresh("new velocities written into the list", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for i in range(len(variables)):
        velocities[i] = $m * velocities[i] - lr * grads[i]
        variables[i].assign_add(velocities[i])
''', "replaced-by-tensor", "`velocities[i] = ...` replaces the list entry with a new tensor and leaves the velocity "
            "variable at zero, so every step is plain SGD; update it in place with `velocities[i].assign(...)`."),
        Fresh("velocity subtracted, as descent usually is", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign($m * vel - lr * g)
        v.assign_sub(vel)
''', "sign-flipped", "The velocity `$m * vel - lr * g` already points downhill; `v.assign_sub(vel)` moves the "
            "variable uphill. Add it: `v.assign_add(vel)`."),
    ],
    "ex2_3_answer": [
        Fresh("data loss returned without the layer losses", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        data_loss = loss_fn(y, preds)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        total = data_loss + sum(model.losses) + $alpha * pull
    grads = tape.gradient(total, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return data_loss
''', "missing-term", "The update is right, but you return `data_loss`: the task asks for the total loss, "
            "data loss, layer losses and pull, the one you differentiated, so return `total`."),
        Fresh("optimizer.apply given zipped pairs", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(zip(grads, model.trainable_variables))
    return loss
''', "apply-two-lists", "`optimizer.apply` takes the gradients and the variables as two lists; pairs from `zip` go to "
            "`apply_gradients`. Write `optimizer.apply(grads, model.trainable_variables)`."),
        Fresh("own SGD created instead of the given optimizer", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    sgd = keras.optimizers.SGD(learning_rate=0.1)
    sgd.apply(grads, model.trainable_variables)
    return loss
''', "unused-input", "You build `keras.optimizers.SGD(learning_rate=0.1)` and never use the `optimizer` you were "
            "given, so its learning rate (0.05 in the test) is ignored; call `optimizer.apply(...)`."),
        Fresh("gradients applied twice, once each way", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
''', ("applied-twice", "constant-factor"), "`apply` and `apply_gradients` are two ways of doing the same update; calling both takes two "
            "steps (twice the SGD step) per call. Keep one of them."),
    ],
    "ex2_4_answer": [
        Fresh("last batch loss appended", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        metric.reset_state()
        for x, y in dataset:
            loss = step(x, y)
            metric.update_state(loss)
        means.append(float(loss))
    return means
''', "batch-loss-reported", "You update the metric but append `float(loss)`, the last batch's loss; append "
            "`float(metric.result())`, the mean over the epoch's batches."),
        Fresh("enumerate unpacked as the batch", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        metric.reset_state()
        for x, y in enumerate(dataset):
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "batch-not-unpacked", "`for x, y in enumerate(dataset)` makes `x` the batch index and `y` the whole `(x, y)` "
            "batch, so `step` gets an int and a tuple; write `for x, y in dataset:` (or `for i, (x, y) in enumerate(dataset)`)."),
        Fresh("epoch's summed loss given to the metric", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        metric.reset_state()
        epoch_loss = 0.0
        for x, y in dataset:
            epoch_loss += step(x, y)
        metric.update_state(epoch_loss)
        means.append(float(metric.result()))
    return means
''', ("sum-not-mean", "constant-factor"), "You add the batch losses up and give the metric one value, their sum, so "
            "each epoch's 'mean' is the sum over batches; call `metric.update_state(loss)` for every batch."),
        Fresh("one dataset iterator shared by all epochs", '''
def train_epochs(step, dataset, epochs, metric):
    batches = iter(dataset)
    means = []
    for epoch in range(epochs):
        metric.reset_state()
        for x, y in batches:
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "epochs-ignored", "`iter(dataset)` is made once and is exhausted after the first epoch, so later epochs run no "
            "step and report 0; loop over `dataset` itself, which starts a new pass each epoch."),
    ],
    "ex2_5_answer": [
        Fresh("Python floats as the running state", '''
def make_running_mean():
    total, count = 0.0, 0

    @tf.function
    def update(value):
        nonlocal total, count
        total += value$sqr
        count += 1
        return ${sq}total / count${sq_end}

    return update
''', "trace-time-state", "`total += value` and `count += 1` are Python statements: they ran once, while `update` "
            "was traced, so every call returns its own value. Keep both in `tf.Variable`s and `assign_add` to them."),
        Fresh("a Keras Mean created inside the compiled function", '''
def make_running_mean():
    @tf.function
    def update(value):
        mean = keras.metrics.Mean()
        mean.update_state(value$sqr)
        return ${sq}mean.result()${sq_end}

    return update
''', "variable-per-call", "`keras.metrics.Mean()` creates variables, and inside `update` it would create them on "
            "every trace, which `tf.function` refuses on the first call; create the metric in `make_running_mean`."),
        Fresh("module-level variables", '''
running_total = tf.Variable(0.0)
running_count = tf.Variable(0.0)


def make_running_mean():
    @tf.function
    def update(value):
        running_total.assign_add(value$sqr)
        running_count.assign_add(1.0)
        return ${sq}running_total / running_count${sq_end}

    return update
''', "shared-state", "Your variables live at the top of the cell, so every function `make_running_mean()` makes "
            "adds to the same total: create them inside `make_running_mean`."),
        Fresh("the variable rebound to a tensor", '''
def make_running_mean():
    total = tf.Variable(0.0)
    count = tf.Variable(0.0)

    @tf.function
    def update(value):
        nonlocal total
        total = total + value$sqr
        count.assign_add(1.0)
        return ${sq}total / count${sq_end}

    return update
''', ("trace-time-state", "replaced-by-tensor"), "`total = total + value` rebinds the Python name while tracing, "
            "so the graph adds each value to 0 and never to the variable: write `total.assign_add(value$sqr)`."),
    ],
    "ex2_6_answer": [
        Fresh("the sums started afresh inside step", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=$lr)
    variables = model.trainable_variables
    calls = 0

    def step(x, y):
        nonlocal calls
        sums = [tf.zeros_like(v) for v in variables]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        sums = [s + g for s, g in zip(sums, tape.gradient(loss, variables))]
        calls += 1
        if calls == $k:
            optimizer.apply([s / $k for s in sums], variables)
            calls = 0

    return step
''', "accumulator-replaced", "The sums are created inside `step`, so each call starts from zeros and only the last "
            "micro-batch's gradients reach `apply`. Create the accumulators once, in `make_accumulating_step`."),
        Fresh("divided by k twice", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=$lr)
    variables = model.trainable_variables
    accumulators = [tf.Variable(tf.zeros_like(v)) for v in variables]
    calls = 0

    def step(x, y):
        nonlocal calls
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True))) / $k
        for acc, g in zip(accumulators, tape.gradient(loss, variables)):
            acc.assign_add(g)
        calls += 1
        if calls == $k:
            optimizer.apply([acc / $k for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
            calls = 0

    return step
''', "constant-factor", "The loss is already divided by $k, so the accumulators hold the mean; dividing again makes "
            "the step $k times too small. Divide once."),
        Fresh("the accumulators rebound, not emptied", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=$lr)
    variables = model.trainable_variables
    accumulators = [tf.Variable(tf.zeros_like(v)) for v in variables]
    calls = 0

    def step(x, y):
        nonlocal calls
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        for acc, g in zip(accumulators, tape.gradient(loss, variables)):
            acc.assign_add(g)
        calls += 1
        if calls == $k:
            optimizer.apply([acc / $k for acc in accumulators], variables)
            for acc in accumulators:
                acc = tf.zeros_like(acc)
            calls = 0

    return step
''', "accumulators-not-reset", "`acc = tf.zeros_like(acc)` rebinds the loop name and leaves the variable full, so the "
            "second step adds the first step's gradients again. Empty each in place: `acc.assign(tf.zeros_like(acc))`."),
        Fresh("the count tested before it is incremented", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=$lr)
    variables = model.trainable_variables
    accumulators = [tf.Variable(tf.zeros_like(v)) for v in variables]
    calls = 0

    def step(x, y):
        nonlocal calls
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        for acc, g in zip(accumulators, tape.gradient(loss, variables)):
            acc.assign_add(g)
        if calls % $k == 0:
            optimizer.apply([acc / $k for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
        calls += 1

    return step
''', "applied-off-schedule", "The count is tested before it is incremented, so the first call (count 0) already "
            "applies one micro-batch's gradients. Count the call first, then apply when the count reaches $k."),
    ],
    "ex2_7_answer": [
        Fresh("Python's min kept on the variable", '''
def make_warmup_step(model, optimizer):
    calls = tf.Variable(0.0)

    @tf.function
    def step(x, y):
        calls.assign_add(1.0)
        scale = min(1.0, calls / $w)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', 'eager-only-check', "Python's `min` compares the symbolic tensor `calls / $w` with 1.0 while tracing, which needs a Python `bool`; use `tf.minimum(1.0, calls / $w)`."),
        Fresh('the counter rebound to a tensor', '''
def make_warmup_step(model, optimizer):
    calls = tf.Variable(0.0)

    @tf.function
    def step(x, y):
        nonlocal calls
        calls = calls + 1.0
        scale = tf.minimum(1.0, calls / $w)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', ('trace-time-state', 'replaced-by-tensor'), '`calls = calls + 1.0` runs once, while tracing, and rebinds the name to a tensor: the variable never changes and every call uses the first scale. Write `calls.assign_add(1.0)`.'),
        Fresh('tf.function removed', '''
def make_warmup_step(model, optimizer):
    calls = 0

    def step(x, y):
        nonlocal calls
        calls += 1
        scale = min(1.0, calls / $w)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', 'not-compiled', 'Dropping `@tf.function` makes the Python counter run on every call, but the task asks to keep the step compiled: keep the decorator and move the count into a `tf.Variable`.'),
        Fresh('the warm-up removed', '''
def make_warmup_step(model, optimizer):
    @tf.function
    def step(x, y):
        scale = 1.0
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', 'missing-term', 'Every call now makes the full step: the warm-up scale min(1, t / $w) is gone. Count the calls in a variable and scale by `tf.minimum(1.0, calls / $w)`.'),
    ],
}
