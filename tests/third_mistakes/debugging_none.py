"""Third-catalogue mistakes for 05_debugging_none (tests/third_mistakes/__init__.py)."""
from answers import Reported

TF = "https://github.com/tensorflow/tensorflow/issues/"


MISTAKES = {
    "ex5_1_answer": [
        Reported("the None turned into zeros", """
def fixed_gradient(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    err = tf.Variable(tf.zeros(3))
    with tf.GradientTape() as tape:
        err.assign(w * x - 2.0)
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w, unconnected_gradients=tf.UnconnectedGradients.ZERO)
""", "Asking for zeros where the gradient is unconnected makes the `None` go away but not its cause: the path "
            "from `w` to the loss is still broken, so the gradient is 0 instead of the derivative. Fix the line that "
            "breaks the path.", TF + "24849"),
        Reported("err kept as a new variable", """
def fixed_gradient(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = tf.Variable(w * x - 2.0)
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w)
""", "A new `tf.Variable` made from `w * x - 2.0` only copies the value in; its initial value is not a recorded "
            "operation the tape can run backwards, so the loss is cut off from `w`. Keep `err` a tensor: "
            "`err = w * x - 2.0`.", TF + "30234"),
        Reported("the loss computed in the gradient call", """
def fixed_gradient(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = w * x - 2.0
    return tape.gradient(tf.reduce_mean(tf.square(err)), w)
""", "The loss is computed in the `gradient` call, after the `with` block closed, so the tape never recorded "
            "it and the gradient is None. Compute `loss = tf.reduce_mean(tf.square(err))` inside the block and differentiate that.",
                 TF + "27660"),
        Reported("err computed from w.numpy()", """
def fixed_gradient(start):
    w = tf.Variable(start)
    x = tf.constant([0.5, -1.0, 3.0])
    with tf.GradientTape() as tape:
        err = tf.constant(w.numpy() * x - 2.0)
        loss = tf.reduce_mean(tf.square(err))
    return tape.gradient(loss, w)
""", "`w.numpy()` takes the value out of TensorFlow, so `err` is a new constant with no recorded path back to "
            "`w`: the gradient is None. Compute `err = w * x - 2.0` with the variable itself.",
                 TF + "36596"),
    ],
    "ex5_2_answer": [
        Reported("both faults removed, loss still outside the tape", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = pred - y
    loss = tf.reduce_mean(error ** 2)
    return tape.gradient(loss, [w, b])
''', "Only half the fix: the loss is computed after the `with` block, so the tape never saw it and both "
            "gradients are None; indent the loss line into the block.", TF + "27660"),
        Reported("the tensor conversion kept", '''
def fixed_gradients(w, b, x, y):
    w = tf.convert_to_tensor(w)
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = pred - y
        loss = tf.reduce_mean(error ** 2)
    return tape.gradient(loss, [w, b])
''', "`tf.convert_to_tensor(w)` makes a plain tensor from the variable before the tape opens; a tape watches "
            "variables, not tensors, so `dl_dw` is None. Drop that line and use the variable itself.", TF + "29942"),
        Reported("the loss summed instead of averaged", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        error = pred - y
        loss = tf.reduce_sum(error ** 2)
    return tape.gradient(loss, [w, b])
''', "The task's loss is the mean of the squared errors; `tf.reduce_sum` makes both gradients as many times too "
            "large as there are rows. Use `tf.reduce_mean`.", TF + "25476"),
        Reported("the loss averaged with NumPy", '''
def fixed_gradients(w, b, x, y):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b
        loss = np.mean((pred - y) ** 2)
    return tape.gradient(loss, [w, b])
''', "`np.mean` converts the tensor to NumPy and returns a plain number, which the tape cannot trace back to "
            "`w` and `b`; both gradients are None. Use `tf.reduce_mean`.", TF + "31919"),
    ],
    "ex5_3_answer": [
        Reported("the broken rebinding kept", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w = w - lr * grad
    return grads
''', "`w = w - lr * grad` replaces the variable by a tensor, which the second tape does not watch, so the second "
            "gradient is None and the caller's variable never moves; update in place with `w.assign_sub(lr * grad)`.",
            TF + "6278"),
        Reported("one ordinary tape for both steps", '''
def two_steps(w, x, y, lr):
    grads = []
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((w * x - y) ** 2)
    for _ in range(2):
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w.assign_sub(lr * grad)
    return grads
''', "The loss is recorded once, before any step, and an ordinary tape answers one `gradient` call, so the second "
            "call raises; and a second gradient must come from the loss after the first step. Open a new tape in "
            "each iteration.", TF + "46487"),
        Reported("a new variable made at each step", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w = tf.Variable(w - lr * grad)
    return grads
''', "`tf.Variable(w - lr * grad)` creates a fresh variable: the gradients are right, but the caller's `w` "
            "is never updated. Use `w.assign_sub(lr * grad)` on the variable you were given.",
            "https://github.com/dragen1860/Deep-Learning-with-TensorFlow-book/issues/156"),
        Reported("the update done on NumPy values", '''
def two_steps(w, x, y, lr):
    grads = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        grad = tape.gradient(loss, w)
        grads.append(grad)
        w = w.numpy() - lr * grad.numpy()
    return grads
''', "`w.numpy() - ...` is a NumPy array: the caller's variable is not updated, and the second tape cannot "
            "differentiate with respect to an array (the gradient is None). Use `w.assign_sub(lr * grad)`.",
            TF + "61524"),
    ],
    "ex5_4_answer": [
        Reported("plain tf.round in the forward pass", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        pred = tf.clip_by_value(tf.round(w * x / 0.5) * 0.5, -1.0, 3.0)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "`tf.round` has no gradient, so the tape returns None; keep the rounded forward value but let the "
            "gradient through: clip `z = w * x` first, then `z + tf.stop_gradient(tf.round(z / 0.5) * 0.5 - z)`.",
            TF + "5888"),
        Reported("stop_gradient around the whole quantiser", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, -1.0, 3.0)
        pred = tf.stop_gradient(tf.round(z / 0.5) * 0.5)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "Stopping the gradient of the whole prediction cuts `w` off entirely (None); the straight-through trick "
            "stops only the correction: `z + tf.stop_gradient(tf.round(z / 0.5) * 0.5 - z)`.",
            "https://github.com/Justin-Tan/generative-compression/issues/27"),
        Reported("floor where round is asked", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, -1.0, 3.0)
        pred = z + tf.stop_gradient(tf.floor(z / 0.5) * 0.5 - z)
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "The straight-through form and the clip are right, but `tf.floor` rounds down, not to the nearest step "
            "as `tf.round` does, so the forward predictions and the gradient differ; use `tf.round`.", TF + "8625"),
        Reported("rounding by a cast to int", '''
def clipped_gradient(w, x, y):
    with tf.GradientTape() as tape:
        z = tf.clip_by_value(w * x, -1.0, 3.0)
        pred = tf.cast(tf.cast(z / 0.5 + 0.5, tf.int32), tf.float32) * 0.5
        loss = tf.reduce_mean((pred - y) ** 2)
    return tape.gradient(loss, w)
''', "A cast to an integer type has no gradient, so the loss is cut off from `w` (None), and adding 0.5 then "
            "truncating is not `tf.round`'s rounding; use `z + tf.stop_gradient(tf.round(z / 0.5) * 0.5 - z)`.",
            TF + "47083"),
    ],
    "ex5_5_answer": [
        Reported("every variable applied, None and all", '''
def checked_apply(optimizer, grads, variables):
    optimizer.apply(grads, variables)
''', "Nothing is checked: Keras skips the variables whose gradient is None with a warning and updates the rest, "
            "which is exactly the half step the exercise asks you to refuse; raise `ValueError` naming them instead.",
            "https://github.com/remigenet/TKAT/issues/8"),
        Reported("the None gradients filtered out", '''
def checked_apply(optimizer, grads, variables):
    pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
    optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])
''', "Dropping the pairs whose gradient is None trains the healthy part and silently leaves the rest, the "
            "behaviour the exercise replaces; raise `ValueError` with their paths and change nothing.", TF + "37501"),
        Reported("only the first missing variable named", '''
def checked_apply(optimizer, grads, variables):
    for g, v in zip(grads, variables):
        if g is None:
            raise ValueError(f"Variable {v.path} has None for gradient")
    optimizer.apply(grads, variables)
''', "The check stops at the first variable with no gradient, so the message names one of the `aux` variables "
            "instead of every one; collect all their paths before raising.",
            "https://github.com/google-research-datasets/seq2act/issues/2"),
        Reported("variables named by name, not path", '''
def checked_apply(optimizer, grads, variables):
    missing = [v.name for g, v in zip(grads, variables) if g is None]
    if missing:
        raise ValueError(f"no gradient for {missing}")
    optimizer.apply(grads, variables)
''', "`v.name` is the short name (`kernel`, `bias`), the same in every layer, so the message cannot say which "
            "layer is at fault; the task asks for `v.path` (`aux/kernel`).",
            "https://github.com/tensorlayer/SRGAN/issues/143"),
    ],
    "ex5_6_answer": [
        Reported("log of the sigmoid written out, autodiff through exp", '''
def log_sigmoid(x):
    return tf.math.log(1.0 / (1.0 + tf.exp(-2 * x)))
''', "At x = −200, exp(400) overflows float32, so the value is `-inf` and its autodiff gradient NaN; write the "
            "value in a form whose exponentials never overflow, and the gradient yourself with `tf.custom_gradient`.",
            "https://github.com/tracel-ai/burn/issues/1139"),
        Reported("the derivative written with exp(−z) in the backward function", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = 2 * x

    def backward(dy):
        return dy * 2 * tf.exp(-z) / (1.0 + tf.exp(-z))

    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z))), backward
