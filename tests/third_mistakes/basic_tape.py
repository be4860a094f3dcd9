"""Third-catalogue mistakes for 01_basic_tape (tests/third_mistakes/__init__.py)."""
from answers import Reported

TF = "https://github.com/tensorflow/tensorflow/issues/"

MISTAKES = {
    "ex1_1_answer": [
        Reported("the polynomial written inside the gradient call, after the block", '''
def cubic_slope(x):
    x = tf.constant(x)
    f = lambda v: 3 * v**3 - 2 * v**2 + v
    with tf.GradientTape() as tape:
        tape.watch(x)
    return tape.gradient(f(x), x)
''', "`f(x)` is evaluated as the argument of `tape.gradient`, after the `with` block has closed, so the tape "
            "recorded nothing and the gradient is None. Compute `y = f(x)` inside the block and pass `y`.",
            TF + "27660"),
        Reported("a tensor made from the float, never watched", '''
def cubic_slope(x):
    x = tf.convert_to_tensor(x)
    with tf.GradientTape() as tape:
        y = 3 * x**3 - 2 * x**2 + x
    return tape.gradient(y, x)
''', "`tf.convert_to_tensor(x)` is a constant tensor, and a tape only follows variables on its own; without "
            "`tape.watch(x)` (or `x = tf.Variable(x)`) the gradient is None.",
            "https://github.com/fchollet/deep-learning-with-python-notebooks/pull/284"),
        Reported("the source is a sum computed before the tape", '''
def cubic_slope(x):
    offset = tf.Variable(0.0)
    x = offset + x
    with tf.GradientTape() as tape:
        y = 3 * x**3 - 2 * x**2 + x
    return tape.gradient(y, x)
''', "`x = offset + x` makes `x` an ordinary tensor, computed before the tape opened; the tape watches the "
            "variable `offset`, not this tensor, so dy/dx is None. Make `x` itself the variable, or watch it.",
            TF + "29942"),
        Reported("y rebuilt as a constant from NumPy values", '''
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        v = x.numpy()
        y = tf.constant(3 * v**3 - 2 * v**2 + v)
    return tape.gradient(y, x)
''', "`x.numpy()` leaves TensorFlow: `y` is a new constant built from plain numbers, with no recorded "
            "operation linking it to `x`, so the gradient is None. Compute `y` from `x` with TensorFlow operations.",
            TF + "31919"),
    ],
    "ex1_2_answer": [
        Reported("the loss summed over the batch instead of averaged", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_sum(y**2)
    return tape.gradient(loss, [w, b])
''', "The task's loss is the mean of y², and `tf.reduce_sum` makes every gradient as many times too large "
            "as `y` has entries; use `tf.reduce_mean`.", TF + "25476"),
        Reported("the loss averaged with NumPy", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = np.mean(y**2)
    return tape.gradient(loss, [w, b])
''', "`np.mean` turns the tensor into a NumPy array and returns a plain number: the tape never sees the mean, "
            "so both gradients are None. Use `tf.reduce_mean`.", TF + "31919"),
        Reported("the loss written in the gradient call, outside the tape", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
    return tape.gradient(tf.reduce_mean(y**2), [w, b])
''', "The mean of y² is computed when `tape.gradient` is called, after the block closed, so the last "
            "operations were not recorded and both gradients are None; compute `loss` inside the block.",
            TF + "27660"),
        Reported("the weights copied to tensors before the tape", '''
def loss_gradients(x, w, b):
    w = tf.convert_to_tensor(w)
    b = tf.convert_to_tensor(b)
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_mean(y**2)
    return tape.gradient(loss, [w, b])
''', "`tf.convert_to_tensor` replaces the variables by constant copies, which the tape does not watch, so "
            "both gradients are None; keep the variables `w` and `b` as they were given.", TF + "50661"),
    ],
    "ex1_3_answer": [
        Reported("the constant input never watched", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        lengths = tf.norm(X, axis=1)
    return tape.gradient(lengths, X)
''', "`X` is a constant tensor, which the tape does not follow unless told: add `tape.watch(X)` before "
            "computing the lengths, or the gradient is None.", TF + "50661"),
        Reported("one gradient call per row", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.norm(X, axis=1)
    return tf.stack([tape.gradient(lengths[i], X)[i] for i in range(X.shape[0])])
''', "An ordinary tape gives one set of gradients and is then released, so the second call raises; and "
            "`lengths[i]` is sliced after the block, off the tape. One call, `tape.gradient(lengths, X)`, gives every "
            "row's gradient because each length depends on one row.", TF + "46487"),
        Reported("the target averaged before the gradient", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.reduce_mean(tf.norm(X, axis=1))
    return tape.gradient(lengths, X)
''', "Averaging the lengths divides every gradient by the number of rows; the tape already sums a "
            "non-scalar target, so pass `tf.norm(X, axis=1)` itself.", TF + "4897"),
        Reported("a full Jacobian instead of the gradients", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.norm(X, axis=1)
    return tape.jacobian(lengths, X)
''', "`tape.jacobian` returns one gradient of `X`'s shape per row, mostly zeros; the task wants the rows' "
            "gradients in one tensor shaped like `X`, which `tape.gradient(lengths, X)` gives in one call.", TF + "675"),
    ],
    "ex1_4_answer": [
        Reported("the point kept in float32", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "`tf.constant(x)` of a Python float is float32: with a step of 1e-5 the central difference loses most of "
            "its digits, and the results are not float64 as asked. Use `tf.constant(x, tf.float64)`.",
            "https://github.com/PaddlePaddle/Paddle/issues/4283"),
        Reported("the difference taken on the Python float", '''
def gradient_check(f, x, h=1e-5):
    xt = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = f(xt)
    tape_slope = tape.gradient(y, xt)
    numeric_slope = tf.cast((f(x + h) - f(x - h)) / (2 * h), tf.float64)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "The tape runs in float64, but `f(x + h)` is called on the Python float, so TensorFlow evaluates it in "
            "float32 and the difference is noise; casting afterwards does not restore the digits. Evaluate `f` "
            "on `xt + h` and `xt - h`.", "https://github.com/harvard-edge/cs249r_book/pull/1399"),
        Reported("a one-sided difference", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x)) / h
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "`(f(x + h) - f(x)) / h` is a forward difference, accurate only to order h; the task asks for the "
            "central one, `(f(x + h) - f(x - h)) / (2 * h)`.", "https://github.com/chainer/chainer/issues/3046"),
        Reported("a fixed step instead of the h given", '''
def gradient_check(f, x, h=1e-5):
    eps = 1e-4
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + eps) - f(x - eps)) / (2 * eps)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "The difference always uses `eps = 1e-4` and ignores the parameter `h`, so when the test passes another "
            "step the numeric slope is not the one asked for; use `h`.", "https://github.com/jax-ml/jax/pull/39821"),
    ],
}
