"""The structural differential (tapelab.checker.differential): each family names its cause when the student's
value is that transformation of the right one, and no family names anything without that fact."""

import numpy as np
import pytest

from tapelab.checker import differential
from tapelab.checker.differential import structural
from tapelab.checker.wrong_answers import wrong_value

RIGHT = np.array([[1.0, -2.0, 3.5], [0.25, 4.0, -1.5]])  # (2, 3), distinct entries


@pytest.mark.parametrize("actual,cause", [
    (-RIGHT, "sign-flipped"),
    (3 * RIGHT, "constant-factor"),
    (0.5 * RIGHT, "constant-factor"),
    (RIGHT.T, "transposed"),
    (RIGHT[None], "extra-axis"),
    (RIGHT[:, :, None], "extra-axis"),
    (RIGHT.sum(axis=0), "missing-axis"),
    (RIGHT.mean(axis=1), "missing-axis"),
    (np.zeros_like(RIGHT), "zero-gradient"),
])
def test_each_family_names_its_transformation(actual, cause):
    """Is a value that is one structural transformation of the right one named by that transformation?"""
    found = structural(RIGHT, actual, "g")
    assert found is not None and found[0] == cause, found


def test_permuted_axes_beyond_a_transpose():
    right = np.arange(1.0, 25.0).reshape(2, 3, 4)
    found = structural(right, np.transpose(right, (2, 0, 1)), "j")
    assert found[0] == "permuted-axes" and "[2, 0, 1]" in found[1]


def test_a_jacobian_for_a_gradient_and_the_full_jacobian_for_a_batch_one():
    """Per-output rows summing to the gradient are `not-reduced`; the full Jacobian with the per-example blocks
    on its diagonal is `full-jacobian`."""
    rows = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])
    assert structural(rows.sum(axis=0), rows, "g")[0] == "not-reduced"
    batch = np.arange(1.0, 13.0).reshape(2, 2, 3)  # (B, out, in)
    full = np.zeros((2, 2, 2, 3))
    for b in range(2):
        full[b, :, b, :] = batch[b]
    assert structural(batch, full, "j")[0] == "full-jacobian"


def test_nests_first_source_only_order_and_the_item_that_differs():
    a, b = RIGHT, RIGHT + 10
    assert structural([a, b], [a, a], "grads")[0] == "first-source-only"
    assert structural([a, b], [b, a], "grads")[0] == "swapped-results"
    found = structural([a, b], [a, -b], "grads")
    assert found[0] == "sign-flipped" and "`grads[1]`" in found[1]


def test_a_single_number_is_named_only_when_negated():
    """Any number is some multiple of another: of a single nonzero number only the negation is named, and a
    single zero is no evidence that nothing flows back."""
    assert structural(2.5, -2.5, "s")[0] == "sign-flipped"
    assert structural(2.5, 5.0, "s") is None
    assert structural(2.5, 7.3, "s") is None
    assert structural(-14.0, 0.0, "s") is None
    assert structural(0.0, 1.0, "s") is None


def _unrelated(shape, rng):
    return rng.normal(size=shape)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (3, 2), (1, 6), (2, 2, 3), (6,)])
def test_no_family_names_a_cause_without_its_fact(shape):
    """Does every family (array checks, scaling, nests) stay silent on values that are no transformation of
    the right one? Random values of every shape the families reshape into, over many draws."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        assert structural(RIGHT, _unrelated(shape, rng), "g") is None
        assert structural([RIGHT, RIGHT + 1], [RIGHT, _unrelated(shape, rng)], "g") is None
    for check in differential._ARRAY_CHECKS:
        assert check(RIGHT, _unrelated(shape, rng), "g", 1e-4, 1e-5) is None, check.__name__


def test_a_transformation_that_leaves_the_value_alike_is_not_named():
    """A symmetric matrix is its own transpose: a wrong value that happens to be symmetric is not `transposed`."""
    symmetric = np.array([[1.0, 2.0], [2.0, 5.0]])
    assert structural(symmetric, symmetric.T + 1, "h") is None or structural(symmetric, symmetric.T + 1, "h")[0] \
        != "transposed"
    assert structural(symmetric, symmetric, "h") is None


def test_wrong_value_falls_back_on_the_differential_after_the_exercise_alternatives():
    problem = wrong_value("dl_dw", RIGHT, RIGHT.T)
    assert problem.cause == "transposed" and "`dl_dw` is the transpose" in str(problem)
    assert wrong_value("dl_dw", RIGHT, RIGHT + np.array([0, 0, 1.0])).cause is None
    assert wrong_value("dl_dw", RIGHT, RIGHT) is None


def test_every_family_is_exercised_here():
    """A family added to the differential without a test here fails this one."""
    tested = {"_zero", "_permuted", "_unit_axis", "_full_jacobian", "_reduced_away", "_unreduced"}
    assert {c.__name__ for c in differential._ARRAY_CHECKS} == tested


def test_a_term_without_the_learning_rate_is_named_whatever_its_weight():
    """Is a step `lr * a + w * b`, where the task's is `lr * (a + w * b)`, named as `b` lacking the learning rate
    when the rate is given, and not when the step is right?"""
    a, b, lr, w = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7, -1.1]), 0.1, 3.0
    terms, expected = {"a": a, "b": b}, {"a": lr, "b": lr * w}
    found = differential.combination(terms, expected, lr * a + w * b, "your step", rate=lr)
    assert found is not None and found[0] == "no-learning-rate" and "`b`" in found[1], found
    assert differential.combination(terms, expected, lr * (a + w * b), "your step", rate=lr) is None
    assert differential.combination(terms, expected, lr * a + w * b, "your step") is None  # no rate: a factor 1 only
