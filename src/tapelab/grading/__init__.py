"""Grading student submissions with nbgrader underneath: `tapelab grade` and `tapelab feedback`.

A submission flows through the stages, each a package: `intake` (find and choose submissions, store them
as nbgrader does), `prepare` (rebuild each on its release), `execution` (run it in a sandboxed kernel, in
a worker), `integrity` (the defences against gaming the checks, in that kernel), `grades` (into and out of
nbgrader's gradebook), then, from the gradebook, `handback` (each student's feedback page), `insight`
(the instructor's class report) and `exports` (Canvas, Gradescope, long CSV). `run` and `outcomes` are the
coordinator and its book, the only code that calls across stages; `outputs` is what is refreshed from the
gradebook together. Shared by every stage: `course`, `gradebook`, `records`, `statuses`, `hidden`,
`progress`; `report` writes report.json and the summary. docs/architecture.md draws it.
"""
from tapelab.lazy import face

__all__ = ["CourseError", "GradebookError", "InputError", "Options", "STATUSES", "grade"]

__getattr__, __dir__ = face(__name__, {
    "CourseError": "course", "GradebookError": "gradebook", "InputError": "intake.discover",
    "Options": "run", "STATUSES": "statuses", "grade": "run"})
