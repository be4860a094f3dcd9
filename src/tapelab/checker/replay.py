"""Verdicts outside the student's kernel: a check's calls of student code recorded there, judged elsewhere.

Under `tapelab grade` (the kernel's environment has TAPELAB_RECORD=1) a check runs in the student's kernel
as in self-study, and records what only that kernel can know: the answer's source (or that it is missing,
or not a function) and, for every `Exercise.run`, the value the student's code returned, or that it
raised, and the failure the check then showed. The grader reads the records and a judge, in a process
no student code ever runs in, runs the same check again (`Exercise.outcome`) on a stand-in for the answer
built from its source (compiled, never run), with every `run` served from the record in order. The
judge's outcome is the cell's. Student code can then change only what its own functions return, which it
could write anyway: a patched checker, NumPy or TensorFlow in the kernel changes nothing the judge computes;
a record that does not fit the check (too few calls, forged data) fails the check.

Values travel as JSON (`encode`, `decode`): None, booleans, numbers (NaN and infinities too), strings, bytes,
lists, tuples, dicts with string keys, NumPy arrays and scalars, tensors, variables (TensorFlow's and Keras')
and IndexedSlices keep their type, dtype and shape; any other object becomes an instance of a class of its name
whose repr is the one recorded.
"""
from __future__ import annotations

import base64
import contextlib
import functools
import inspect
import json
import keyword
import linecache
import math
import os
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from tapelab.causes import CAUSES
from tapelab.checker.messages import Feedback, Incorrect, NotAttempted

__all__ = ["ENV", "Record", "Replayed", "Withheld", "decode", "encode", "judging", "once_in_judge", "recording",
           "stand_in"]

ENV = "TAPELAB_RECORD"  # set in a grading kernel's environment (tapelab.grading.execution.worker)
_REPR_LIMIT = 300


class Replayed(BaseException):
    """Raised in the judge where the recorded run raised: the check ends with the failure the kernel showed.
    A BaseException, so no check's `except Exception` (or `except Incorrect`) handles it as the student's."""


class Withheld(BaseException):
    """Raised in a grading kernel where a check needs an expected value only the grader holds (a hidden case's):
    the check goes on with its next case, so that the kernel records every case's runs for the judge."""


class Unreplayable(BaseException):
    """The record does not fit the check (fewer runs than the check makes, or data that does not decode)."""


def recording() -> bool:
    """True in a grading kernel: checks record their runs (tapelab.grading.execution sets the variable)."""
    return os.environ.get(ENV) == "1"


