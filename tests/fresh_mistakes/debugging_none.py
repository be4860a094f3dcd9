"""Second-catalogue mistakes for 05_debugging_none (tests/fresh_mistakes/__init__.py)."""
from answers import Fresh

MISTAKES = {
    "ex5_1_answer": [
        Fresh("the loss squared after the tape closed", """
def fixed_gradient(start):
    w = tf.Variable(start)
$shift_line    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = w * x - $kf
    loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w)
""", "outside-tape", "`err` is recorded now, but the square is computed after the `with` block: the tape never saw "
     "the loss. Indent `loss = tf.reduce_mean(tf.square(err))` into the block."),
        Fresh("the square taken with NumPy", """
def fixed_gradient(start):
    w = tf.Variable(start)
$shift_line    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = w * x - $kf
        loss = np.mean(np.square(err))
    return tape.gradient(loss, w)
""", "numpy-in-path", "`np.square` and `np.mean` turn `err` into NumPy values, which the tape does not record: use `tf.square` "
     "and `tf.reduce_mean`."),
        Fresh("w watched instead of err moved into the tape", """
def fixed_gradient(start):
    w = tf.Variable(start)
$shift_line    x = tf.constant([0.5, -1.0, 3.0])
    err = w * x - $kf
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w)
""", ("outside-tape", "watched-too-late"), "Watching `w` changes nothing: `err` was computed from it before the tape "
     "opened, so no recorded operation leads from the loss back to `w`. Compute `err` inside the block."),
        Fresh("the gradient taken with respect to err", """
def fixed_gradient(start):
    w = tf.Variable(start)
$shift_line    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = w * x - $kf
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, err)
""", "wrong-source", "That is d loss / d err, one value per element, without the factor `x` that d err / d w "
     "contributes: the task asks for the gradient with respect to `w`."),
    ],
    "ex5_2_answer": [
        Fresh("elementwise product instead of a matrix product", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = x * w + b
        error = $err_value
        loss = tf.reduce_mean(error ** $p)
    return tape.gradient(loss, [w, b])
''', "elementwise-not-matmul", "The linear model is `tf.matmul(x, w)`: `x * w` multiplies elementwise, which "
     "fails (or broadcasts) for a `(n, d)` input and a `(d, 1)` weight."),
        Fresh("gradients returned in the order [b, w]", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean($err_full ** $p)
    dl_db, dl_dw = tape.gradient(loss, [b, w])
    return [dl_db, dl_dw]
''', "swapped-results", "The gradients are right but in the wrong order: the exercise asks for "
     "`[dl_dw, dl_db]`, so return `tape.gradient(loss, [w, b])`."),
        Fresh("the half-MSE convention", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = $err_value
        loss = 0.5 * tf.reduce_mean(error ** $p)
    return tape.gradient(loss, [w, b])
''', "constant-factor", "The loss asked for is `mean($err_full**$p)`; your `0.5 *` halves both "
     "gradients. Drop the factor."),
        Fresh("NumPy's square instead of .numpy()", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        loss = tf.reduce_mean($np_err)
    return tape.gradient(loss, [w, b])
''', "numpy-in-path", "`$np_fn` returns a NumPy array, which the tape does not record, so both "
     "gradients are `None`; use `tf.square` or `** 2`."),
    ],
    "ex5_3_answer": [
        Fresh("one gradient, applied twice", '''
def two_steps(w, x, y, lr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
    grad = tape.gradient(loss, w)
    grads = []
    for _ in range(2):
        grads.append(grad)
        w.assign_sub(lr * grad)
    return grads
''', "stale-value", "You compute the gradient once, at the start value, and reuse it for the second "
     "step; the second gradient must be taken after the first update, with a new tape in the loop."),
        Fresh("apply_gradients given two lists", '''
def two_steps(w, x, y, lr):
    optimizer = keras.optimizers.SGD(learning_rate=lr)
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        optimizer.apply_gradients([grad], [w])
    return grads
''', "apply-two-lists", "`apply_gradients` takes one iterable of (gradient, variable) pairs: write "
     "`apply_gradients([(grad, w)])`, or simply `w.assign_sub(lr * grad)`."),
        Fresh("one non-persistent tape around both steps", '''
def two_steps(w, x, y, lr):
    grads = []
    with tf.GradientTape() as tape:
        for _ in range(2):
            loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
            grad = tape.gradient(loss, w)
            grads.append(grad)
            w.assign_sub(lr * grad)
    return grads
''', "tape-used-twice", "A tape gives one set of gradients: your single `tape` fails on the second "
     "`tape.gradient`. Open a new `tf.GradientTape()` inside the loop, for each step."),
        Fresh("a new tf.Variable made for each step", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x$plus_c - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w = tf.Variable(w - lr * grad)
    return grads
''', ("no-update", "replaced-by-tensor"), "`w = tf.Variable(w - lr * grad)` gives the second step a "
     "gradient, but binds `w` to a new variable: the caller's variable is never updated. Use "
     "`w.assign_sub(lr * grad)`."),
    ],
    "ex5_4_answer": [
        Fresh("stop_gradient around the rounding only", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, $lo, $hi)
        pred = z + tf.stop_gradient(tf.round(z$div)$mul) - z
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', ("zero-gradient", "stop-gradient"), "With `tf.stop_gradient(tf.round(z$div)$mul)` alone, the `+ z` and `- z` "
     "cancel in the backward pass too, so the gradient is 0; the `- z` belongs inside the stop: "
     "`z + tf.stop_gradient(tf.round(z$div)$mul - z)`."),
        Fresh("a hard-tanh style mask, symmetric about 0", '''
def clipped_gradient(w, x, y):
    @tf.custom_gradient
    def quantise(z):
        def grad(upstream):
            return upstream * tf.cast(tf.abs(z) <= $hi, z.dtype)
        return tf.clip_by_value(tf.round(z$div)$mul, $lo, $hi), grad

    with tf.GradientTape() as tape:
        pred = quantise(w * x)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "unclipped-ste", "The forward value is right, but the mask `|z| ≤ $hi_text` is symmetric while the range "
     "is [$lo_text, $hi_text]: entries below $lo_text still pass a gradient although the clip holds them. Mask "
     "with `(z >= $lo) & (z <= $hi)`."),
        Fresh("rounded values cast to int32", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, $lo, $hi)
        pred = z + tf.stop_gradient(tf.cast(tf.round(z$div)$mul, tf.int32) - z)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "dtype-clash", "`tf.cast(..., tf.int32) - z` subtracts a float32 tensor from an int32 one, which "
     "TensorFlow refuses; `tf.round` already gives whole steps in float32, keep it so."),
        Fresh("the one-line estimator with the terms misplaced", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, $lo, $hi)
        pred = tf.round(z$div)$mul - z + tf.stop_gradient(z)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "sign-flipped", "The forward value is right, but the only path the gradient takes is `- z`, so "
     "your gradient has the opposite sign; write `z + tf.stop_gradient(tf.round(z$div)$mul - z)`."),
    ],
    "ex5_5_answer": [
        Fresh("pairs given to optimizer.apply", '''
def checked_apply(optimizer, grads, variables):
    missing = [v.path for g, v in zip(grads, variables) if g is None]
    if missing:
        raise ValueError(f"no gradient for {missing}")
    optimizer.apply(zip(grads, variables))
''', "apply-two-lists", "`optimizer.apply` takes the two lists, `apply(grads, variables)`; the "
     "`zip` of pairs is what `apply_gradients` takes."),
        Fresh("the missing paths returned instead of raised", '''
def checked_apply(optimizer, grads, variables):
    missing = [v.path for g, v in zip(grads, variables) if g is None]
    if missing:
        print(f"refusing the step: no gradient for {missing}")
        return missing
    optimizer.apply(grads, variables)
''', "error-swallowed", "Your step changes nothing, but it prints and returns instead of refusing: the "
     "exercise asks you to `raise ValueError(...)` so a training loop cannot carry on."),
        Fresh("None gradients replaced by zeros and applied", '''
def checked_apply(optimizer, grads, variables):
    grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, variables)]
    optimizer.apply(grads, variables)
''', "none-applied", "Filling the `None`s with zeros hides the bug and trains the rest of the model; "
     "list the variables whose gradient is `None` and raise `ValueError` before `optimizer.apply`."),
        Fresh("refused at the first None, naming only that variable", '''
def checked_apply(optimizer, grads, variables):
    for g, v in zip(grads, variables):
        if g is None:
            raise ValueError(f"no gradient for {v.path}")
    optimizer.apply(grads, variables)
''', "refused-at-first-none", "You raise at the first `None`, so the message names `aux/kernel` but not "
     "`aux/bias`; collect every path whose gradient is `None` first, then raise one error naming them all."),
    ],
    "ex5_6_answer": [
        Fresh("the scale left out of the backward function", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = $k * x

    def backward(dy):
        return dy * tf.sigmoid(-z)

    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z))), backward
