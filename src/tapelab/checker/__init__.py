"""The feedback engine every exercise checker is built on; it runs in the student's kernel.

`exercise` (an `Exercise` runs a check and shows its feedback), `messages` (the feedback bundle the
notebook displays and the grader reads), `compare` and `oracle` (values against the reference, numeric
gradients), `wrong_answers` (which known wrong answer a value matches), `explanations` (what a None
gradient means), `error_causes` (what an error means), `code_facts` and `lint_facts` (what the student's
source shows), `answers` (`solution()` and the last hints, locked or not). It may import `causes`, `tf_log`,
`quiet` and `lint`; never `grading`, `cli`, `release` or `widgets` (tests/test_layers.py). The names below
load on first use.
"""
from tapelab.lazy import face

__all__ = ["Alternative", "Call", "Exercise", "Feedback", "Incorrect", "Message", "NotAttempted", "because",
           "mismatch", "numeric_gradient", "wrong_value"]

__getattr__, __dir__ = face(__name__, {
    "Exercise": "exercise", "Call": "exercise",
    "Feedback": "messages", "Incorrect": "messages", "Message": "messages", "NotAttempted": "messages",
    "mismatch": "compare", "numeric_gradient": "oracle",
    "Alternative": "wrong_answers", "because": "wrong_answers", "wrong_value": "wrong_answers"})
