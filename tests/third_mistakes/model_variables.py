"""Third-catalogue mistakes for 02_model_variables (tests/third_mistakes/__init__.py)."""
from answers import Reported

TF = "https://github.com/tensorflow/tensorflow/issues/"

MISTAKES = {
    "ex2_1_answer": [
        Reported("the model called without training=True", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        preds = model(x)
        loss = loss_fn(y, preds)
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: float(tf.linalg.global_norm(g)) for name, g in grads.items()}
''', "Called without `training=True`, the `BatchNormalization` layer normalises with its moving statistics "
            "instead of the batch's, so the norms are those of another function's gradients; call "
            "`model(x, training=True)`.", TF + "36936"),
        Reported("the loss arguments in the wrong order", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(preds, y)
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: float(tf.linalg.global_norm(g)) for name, g in grads.items()}
''', "Keras losses take `(y_true, y_pred)`; `loss_fn(preds, y)` computes another quantity for a loss that is "
            "not symmetric, and its gradients' norms differ. Write `loss_fn(y, preds)`.", TF + "38067"),
        Reported("layer losses added with add_n on a model that has none", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(y, preds) + tf.add_n(model.losses)
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: float(tf.linalg.global_norm(g)) for name, g in grads.items()}
''', "The task's loss is `loss_fn(y, preds)` alone; besides, `tf.add_n` of the empty list `model.losses` "
            "raises on a model without regularizers. Drop the added term.", TF + "33556"),
        Reported("every layer's weights, a frozen layer's and the moving statistics included", '''
def layer_gradient_norms(model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(y, preds)
    grads = tape.gradient(loss, {layer.name: layer.weights for layer in model.layers})
    return {name: float(tf.linalg.global_norm(g)) for name, g in grads.items()}
''', "`layer.weights` is every weight of a layer: a frozen layer's too, whose gradient the tape still computes, "
            "so the frozen layer gets an entry it should not have (and batch norm's moving statistics, whose "
            "gradients are None). Take `layer.trainable_weights`, and keep only the layers where it is not empty.",
            "https://github.com/tensorlayer/SRGAN/pull/162"),
    ],
    "ex2_2_answer": [
        Reported("the loop name rebound to a new tensor", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign(0.9 * vel - lr * g)
        v = v + vel
''', "`v = v + vel` only rebinds the loop name to a new tensor; the variables in the list never move, though the "
            "velocities are right. Update each variable in place with `v.assign_add(vel)`.", TF + "6278"),
        Reported("the step applied to NumPy copies", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign(0.9 * vel - lr * g)
        values = v.numpy()
        values += vel.numpy()
''', "`v.numpy()` returns a copy of the variable's values; adding to that copy leaves the variable as it was. "
            "Use `v.assign_add(vel)`.", TF + "61524"),
        Reported("assign instead of assign_add", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign(0.9 * vel - lr * g)
        v.assign(vel)
''', "`v.assign(vel)` replaces the variable's value by the velocity instead of adding the velocity to it; "
            "`v.assign_add(vel)` is the update.", TF + "35781"),
        Reported("the step taken up the gradient", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign(0.9 * vel + lr * g)
        v.assign_add(vel)
''', "`+ lr * g` makes the velocity point up the gradient, so every step increases the loss; momentum descends "
            "with `0.9 * vel - lr * g`.",
            "https://github.com/dragen1860/Deep-Learning-with-TensorFlow-book/issues/156"),
    ],
    "ex2_3_answer": [
        Reported("the regularization losses left out", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + 0.1 * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "The loss leaves out the layers' regularization terms, `sum(model.losses)`, so on a model with a "
            "regularizer the weights move differently and the returned loss is too small; add them inside the tape.",
            "https://github.com/pythonlessons/TensorFlow-2.x-YOLOv3/issues/165"),
        Reported("the list of layer losses added as it is", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + model.losses + 0.1 * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "`model.losses` is a list: adding it to the scalar loss makes a vector with one entry per layer loss "
            "(or an empty one), not their sum; the gradient of that vector and the returned value are wrong. "
            "Add `sum(model.losses)`.", TF + "33556"),
        Reported("the model called without training=True", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + 0.1 * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "Without `training=True` the `BatchNormalization` layer uses its moving statistics and never updates "
            "them, so that model trains as another function; call `model(x, training=True)`.", TF + "36936"),
        Reported("the forward pass made before the tape opened", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    preds = model(x, training=True)
    with tf.GradientTape() as tape:
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + 0.1 * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "`preds` is computed before the tape starts, so the tape never records how the weights produce it: the "
            "data loss adds no gradient, and only the pull and the weights' penalties move them; move the forward "
            "pass inside the `with` block.", TF + "31265"),
    ],
    "ex2_4_answer": [
        Reported("the metric never reset between epochs", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        for x, y in dataset:
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "Without `metric.reset_state()` at the start of each epoch the mean keeps every earlier batch, so from the "
            "second epoch on each number is a running mean since the start.", "https://github.com/lucasjinreal/tfboys/issues/1"),
        Reported("one iterator for all epochs", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    batches = iter(dataset)
    for epoch in range(epochs):
        metric.reset_state()
        for x, y in batches:
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "`iter(dataset)` is made once and used up by the first epoch; later epochs get no batch, never call "
            "`step`, and report an empty mean. Loop over `dataset` itself each epoch.",
            "https://github.com/meta-pytorch/torchforge/pull/519"),
        Reported("the metric reset after every batch", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        for x, y in dataset:
            metric.reset_state()
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "Resetting inside the batch loop leaves only the last batch in the metric, so each epoch reports its last "
            "batch's loss, not the mean; reset once, before the batch loop.",
            "https://github.com/Lightning-AI/pytorch-lightning/issues/4874"),
        Reported("a single pass, epochs ignored", '''
def train_epochs(step, dataset, epochs, metric):
    metric.reset_state()
    for x, y in dataset:
        metric.update_state(step(x, y))
    return [float(metric.result())]
''', "The function trains one epoch whatever `epochs` is and returns one mean; wrap the batch loop in "
            "`for epoch in range(epochs):` and record one mean per epoch.", "https://github.com/CoinCheung/BiSeNet/issues/307"),
    ],
    "ex2_5_answer": [
        Reported("the variables created inside the compiled function", '''
def make_running_mean():
    @tf.function
    def update(value):
        total = tf.Variable(0.0)
        count = tf.Variable(0.0)
        total.assign_add(value)
        count.assign_add(1.0)
        return total / count
    return update
''', "A `tf.Variable` made in the body of a `tf.function` is made again at every trace, which TensorFlow "
            "refuses (and in eager code it would start from zero at every call, remembering nothing); make "
            "`total` and `count` once, in `make_running_mean`, and only update them inside `update`.", TF + "26812"),
        Reported("the running values kept in a Python dict", '''
def make_running_mean():
    state = {"total": 0.0, "count": 0}

    @tf.function
    def update(value):
        state["total"] += value
        state["count"] += 1
        return state["total"] / state["count"]
    return update
''', "Python arithmetic on the dict runs only while the function is traced: the graph computes "
            "`(0.0 + value) / 1` on every call, so it returns each value back and forgets the earlier ones. Keep "
            "the running total and count in `tf.Variable`s and change them with `assign_add`.",
            "https://github.com/google-research/seed_rl/issues/52"),
        Reported("a Python counter beside a variable total", '''
def make_running_mean():
    total = tf.Variable(0.0)
    calls = [0]

    @tf.function
    def update(value):
        total.assign_add(value)
        calls[0] += 1
        return total / calls[0]
    return update
''', "The total is a variable, but `calls[0] += 1` is Python, run once while tracing, so the graph always "
            "divides by 1 and returns the running sum, not the mean; count calls in a `tf.Variable` too.",
            TF + "31362"),
        Reported("the variables rebound to tensors instead of updated", '''
def make_running_mean():
    total = tf.Variable(0.0)
    count = tf.Variable(0.0)

    @tf.function
    def update(value):
        nonlocal total, count
        total = total + value
        count = count + 1.0
        return total / count
    return update
''', "`total = total + value` makes a new tensor and rebinds the name; the variables themselves never change, "
            "so every call computes `(0 + value) / 1`. Update them in place: `total.assign_add(value)` and "
            "`count.assign_add(1.0)`.", TF + "31363"),
    ],
    "ex2_6_answer": [
        Reported("the accumulated gradients applied as their sum", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=0.1)
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
        if calls == 2:
            optimizer.apply(accumulators, variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
            calls = 0

    return step
''', "The accumulators hold the sum of the 2 micro-batch gradients, and applying that sum makes twice the full-batch "
            "step (as if the learning rate were doubled). Apply their mean: divide by 2.",
            "https://github.com/fastai/fastai/issues/3023"),
        Reported("the losses added up across tapes", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=0.1)
    variables = model.trainable_variables
    state = {"loss": 0.0, "calls": 0}

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
            state["loss"] = state["loss"] + loss / 2
        state["calls"] += 1
        if state["calls"] == 2:
            optimizer.apply(tape.gradient(state["loss"], variables), variables)
            state["loss"], state["calls"] = 0.0, 0

    return step
''', "Each call has its own tape, and the last tape did not record the earlier micro-batches' losses: to it they are "
            "constants, so the gradient is the last micro-batch's alone (halved). Accumulate the gradients, each "
            "taken from its own tape, not the losses.", TF + "55478"),
        Reported("the accumulation test inverted", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=0.1)
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
        if calls % 2:
            optimizer.apply([acc / 2 for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))

    return step
''', "`if calls % 2:` is true when the count is NOT a multiple of 2, so the step applies after the first micro-batch "
            "and accumulates on the second: apply when `calls % 2 == 0`.",
            "https://github.com/eriklindernoren/PyTorch-YOLOv3/pull/313"),
        Reported("the accumulators emptied before every micro-batch", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=0.1)
    variables = model.trainable_variables
    accumulators = [tf.Variable(tf.zeros_like(v)) for v in variables]
    calls = 0

    def step(x, y):
        nonlocal calls
        for acc in accumulators:
            acc.assign(tf.zeros_like(acc))
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        for acc, g in zip(accumulators, tape.gradient(loss, variables)):
            acc.assign_add(g)
        calls += 1
        if calls == 2:
            optimizer.apply([acc / 2 for acc in accumulators], variables)
            calls = 0

    return step
