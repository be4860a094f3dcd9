"""Grading student submissions with nbgrader underneath: `tapelab grade` (see `grade`).

Modules, one concept each: inputs (find submissions), archive (safe zip), course (the nbgrader
course), gradebook (its URL, checks and first use), sanitize and rebuild (pre-execution: a
submission rebuilt on its release), hidden (visible and hidden parts of a test cell),
worker/executor/sandbox (execution of untrusted code), guard, kernel_guard and scan (defences
against gaming the checks), pools (local processes) and cluster (Dask workers, only with
--scheduler), finalize (gradebook writes), handback (inert feedback HTML), records (state, log),
report (report.json, grades.csv, summary), progress, run (the coordinator).
"""
from tapelab.grading.course import CourseError
from tapelab.grading.gradebook import GradebookError
from tapelab.grading.inputs import InputError
from tapelab.grading.run import Options, grade
from tapelab.grading.statuses import STATUSES

__all__ = ["CourseError", "GradebookError", "InputError", "Options", "STATUSES", "grade"]