''', "missing-local-derivative", "d/dx log σ($k x) = $k σ(−$k x): the chain rule's factor $k from z = $k x is "
           "missing in `backward`."),
        Fresh("a custom gradient around the naive value", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = $k * x

    def backward(dy):
        return dy * $k * tf.sigmoid(-z)

    return tf.math.log(tf.sigmoid(z)), backward
''', "non-finite-value", "The gradient is right, but the value is still log(σ(z)), which is `-inf` once σ(z) "
           "underflows to 0 at large negative x; compute it as min(z, 0) − log(1 + e^(−|z|))."),
        Fresh("the backward function with a minus sign", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = $k * x

    def backward(dy):
        return -dy * $k * tf.sigmoid(-z)

    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z))), backward
''', "sign-flipped", "log σ is increasing, so its derivative is positive: drop the minus sign in `backward`."),
        Fresh("the scale forgotten in the value", '''
@tf.custom_gradient
def log_sigmoid(x):
    def backward(dy):
        return dy * $k * tf.sigmoid(-$k * x)

    return tf.minimum(x, 0.0) - tf.math.log1p(tf.exp(-tf.abs(x))), backward
''', "missing-term", "The value is log σ(x), not log σ($k x): compute `z = $k * x` and use it in the value too."),
    ],
}
