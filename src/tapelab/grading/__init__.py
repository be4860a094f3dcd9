"""Grading student submissions with nbgrader underneath: `tapelab grade` (see `grade`), `tapelab feedback`.

Modules, one concept each: inputs (find submissions), archive (safe zip), lms (LMS download names),
resubmissions (which of a student's files counts), roster (ids and names), course (the nbgrader
course and its exchange), gradebook (its URL, checks and first use), sanitize and rebuild
(pre-execution: a submission rebuilt on its release), hidden (visible and hidden parts of a test
cell), worker/executor/sandbox (execution of untrusted code), guard, kernel_guard and scan
(defences against gaming the checks), pools (local processes) and cluster (Dask workers, only with
--scheduler), finalize (gradebook writes), standings (every grade of the gradebook, grades.csv),
handback (inert feedback HTML) and refresh (feedback pages that follow the gradebook), derived (both
refreshed together), records (state, log), report (report.json, summary), progress, run and
outcomes (the coordinator).
"""
from tapelab.grading.course import CourseError
from tapelab.grading.gradebook import GradebookError
from tapelab.grading.inputs import InputError
from tapelab.grading.run import Options, grade
from tapelab.grading.statuses import STATUSES

__all__ = ["CourseError", "GradebookError", "InputError", "Options", "STATUSES", "grade"]