''', "The value is fine, but e^(−z) / (1 + e^(−z)) is inf / inf = NaN once e^(−z) overflows at large negative x; "
            "use `tf.sigmoid(-z)`, which saturates instead of overflowing.",
            "https://github.com/jeshraghian/snntorch/issues/427"),
        Reported("an epsilon inside the log", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = 2 * x

    def backward(dy):
        return dy * 2 * tf.sigmoid(-z)

    return tf.math.log(tf.sigmoid(z) + 1e-9), backward
''', "The epsilon keeps the value finite but wrong: at x = −200 it gives log(1e-9) ≈ −20.7 where log σ(−400) is "
            "−400. Compute log σ exactly, as min(z, 0) − log(1 + e^(−|z|)).",
            "https://github.com/slryou41/AnchorLoss/issues/2"),
        Reported("the backward function returns the local derivative only", '''
@tf.custom_gradient
def log_sigmoid(x):
    z = 2 * x

    def backward(dy):
        return 2 * tf.sigmoid(-z)

    return tf.minimum(z, 0.0) - tf.math.log1p(tf.exp(-tf.abs(z))), backward
''', "`backward` must return the upstream gradient `dy` times the local derivative (the chain rule); returning the "
            "local derivative alone is right only when nothing follows the function.",
            "https://github.com/tensorflow/tensorflow/pull/41927"),
    ],
}
