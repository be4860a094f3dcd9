"""The checkers of each notebook, one module per notebook; each binds its exercises to short names such as `ex1_2`.

Runs in the student's kernel (and in the grader's sandboxed kernels, which run the same notebooks). Built on
`tapelab.checker`; may also import `diagnose`, `lint`, `quiet` and `causes`, never `grading` or `cli`.
A notebook's setup cell imports its module directly (`from tapelab.exercises.basic_tape import ...`).
"""
__all__ = ["basic_tape", "debugging_none", "fit_vs_custom", "model_variables", "persistent_tapes",
           "watching_tensors"]
