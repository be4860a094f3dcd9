"""TensorFlow errors read as facts (tapelab.checker.tf_errors): the student's line from the traceback, and a
cause only when the error's text and that line's operators establish it."""
import linecache

import pytest
import tensorflow as tf

from tapelab.checker.tf_errors import Line, line_of, short_error, translate

_FILE = "<answer test_tf_errors>"


def _raised(source: str, *args):
    """The error `f(*args)` raises, with `f` compiled from `source` as an answer cell is."""
    linecache.cache[_FILE] = (len(source), None, source.splitlines(True), _FILE)
    namespace = {"tf": tf}
    exec(compile(source, _FILE, "exec"), namespace)
    with pytest.raises(Exception) as caught:
        namespace["f"](*args)
    return caught.value


def test_elementwise_product_where_the_shapes_fit_a_matrix_product():
    error = _raised("def f(x, w):\n    y = x * w\n    return y\n", tf.ones((4, 3)), tf.ones((3, 2)))
    line = line_of(error, _FILE)
    assert line == Line(2, "y = x * w")
    why = translate(error, line)
    assert why.cause == "elementwise-not-matmul" and "`x * w`" in why.text and "(4, 3)" in why.text


def test_shapes_that_fit_no_product_are_a_shape_clash_not_a_matmul_diagnosis():
    error = _raised("def f(x, w):\n    return x * w\n", tf.ones((4, 3)), tf.ones((5, 2)))
    assert translate(error, line_of(error, _FILE)).cause == "shape-clash"


def test_without_a_star_on_the_line_no_elementwise_product_is_claimed():
    """The same error raised by `tf.multiply` on the line: the line has no `*`, so the cause is the shapes only."""
    error = _raised("def f(x, w):\n    return tf.multiply(x, w)\n", tf.ones((4, 3)), tf.ones((3, 2)))
    assert translate(error, line_of(error, _FILE)).cause == "shape-clash"


def test_a_matrix_product_whose_operands_do_not_fit():
    error = _raised("def f(x, w):\n    return x @ w\n", tf.ones((4, 3)), tf.ones((2, 3)))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "shape-clash" and "transposed" in why.text


def test_two_dtypes_in_one_operation():
    error = _raised("def f(x, w):\n    return x * w\n", tf.ones((2,)), tf.ones((2,), tf.float64))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "dtype-clash" and "float32" in why.text and "float64" in why.text


def test_a_python_float_with_an_int_tensor():
    error = _raised("def f(x):\n    return x * 0.5\n", tf.constant([1, 2]))
    assert translate(error, line_of(error, _FILE)).cause == "dtype-clash"


def test_inside_tf_function_the_line_comes_from_the_user_code_location():
    source = "def f(x, w):\n    return tf.function(lambda a, b: a * b)(x, w)\n"
    error = _raised(source, tf.ones((4, 3)), tf.ones((3, 2)))
    line = line_of(error, _FILE)
    assert line is not None and line.number == 2
    assert translate(error, line).cause in ("elementwise-not-matmul", "shape-clash")


def test_an_error_that_establishes_nothing_gets_no_cause():
    error = _raised("def f(x):\n    return x.no_such_method()\n", tf.ones((2,)))
    assert translate(error, line_of(error, _FILE)) is None


def test_no_line_outside_the_answer_cell():
    error = _raised("def f(x):\n    return tf.reshape(x, (5,))\n", tf.ones((4, 3)))
    assert line_of(error, "<another file>") is None


def test_short_error_keeps_tensorflows_first_meaningful_line_whole():
    error = _raised("def f(x, w):\n    return x * w\n", tf.ones((4, 3)), tf.ones((3, 2)))
    assert short_error(error) == "Incompatible shapes: [4,3] vs. [3,2]"
    long = ValueError("Expected (" + ", ".join(f"item{i}" for i in range(80)) + ") but got something else")
    cut = short_error(long)
    assert cut.endswith("...") and cut.count("(") == cut.count(")")


