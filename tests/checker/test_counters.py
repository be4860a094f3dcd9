"""A call counter tested before the line that counts the call (tapelab.checker.counters), and the feedback of
Exercise 2.6 that names it when the run shows the first application one call early: the accumulated step applied
off schedule, never "after every micro-batch" (which it does not do)."""
import pytest
import tensorflow as tf

from answers import define, fresh_mistakes
from mutation.inprocess import exercises, grade
from tapelab.checker.counters import late_count


def _fn(code: str):
    return next(v for k, v in define(code, "counters", {"tf": tf}).items() if k == "make")


_TEST_FIRST = '''
def make():
    calls = 0

    def step():
        nonlocal calls
        if calls % 2 == 0:
            print("apply")
        calls += 1

    return step
'''

_VARIABLE_COUNTER = '''
def make():
    count = tf.Variable(0)

    def step():
        if count % 3 == 0:
            print("apply")
        count.assign_add(1)

    return step
'''

_COUNT_FIRST = '''
def make():
    calls = 0

    def step():
        nonlocal calls
        calls += 1
        if calls % 2 != 0:
            print("apply")

    return step
'''

_OTHER_NAME = '''
def make():
    calls, seen = 0, 0

    def step():
        nonlocal calls, seen
        seen += 1
        if calls % 2 == 0:
            print("apply")
        calls = calls + 1

    return step
'''


def test_a_count_tested_before_it_is_incremented_is_found():
    """Is `if calls % 2 == 0:` before `calls += 1` found, as written, in the function the factory defines?"""
    assert late_count(_fn(_TEST_FIRST)) == ("calls % 2 == 0", "calls += 1")


def test_a_variable_counter_incremented_with_assign_add_is_found():
    assert late_count(_fn(_VARIABLE_COUNTER)) == ("count % 3 == 0", "count.assign_add(1)")


def test_a_rebinding_increment_of_the_tested_name_is_found():
    """`calls = calls + 1` counts too; another name incremented before the test does not hide it."""
    assert late_count(_fn(_OTHER_NAME)) == ("calls % 2 == 0", "calls = calls + 1")


def test_a_count_incremented_before_its_test_is_not_found():
    """Near miss: the count is added first (the test itself is inverted): nothing to name here."""
    assert late_count(_fn(_COUNT_FIRST)) is None


def _accumulation_step():
    return next(e for e in exercises("02_model_variables") if e.answer_id == "ex2_6_answer")


def test_the_accumulated_step_tested_before_it_is_counted_is_named_by_its_lines():
    """2.6's fresh mistake: the weights move after calls 1 and 3 (not after every call), and the code tests the
    count before it adds the call: the feedback names both lines and the off-schedule application."""
    mistake = next(m for m in fresh_mistakes("02_model_variables")["ex2_6_answer"]
                   if m.name == "the count tested before it is incremented")
    verdict = grade(_accumulation_step(), mistake.code, "counters tested first")
    assert verdict.outcome == "incorrect" and verdict.cause == "applied-off-schedule", verdict
    assert "`if calls % 2 == 0:`" in verdict.message and "`calls += 1`" in verdict.message, verdict.message
    assert "after every micro-batch" not in verdict.message


@pytest.mark.parametrize("test", ["calls % 2 != 0", "calls % 2 == 1"])
def test_an_inverted_test_after_the_count_is_not_called_a_late_count(test):
    """Near miss: the call is counted first and the test picks the wrong calls: off schedule, but no line order
    is blamed."""
    code = f'''
def make_accumulating_step(model):
    optimizer = keras.optimizers.SGD(learning_rate=0.1)
    variables = model.trainable_variables
    accumulators = [tf.Variable(tf.zeros_like(v)) for v in variables]
    calls = 0

    def step(x, y):
        nonlocal calls
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
        for acc, g in zip(accumulators, tape.gradient(loss, variables)):
            acc.assign_add(g)
        calls += 1
        if {test}:
            optimizer.apply([acc / 2 for acc in accumulators], variables)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))

    return step
'''
    verdict = grade(_accumulation_step(), code, f"counters inverted {test}")
    assert verdict.outcome == "incorrect" and verdict.cause == "applied-off-schedule", verdict
    assert "comes before" not in verdict.message and "after every micro-batch" not in verdict.message
