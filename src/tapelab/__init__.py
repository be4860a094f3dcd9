"""tapelab: an interactive course on tf.GradientTape.

The package holds what both sides of the course import: the exercise framework and checkers
(`tapelab.exercises`), gradient widgets (`tapelab.widgets`) and the instructor tools.
Importing `tapelab` itself does not import TensorFlow.
"""
from tapelab.compare import mismatch
from tapelab.exercise import Exercise
from tapelab.feedback import Incorrect, NotAttempted
from tapelab.oracle import numeric_gradient

__all__ = ["Exercise", "Incorrect", "NotAttempted", "mismatch", "numeric_gradient"]
__version__ = "0.1.0"
