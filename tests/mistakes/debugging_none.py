"""Realistic wrong answers for 05_debugging_none, each with words its feedback must contain."""
from answers import Mistake


MISTAKES = {
    "ex5_1_answer": [
        Mistake("the None hidden as zeros", """def fixed_gradient(start):
$broken_tape
    return tape.gradient(loss, w, unconnected_gradients=tf.UnconnectedGradients.ZERO)
""", "asks for zeros where the path is broken"),
        Mistake("the loss returned", """def fixed_gradient(start):
    w = tf.Variable(start)
$shift_line    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = w * x - $kf
        loss = tf.reduce_mean(tf.square(err))
    return loss
""", "the loss's value"),
    ],
    "ex5_2_answer": [
        Mistake("the tensor conversion kept", '''
def fixed_gradients(w, b, x, y):
    w = tf.convert_to_tensor(w)
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = $err_value
        loss = tf.reduce_mean(error ** $p)
    return tape.gradient(loss, [w, b])
''', "replaces the variable `w` you were given"),
        Mistake("prediction before the tape", '''
def fixed_gradients(w, b, x, y):
    pred = tf.matmul(x, w) + b
    with tf.GradientTape() as tape:
        error = $err_value
        loss = tf.reduce_mean(error ** $p)
    return tape.gradient(loss, [w, b])
''', "`pred` is computed from"),
        Mistake(".numpy() left in", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = $err.numpy()
        loss = tf.reduce_mean(error ** $p)
    return tape.gradient(loss, [w, b])
''', "leaves TensorFlow"),
        Mistake("loss computed outside the tape", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = $err_value
    loss = tf.reduce_mean(error ** $p)
    return tape.gradient(loss, [w, b])
''', "compute `loss` inside the `with"),
        Mistake("sum instead of mean", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = $err_value
        loss = tf.reduce_sum(error ** $p)
    return tape.gradient(loss, [w, b])
''', "4 times the right ones"),
    ],
    "ex5_3_answer": [
        Mistake("loss computed before the tape", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
        with tf.GradientTape() as tape:
            tape.watch(w)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w.assign_sub(lr * grad)
    return grads
''', "before `tape`'s `with` block"),
        Mistake("x and y swapped in the loss", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * y$plus_c - x) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w.assign_sub(lr * grad)
    return grads
''', "Is the loss"),
        Mistake("the variable replaced by a tensor", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w = w - lr * grad
    return grads
''', "w.assign_sub(lr * grad)"),
        Mistake("no update at all", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
        grads.append(tape.gradient(loss, w))
    return grads
''', "did not change between the steps"),
        Mistake("assign_add: a step uphill", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w.assign_add(lr * grad)
    return grads
''', "uphill"),
    ],
    "ex5_4_answer": [
        Mistake("stop_gradient around the whole quantiser", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        pred = tf.stop_gradient(tf.clip_by_value(tf.round(w * x$div)$mul, $lo, $hi))
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "`tf.stop_gradient` blocks gradients"),
        Mistake("NumPy rounding", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, $lo, $hi)
        pred = np.round(z$div)$mul
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "leaves TensorFlow"),
        Mistake("cast to int", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        pred = tf.clip_by_value(tf.cast(tf.cast(w * x$div, tf.int32), tf.float32)$mul, $lo, $hi)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "tf.cast(w * x$div, tf.int32)"),
        Mistake("plain tf.round", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        pred = tf.clip_by_value(tf.round(w * x$div)$mul, $lo, $hi)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "`tf.round(w * x$div)` has no gradient"),
        Mistake("rounding dropped", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        pred = tf.clip_by_value(w * x, $lo, $hi)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "clipped predictions without rounding"),
        Mistake("loss computed outside the tape", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, $lo, $hi)
        pred = z + tf.stop_gradient(tf.round(z$div)$mul - z)
    loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "compute `loss` inside the `with"),
        Mistake("the clip inside the stopped correction", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = w * x
        pred = z + tf.stop_gradient(tf.clip_by_value(tf.round(z$div)$mul, $lo, $hi) - z)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "where the clip holds the prediction still"),
        Mistake("halves rounded up", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, $lo, $hi)
        pred = z + tf.stop_gradient(tf.floor(z$div + 0.5)$mul - z)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "a half to the even neighbour"),
        Mistake("the clip left out", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = w * x
        pred = z + tf.stop_gradient(tf.round(z$div)$mul - z)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "without the clip"),
    ],
    "ex5_5_answer": [
        Mistake("the optimizer applied anyway", '''
def checked_apply(optimizer, grads, variables):
    optimizer.apply_gradients(zip(grads, variables))
''', "applied the step although"),
        Mistake("None gradients dropped and the rest applied", '''
def checked_apply(optimizer, grads, variables):
    pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
    optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])
''', "applied the step although"),
        Mistake("refused only when every gradient is None", '''
def checked_apply(optimizer, grads, variables):
    if all(g is None for g in grads):
        raise ValueError(f"no gradients for {[v.path for v in variables]}")
    optimizer.apply(grads, variables)
''', "applied the step although"),
        Mistake("variables named by name, not path", '''
def checked_apply(optimizer, grads, variables):
    missing = [v.name for g, v in zip(grads, variables) if g is None]
    if missing:
        raise ValueError(f"no gradient for {missing}")
    optimizer.apply(grads, variables)
''', "Did you mean `v.path`"),
        Mistake("applied first, refused after", '''
def checked_apply(optimizer, grads, variables):
    optimizer.apply(grads, variables)
    missing = [v.path for g, v in zip(grads, variables) if g is None]
    if missing:
        raise ValueError(f"no gradient for {missing}")
''', "half applied"),
        Mistake("the None test inverted", '''
def checked_apply(optimizer, grads, variables):
    missing = [v.path for g, v in zip(grads, variables) if g is not None]
    if missing:
        raise ValueError(f"no gradient for {missing}")
    optimizer.apply(grads, variables)
''', "which does not name `aux/kernel`"),
        Mistake("every variable listed in the refusal", '''
def checked_apply(optimizer, grads, variables):
    if any(g is None for g in grads):
        raise ValueError(f"a None gradient among {[v.path for v in variables]}")
    optimizer.apply(grads, variables)
''', "whose gradients exist"),
        Mistake("the refusal raised inside the loop, at the first None", '''
def checked_apply(optimizer, grads, variables):
    i = 0
    while i < len(grads):
        if grads[i] is None:
            raise ValueError("gradient missing: " + variables[i].path)
        i += 1
    optimizer.apply(grads, variables)
''', "raises inside its loop"),
        Mistake("the healthy step refused too", '''
def checked_apply(optimizer, grads, variables):
    missing = [v.path for g, v in zip(grads, variables) if g is None]
    raise ValueError(f"refusing the step: no gradient for {missing}")
''', "although every gradient exists"),
    ],
    "ex5_6_answer": [
        Mistake("sigmoid clipped away from zero before the log", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = $k * x

    def backward(dy):
        return dy * $k * tf.sigmoid(-z)

    return tf.math.log(tf.clip_by_value(tf.sigmoid(z), 1e-7, 1.0)), backward
''', "kept inside the log"),
        Mistake("the naive formula, no custom gradient", '''
def log_sigmoid(x):
    return tf.math.log(tf.sigmoid($k * x))
''', "is not finite"),
        Mistake("σ(z) where 1 − σ(z) belongs", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = $k * x

    def backward(dy):
        return dy * $k * tf.sigmoid(z)

    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z))), backward
''', "the derivative of log(1 + e^"),
        Mistake("the upstream gradient ignored", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = $k * x

    def backward(dy):
        return $k * tf.sigmoid(-z)

    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z))), backward
''', "ignores the upstream gradient"),
        Mistake("the stable formula left to autodiff", '''
def log_sigmoid(x):
    z = $k * x
    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z)))
''', "one side of each kink"),
        Mistake("tf.math.log_sigmoid with no gradient of your own", '''
def log_sigmoid(x):
    return tf.math.log_sigmoid($k * x)
''', "with `@tf.custom_gradient`"),
        Mistake("decorated, but only the value returned", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = $k * x
    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z)))
''', "must return two things"),
    ],
}
