"""Grading student submissions with nbgrader underneath: `tapelab grade` (see `grade`).

Modules, one concept each: inputs (find submissions), archive (safe zip), course (the nbgrader
course), sanitize (pre-execution, gradebook reads), worker/executor/sandbox/guard (execution of
untrusted code), finalize (gradebook writes), handback (feedback HTML), records (state, log),
report (report.json, grades.csv, summary), progress, run (the coordinator).
"""
from tapelab.grading.course import CourseError
from tapelab.grading.inputs import InputError
from tapelab.grading.run import Options, grade
from tapelab.grading.statuses import STATUSES

__all__ = ["CourseError", "InputError", "Options", "STATUSES", "grade"]
