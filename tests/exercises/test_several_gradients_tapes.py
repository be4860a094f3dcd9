"""Exercise 4.1 of 04_persistent_tapes asks for one gradient per example from one forward pass. The check must
accept every way of getting them from one recording: the slices taken inside the block, or one `jacobian` call
(a 1-D tensor of the gradients), and the text must ask for one forward pass."""
import re

import nbformat

from mutation.inprocess import exercises, grade
from tapelab.paths import SOLUTIONS

NOTEBOOK = "04_persistent_tapes"
EXERCISE = next(e for e in exercises(NOTEBOOK) if e.answer_id == "ex4_1_answer")
SLICED_INSIDE = '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape(persistent=True) as tape:
        losses = (w * xs - ts) ** 2
        each = [losses[i] for i in range(xs.shape[0])]
    grads = [tape.gradient(loss, w) for loss in each]
    del tape
    return grads
'''
JACOBIAN = '''
def per_example_gradients(w, xs, ts):
    with tf.GradientTape() as tape:
        losses = (w * xs - ts) ** 2
    return tape.jacobian(losses, w)
'''


def _task_text() -> str:
    cells = nbformat.read(SOLUTIONS / f"{NOTEBOOK}.ipynb", as_version=4).cells
    at = next(i for i, c in enumerate(cells) if c.get("id") == "ex4_1_answer")
    return re.sub(r"\s+", " ", cells[at - 1].source.replace("**", ""))


def test_task_text_asks_one_forward_pass_and_a_gradient_per_example():
    """Does the task of 4.1 ask for one forward pass and each example's gradient?"""
    text = _task_text()
    assert "one forward pass" in text and "each example's gradient" in text


def test_slices_taken_inside_the_block_pass():
    """Are per-example losses sliced inside the block accepted, like `tf.unstack`?"""
    verdict = grade(EXERCISE, SLICED_INSIDE, "sliced inside")
    assert verdict.outcome == "passed", verdict


def test_one_jacobian_call_passes():
    """Is one `jacobian` call, which returns the gradients as one 1-D tensor, accepted?"""
    verdict = grade(EXERCISE, JACOBIAN, "jacobian")
    assert verdict.outcome == "passed", verdict
