"""Second-catalogue mistakes for 01_basic_tape (tests/fresh_mistakes/__init__.py)."""
from answers import Fresh

MISTAKES = {
    "ex1_1_answer": [
        Fresh("derivative worked out by hand", '''
def cubic_slope(x):
    return $a3 * x**2 - $b2 * x + 1
''', "no-tape-used", "Your `$a3 * x**2 - $b2 * x + 1` is the derivative done by hand; the exercise asks the tape for it: "
     "record `y = $a * x**3 - $b * x**2 + x` on a `tf.Variable` inside `tf.GradientTape()` and return `tape.gradient(y, x)`."),
        Fresh("coefficients and powers as int tensors", '''
def cubic_slope(x):
    x = tf.Variable(x)
    coeffs = tf.constant([$a, -$b, 1])
    powers = tf.constant([3, 2, 1])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(coeffs * x**powers)
    return tape.gradient(y, x)
''', "dtype-clash", "`tf.constant([3, 2, 1])` and `tf.constant([$a, -$b, 1])` are int32 tensors and `x` is float32, so "
     "`x**powers` fails on mixed dtypes; write the lists as floats (`[3.0, 2.0, 1.0]`) or just write the polynomial out."),
        Fresh("y computed from the Python float, not the variable", '''
def cubic_slope(x):
    xv = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = $a * x**3 - $b * x**2 + x
    return tape.gradient(y, xv)
''', ("not-connected", "unused-input"), "Inside the tape you compute `y` from the Python float `x`, not from the variable "
     "`xv`, so nothing recorded links `y` to `xv` and the gradient is None; write `y = $a * xv**3 - $b * xv**2 + xv`."),
        Fresh("typo x*2 for x**2", '''
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = $a * x**3 - $b * x*2 + x
    return tape.gradient(y, x)
''', "wrong-target", "You typed `2 * x*2` (that is 4x) where the cubic has `2 * x**2`, so you differentiate "
     "3x³ − 3x and get 9x² − 3 instead of 9x² − 4x + 1; make it `x**2`."),
    ],
    "ex1_2_answer": [
        Fresh("elementwise * instead of @", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x * w + b
        loss = tf.reduce_mean($err**2)
    return tape.gradient(loss, [w, b])
''', "elementwise-not-matmul", "`x * w` multiplies element by element, and a (batch, in) by an (in, out) tensor "
     "do not broadcast; the layer is a matrix product, `y = x @ w + b`."),
        Fresh("sum of squares instead of the mean", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_sum($err**2)
    return tape.gradient(loss, [w, b])
''', ("sum-not-mean", "constant-factor"), "`tf.reduce_sum($err**2)` adds the squares instead of averaging them, so both "
     "gradients are too large by the number of elements of `y`; the loss is `tf.reduce_mean($err**2)`."),
        Fresh("mean over the batch axis only", '''
def loss_gradients(x, w, b):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_mean($err**2, axis=0)
    return tape.gradient(loss, [w, b])
''', "wrong-axis", "`tf.reduce_mean($err**2, axis=0)` averages over the batch only and leaves one loss per output, which the "
     "tape then sums, so the gradients are multiplied by the number of outputs; average over every element: "
     "`tf.reduce_mean($err**2)`."),
        Fresh("persistent tape and two gradient calls", '''
def loss_gradients(x, w, b):
    with tf.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = tf.reduce_mean($err**2)
    dl_dw = tape.gradient(loss, w)
    dl_db = tape.gradient(loss, b)
    del tape
    return [dl_dw, dl_db]
''', "several-gradient-calls", "The exercise asks for a single `tape.gradient` call; instead of a persistent tape asked twice, "
     "pass both sources at once: `return tape.gradient(loss, [w, b])` gives both from one backward walk."),
    ],
    "ex1_3_answer": [
        Fresh("the squared length, without the square root", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.reduce_sum(tf.abs(X)**$p, axis=$axis)
    return tape.gradient(lengths, X)
''', "norm-without-sqrt", "`tf.reduce_sum(X**2, axis=$axis)` is each ${part}'s squared length, whose gradient is 2·X, "
     "not the length ‖r‖ the task names; use `tf.norm(X, ${ord_arg}axis=$axis)` (or take the square root)."),
        Fresh("the lengths along the other axis", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.norm(X, ${ord_arg}axis=$other)
    return tape.gradient(lengths, X)
''', "other-axis", "`axis=$other` takes the length along the other axis, so each value is the gradient of another "
     "slice's length; the task's lengths are the ${part}s', `axis=$axis`."),
        Fresh("the section's matrix instead of X", '''
def norm_gradients(X):
    A = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with tf.GradientTape() as tape:
        tape.watch(A)
        lengths = tf.norm(A, ${ord_arg}axis=$axis)
    return tape.gradient(lengths, A)
''', "unused-input", "You copied the section's `A = tf.constant(...)` and never use the `X` you are given, so you "
     "return the gradients for `A`; watch `X` and differentiate `tf.norm(X, ${ord_arg}axis=$axis)`."),
        Fresh("output_gradients of NumPy ones", '''
def norm_gradients(X):
    with tf.GradientTape() as tape:
        tape.watch(X)
        lengths = tf.norm(X, ${ord_arg}axis=$axis)
    return tape.gradient(lengths, X, output_gradients=np.ones(lengths.shape[0]))
''', "dtype-clash", "`np.ones(...)` is float64 while `lengths` is float32, so the backward walk fails on mixed "
     "dtypes; the ones are the default, so drop `output_gradients` (or use `tf.ones_like(lengths)`)."),
    ],
    "ex1_4_answer": [
        Fresh("difference taken the wrong way round", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x - h) - f(x + h)) / (2 * h)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "sign-flipped", "`(f(x - h) - f(x + h))` subtracts in the wrong order, so `numeric_slope` has the opposite sign "
     "and `rel_error` is about 2; the central difference is `(f(x + h) - f(x - h)) / (2 * h)`."),
        Fresh("x made a NumPy float64", '''
def gradient_check(f, x, h=1e-5):
    x = np.float64(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "numpy-source", "`np.float64(x)` is a NumPy number, not a tensor, so `tape.watch(x)` cannot watch it; make "
     "it a tensor with `x = tf.constant(x, tf.float64)`."),
        Fresh("the 2 missing from the central difference", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / h
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return tape_slope, numeric_slope, rel_error
''', "constant-factor", "`(f(x + h) - f(x - h)) / h` spans 2h but divides by h, so `numeric_slope` is twice the "
     "slope and `rel_error` about 0.5; divide by `(2 * h)`."),
        Fresh("tape and numeric slopes returned in the wrong order", '''
def gradient_check(f, x, h=1e-5):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape_slope = tape.gradient(y, x)
    numeric_slope = (f(x + h) - f(x - h)) / (2 * h)
    rel_error = abs(tape_slope - numeric_slope) / abs(numeric_slope)
    return numeric_slope, tape_slope, rel_error
''', "swapped-results", "You return `numeric_slope, tape_slope, ...`, but the exercise asks for `tape_slope` first "
     "and `numeric_slope` second; swap them in the `return`."),
    ],
}
