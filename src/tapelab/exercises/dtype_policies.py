"""Keras dtype policies in the checkers of notebook 06: train under one and restore the previous, and tell a
student where float16 came from when an op refused to combine it with float32."""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator

import keras

from tapelab.checker.messages import Incorrect

__all__ = ["combined_dtypes", "dtype_policy", "float16_mismatch"]

# A TensorFlow op given two float dtypes: eagerly ("expected to be a float tensor but is a half tensor"), in a
# graph ("has type float16 that does not match type float32"), and from `/` ("got tf.float32 != tf.float16").
_COMBINED = (re.compile(r"expected to be a (\w+) tensor but is a (\w+) tensor"),
             re.compile(r"has type (\w+) that does not match type (\w+)"),
             re.compile(r"must have the same dtype, got tf\.(\w+) != tf\.(\w+)"))
_DTYPE_NAMES = {"half": "float16", "float": "float32", "double": "float64"}


def combined_dtypes(text: str) -> frozenset[str]:
    """The two dtypes (`float16`, `float32`, `float64`...) that an op refused to combine, if `text` holds
    TensorFlow's error for that; empty otherwise."""
    for pattern in _COMBINED:
        found = pattern.search(text)
        if found:
            return frozenset(_DTYPE_NAMES.get(name, name) for name in found.groups())
    return frozenset()


def float16_mismatch(problem: Incorrect) -> Incorrect | None:
    """Under `mixed_float16`, where inputs and targets are float32 and only the layers' outputs are float16:
    the feedback for an op that combined float16 with float32, else None."""
    if problem.cause not in (None, "dtype-clash") or combined_dtypes(str(problem)) != {"float16", "float32"}:
        return None
    # the general dtype explanation (tapelab.checker.tf_errors) gives way to the one that says where float16 came from
    return Incorrect(f"{problem.observed or problem} Under `mixed_float16` the layers compute in float16, so `y_pred` is float16 "
                     "while `y` stays float32. Cast before you combine them: `tf.cast(y_pred, y.dtype)`.",
                     cause="float16-mismatch")


@contextmanager
def dtype_policy(name: str) -> Iterator[None]:
    """Build and train under the Keras dtype policy `name`, then restore the previous global policy, also
    when the student's code fails. Under `mixed_float16`, feedback for an op that combined float16 with
    float32 says where the float16 came from (`float16_mismatch`)."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    except Incorrect as problem:
        mismatch = float16_mismatch(problem) if name == "mixed_float16" else None
        if mismatch:
            raise mismatch from None
        raise
    finally:
        keras.mixed_precision.set_global_policy(previous)
