"""Record every eager operation a loss function runs, with the user's source lines that ran it.

TensorFlow calls an op callback (`op_callbacks.add_op_callback`, the hook tfdbg and
`enable_check_numerics` use; it is kept per thread) after each eager op with its type, input and
output tensors. The recorder keeps those, the user's frames that ran the op (innermost first, up to
diagnose's own call of the loss), and whether the tape was recording. Eager tensors carry a unique
`_id`, so the log is a dataflow graph: which op made each tensor and what it read. Nothing of
TensorFlow, Keras or NumPy is patched: a value leaving TensorFlow (`.numpy()`, NumPy) runs no op and
is read from the source instead (`tapelab.diagnose.exits`).
"""
from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_callbacks

from tapelab.diagnose.allow import inside_allowed

__all__ = ["Location", "Op", "Recorder", "library_file", "tensor_id"]

_LIBRARIES = tuple(os.path.dirname(module.__file__) + os.sep for module in (tf, keras, np))
_HERE = os.path.dirname(__file__) + os.sep  # tapelab/diagnose/
_DIAGNOSE = os.path.join(_HERE, "run.py")  # where diagnose calls the loss: a trail ends there
# how an eager call of a traced function shows in the op callback (its own name, or a call op)
FUNCTION_CALLS = ("__inference_", "__forward_", "__backward_", "StatefulPartitionedCall", "PartitionedCall")


def library_file(filename: str) -> bool:
    """Whether code in `filename` belongs to TensorFlow, Keras, NumPy or diagnose, not to the user."""
    return (filename.startswith(_LIBRARIES) or filename.startswith(_HERE)
            or filename.startswith("<frozen"))


def tensor_id(value: Any) -> int | None:
    """The eager tensor's unique id (a variable's is its handle's), or None for anything else."""
    handle = getattr(value, "handle", None) if hasattr(value, "assign") else None
    return getattr(handle if handle is not None else value, "_id", None)


@dataclass(frozen=True)
class Location:
    """A line of the user's code: the first frame outside TensorFlow, Keras, NumPy and diagnose."""

    filename: str
    lineno: int

    @property
    def text(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        text = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return f"line {self.lineno}" + (f" (`{text}`)" if text else "")


@dataclass(frozen=True)
class Op:
    """One executed operation: its type, the tensors it read and made, and where and how it ran."""

    kind: str
    inputs: tuple
    outputs: tuple
    recorded: bool  # the tape was recording when it ran
    where: Location | None
    trail: tuple[Location, ...] = ()  # the user's frames that ran it, innermost (`where`) first
    allowed: bool = False  # it ran inside `allow_non_finite()`: its NaN or Inf is intended

    @property
    def input_ids(self) -> list[int]:
        return [t._id for t in self.inputs if hasattr(t, "_id")]

    @property
    def output_ids(self) -> list[int]:
        return [t._id for t in self.outputs if hasattr(t, "_id")]


@dataclass
class Recorder:
    """Context manager: while active, log each eager op with its user frames and the tape's recording state."""

    tape: tf.GradientTape | None = None
    ops: list[Op] = field(default_factory=list)
    start: int = 0  # eager tensor ids grow: a tensor with a smaller id existed before the run
    _library: dict = field(default_factory=dict)  # code object -> bool, so each frame is judged once

    def __enter__(self) -> "Recorder":
        self.start = tf.constant(0.0)._id
        op_callbacks.add_op_callback(self._on_op)
        return self

    def __exit__(self, *exc: Any) -> None:
        op_callbacks.remove_op_callback(self._on_op)

    def _on_op(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is None:  # eager only: ops traced into a tf.function graph run later, as one call op
            recording = self.tape is None or bool(getattr(self.tape, "_recording", False))
            kind = op_type.decode() if isinstance(op_type, bytes) else op_type
            trail = self._trail()
            self.ops.append(Op(kind, tuple(inputs or ()), tuple(outputs or ()), recording,
                               trail[0] if trail else None, trail, inside_allowed()))
        return None

    def _trail(self) -> tuple[Location, ...]:
        """The user's frames from the op up to diagnose's call of the loss (or the stack's end)."""
        found, frame = [], sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != _DIAGNOSE:
            if not self._is_library(frame.f_code):
                found.append(Location(frame.f_code.co_filename, frame.f_lineno))
            frame = frame.f_back
        return tuple(found)

    def _is_library(self, code) -> bool:
        library = self._library.get(code)
        if library is None:
            library = self._library[code] = library_file(code.co_filename)
        return library

    def calls_functions(self) -> list[str]:
        """The calls of traced functions among the run's ops (compiled code the recording cannot see into)."""
        return sorted({op.kind for op in self.ops if op.kind.startswith(FUNCTION_CALLS)})

    def producer(self) -> dict[int, Op]:
        """Each recorded tensor's id -> the op that made it."""
        return {i: op for op in self.ops for i in op.output_ids}