''', "The accumulators are emptied at the start of every call, so only the last micro-batch's gradients are left "
            "when the step applies. Empty them after `apply`, not before each micro-batch.",
            "https://github.com/tientrandinh/Revisiting-Reverse-Distillation/issues/12"),
    ],
    "ex2_7_answer": [
        Reported('a module-level Python counter updated inside the compiled step', '''
calls = 0


def make_warmup_step(model, optimizer):
    @tf.function
    def step(x, y):
        global calls
        calls += 1
        scale = min(1.0, calls / 3)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', '`calls` is a Python number: `calls += 1` runs once, while `step` is traced, so the graph holds the scale 1/3 for every call. Keep the count in a `tf.Variable` made in `make_warmup_step` and `assign_add` to it.',
            'https://github.com/google-research/seed_rl/issues/52'),
        Reported('the counter variable created inside the compiled step', '''
def make_warmup_step(model, optimizer):
    @tf.function
    def step(x, y):
        calls = tf.Variable(0.0)
        calls.assign_add(1.0)
        scale = tf.minimum(1.0, calls / 3)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', '`step` creates a new `tf.Variable` each time it is traced, which a `tf.function` refuses (`ValueError`); and a counter made anew would start from 0 on every call anyway. Create it once, in `make_warmup_step`, before `step`.',
            'https://github.com/tensorflow/tensorflow/issues/34983'),
        Reported('the counter read with .numpy() inside the compiled step', '''
def make_warmup_step(model, optimizer):
    calls = tf.Variable(0.0)

    @tf.function
    def step(x, y):
        calls.assign_add(1.0)
        scale = min(1.0, calls.numpy() / 3)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', "While `step` is traced the counter has no value yet: `.numpy()` exists only outside a `tf.function`, so the "
            "trace fails. Compute the scale with TensorFlow operations on the variable: `tf.minimum(1.0, calls / 3)`.",
            'https://github.com/tensorflow/tensorflow/issues/31439'),
        Reported('an integer counter divided into a float64 scale', '''
def make_warmup_step(model, optimizer):
    calls = tf.Variable(0)

    @tf.function
    def step(x, y):
        calls.assign_add(1)
        scale = tf.minimum(1.0, calls / 3)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', '`calls` is an int32 variable, and `calls / 3` divides in float64, so `scale * g` multiplies a float64 by the float32 gradients and fails. Count in float32, `tf.Variable(0.0)`, or cast: `tf.cast(calls, tf.float32) / 3`.',
            'https://github.com/keras-team/keras-io/issues/1502'),
    ],
}
