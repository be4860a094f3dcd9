"""tapelab.tf_log: TensorFlow's log messages as a list, nothing on stderr, the logger left as it was."""
import logging

import pytest

from tapelab.tf_log import tf_log_messages

TF_LOGGER = logging.getLogger("tensorflow")


class _Marker(logging.Handler):
    """A handler standing for whatever the logger had before the block (TensorFlow's own, a user's)."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def marker():
    """TensorFlow's logger with one known handler of its own, as a kernel has after `import tensorflow`."""
    saved = TF_LOGGER.handlers[:], TF_LOGGER.propagate
    handler = _Marker()
    TF_LOGGER.handlers, TF_LOGGER.propagate = [handler], True
    yield handler
    TF_LOGGER.handlers, TF_LOGGER.propagate = saved


def test_messages_logged_inside_the_block_are_collected_formatted(marker):
    """Does the yielded list hold each message, with its %-arguments filled in, in order?"""
    with tf_log_messages() as messages:
        TF_LOGGER.warning("The dtype of the watched tensor must be floating, got %s", "tf.int32")
        TF_LOGGER.error("second")
    assert messages == ["The dtype of the watched tensor must be floating, got tf.int32", "second"]


def test_nothing_logged_inside_reaches_the_previous_handlers_or_the_root(marker, caplog):
    """Does a message logged inside the block stay out of the logger's own handlers and the root logger's?"""
    with caplog.at_level(logging.WARNING), tf_log_messages():
        TF_LOGGER.warning("caught")
    assert marker.messages == [] and [r.getMessage() for r in caplog.records] == []


def test_the_logger_is_restored_after_the_block_even_when_it_raises(marker):
    """After an exception inside the block, are the handlers and propagation back, and later messages not collected?"""
    with pytest.raises(ValueError), tf_log_messages() as messages:
        raise ValueError("inside")
    TF_LOGGER.warning("after")
    assert TF_LOGGER.handlers == [marker] and TF_LOGGER.propagate is True
    assert marker.messages == ["after"] and messages == []


def test_nested_blocks_each_collect_their_own_messages(marker):
    """Does an inner block take the messages logged inside it, and the outer one get its own back afterwards?"""
    with tf_log_messages() as outer:
        TF_LOGGER.warning("one")
        with tf_log_messages() as inner:
            TF_LOGGER.warning("two")
        TF_LOGGER.warning("three")
    assert outer == ["one", "three"] and inner == ["two"]


def test_the_logger_is_the_one_tensorflow_logs_to():
    """Is `tf.get_logger()` the logger this module swaps, so TensorFlow's own messages are caught?"""
    import tensorflow as tf

    assert tf.get_logger() is TF_LOGGER
