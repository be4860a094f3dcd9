"""Realistic wrong answers for 04_persistent_tapes, each with words its feedback must contain."""
from answers import Mistake

MISTAKES = {
    "ex4_1_answer": [
        Mistake("losses computed after the block", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        pass
    losses = $loss_code
    each = tf.unstack(losses)
    grads = [tape.gradient(loss, w) for loss in each]
    del tape
    return grads
''', "after `tape`'s `with` block"),
        Mistake("indexed after the block", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = $loss_code
    grads = [tape.gradient(losses[i], w) for i in range(len(xs))]
    del tape
    return grads
''', "after `tape`'s `with` block closed"),
        Mistake("forgot persistent=True", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape() as tape:
        losses = $loss_code
        each = tf.unstack(losses)
    grads = [tape.gradient(loss, w) for loss in each]
    return grads
''', "persistent=True"),
        Mistake("gradient called inside the with block", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = $loss_code
        each = tf.unstack(losses)
        grads = [tape.gradient(loss, w) for loss in each]
    del tape
    return grads
''', "after the `with` block"),
        Mistake("one gradient of the whole vector of losses", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape() as tape:
        losses = $loss_code
    return tape.gradient(losses, w)
''', "gradient of their sum"),
        Mistake("unstacked after the block", '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = $loss_code
    grads = [tape.gradient(loss, w) for loss in tf.unstack(losses)]
    del tape
    return grads
''', "runs over `tf.unstack(losses)`"),
        Mistake("a tape and a forward pass per example", '''
def per_example_gradients(w, xs, ts):
    grads = []
    for i in range(len(xs)):
        with tf.GradientTape() as tape:
            loss = $loss_code
            loss = loss[i]
        grads.append(tape.gradient(loss, w))
    return grads
''', "runs the forward pass again for every example"),
    ],
    "ex4_2_answer": [
        Mistake("gradients inside the with block", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
        dloss_dx = tape.gradient(loss, x)
        dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "after the `with` block"),
        Mistake("del tape before the second gradient", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    del tape
    dpenalty_dx = tape.gradient(penalty, x)
    x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "after `del tape`"),
        Mistake("tape never released", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "Did you `del tape`"),
        Mistake("forgot persistent=True", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape() as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "persistent=True"),
        Mistake("returns the loss before the step", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_sub(lr * (dloss_dx + ${mu_times}dpenalty_dx))
    return [dloss_dx, dpenalty_dx, loss]
''', "loss before the step"),
        Mistake("steps uphill", '''
def two_gradients_and_release(f, x, lr):
    with tf.GradientTape(persistent=True) as tape:
        loss, penalty = f(x)
    dloss_dx = tape.gradient(loss, x)
    dpenalty_dx = tape.gradient(penalty, x)
    del tape
    x.assign_add(lr * (dloss_dx + ${mu_times}dpenalty_dx))
    new_loss, _ = f(x)
    return [dloss_dx, dpenalty_dx, new_loss]
''', "stepped uphill"),
    ],
    "ex4_3_answer": [
        Mistake("inner tape asked for the second derivative", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
        d2f = inner.gradient(df_dx, a)
    return d2f
''', "even with `persistent=True`"),
        Mistake("persistent inner tape differentiates its own gradient", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape(persistent=True) as inner:
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
    return inner.gradient(df_dx, a)
''', "Did you mean `outer.gradient(df_dx, a)`"),
        Mistake("inner gradient called outside the outer with", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
    df_dx = inner.gradient(f, x)
    return outer.gradient(df_dx, a)
''', "inside the outer `with` block"),
        Mistake("one persistent tape, first gradient after the block", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape(persistent=True) as tape:
        f = $c * a**2 * x**3 + $k * tf.sin(a * x)
    df_dx = tape.gradient(f, x)
    d2f = tape.gradient(df_dx, a)
    del tape
    return d2f
''', "Did you nest two tapes"),
        Mistake("only the inner tape watches a constant parameter", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.constant(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(a)
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
    return outer.gradient(df_dx, a)
''', "Did you call `outer.watch(a)`"),
        Mistake("outer tape differentiates with respect to x again", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = inner.gradient(f, x)
    return outer.gradient(df_dx, x)
''', "That is ∂²f/∂x²"),
        Mistake("one persistent tape, first gradient inside the block", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape(persistent=True) as tape:
        f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = tape.gradient(f, x)
    d2f = tape.gradient(df_dx, a)
    del tape
    return d2f
''', "Did you nest two tapes"),
        Mistake("one persistent tape kept after the second derivative", '''
def mixed_partial(x, a):
    x = tf.Variable(x)
    a = tf.Variable(a)
    with tf.GradientTape(persistent=True) as tape:
        f = $c * a**2 * x**3 + $k * tf.sin(a * x)
        df_dx = tape.gradient(f, x)
    return tape.gradient(df_dx, a)
''', "drops its record by itself"),
    ],
    "ex4_4_answer": [
        Mistake("persistent inner tape asked for the Hessian", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape(persistent=True) as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
    return inner.jacobian(g, w)
''', "Did you mean `outer.jacobian(g, w)`"),
        Mistake("only the inner tape watches constant weights", '''
def loss_hessian(w, X, y):
    w = tf.constant(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(w)
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
    return outer.jacobian(g, w)
''', "only `inner` watches it"),
        Mistake("gradient of the gradient instead of jacobian", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
        g = inner.gradient(loss, w)
    return outer.gradient(g, w)
''', "Use `outer.jacobian(g, w)`"),
        Mistake("inner gradient called outside the outer with", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
    g = inner.gradient(loss, w)
    return outer.jacobian(g, w)
''', "inside the outer `with` block"),
        Mistake("jacobian of the loss itself", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        scores = tf.linalg.matvec(X, w)
        loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
    return outer.jacobian(loss, w)
''', "That is the gradient of the loss"),
        Mistake("penalty left out", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            scores = tf.linalg.matvec(X, w)
            loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2)
        g = inner.gradient(loss, w)
    return outer.jacobian(g, w)
''', "the penalty $lam·‖w‖²"),
        Mistake("one persistent tape for the Hessian", '''
def loss_hessian(w, X, y):
    w = tf.Variable(w)
    with tf.GradientTape(persistent=True) as tape:
        scores = tf.linalg.matvec(X, w)
        loss = tf.reduce_mean((tf.tanh(scores) - y) ** 2) + $lam * tf.reduce_sum(w**2)
        g = tape.gradient(loss, w)
    h = tape.jacobian(g, w)
    del tape
    return h
''', "one per order of derivative"),
    ],
    "ex4_5_answer": [
        Mistake("inner gradient called outside the outer with", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
    grad = inner.gradient(f_x, x)
    grad_dot_v = tf.reduce_sum(grad * v)
    return outer.gradient(grad_dot_v, x)
''', "inside the `with tf.GradientTape() as outer:` block"),
        Mistake("outer gradient of the whole gradient, v forgotten", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
    return outer.gradient(grad, x)
''', "That is H·1"),
        Mistake("differentiated with respect to v", '''
def hvp(x, v):
    x = tf.Variable(x)
    v = tf.Variable(v)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
        grad_dot_v = tf.reduce_sum(grad * v)
    return outer.gradient(grad_dot_v, v)
''', "`v` is a fixed direction"),
        Mistake("one persistent tape for H·v", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape(persistent=True) as tape:
        f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = tape.gradient(f_x, x)
        grad_dot_v = tf.reduce_sum(grad * v)
    hv = tape.gradient(grad_dot_v, x)
    del tape
    return hv
''', "Did you nest two tapes"),
        Mistake("the Hessian formed, then multiplied by v", '''
def hvp(x, v):
    x = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            f_x = $a * x[0] ** 2 * x[1] + $b * tf.sin(x[1] * x[2]) + x[2] ** 4
        grad = inner.gradient(f_x, x)
    hessian = outer.jacobian(grad, x)
    return tf.linalg.matvec(hessian, v)
''', "you formed the whole Hessian"),
    ],
    "ex4_6_answer": [
        Mistake('one ordinary tape for both losses', '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'A non-persistent tape answers one `gradient` call'),
        Mistake("the generator stepped along the discriminator's loss", '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(d_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'The generator moved to help the discriminator'),
        Mistake('the fake batch made before the tapes open', '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    fake = generator(z, training=True)
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'Every gradient was `None`'),
        Mistake("g_opt steps both models along the generator's loss", '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z, training=True)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars + d_vars), g_vars + d_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', "also applies the gradient of `g_loss` to the discriminator's variables"),
        Mistake('the generator called without training=True', '''
def gan_step(generator, discriminator, g_opt, d_opt, real, z):
    loss_fn = keras.losses.$loss_code
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(z)
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        d_loss = loss_fn($real_labels, real_out) + loss_fn(tf.zeros_like(fake_out), fake_out)
        g_loss = loss_fn(tf.ones_like(fake_out), fake_out)
    g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables
    g_opt.apply(g_tape.gradient(g_loss, g_vars), g_vars)
    d_opt.apply(d_tape.gradient(d_loss, d_vars), d_vars)
    return d_loss, g_loss
''', 'inference mode'),
    ],
}
