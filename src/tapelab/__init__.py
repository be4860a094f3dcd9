"""tapelab: an interactive course on tf.GradientTape.

The package holds what both sides of the course import: the exercise framework and checkers
(`tapelab.checker`, `tapelab.exercises`), gradient widgets (`tapelab.widgets`), the practitioner tools
(`tapelab.diagnose`, `tapelab.guarded`, `tapelab.lint`) and the instructor tools (`tapelab.cli`,
`tapelab.release`, `tapelab.grading`); docs/architecture.md draws the layers. Importing `tapelab`
imports none of them (and no TensorFlow): the names below load their module on first use.
"""
from tapelab.lazy import face

__all__ = ["Exercise", "Incorrect", "NotAttempted", "mismatch", "numeric_gradient"]
__version__ = "0.1.0"

__getattr__, __dir__ = face(__name__, {"Exercise": "checker.exercise", "Incorrect": "checker.messages",
                                       "NotAttempted": "checker.messages", "mismatch": "checker.compare",
                                       "numeric_gradient": "checker.oracle"})