# -- values ---------------------------------------------------------------------------------------------
def encode(value: Any) -> Any:
    """`value` as JSON data that `decode` turns back into an object of the same type, dtype, shape and values."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if type(value) is bytes:
        return {"bytes": base64.b64encode(value).decode()}
    if type(value) in (list, tuple):
        return {type(value).__name__: [encode(v) for v in value]}
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "biufc":
        return {"numpy": _array(np.asarray(value)), "scalar": isinstance(value, np.generic)}
    module = type(value).__module__ or ""
    if module.startswith(("tensorflow", "keras")):
        found = _tf_value(value)
        if found is not None:
            return found
    return {"object": type(value).__name__, "repr": _short_repr(value), "callable": callable(value)}


def _array(array: np.ndarray) -> dict:
    return {"dtype": array.dtype.str, "shape": list(array.shape),
            "data": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()}


def _tf_value(value: Any) -> dict | None:
    import keras
    import tensorflow as tf

    if isinstance(value, tf.Variable):
        return {"variable": _array(value.numpy()), "dtype": value.dtype.name, "trainable": bool(value.trainable),
                "name": value.name}
    if isinstance(value, keras.Variable):  # a layer's weight (its dtype a name, not a tf.DType), not a tf.Variable
        return {"keras_variable": _array(np.asarray(value.numpy())), "dtype": str(value.dtype),
                "trainable": bool(value.trainable), "name": value.name}
    if isinstance(value, tf.IndexedSlices):
        return {"slices": [encode(value.values), encode(value.indices), encode(value.dense_shape)]}
    dtype = getattr(value, "dtype", None)
    if tf.is_tensor(value) and hasattr(value, "numpy") and isinstance(dtype, tf.DType) and dtype.is_numpy_compatible \
            and dtype != tf.string:
        return {"tensor": _array(value.numpy()), "dtype": dtype.name}
    return None


def _short_repr(value: Any) -> str:
    try:
        return repr(value)[:_REPR_LIMIT]
    except Exception:  # the student's own __repr__ may raise
        return f"<{type(value).__name__} object>"


def decode(data: Any) -> Any:
    """The object `encode` described (raises Unreplayable on data `encode` cannot have written)."""
    try:
        return _decode(data)
    except Unreplayable:
        raise
    except Exception as error:  # forged or broken data: the record does not fit
        raise Unreplayable(f"a recorded value could not be read ({type(error).__name__})") from None


def _decode(data: Any) -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict):
        raise Unreplayable("a recorded value has an unknown form")
    if "float" in data:
        return float(data["float"])
    if "bytes" in data:
        return base64.b64decode(data["bytes"], validate=True)
    if "list" in data:
        return [_decode(v) for v in data["list"]]
    if "tuple" in data:
        return tuple(_decode(v) for v in data["tuple"])
    if "dict" in data:
        return {str(k): _decode(v) for k, v in data["dict"].items()}
    if "numpy" in data:
        array = _from_array(data["numpy"])
        return array[()] if data.get("scalar") else array
    if "object" in data:
        return _object(str(data["object"]), bool(data.get("callable")), str(data["repr"]))
    import tensorflow as tf

    if "variable" in data:
        return tf.Variable(_from_array(data["variable"]), dtype=tf.as_dtype(data["dtype"]),
                           trainable=bool(data["trainable"]), name=str(data.get("name", "Variable")).rsplit(":", 1)[0])
    if "keras_variable" in data:
        import keras

        return keras.Variable(_from_array(data["keras_variable"]), dtype=tf.as_dtype(data["dtype"]).name,
                              trainable=bool(data["trainable"]), name=str(data.get("name", "variable")))
    if "tensor" in data:
        return tf.constant(_from_array(data["tensor"]), dtype=tf.as_dtype(data["dtype"]))
    if "slices" in data:
        values, indices, shape = (_decode(v) for v in data["slices"])
        return tf.IndexedSlices(values, indices, shape)
    raise Unreplayable("a recorded value has an unknown form")


def _from_array(data: dict) -> np.ndarray:
    dtype = np.dtype(str(data["dtype"]))
    if dtype.kind not in "biufc":
        raise Unreplayable("a recorded array has an unknown dtype")
    shape = tuple(int(n) for n in data["shape"])
    return np.frombuffer(base64.b64decode(data["data"]), dtype).reshape(shape).copy()


# -- the record -------------------------------------------------------------------------------------------
@dataclass
class Record:
    """What one `check` call met in the kernel: the answer (`answer`: {"missing": True}, {"type": name} for a
    non-function, or {"file", "text", "name", "line"} for a function's source), every run's outcome
    ({"value", "logs"} or {"raised": True}), and the failure shown when a run raised ({"kind", "message",
    "cause", "expected", "actual"})."""

    answer: dict = field(default_factory=dict)
    runs: list = field(default_factory=list)
    failure: dict | None = None
    exercise: str = ""  # the exercise number of the check that recorded it

    def to_json(self) -> str:
        return json.dumps({"exercise": self.exercise, "answer": self.answer, "runs": self.runs,
                           "failure": self.failure})

    @classmethod
    def from_json(cls, text: str) -> "Record":
        data = json.loads(text)
        if not (isinstance(data, dict) and isinstance(data.get("answer"), dict) and isinstance(data.get("runs"), list)):
            raise Unreplayable("the record has an unknown form")
        failure = data.get("failure")
        return cls(data["answer"], data["runs"], failure if isinstance(failure, dict) else None,
                   str(data.get("exercise", "")))


_state: dict[str, Any] = {"records": [], "current": None, "judge": None, "namespace": {}}


def begin(exercise: str, answer: Any, name: str, namespace: Callable[[], dict]) -> None:
    """Kernel: exercise `exercise`'s check starts on `answer` (None: looked up under `name` in `namespace()`)."""
    _state["current"] = Record(answer=_describe(answer, name, namespace), exercise=exercise)


def note_run(value: Any, logs: list[str]) -> None:
    record = _state["current"]
    if record is None:
        return
    try:
        data = encode(value)
    except Exception:  # a value too deep or too odd to write: the judge sees a stand-in, never the kernel a crash
        data = {"object": type(value).__name__, "repr": _short_repr(value), "callable": callable(value)}
    record.runs.append({"value": data, "logs": list(logs)})


def note_raised() -> None:
    record = _state["current"]
    if record is not None:
        record.runs.append({"raised": True})


def end(failure: BaseException | None) -> None:
    """Kernel: the check ended (with `failure`, a Feedback, or None); its record joins the kernel's list."""
    record, _state["current"] = _state["current"], None
    if record is None:
        return
    if failure is not None and getattr(failure, "kind", None) in ("incorrect", "not-attempted"):
        record.failure = {"kind": failure.kind, "message": str(failure), "cause": failure.cause,
                          "expected": failure.expected, "actual": failure.actual}
    _state["records"].append(record.to_json())


def taken() -> list[str]:
    """Kernel: the records of the checks run since the last call, as JSON texts (the grader reads them)."""
    records, _state["records"] = _state["records"], []
    return records


def _describe(answer: Any, name: str, namespace: Callable[[], dict]) -> dict:
    if answer is None:
        found = namespace()
        if name not in found:
            return {"missing": True}
        answer = found[name]
    function = getattr(answer, "python_function", answer)  # a tf.function's own Python function
    try:  # a decorated function's own (`tf.custom_gradient`, `functools.wraps`), as `inspect` reads its source
        function = inspect.unwrap(function)
    except ValueError:  # a cycle of `__wrapped__`
        pass
    code = getattr(function, "__code__", None)
    if not callable(answer) or not isinstance(code, types.CodeType):
        return {"type": type(answer).__name__, "callable": callable(answer)}
    lines = linecache.getlines(code.co_filename)
    return {"file": code.co_filename, "text": "".join(lines), "name": code.co_name, "line": code.co_firstlineno}


# -- the judge ------------------------------------------------------------------------------------------
def judging() -> bool:
    return _state["judge"] is not None


def once_in_judge(setup: Callable[..., Any]) -> Callable[..., Any]:
    """`setup(*args)` made once per arguments while judging, afresh everywhere else. The judge checks a whole class
    on the same cases and runs no student code that could change what a set-up returned; in a kernel, the student's
    code is handed it. Only for set-ups of their arguments alone (a case, the variant's values) whose results no
    check changes: tensors, tuples, functions that build afresh, a model the check only reads."""
    made: dict = {}

    @functools.wraps(setup)
    def setup_once(*args):
        if not judging():
            return setup(*args)
        if args not in made:
            made[args] = setup(*args)
        return made[args]

    return setup_once


@contextlib.contextmanager
def judged(record: Record) -> Iterator[None]:
    """Judge: while the block runs, every `Exercise.run` is served from `record`."""
    _state["judge"] = iter(record.runs)
    try:
        yield
    finally:
        _state["judge"] = None


def served() -> tuple[Any, list[str]]:
    """Judge: the next recorded run's (value, logs); raises Replayed where it raised, Unreplayable past the end."""
    entry = next(_state["judge"], None)
    if not isinstance(entry, dict):
        raise Unreplayable("the check made more calls of your code than were recorded")
    if entry.get("raised") is True:
        raise Replayed()
    logs = entry.get("logs")
    return decode(entry.get("value")), [str(line) for line in logs] if isinstance(logs, list) else []


def stand_in(answer: dict) -> Any:
    """Judge: the answer as the checks read it, from its record, or None when it was missing. A function's stand-in
    reads as the student's to `inspect` (its file's recorded text, its name and first line) but is compiled from a
    body of our own, so no student code can ever run here; anything else is an object of a class of the recorded
    name."""
    if answer.get("missing") is True:
        return None
    if "type" in answer:
        return _object(str(answer["type"]), bool(answer.get("callable")))
    filename, text, name, line = (str(answer["file"]), str(answer["text"]), str(answer["name"]), int(answer["line"]))
    if not (name.isidentifier() and not keyword.iskeyword(name) and 1 <= line <= text.count("\n") + 1):
        return _object("function", True)  # a lambda, or a record no kernel writes
    try:
        module = compile("\n" * (line - 1) + f"def {name}(*args, **kwargs):\n    raise Unreplayable('a stand-in')\n",
                         filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return _object("function", True)
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(code, {"__builtins__": {}, "Unreplayable": Unreplayable}, name)


def _object(name: str, callable_: bool, shown: str | None = None) -> Any:
    """An object of a class named `name` whose repr is `shown` (callable when the recorded one was: a call
    raises Unreplayable, since a check calls the student's objects only through `Exercise.run`)."""
    def refuse(self, *args, **kwargs):
        raise Unreplayable("a stand-in is never called")
    members = {"__module__": "student", **({"__call__": refuse} if callable_ else {})}
    if shown is not None:
        members["__repr__"] = lambda self: shown
    return type(name, (), members)()


def namespace() -> dict:
    """Judge: the notebook's namespace as the check looks the answer up in it (the stand-in, or nothing)."""
    return _state["namespace"]


def judge(exercise: Any, kwargs: dict, text: str | None) -> Any:
    """Judge: the outcome of `exercise.check(**kwargs)` on the kernel's record `text` (JSON; None: no record
    came): the Correct `Message`, or the failure (a Feedback) the student is shown."""
    try:
        record = Record.from_json(text) if text is not None else None
        if record is None or record.exercise != exercise.number:
            raise Unreplayable("no record of this check came from the notebook")
        answer = stand_in(record.answer)
        _state["namespace"] = {} if answer is None else {exercise.answer: answer}
        with judged(record):
            return exercise.outcome(None, **kwargs)
    except Feedback as failure:
        return failure
    except Replayed:
        shown = record.failure or {}
        kind = NotAttempted if shown.get("kind") == "not-attempted" else Incorrect
        failure = kind(_text(shown.get("message")) or f"Exercise {exercise.number}: your code raised an error.",
                       _cause(shown.get("cause")), expected=_text(shown.get("expected")) or None,
                       actual=_text(shown.get("actual")) or None)
    except (Unreplayable, ValueError, TypeError, KeyError) as why:
        failure = Incorrect(f"Exercise {exercise.number}: the grader could not replay this check from what your code "
                            f"did in the notebook ({why}), so it counts as failed.")
    finally:
        _state["namespace"] = {}
    failure.exercise = exercise.number
    return failure


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _cause(code: Any) -> str | None:
    """A recorded cause code when the catalogue knows it (the kernel is the student's: it may send anything)."""
    return code if isinstance(code, str) and code in CAUSES else None
