"""Stage 4, grades: into and out of nbgrader's gradebook, the one source of every score.

`autograde` records a worker's executed notebook as nbgrader's autograde does, `lateness` sets deadlines
and prices late days with nbgrader's plugin, `standings` reads every student x notebook back (grades.csv),
`cells` every graded test cell and its outcome, `attempts` what the autograded notebook shows of each
attempt. Runs in the coordinator; may import the shared modules, `intake` and `checker.messages`.
"""
from tapelab.lazy import face

__all__ = ["DueError", "LatePenalty", "Standing", "apply_penalties", "cell_grades", "classify", "parse_due",
           "record_submission", "save_grades"]

__getattr__, __dir__ = face(__name__, {
    "record_submission": "autograde", "save_grades": "autograde", "apply_penalties": "lateness",
    "parse_due": "lateness", "DueError": "lateness", "LatePenalty": "lateness", "Standing": "standings",
    "cell_grades": "cells", "classify": "cells"})
