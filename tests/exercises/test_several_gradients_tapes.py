"""Exercise 4.1 of 04_persistent_tapes says which answers it accepts: one persistent tape, or two ordinary tapes
opened in the same `with` statement. The check must accept both, and the text must say so."""
import re

import nbformat

from mutation.inprocess import exercises, grade
from tapelab.paths import SOLUTIONS

NOTEBOOK = "04_persistent_tapes"
EXERCISE = next(e for e in exercises(NOTEBOOK) if e.answer_id == "ex4_1_answer")
TWO_TAPES = '''
def several_gradients(x):
    with tf.GradientTape() as tape_y, tf.GradientTape() as tape_z:
        tape_y.watch(x)
        tape_z.watch(x)
        y = x**3
        z = tf.sin(y)
    return [tape_y.gradient(y, x), tape_z.gradient(z, x)]
'''


def _task_text() -> str:
    cells = nbformat.read(SOLUTIONS / f"{NOTEBOOK}.ipynb", as_version=4).cells
    at = next(i for i, c in enumerate(cells) if c.get("id") == "ex4_1_answer")
    return re.sub(r"\s+", " ", cells[at - 1].source.replace("**", ""))


def test_task_text_names_both_accepted_answers():
    """Does the task of 4.1 say that two ordinary tapes are accepted besides one persistent tape?"""
    text = _task_text()
    assert "one persistent tape" in text and "two ordinary tapes" in text


def test_two_ordinary_tapes_pass():
    """Are two ordinary tapes opened in the same `with` statement accepted, as the text says?"""
    verdict = grade(EXERCISE, TWO_TAPES, "two ordinary tapes")
    assert verdict.outcome == "passed", verdict
