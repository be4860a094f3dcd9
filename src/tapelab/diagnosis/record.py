"""Record every eager operation a loss function runs, with the user's source line that ran it.

TensorFlow calls an op callback (`op_callbacks.add_op_callback`, the hook tfdbg and
`enable_check_numerics` use) after each eager op with its type, input and output tensors. The
recorder keeps those, plus two things no op shows: a tensor leaving TensorFlow through `.numpy()`
or `np.asarray` (`__array__`), and whether the tape was recording when the op ran. Eager tensors
carry a unique `_id`, so the log is a dataflow graph: which op made each tensor and what it read.
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
from tensorflow.python.framework import op_callbacks, ops

__all__ = ["Location", "Op", "Recorder", "tensor_id"]

_LIBRARIES = tuple(os.path.dirname(module.__file__) + os.sep for module in (tf, keras, np))
_HERE = os.path.dirname(__file__) + os.sep
_DIAGNOSE = os.path.join(os.path.dirname(_HERE), "diagnose.py")


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
        text = self.text
        return f"line {self.lineno}" + (f" (`{text}`)" if text else "")


@dataclass(frozen=True)
class Op:
    """One executed operation: its type, the tensors it read and made, and where and how it ran."""

    kind: str
    inputs: tuple
    outputs: tuple
    recorded: bool  # the tape was recording when it ran
    where: Location | None

    @property
    def input_ids(self) -> list[int]:
        return [t._id for t in self.inputs if hasattr(t, "_id")]

    @property
    def output_ids(self) -> list[int]:
        return [t._id for t in self.outputs if hasattr(t, "_id")]


@dataclass
class Recorder:
    """Context manager: while active, log each eager op, each NumPy exit and the tape's recording state."""

    tape: tf.GradientTape | None = None
    ops: list[Op] = field(default_factory=list)
    exits: list[tuple[Any, Location | None]] = field(default_factory=list)  # (tensor, where it left)
    start: int = 0  # eager tensor ids grow: a tensor with a smaller id existed before the run
    _patched: dict = field(default_factory=dict)
    _library: dict = field(default_factory=dict)  # code object -> bool, so each frame is judged once

    def __enter__(self) -> "Recorder":
        self.start = tf.constant(0.0)._id
        op_callbacks.add_op_callback(self._on_op)
        base = ops._EagerTensorBase
        self._patched = {"numpy": base.numpy, "__array__": base.__array__}
        for name, original in self._patched.items():
            setattr(base, name, self._exit_through(original))
        return self

    def __exit__(self, *exc: Any) -> None:
        op_callbacks.remove_op_callback(self._on_op)
        for name, original in self._patched.items():
            setattr(ops._EagerTensorBase, name, original)

    def _on_op(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is None:  # eager only: ops traced into a tf.function graph run later, as one call op
            recording = self.tape is None or bool(getattr(self.tape, "_recording", False))
            kind = op_type.decode() if isinstance(op_type, bytes) else op_type
            self.ops.append(Op(kind, tuple(inputs or ()), tuple(outputs or ()), recording, self._where()))
        return None

    def _exit_through(self, original):
        recorder = self

        def leave(tensor, *args, **kwargs):
            if not recorder._is_library(sys._getframe(1).f_code):  # your code asked, not TensorFlow's
                recorder.exits.append((tensor, recorder._where()))
            return original(tensor, *args, **kwargs)
        return leave

    def _where(self) -> Location | None:
        frame = sys._getframe(2)
        while frame is not None:
            if not self._is_library(frame.f_code):
                return Location(frame.f_code.co_filename, frame.f_lineno)
            frame = frame.f_back
        return None

    def _is_library(self, code) -> bool:
        library = self._library.get(code)
        if library is None:
            name = code.co_filename
            library = self._library[code] = (name.startswith(_LIBRARIES) or name.startswith(_HERE)
                                             or name == _DIAGNOSE or name.startswith("<frozen"))
        return library

    def producer(self) -> dict[int, Op]:
        """Each recorded tensor's id -> the op that made it."""
        return {i: op for op in self.ops for i in op.output_ids}
