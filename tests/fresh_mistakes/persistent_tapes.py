"""Second-catalogue mistakes for 04_persistent_tapes (tests/fresh_mistakes/__init__.py)."""
from answers import Fresh

MISTAKES = {
    "ex4_1_answer": [
        Fresh("returns the losses, not their gradients", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = $loss_code
        each = tf.unstack(losses)
    grads = [tape.gradient(loss, w) for loss in each]
    del tape
    return each
''', "returned-value", "The list holds each example's loss, not its gradient: return the `gradient` calls' results."),
        Fresh("losses averaged to one scalar first", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean($loss_code)
    return tape.gradient(loss, w)
''', ("targets-summed", "mean-target"), "The gradient of the mean loss is one number, the mean of the per-example "
           "gradients; the task asks for one gradient per example."),
        Fresh("one call on the list of per-example losses", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = $loss_code
        each = tf.unstack(losses)
    grads = tape.gradient(each, w)
    del tape
    return grads
''', "targets-summed", "`tape.gradient(each, w)` with a list of targets does not give one gradient per target: it "
           "differentiates their sum and returns one number. Call `gradient` once per example's loss."),
        Fresh("deletes the intermediates instead of the tape", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = $loss_code
        each = tf.unstack(losses)
    grads = [tape.gradient(loss, w) for loss in each]
    del losses, each
    return grads
''', "tape-not-released", "`del losses, each` only drops your names; the persistent tape still holds its whole "
           "record until the tape itself goes. Write `del tape` after the last `gradient` call."),
    ],
    "ex4_2_answer": [
        Fresh("learning rate scales only the loss gradient", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_sub(lr * dloss_dx + ${mu_times}dpenalty_dx)
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', ("no-learning-rate", "constant-factor"), "Your step `lr * dloss_dx + ${mu_times}dpenalty_dx` multiplies only the "
           "loss gradient by `lr` and subtracts the whole penalty gradient; put the sum in parentheses: "
           "`lr * (dloss_dx + ${mu_times}dpenalty_dx)`."),
        Fresh("penalty gradient copied from the loss line", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(loss, x)
    del tape
    x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "wrong-target", "Your `dpenalty_dx = tape.gradient(loss, x)` differentiates the loss a second time; the "
           "target of that call must be `penalty`, so your step and new loss are off too."),
        Fresh("in-place -= on the variable", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x -= lr * (dloss_dx + ${mu_times}dpenalty_dx)
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "replaced-by-tensor", "`x -= ...` does not update a `tf.Variable` (TensorFlow refuses it: it would rebind "
           "`x` to a new tensor); update it in place with `x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))`."),
        Fresh("step follows the loss gradient only", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_sub(lr * dloss_dx)
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "missing-term", "You computed `dpenalty_dx` but your step `x.assign_sub(lr * dloss_dx)` leaves it out; the "
           "step is `lr * (dloss_dx + ${mu_times}dpenalty_dx)`, so your `new_loss` is the loss after the wrong step."),
    ],
    "ex4_3_answer": [
        Fresh("returns the first derivative", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
    d2f = outer.gradient(df_dx, a)
    return df_dx
''', "first-derivative", "Your tapes are right, but you return `df_dx`, the slope ∂f/∂x; return `d2f`, the outer "
           "tape's derivative of it with respect to `a`."),
        Fresh("forward difference of tape slopes in a", '''
def mixed_partial(x, a):
    def slope(at):
        xv = tf.Variable(x)
        with tf.GradientTape() as tape:
            f = $c * at**2 * xv**3 + $k * tf.sin(at * xv)
        return tape.gradient(f, xv)

    h = 1e-3
    return (slope(a + h) - slope(a)) / h
''', "forward-difference", "`(slope(a + h) - slope(a)) / h` is a one-sided finite difference of the slope in "
           "`a`, only an approximation of ∂²f/∂a∂x (biased by about h times the next derivative and by float32 "
           "rounding); the exercise asks for the exact value from two nested tapes."),
        Fresh("watches the Python floats", '''
def mixed_partial(x, a):
    with tf.GradientTape() as outer:
        outer.watch(a)
        with tf.GradientTape() as inner:
            inner.watch(x)
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
    return outer.gradient(df_dx, a)
''', ("numpy-source", "not-watched"), "`x` and `a` are Python floats, and a tape can only watch a tensor; "
           "convert them first, `x = tf.Variable(x)` and `a = tf.Variable(a)`."),
        Fresh("slope converted to NumPy", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = inner.gradient(f, x).numpy()
    return outer.gradient(df_dx, a)
''', "numpy-in-path", "Your `.numpy()` turns `df_dx` into a NumPy number that no tape recorded, so the outer "
           "tape cannot differentiate it; keep `df_dx = inner.gradient(f, x)` a tensor."),
    ],
    "ex4_4_answer": [
        Fresh("symmetrised without halving", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
    H = outer.jacobian(g, w)
    return H + tf.transpose(H)  # make sure it is symmetric
''', "constant-factor", "`outer.jacobian(g, w)` is already symmetric; your `H + tf.transpose(H)` doubles every "
           "entry. Return `H` (or `(H + tf.transpose(H)) / 2`)."),
        Fresh("row by row from an ordinary outer tape", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
        rows = [g[i] for i in range(w.shape[0])]
    return tf.stack([outer.gradient(row, w) for row in rows])
''', "tape-used-twice", "Your list comprehension calls `outer.gradient` once per row, but an ordinary tape "
           "answers one call only; the second raises. `outer.jacobian(g, w)` gives every row in one call."),
        Fresh("loss computed from the array, not the variable", '''
def loss_hessian(w, X, y):
    wv = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
        g = inner.gradient(loss, wv)
    return outer.jacobian(g, wv)
''', ("not-connected", "unused-input"), "You made `wv = tf.Variable(w)` but compute the loss from the original "
           "array `w`, so `loss` is not computed from `wv` and `g` is None; compute the scores and the penalty "
           "from `wv`."),
        Fresh("tf.hessians instead of nested tapes", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    loss = tf.reduce_mean((tf.tanh(tf.linalg.matvec(X, w)) - y) ** 2) + $lam * tf.reduce_sum(w**2)
    return tf.hessians(loss, w)[0]
''', ("no-tape", "no-tape-used"), "`tf.hessians` is built on `tf.gradients`, which works only in graph mode "
           "and raises in eager code; nest two `tf.GradientTape`s and return `outer.jacobian(g, w)`."),
    ],
    "ex4_5_answer": [
        Fresh("the inner gradient returned", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
        grad_dot_v = tf.reduce_sum(grad * v)
    return grad
''', "first-derivative", "You return `grad`, the first derivative; H·v is the outer tape's gradient of "
           "`grad_dot_v`: `return outer.gradient(grad_dot_v, x)`."),
        Fresh("x and v both as sources of the outer gradient", '''
def hvp(x, v):
    x = tf.Variable(x)
    v = tf.Variable(v)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
        grad_dot_v = tf.reduce_sum(grad * v)
    return outer.gradient(grad_dot_v, [x, v])
''', "wrong-source", "`v` is a fixed direction, not something to differentiate: with `[x, v]` you get H·v "
           "and the gradient as a list. Differentiate with respect to `x` only."),
        Fresh("x a constant watched by the inner tape only", '''
def hvp(x, v):
    x = tf.constant(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
        grad_dot_v = tf.reduce_sum(grad * v)
    return outer.gradient(grad_dot_v, x)
''', "not-watched", "`x` is a constant, and only `inner` watches it: the outer tape never follows `x`, so its "
           "gradient is None. Call `outer.watch(x)` too, or make `x` a `tf.Variable`."),
        Fresh("the inner product taken after the outer block", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
    grad_dot_v = tf.reduce_sum(grad * v)
    return outer.gradient(grad_dot_v, x)
''', "outside-tape", "`grad_dot_v` is computed after the outer `with` block, so the outer tape never recorded "
           "it and its gradient is None; indent that line into the block."),
    ],
    "ex4_6_answer": [
        Fresh("the generator's samples labelled 0 in its own loss", '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.zeros_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'gan-labels',
              "The generator's loss labels its own samples 0, so the generator learns to look fake; it wants to pass for real: `loss_fn(tf.ones_like(fake_out), fake_out)`."),
        Fresh("the generator's loss as minus the discriminator's", '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = -d_loss
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'wrong-target',
              "`-d_loss` is the minimax generator loss; the task asks for the loss that labels the generator's samples 1."),
        Fresh('real samples labelled 1, the smoothing left out', '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn(tf.ones_like(real_out), real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'gan-labels',
              "The task labels real samples with the smoothed value, not 1, in the discriminator's loss."),
        Fresh('each optimizer given the other model', '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    d_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    g_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'swapped-optimizers',
              '`g_opt` must step the generator and `d_opt` the discriminator; here each steps the other.'),
    ],
}
