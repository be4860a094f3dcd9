"""Realistic wrong answers for 02_model_variables, each with words its feedback must contain."""
from answers import Mistake

MISTAKES = {
    "ex2_1_answer": [
        Mistake("loss computed outside the tape", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
    loss = loss_fn(y, preds)
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: ${measure_code} for name, g in grads.items()}
''', "compute `loss` inside the `with"),
        Mistake("the frozen layer kept", '''
def layer_gradient_norms(model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in model.layers})
    return {name: ${measure_code} for name, g in grads.items()}
''', "a frozen layer (its `trainable` is False)"),
        Mistake("loss arguments swapped", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        loss = loss_fn(model(x, training=True), y)
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: ${measure_code} for name, g in grads.items()}
''', "`loss_fn(y, preds)`?"),
        Mistake("model called in inference mode", '''
def layer_gradient_norms(model, loss_fn, x, y):
    layers = [layer for layer in model.layers if layer.trainable_weights]
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, {layer.name: layer.trainable_weights for layer in layers})
    return {name: ${measure_code} for name, g in grads.items()}
''', "training=True"),
        Mistake("keyed by variable path", '''
def layer_gradient_norms(model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, {v.path: [v] for v in model.trainable_variables})
    return {name: ${measure_code} for name, g in grads.items()}
''', "one entry per trainable variable, keyed by its path"),
    ],
    "ex2_2_answer": [
        Mistake("rebinds instead of assigning", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel = $m * vel - lr * g
        v = v + vel
''', "only rebinds the name"),
        Mistake("wrong sign (+ lr * g)", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign($m * vel + lr * g)
        v.assign_add(vel)
''', "uphill"),
        Mistake("learning rate forgotten", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign($m * vel - g)
        v.assign_add(vel)
''', "multiply the gradient by `lr`"),
        Mistake("learning rate hard-coded", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign($m * vel - 0.1 * g)
        v.assign_add(vel)
''', "Did you use the `lr` you were given"),
        Mistake("momentum term forgotten", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel.assign(-lr * g)
        v.assign_add(vel)
''', "is missing"),
        Mistake("velocity rebound, never stored", '''
def manual_sgd_step(variables, velocities, grads, lr):
    for v, vel, g in zip(variables, velocities, grads):
        vel = $m * vel - lr * g
        v.assign_add(vel)
''', "every velocity is still zero"),
    ],
    "ex2_3_answer": [
        Mistake("layer losses forgotten", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "sum(model.losses)"),
        Mistake("model called outside the tape", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    preds = model(x, training=True)
    with tf.GradientTape() as tape:
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "data loss adds no gradient"),
        Mistake("zip pairs swapped", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(model.trainable_variables, grads))
    return loss
''', "swap the pairs"),
        Mistake("gradients negated", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply([-g for g in grads], model.trainable_variables)
    return loss
''', "uphill"),
        Mistake("model called without training=True", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "`model(x, training=True)`"),
        Mistake("apply_gradients given two lists", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(grads, model.trainable_variables)
    return loss
''', "apply_gradients(zip(grads, variables))"),
        Mistake("layer losses read before the tape", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    penalty = sum(model.losses)
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + penalty + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "reading it inside the tape"),
        Mistake("nothing returned", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
''', "Did you forget `return loss`?"),
        Mistake("pull left out", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(y, preds) + sum(model.losses)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "never reads `anchors`"),
        Mistake("pull computed before the tape", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "before the `with` block"),
        Mistake("pull without its factor", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_sum(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "without its factor"),
        Mistake("pull averaged within each variable", '''
def train_step(model, optimizer, loss_fn, x, y, anchors):
    with tf.GradientTape() as tape:
        preds = model(x, training=True)
        pull = sum(tf.reduce_mean(tf.square(v - a)) for v, a in zip(model.trainable_variables, anchors))
        loss = loss_fn(y, preds) + sum(model.losses) + $alpha * pull
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''', "averaged, not summed"),
    ],
    "ex2_4_answer": [
        Mistake("never reset", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        for x, y in dataset:
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "reset_state()` at the start of each epoch"),
        Mistake("reset inside the batch loop", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        for x, y in dataset:
            metric.reset_state()
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "inside the batch loop"),
        Mistake("result read inside the batch loop", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        metric.reset_state()
        for x, y in dataset:
            metric.update_state(step(x, y))
            means.append(float(metric.result()))
    return means
''', "inside the batch loop? Append it once per epoch"),
        Mistake("the Keras 2 reset_states", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        metric.reset_states()
        for x, y in dataset:
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "Did you mean `reset_state()`?"),
        Mistake("a fresh Mean each epoch instead of the given metric", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        epoch_loss = keras.metrics.Mean()
        for x, y in dataset:
            epoch_loss.update_state(step(x, y))
        means.append(float(epoch_loss.result()))
    return means
''', "Did you create a new `keras.metrics.Mean()`?"),
        Mistake("step called again to get the loss", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        metric.reset_state()
        for x, y in dataset:
            step(x, y)
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''', "twice per batch"),
        Mistake("one epoch only", '''
def train_epochs(step, dataset, epochs, metric):
    metric.reset_state()
    for x, y in dataset:
        metric.update_state(step(x, y))
    return [float(metric.result())]
''', "Did you loop `for epoch in range(epochs):`"),
        Mistake("batch passed as one tuple", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        metric.reset_state()
        for batch in dataset:
            metric.update_state(step(batch))
        means.append(float(metric.result()))
    return means
''', "write `for x, y in dataset:`"),
        Mistake("reset at the end of the epoch, before reading the result", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        for x, y in dataset:
            metric.update_state(step(x, y))
        metric.reset_state()
        means.append(float(metric.result()))
    return means
''', "Did you call `reset_state()` before `result()`"),
        Mistake("means computed with NumPy, the metric left unused", '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    for epoch in range(epochs):
        losses = [float(step(x, y)) for x, y in dataset]
        means.append(float(np.mean(losses)))
    return means
''', "Update it with `metric.update_state(loss)` for every batch"),
    ],
    "ex2_5_answer": [
        Mistake("values kept in a Python list", '''
def make_running_mean():
    values = []

    @tf.function
    def update(value):
        values.append(value$sqr)
        return ${sq}tf.add_n(values) / len(values)${sq_end}

    return update
''', "Each call returned $of_value"),
        Mistake("a Python counter beside a variable total", '''
def make_running_mean():
    total = tf.Variable(0.0)
    count = 0

    @tf.function
    def update(value):
        nonlocal count
        count += 1
        total.assign_add(value$sqr)
        return ${sq}total / count${sq_end}

    return update
''', "the count you divide by stayed at 1"),
        Mistake("variables created inside the compiled function", '''
def make_running_mean():
    @tf.function
    def update(value):
        total = tf.Variable(0.0)
        count = tf.Variable(0.0)
        total.assign_add(value$sqr)
        count.assign_add(1.0)
        return ${sq}total / count${sq_end}

    return update
''', "Create it once, outside the compiled function"),
        Mistake("variables shared by every function", '''
total = tf.Variable(0.0)
count = tf.Variable(0.0)


def make_running_mean():
    @tf.function
    def update(value):
        total.assign_add(value$sqr)
        count.assign_add(1.0)
        return ${sq}total / count${sq_end}

    return update
''', "they share one total and count"),
        Mistake("not compiled", '''
def make_running_mean():
    values = []

    def update(value):
        values.append(value$sqr)
        return ${sq}tf.add_n(values) / len(values)${sq_end}

    return update
''', "Decorate the function it returns with `@tf.function`"),
    ],
    "ex2_6_answer": [
        Mistake('applied after every micro-batch', '''
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
        if calls >= 1:
            optimizer.apply([acc / $k for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
            calls = 0

    return step
''', 'Your step applies after every micro-batch'),
        Mistake('the sum applied, not divided by k', '''
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
            optimizer.apply([acc for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
            calls = 0

    return step
''', 'times the full-batch step'),
        Mistake('accumulators never emptied', '''
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
            calls = 0

    return step
''', 'were not emptied after `apply`'),
        Mistake('assign instead of assign_add', '''
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
            acc.assign(g)
        calls += 1
        if calls == $k:
            optimizer.apply([acc / $k for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
            calls = 0

    return step
''', 'Did each call replace or empty the accumulators'),
        Mistake("gradients added to the model's weights", '''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=$lr)
    variables = model.trainable_variables
    accumulators = [tf.Variable(tf.zeros_like(v)) for v in variables]
    calls = 0

    def step(x, y):
        nonlocal calls
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        for acc, g in zip(variables, tape.gradient(loss, variables)):
            acc.assign_add(g)
        calls += 1
        if calls == $k:
            optimizer.apply([acc / $k for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
            calls = 0

    return step
''', "you added the gradients to the model's own variables"),
        Mistake('the counter never set back', '''
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
                acc.assign(tf.zeros_like(acc))

    return step
''', 'the weights had not moved'),
    ],
    "ex2_7_answer": [
        Mistake('the given Python counter kept', '''
def make_warmup_step(model, optimizer):
    calls = 0

    @tf.function
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
''', 'ran once, while `tf.function` traced `step`'),
        Mistake('the counter variable created inside the step', '''
def make_warmup_step(model, optimizer):
    @tf.function
    def step(x, y):
        calls = tf.Variable(0.0)
        calls.assign_add(1.0)
        scale = tf.minimum(1.0, calls / $w)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', 'variable'),
        Mistake('the scale computed before the count', '''
def make_warmup_step(model, optimizer):
    calls = tf.Variable(0.0)

    @tf.function
    def step(x, y):
        scale = tf.minimum(1.0, calls / $w)
        calls.assign_add(1.0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', 'before adding 1 to it?'),
        Mistake('the cap at 1 dropped', '''
def make_warmup_step(model, optimizer):
    calls = tf.Variable(0.0)

    @tf.function
    def step(x, y):
        calls.assign_add(1.0)
        scale = calls / $w
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', 'without the cap at 1'),
        Mistake('one counter for every step', '''
calls = tf.Variable(0.0)


def make_warmup_step(model, optimizer):
    @tf.function
    def step(x, y):
        calls.assign_add(1.0)
        scale = tf.minimum(1.0, calls / $w)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply([scale * g for g in grads], model.trainable_variables)
        return loss

    return step
''', 'share one counter'),
    ],
}
