"""`--fix` for the rules on sources and Keras 3 removals: `model.variables` becomes `model.trainable_variables`
where the gradients are asked and where they are applied, and a `watch` of Keras variables is dropped only
where the tape watches them anyway."""
import ast
import textwrap

from tapelab.lint.fixes import fix_text


def _fix(source: str):
    return fix_text(textwrap.dedent(source).lstrip("\n"), "step.py")


def test_all_variables_is_fixed_in_the_gradient_and_the_optimizer_call_alike():
    """Are both `model.variables` replaced, so each gradient stays paired with its variable, and nothing left?"""
    fixed = _fix("""
        model = keras.Sequential([keras.layers.Dense(2), keras.layers.BatchNormalization()])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        grads = tape.gradient(loss, model.variables)
        optimizer.apply_gradients(zip(grads, model.variables))
        print(len(model.variables))
        """)
    assert fixed.after.count("model.trainable_variables") == 2 and "len(model.variables)" in fixed.after
    assert fixed.fixed == 2 and fixed.findings == []


def test_a_watch_of_keras_variables_is_removed_with_its_line():
    """Is the `watch` line removed (comment and all), the block still valid, and the finding gone?"""
    fixed = _fix("""
        import tensorflow as tf
        with tf.GradientTape() as tape:
            tape.watch(model.trainable_variables)  # needed in Keras 2?
            loss = tf.reduce_sum(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        """)
    assert "watch" not in fixed.after and fixed.findings == [] and ast.parse(fixed.after)


def test_a_watch_that_is_needed_or_alone_is_reported_but_not_removed():
    """Is the `watch` kept where the tape does not watch variables by itself, or where it is the block's only
    statement (removing it would leave the block empty)?"""
    for source in ("""
        import tensorflow as tf
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(model.trainable_variables)
            loss = tf.reduce_sum(model(x))
        """, """
        import tensorflow as tf
        with tf.GradientTape() as tape:
            tape.watch(model.trainable_weights)
        """):
        fixed = _fix(source)
        assert fixed.after == fixed.before and [f.code for f in fixed.findings] == ["keras3-watch-variables"]
