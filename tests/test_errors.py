"""One error hierarchy: every error tapelab raises on purpose is a TapelabError, and its class says the exit status."""
import importlib
import inspect
import pkgutil

import pytest

import tapelab.grading
from tapelab.errors import InfraError, SubmissionError, TapelabError, UsageError

# The modules whose errors reach a command (the grading stack, lint, the release); none imports TensorFlow.
PACKAGES = ("tapelab.grading", "tapelab.lint")
EXTRA = ("tapelab.release", "tapelab.errors")
STANDALONE = {"tapelab.grading.integrity.in_kernel", "tapelab.grading.execution.zygote"}


def _modules():
    names = [m.name for p in PACKAGES for m in pkgutil.walk_packages(importlib.import_module(p).__path__, p + ".")]
    return [importlib.import_module(n) for n in (*EXTRA, *names) if n not in STANDALONE]


def _errors():
    return sorted({cls for module in _modules() for _, cls in inspect.getmembers(module, inspect.isclass)
                   if issubclass(cls, Exception) and cls.__module__.startswith("tapelab.")
                   and not cls.__name__.startswith("_")}, key=lambda c: c.__qualname__)


def test_every_public_error_is_in_the_hierarchy():
    """Is every public exception class of grading, lint and release exactly one of a usage, infrastructure
    or submission error?"""
    bases = {TapelabError, UsageError, InfraError, SubmissionError}
    errors = [cls for cls in _errors() if cls not in bases]
    assert len(errors) >= 19
    assert [cls for cls in errors if sum(issubclass(cls, k) for k in (UsageError, InfraError, SubmissionError)) != 1] == []


@pytest.mark.parametrize("cls, code", [(UsageError, 2), (tapelab.grading.CourseError, 2),
                                       (tapelab.grading.InputError, 2), (InfraError, 1)])
def test_the_class_gives_the_exit_status(cls, code):
    assert cls.exit_code == code


def test_a_key_error_says_its_message_as_written():
    """Does an error that is also a KeyError print its message without the quotes KeyError adds?"""
    from tapelab.lint.model import UnknownRule

    assert str(UnknownRule("unknown lint rule 'x'")) == "unknown lint rule 'x'"
    assert isinstance(UnknownRule("x"), KeyError)
