"""Third-catalogue mistakes for 04_persistent_tapes (tests/third_mistakes/__init__.py)."""
from answers import Reported

TF = "https://github.com/tensorflow/tensorflow/issues/"

MISTAKES = {
    "ex4_1_answer": [
        Reported("per-example gradients from an ordinary tape", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape() as tape:
        losses = (w * xs - ts) ** 2
        each = tf.unstack(losses)
    grads = []
    for loss in each:
        grads.append(tape.gradient(loss, w))
    return grads
''', "An ordinary tape is released by its first `gradient` call, so the second raises; open it with "
            "`persistent=True` (and `del tape` after).", TF + "46487"),
        Reported("the gradients asked inside the persistent tape's block", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = (w * xs - ts) ** 2
        each = tf.unstack(losses)
        grads = [tape.gradient(loss, w) for loss in each]
    del tape
    return grads
''', "The values are right, but the `gradient` calls sit inside the `with` block, where the tape also records "
            "the gradient computations; the exercise's rule is to call them after the block.", TF + "41510"),
        Reported("each loss sliced in the gradient call, after the block", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = (w * xs - ts) ** 2
    grads = [tape.gradient(losses[i], w) for i in range(xs.shape[0])]
    del tape
    return grads
''', "`losses[i]` is a new tensor made after the block closed, so the tape has no record of it and every "
            "gradient is None; take the slices (or `tf.unstack`) inside the block.", TF + "41999"),
        Reported("all the losses as one list of targets", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape() as tape:
        losses = (w * xs - ts) ** 2
        each = tf.unstack(losses)
    return tape.gradient(each, w)
''', "`tape.gradient(each, w)` does not return one gradient per target: it returns the gradient of their sum. "
            "Ask for each target separately, from a persistent tape.", TF + "29064"),
    ],
    "ex4_2_answer": [
        Reported("the persistent tape never released", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    x.assign_sub(lr * (dloss_dx + dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "The numbers are right, but without `del tape` the persistent tape keeps every intermediate of the first "
            "pass alive while `f` runs again; delete it after the second gradient.",
            "https://github.com/sql-machine-learning/elasticdl/issues/1144"),
        Reported("two gradients from an ordinary tape", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape() as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_sub(lr * (dloss_dx + dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "An ordinary tape allows one `gradient` call, so asking for `dpenalty_dx` raises; open it with "
            "`persistent=True` as step 1 asks.", TF + "46487"),
        Reported("the variable rebound instead of updated", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x = x - lr * (dloss_dx + dpenalty_dx)
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "`x = x - ...` makes a new tensor and leaves the caller's variable unchanged, so no step is taken on "
            "it; use `x.assign_sub(lr * (dloss_dx + dpenalty_dx))`.", TF + "6278"),
        Reported("the gradients asked inside the block", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
        dloss_dx = tape.gradient(loss, x)
        dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_sub(lr * (dloss_dx + dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "The two `gradient` calls are inside the `with` block, which the exercise's rule forbids (the tape then "
            "records the backward pass too); call them after the block.", TF + "41510"),
    ],
    "ex4_3_answer": [
        Reported("the first gradient taken outside the outer tape", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f = 2 * a**2 * x**3 + 3 * tf.sin(a * x)
    df_dx = inner.gradient(f, x)
    return outer.gradient(df_dx, a)
''', "`inner.gradient` runs after the outer block closed, so the outer tape never recorded how `df_dx` is "
            "computed and the mixed derivative is None; indent that line into the outer block.", TF + "41510"),
        Reported("one persistent tape, gradient inside its block", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape(persistent=True) as tape:
        f = 2 * a**2 * x**3 + 3 * tf.sin(a * x)
        df_dx = tape.gradient(f, x)
    d2f = tape.gradient(df_dx, a)
    del tape
    return d2f
''', "The value is right, but the exercise asks for two nested tapes, one per order, not one persistent tape "
            "that differentiates inside its own block: put an inner tape for `df_dx` inside an outer one.",
            TF + "41510"),
        Reported("a constant parameter never watched", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.constant(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f = 2 * a**2 * x**3 + 3 * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
    return outer.gradient(df_dx, a)
''', "`a` is a constant that the outer tape never watches, so its derivative of the slope is None; make `a` a "
            "`tf.Variable` or call `outer.watch(a)`.", "https://github.com/fchollet/deep-learning-with-python-notebooks/pull/284"),
        Reported("watched on the outer tape only", '''
def mixed_partial(x, a):
    x = tf.constant(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            f = 2 * a**2 * x**3 + 3 * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
    return outer.gradient(df_dx, a)
''', "Each tape watches for itself: the inner tape never watched `x`, so the slope `df_dx` is None and so is "
            "its derivative; add `inner.watch(x)` (or make `x` a `tf.Variable`).", "https://github.com/vast-community-hub/tensorflow-vast/issues/14"),
    ],
    "ex4_4_answer": [
        Reported("the weights made a constant, never watched", '''
def loss_hessian(w, X, y):
    w = tf.constant(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + 0.1 * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
    return outer.jacobian(g, w)
''', "`tf.constant(w)` is not watched by either tape, so the gradient and the Hessian are None; use "
            "`w = tf.Variable(w)` (or watch it on both tapes).", "https://github.com/fchollet/deep-learning-with-python-notebooks/pull/284"),
        Reported("the outer call is gradient, not jacobian", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + 0.1 * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
    return outer.gradient(g, w)
''', "`outer.gradient(g, w)` differentiates the sum of the gradient's entries, giving the Hessian's column sums, "
            "a vector of n; `outer.jacobian(g, w)` gives the n × n matrix.", TF + "38428"),
        Reported("one persistent tape, gradient after its block", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape(persistent=True) as tape:
        scores = tf.linalg.matvec(X, w)
        loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + 0.1 * tf.reduce_sum(w**2)
    g = tape.gradient(loss, w)
    h = tape.jacobian(g, w)
    del tape
    return h
''', "The first gradient is computed after the block, so no tape records it, and its Jacobian is None; the "
            "exercise asks for nested tapes, the inner `gradient` inside the outer block.", TF + "45234"),
        Reported("batch_jacobian on a 1-D gradient", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + 0.1 * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
    return outer.batch_jacobian(g, w)
''', "`batch_jacobian` treats the first axis as a batch of independent examples and needs rank-2 inputs; "
            "`w` is one 1-D vector of weights, so use `outer.jacobian(g, w)`.", TF + "38428"),
    ],
    "ex4_5_answer": [
        Reported("the second gradient of the whole gradient vector", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = 0.5 * x[0] ** 2 * x[1] + 4 * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
    return outer.gradient(grad, x)
''', "The outer `gradient` of a vector differentiates the sum of its components, which gives the row sums of the "
            "Hessian, H·1, and `v` is never used; differentiate the scalar `tf.reduce_sum(grad * v)`.",
            "https://github.com/StatMixedML/DGBM/issues/1"),
        Reported("one persistent tape, the first gradient inside its block", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape(persistent=True) as tape:
        f_x = 0.5 * x[0] ** 2 * x[1] + 4 * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = tape.gradient(f_x, x)
        grad_dot_v = tf.reduce_sum(grad * v)
    return tape.gradient(grad_dot_v, x)
''', "The value is right, but the exercise asks for two nested tapes, not one persistent tape that records its own "
            "gradient call (and is never deleted): an inner tape for the gradient inside an outer one for H·v.",
            TF + "41510"),
        Reported("the gradient taken out of the tape as NumPy", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = 0.5 * x[0] ** 2 * x[1] + 4 * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x).numpy()
        grad_dot_v = tf.reduce_sum(grad * v)
    return outer.gradient(grad_dot_v, x)
''', "`.numpy()` turns the gradient into a NumPy array, so the outer tape sees a constant and cannot differentiate "
            "it: the result is None. Keep `grad` a tensor.", "https://github.com/JuliaDiff/ReverseDiff.jl/issues/105"),
        Reported("the full Hessian, then a product with v", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = 0.5 * x[0] ** 2 * x[1] + 4 * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
    hessian = outer.jacobian(grad, x)
    return tf.linalg.matvec(hessian, v)
''', "The value is right, but it builds the whole n × n Hessian, which the exercise avoids: let the outer tape "
            "differentiate the scalar g·v instead.", TF + "25040"),
    ],
    "ex4_6_answer": [
        Reported("one ordinary tape asked for both players' gradients", '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn(0.9 * tf.ones_like(real_out), real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''',
                 "An ordinary tape is released by its first `gradient` call, so the discriminator's call raises; use two tapes opened in one `with` statement, or one persistent tape deleted after both calls.",
                 'https://github.com/manicman1999/StyleGAN2-Tensorflow-2.0/issues/14'),
        Reported('the fake samples passed to the discriminator as NumPy', '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake.numpy(), training=True)
        d_loss = loss_fn(0.9 * tf.ones_like(real_out), real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''',
                 '`.numpy()` cuts the path from the generator to its loss, so every generator gradient is None and the optimizer refuses them; pass the tensor `fake` itself.',
                 'https://github.com/tensorflow/tensorflow/issues/31919'),
        Reported("the generator's step also trains the discriminator", '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn(0.9 * tf.ones_like(real_out), real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars = generator.trainable_variables + discriminator.trainable_variables
    d_vars = discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''',
                 "`g_opt` steps the discriminator's variables too, along the generator's loss, which teaches the discriminator to be fooled; give `g_opt` only the generator's variables.",
                 'https://github.com/xiaowei-hu/CycleGAN-tensorflow/issues/3'),
        Reported('the generator in inference mode while training', '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=False)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn(0.9 * tf.ones_like(real_out), real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''',
                 "The generator runs with `training=False`, so its BatchNormalization layer uses its moving statistics instead of the batch's; call it with `training=True` in the training step.",
                 'https://github.com/google/objax/issues/90'),
    ],
}
