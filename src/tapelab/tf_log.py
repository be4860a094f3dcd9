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
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = ["tf_log_messages"]

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
