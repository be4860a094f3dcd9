"""Differential diagnosis: a cause is named only when the student's value matches one known wrong answer."""
import numpy as np
import pytest

from tapelab.checker.wrong_answers import Alternative, matching_alternative, ratio_of, swapped, swapped_item, wrong_value

_MEAN = Alternative("batch mean", [0.5, 1.0], "sum-not-mean", "Did you average over the batch?")
_SWAP = swapped([1.0, 2.0])


def test_the_matching_alternative_is_named_with_its_cause():
    """Does a value equal to one alternative's get that alternative's question and cause code?"""
    problem = wrong_value("grads", [1.0, 2.0], [2.0, 1.0], [_MEAN, _SWAP], "Is the formula right?")
    assert problem.cause == "swapped-results"
    assert str(problem).startswith("`grads[0]` is 2.0, but should be 1.0. Those are the right values")


def test_no_match_gives_the_plain_mismatch_and_no_cause():
    """Without a matching alternative, is the message "expected X, got Y", where they first differ, that no
    known mistake gives them, and a question that asserts nothing?"""
    problem = wrong_value("grads", [1.0, 2.0], [1.0, 3.0], [_MEAN, _SWAP], "Is the formula right?")
    assert problem.cause is None
    assert str(problem) == ("`grads[1]` is 3.0, but should be 2.0. No known mistake gives exactly these values. "
                            "Is the formula right?")
    array = wrong_value("g", np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 7.0]))
    assert array.cause is None and "They first differ at index [2]." in str(array)


def test_a_right_answer_is_not_diagnosed():
    """Is a value that matches the right answer never reported, even if an alternative equals it too?"""
    assert wrong_value("g", [1.0, 1.0], [1.0, 1.0], [swapped([1.0, 1.0])]) is None


def test_an_alternative_equal_to_the_right_answer_is_never_named():
    """On an input where a wrong answer gives the right value, can that wrong answer still not be named?"""
    same = Alternative("same", [3.0, 3.0], "swapped-results", "swapped?")
    assert matching_alternative([3.0, 3.0], [3.0, 3.0], [same]) is None


def test_two_causes_that_give_the_same_value_are_not_told_apart():
    """When two alternatives with different causes both match, is neither named?"""
    other = Alternative("per tensor", [2.0, 1.0], "per-tensor-clip", "per tensor?")
    assert matching_alternative([1.0, 2.0], [2.0, 1.0], [_SWAP, other]) is None


def test_an_alternative_that_cannot_be_built_is_skipped():
    """Does an alternative whose value raises (e.g. a division by a zero norm) simply not apply?"""
    broken = Alternative("broken", lambda: 1.0 / 0.0, "clip-scales-up", "?")
    assert matching_alternative([1.0, 2.0], [2.0, 1.0], [broken, _SWAP]) is _SWAP


def test_an_unknown_cause_code_fails_when_the_checker_is_written():
    """Is an Alternative with a cause missing from the catalogue refused at once?"""
    with pytest.raises(KeyError):
        Alternative("x", 1.0, "no-such-cause", "?")


@pytest.mark.parametrize("expected,actual,ratio", [
    ([1.0, 2.0], [2.0, 4.0], 2.0),
    ([[1.0, 0.0], [3.0, -1.0]], [[-1.0, 0.0], [-3.0, 1.0]], -1.0),
    ([np.array([1.0, 2.0]), np.array([4.0])], [np.array([0.25, 0.5]), np.array([1.0])], 0.25),
])
def test_a_constant_ratio_is_established(expected, actual, ratio):
    """Is a value that is k times the right one, entry by entry (zeros included), reported with k?"""
    assert ratio_of(expected, actual) == pytest.approx(ratio)
    found = matching_alternative(expected, actual, [])  # no exercise alternative: the differential names it
    if ratio == -1:
        assert found.cause == "sign-flipped"
    else:
        assert found.cause == "constant-factor" and f"{ratio:.4g} times" in found.says


@pytest.mark.parametrize("expected,actual", [
    (3.0, 6.0),                          # one number is a multiple of any other
    ([1.0, 2.0], [2.0, 5.0]),            # ratios 2 and 2.5
    ([1.0, 0.0, 2.0], [2.0, 1.0, 4.0]),  # a zero that became nonzero
    ([1.0, 2.0], [1.0, 2.0]),            # k = 1: no factor
    ([1.0, 2.0], [[2.0, 4.0]]),          # another structure
])
def test_a_ratio_that_is_not_really_constant_is_not_named(expected, actual):
    """Is the constant-factor hint withheld for a scalar, a varying ratio, a broken zero or another shape?"""
    assert ratio_of(expected, actual) is None
    found = matching_alternative(expected, actual, [])
    assert found is None or found.cause not in ("constant-factor", "sign-flipped"), found


def test_shape_mistakes_are_named_without_an_exercise_alternative():
    """With no alternative of the exercise's own, are a transposed matrix and an extra axis of size 1 named by
    the structural differential, and does an exercise alternative that matches still win?"""
    matrix = np.arange(6.0).reshape(2, 3)
    assert matching_alternative(matrix, matrix.T, []).cause == "transposed"
    assert matching_alternative(matrix, matrix[..., None], []).cause == "extra-axis"
    own = Alternative("the prediction", matrix.T, "wrong-target", "That is the prediction.")
    assert matching_alternative(matrix, matrix.T, [own]) is own


def test_an_item_is_called_swapped_only_when_the_whole_list_is_reversed():
    """Checking item by item, is a swap named when all items are reversed, but not when one wrong item merely
    equals another item's right value?"""
    right = [1.0, 2.0]
    reversed_pair = [2.0, 1.0]
    assert wrong_value("a", right[0], reversed_pair[0], [swapped_item(right, reversed_pair, 0)]).cause == \
        "swapped-results"
    one_wrong = [2.0, 2.0]
    assert wrong_value("a", right[0], one_wrong[0], [swapped_item(right, one_wrong, 0)]).cause is None