_INT_CASTS = ("int32", "int64", "uint8", "int16", "int8", "uint16", "uint32", "uint64")


def _advises_an_int_cast(text: str) -> bool:
    """Whether the advice casts (or makes, or creates) a value as an integer dtype."""
    return any(f"tf.cast(value, tf.{d})" in text or f"Make both {d}" in text or f"as {d}" in text for d in _INT_CASTS)


@pytest.mark.parametrize("source", [
    "def f(z):\n    return tf.cast(tf.round(z), tf.int32) - z\n",  # eager: "expected to be a int32 tensor but is a float"
    "def f(z):\n    return z - tf.cast(tf.round(z), tf.int32)\n",  # eager, the other way round
    "def f(z):\n    return tf.function(lambda a, b: a - b)(tf.cast(z, tf.int64), z)\n",  # traced: "Input 'y' of 'Sub'"
])
def test_an_int_with_a_float_is_made_float_never_int(source):
    """An integer tensor meets a float one: the advice makes both float32 (a cast to an integer dtype rounds the
    value and has no gradient), whichever operand came first and whether eager or traced."""
    error = _raised(source, tf.constant([0.4, 1.6]))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "dtype-clash" and "float32" in why.text, why
    assert not _advises_an_int_cast(why.text), why.text


def test_the_int_cast_on_the_line_is_named_as_where_the_int_came_from():
    """The line casts to int32 itself: the advice names that cast and leaves it out, rather than a cast to add."""
    error = _raised("def f(z):\n    return z + tf.stop_gradient(tf.cast(tf.round(z), tf.int32) - z)\n",
                    tf.constant([0.4, 1.6]))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "dtype-clash" and "`tf.cast(tf.round(z), tf.int32)`" in why.text, why
    assert not _advises_an_int_cast(why.text), why.text


def test_two_integer_dtypes_are_not_told_to_become_float():
    """Near miss: int32 with int64 (indices, counts) is no gradient path: the advice stays with an integer dtype."""
    error = _raised("def f(i):\n    return i - tf.constant([1], tf.int64)\n", tf.constant([3]))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "dtype-clash" and "float" not in why.text, why


def test_a_python_float_with_an_int_cast_on_the_line_names_the_cast():
    """`tf.cast(z, tf.int32) * 0.5`: the int32 tensor the number meets is the line's own cast, named as such."""
    error = _raised("def f(z):\n    return tf.cast(z, tf.int32) * 0.5\n", tf.constant([0.4, 1.6]))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "dtype-clash" and "`tf.cast(z, tf.int32)`" in why.text, why
    assert not _advises_an_int_cast(why.text), why.text


def _facts(source: str, *args):
    """The error `f(*args)` raises, and the code facts of `f` (the function's source and its assignments)."""
    from tapelab.checker.code_facts import CodeFacts

    error = _raised(source, *args)
    namespace = {"tf": tf}
    exec(compile(source, _FILE, "exec"), namespace)
    return error, CodeFacts.of(namespace["f"])


_COUNT_CAST = ("def f(x):\n    n = tf.cast(tf.shape(x)[0], tf.int32)\n    loss = tf.reduce_sum(x ** 2)\n"
               "    return loss / n\n")


def test_an_int_cast_on_an_earlier_line_is_named():
    """`n = tf.cast(tf.shape(x)[0], tf.int32)` two lines up, `loss / n` raises: the advice names n's line and cast."""
    error, facts = _facts(_COUNT_CAST, tf.constant([0.5, 1.5]))
    why = translate(error, line_of(error, _FILE), facts)
    assert why.cause == "dtype-clash" and "`n = tf.cast(tf.shape(x)[0], tf.int32)`" in why.text, why
    assert "line 2" in why.text and not _advises_an_int_cast(why.text), why.text


