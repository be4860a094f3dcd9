"""Comparisons: numbers shown with the digits the tolerance needs, large arrays summarised."""
import numpy as np
import pytest

from tapelab.checker.compare import decimals_for, fmt_pair, mismatch


@pytest.mark.parametrize("actual,expected,rtol,atol", [
    (0.070728, 0.0707, 1e-4, 1e-5),
    (2.0000301, 2.0, 1e-5, 1e-6),
    (np.array([1.0, 1.23456789]), np.array([1.0, 1.23455]), 1e-6, 1e-8),
    (-0.00012, -0.00011, 1e-3, 1e-6),
])
def test_values_that_differ_beyond_the_tolerance_never_print_alike(actual, expected, rtol, atol):
    """Is a pair the comparison rejects always shown as two different numbers ("0.070728" vs "0.0707")?"""
    assert mismatch(expected, actual, "v", rtol, atol) is not None
    shown, should = fmt_pair(actual, expected, rtol, atol)
    assert shown != should
    assert f"is {shown}, but should be {should}" in mismatch(expected, actual, "v", rtol, atol)


def test_a_large_difference_keeps_the_message_short():
    """Does a difference far above the tolerance show four decimals, not the tolerance's twelve?"""
    assert fmt_pair([0.10738, -0.0011], [0.008324, -0.0011], 1e-3, 1e-9) == ("[ 0.1074, -0.0011]", "[ 0.0083, -0.0011]")


def test_decimals_resolve_the_tolerance_near_zero():
    """With expected values near zero, do the decimals follow `atol` (1e-5 -> 6 decimals)?"""
    assert decimals_for([0.0, 3.0], rtol=1e-4, atol=1e-5) == 6


def test_large_arrays_are_summarised_with_shape_count_and_first_index():
    """Is a mismatch in a 7x10 array one sentence (shape, how many entries, first index, largest difference),
    not a dump of seventy numbers?"""
    expected = np.zeros((7, 10))
    actual = expected.copy()
    actual[2, 3], actual[5, 9] = 0.25, -1.5
    message = mismatch(expected, actual, "jacobian")
    assert message == ("`jacobian` (shape (7, 10)) differs in 2 of 70 entries: the first at index [2, 3], where it "
                       "is 0.25 but should be 0.0; the largest difference is 1.5.")


def test_matching_values_give_no_message():
    """Do values within the tolerance count as equal, in nests too?"""
    assert mismatch({"a": [1.0, 2.0]}, {"a": [1.0, 2.00001]}, "d") is None
