"""Read what TensorFlow logs, in a notebook cell, instead of letting it spill onto stderr.

Some of TensorFlow's advice reaches you only as a log message: watching an integer tensor, calling
`gradient` inside a persistent tape's block, retracing a function too often. The notebooks print
those messages as part of the lesson, so they need them as plain strings. `tf_log_messages()` is
the one-line way to get them: inside its block, the `tensorflow` logger hands each record to a list
and to nothing else (no handler, no propagation to the root logger), and on exit the logger is
exactly as it was, even if the block raised.

It covers TensorFlow's Python logger only; the C++ runtime's lines (written to file descriptor 2)
are `tapelab.quiet.StderrFd`'s business. TensorFlow's logger is the standard `logging` logger named
"tensorflow" (`tf.get_logger()` returns it), so this module does not import TensorFlow.

`own_tracing_counts()` keeps a block's `tf.function` calls out of TensorFlow's retracing warning ("N out of the
last M calls to <function> triggered tf.function retracing"). TensorFlow counts, per Python function's code
object, which of its last ten calls traced, across every `tf.function` made from that code (so every model's
`fit` shares Keras's step function's count), and warns at most twice per code object. A check that fits a few
models of its own would otherwise move the notebook's count: a later cell's `fit` would warn, or stay silent,
according to how many functions an earlier check traced.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import weakref
from collections.abc import Iterator

__all__ = ["own_tracing_counts", "tf_log_messages"]

# Where TensorFlow 2.21 keeps its retracing counts (`_frequent_tracing_detector_manager`, one detector per code object)
_TRACING_MODULE = "tensorflow.python.eager.polymorphic_function.polymorphic_function"

_TF_LOGGER = "tensorflow"


class _Collect(logging.Handler):
    """A handler that appends each record's formatted message to a list it was given."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__()
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def tf_log_messages() -> Iterator[list[str]]:
    """Collect the messages TensorFlow logs inside the block into the list this yields (nothing
    reaches stderr); TensorFlow's logger is restored on exit.

    >>> with tf_log_messages() as messages:
    ...     logging.getLogger("tensorflow").warning("watch out")
    >>> messages
    ['watch out']
    """
    logger = logging.getLogger(_TF_LOGGER)
    messages: list[str] = []
    saved = logger.handlers[:], logger.propagate
    logger.handlers, logger.propagate = [_Collect(messages)], False
    try:
        yield messages
    finally:
        logger.handlers, logger.propagate = saved


@contextlib.contextmanager
def own_tracing_counts() -> Iterator[None]:
    """Count the block's `tf.function` calls for TensorFlow's retracing warning from zero, and on exit give back the
    counts from before the block, as if it had called none (nested blocks each keep their own).

    A TensorFlow without the counts this knows (another version) leaves the block's calls counted as usual.
    """
    module = sys.modules.get(_TRACING_MODULE)  # not imported: nothing counted yet (if the block imports it, its counts stay)
    manager = getattr(module, "_frequent_tracing_detector_manager", None)
    if manager is None or not hasattr(manager, "_detectors"):
        yield
        return
    with manager._lock:
        saved, manager._detectors = manager._detectors, weakref.WeakKeyDictionary()
    try:
        yield
    finally:
        with manager._lock:
            manager._detectors = saved