def test_an_earlier_int_cast_is_named_inside_a_tf_function():
    """Traced, TensorFlow words the clash otherwise (`Input 'y' of 'RealDiv' Op`); the same line is named."""
    source = "@tf.function\n" + _COUNT_CAST
    error, facts = _facts(source, tf.constant([0.5, 1.5]))
    why = translate(error, line_of(error, _FILE), facts)
    assert why.cause == "dtype-clash" and "`n = tf.cast(tf.shape(x)[0], tf.int32)`" in why.text, why
    assert "line 3" in why.text, why.text


def test_a_python_float_meeting_an_earlier_int_cast_names_it():
    error, facts = _facts("def f(x):\n    n = tf.cast(tf.size(x), tf.int32)\n    return n * 0.5\n",
                          tf.constant([1.0]))
    why = translate(error, line_of(error, _FILE), facts)
    assert why.cause == "dtype-clash" and "`n = tf.cast(tf.size(x), tf.int32)`" in why.text, why


@pytest.mark.parametrize("source", [
    # two int casts reach the line: which one met the float is not clear
    "def f(x):\n    a = tf.cast(tf.size(x), tf.int32)\n    b = tf.cast(tf.size(x), tf.int32)\n"
    "    return tf.reduce_sum(x) / a + tf.reduce_sum(x) / b\n",
    # the cast name is made float on the line; the int32 that clashes is `k`, which no cast made
    "def f(x):\n    n = tf.cast(tf.size(x), tf.int32)\n    k = tf.size(x)\n"
    "    return tf.reduce_sum(x) / tf.cast(n, tf.float32) / k\n",
])
def test_no_earlier_cast_is_named_when_the_flow_is_not_clear(source):
    error, facts = _facts(source, tf.constant([1.0, 2.0]))
    why = translate(error, line_of(error, _FILE), facts)
    assert why.cause == "dtype-clash" and "tf.cast(tf.size(x), tf.int32)`" not in why.text, why


def test_an_exercise_check_names_the_earlier_cast():
    """Through an exercise's own check (the student's function called by `self.call`), the earlier cast is named."""
    from answers import define
    from tapelab.checker.exercise import Exercise
    from tapelab.checker.messages import Incorrect

    class Mean(Exercise):
        number, answer, visible_cases = "9.9", "f", (1,)

        def check_case(self, fn, case, facts):
            self.call(fn, tf.constant([0.5, 1.5]), shown="x = [0.5, 1.5]")

    fn = define(_COUNT_CAST, "earlier cast", {"tf": tf})["f"]
    with pytest.raises(Incorrect) as failure:
        Mean().check(fn)
    assert failure.value.cause == "dtype-clash", failure.value
    assert "`n = tf.cast(tf.shape(x)[0], tf.int32)` on line 2" in str(failure.value), failure.value


_TRACKED = ("def f(x, loss):\n    tracker = tf.keras.metrics.Mean()\n    tracker.update_state(loss * {factor})\n"
            "    return tracker.result()\n")


@pytest.mark.parametrize("traced", [False, True])
def test_a_count_multiplied_into_a_metric_is_its_sample_weight(traced):
    """`tracker.update_state(loss * tf.shape(x)[0])`: a cast would only scale what the metric reports; the count
    belongs in `sample_weight`, said with the student's own names, in eager code and traced."""
    source = _TRACKED.format(factor="tf.shape(x)[0]")
    if traced:
        source = "@tf.function\n" + source
    error = _raised(source, tf.ones((4, 1)), tf.constant(2.0))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "dtype-clash", why
    assert "`tracker.update_state(loss, sample_weight=tf.shape(x)[0])`" in why.text, why.text
    assert "tf.cast(value" not in why.text, why.text


def test_an_int_factor_that_is_no_count_keeps_the_dtype_advice():
    """Near miss: the int factor is a given tensor, not a count of rows: no weighting is claimed."""
    error = _raised(_TRACKED.format(factor="x"), tf.constant(3), tf.constant(2.0))
    why = translate(error, line_of(error, _FILE))
    assert why.cause == "dtype-clash" and "sample_weight" not in why.text, why.text
