"""Does the guard leave non-finite gradients to a LossScaleOptimizer, so a mixed_float16 run recovers as
Keras alone would instead of dying on the first overflow?"""
import keras
import tensorflow as tf

from guarded.steps import X, Y, make_model, weights
from tapelab.guarded import GuardedApply


def _run(guarded: bool, steps: int = 8):
    keras.utils.set_random_seed(0)
    model = make_model()
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.01))
    guard = GuardedApply(optimizer, on_bad="raise")
    outcomes = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(Y - tf.cast(model(X, training=True), tf.float32)))
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, model.trainable_variables)
        if guarded:
            outcomes.append(guard(grads, model.trainable_variables, loss=loss))
        else:
            optimizer.apply(grads, model.trainable_variables)
    return outcomes, weights(model), float(optimizer.dynamic_scale), int(optimizer.iterations)


def test_loss_scale_overflow_is_skipped_by_the_optimizer_and_the_run_recovers():
    """Under mixed_float16, do early float16 overflows lower the scale (no raise even with on_bad="raise"),
    and does the guarded run end with the same weights, scale and iterations as Keras alone?"""
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        outcomes, guarded_weights, scale, iterations = _run(guarded=True)
        _, plain_weights, plain_scale, plain_iterations = _run(guarded=False)
    finally:
        keras.config.set_dtype_policy(policy)
    kinds = [(o.outcome, o.reason) for o in outcomes]
    assert kinds[0] == ("skipped", "non_finite") and kinds[-1] == ("applied", "")
    assert outcomes[0].loss_scale == 32768.0 and scale < 32768.0
    assert all(o.consecutive_skips == 0 for o in outcomes)
    assert (scale, iterations) == (plain_scale, plain_iterations) and iterations == sum(o.applied for o in outcomes)
    for a, b in zip(guarded_weights, plain_weights):
        assert (a == b).all()
