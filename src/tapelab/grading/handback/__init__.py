"""Stage 5, handback: what each student gets back, refreshed from the gradebook.

`page` renders a feedback page with nbgrader's exporter (hidden tests cut, the student's HTML made inert,
no script) from `templates/`; `refresh` regenerates every page whose grades, comments or notebook changed.
Runs in the coordinator, after grading; may import the shared modules and the earlier stages.
`configure_feedback` is what grader/nbgrader_config.py (and every course config) imports from here.
"""
from tapelab.lazy import face

__all__ = ["configure_feedback", "refresh_feedback", "write_feedback"]

__getattr__, __dir__ = face(__name__, {
    "configure_feedback": "page", "write_feedback": "page", "refresh_feedback": "refresh"})
