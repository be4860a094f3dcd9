"""Realistic wrong answers for 01_basic_tape, each with words its feedback must contain."""
from answers import Mistake

MISTAKES = {
    "ex1_1_answer": [
        Mistake("watched after computing y", '''
def cubic_slope(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        y = $a * x**3 - $b * x**2 + x
        tape.watch(x)
    return tape.gradient(y, x)
''', "before computing anything"),
        Mistake("target and source swapped", '''
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = $a * x**3 - $b * x**2 + x
    return tape.gradient(x, y)
''', "wrong way round"),
        Mistake("y computed outside the tape", '''
def cubic_slope(x):
    x = tf.Variable(x)
    y = $a * x**3 - $b * x**2 + x
    with tf.GradientTape() as tape:
        pass
    return tape.gradient(y, x)
''', "inside the `with tf.GradientTape() as tape:` block"),
        Mistake("a constant, not watched", '''
def cubic_slope(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        y = $a * x**3 - $b * x**2 + x
    return tape.gradient(y, x)
''', "tape.watch(x)"),
        Mistake("returns the value, not the gradient", '''
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = $a * x**3 - $b * x**2 + x
    tape.gradient(y, x)
    return y
''', "returned `y` itself"),
    ],
    "ex1_2_answer": [
        Mistake("weights converted to constants", '''
def loss_gradients(x, w, b):
    w = tf.convert_to_tensor(w)
    b = tf.convert_to_tensor(b)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w + b$less_t) ** 2)
    return tape.gradient(loss, [w, b])
''', "tape.watch(w)"),
        Mistake("loss built with NumPy", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = np.mean(y.numpy() ** 2)
    return tape.gradient(loss, [w, b])
''', "NumPy"),
        Mistake("the tape used twice", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_mean($err**2)
    return [tape.gradient(loss, w), tape.gradient(loss, b)]
''', "call `tape.gradient` twice"),
        Mistake("gradient of the prediction, not the loss", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_mean($err**2)
    return tape.gradient(y, [w, b])
''', "gradients of the prediction"),
        Mistake("loss computed outside the tape", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
    loss = tf.reduce_mean($err**2)
    return tape.gradient(loss, [w, b])
''', "compute `loss` inside the `with"),
        Mistake("sources swapped", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w + b$less_t) ** 2)
    return tape.gradient(loss, [b, w])
''', "swapped"),
    ],
    "ex1_3_answer": [
        Mistake("watched after the lengths", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        lengths = tf.norm(X, ${ord_arg}axis=$axis)
        tape.watch(X)
    return tape.gradient(lengths, X)
''', "before computing anything"),
        Mistake("target and source swapped", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.norm(X, ${ord_arg}axis=$axis)
    return tape.gradient(X, lengths)
''', "wrong way round"),
        Mistake("a constant, not watched", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        lengths = tf.norm(X, ${ord_arg}axis=$axis)
    return tape.gradient(lengths, X)
''', "tape.watch(X)"),
        Mistake("the mean length as the target", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.reduce_mean(tf.norm(X, ${ord_arg}axis=$axis))
    return tape.gradient(lengths, X)
''', "tf.reduce_mean(lengths)"),
        Mistake("returns the lengths", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.norm(X, ${ord_arg}axis=$axis)
    return lengths
''', "lengths, not their gradient"),
        Mistake("the norm of the whole matrix", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.norm(X${ord_kw})
    return tape.gradient(lengths, X)
''', "without `axis="),
    ],
    "ex1_4_answer": [
        Mistake("x left in float32", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "has dtype float32"),
        Mistake("the difference taken at the Python float", '''
def gradient_check(f, x, h=1e-5):
    x64 = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x64)
        y = f(x64)
    tape_slope = tape.gradient(y, x64)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "a float32 tensor met a float64 one"),
        Mistake("absolute error, not relative", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    return tape_slope, numeric_slope, abs(tape_slope - numeric_slope)
''', "Divide it by `abs(numeric_slope)`"),
        Mistake("forward difference", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - y) / h
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "forward difference"),
        Mistake("the step hard-coded", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + 1e-5) - f(x - 1e-5)) / 2e-5
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "the `h` you were given"),
        Mistake("signed error, no abs", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    rel_error = (tape_slope - numeric_slope) / numeric_slope
    return tape_slope, numeric_slope, rel_error
''', "wrong sign"),
        Mistake("a float64 constant, not watched", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "tape.watch(x)"),
        Mistake("operator precedence: / 2 * h", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / 2 * h
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "Write `/ (2 * h)`"),
    ],
}
