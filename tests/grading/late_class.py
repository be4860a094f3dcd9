"""The insight class (insight_class) with a late policy in its gradebook, still without a kernel run.

01_basic_tape gets a deadline, its submissions times around it and one student an extension; the
course's own plugin (release.LATENESS_CONFIG: 10% of the score per started day late) then stores
the penalties, as `tapelab grade` does at the end of a run. 09_fixture keeps no deadline.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from grade_fixtures import BASIC, TINY
from insight_class import build_class
from tapelab.grading.grades import lateness
from tapelab.release import course_config

DUE = datetime(2026, 9, 30, 12, 0, tzinfo=timezone.utc)  # 01_basic_tape's deadline
# When each 01_basic_tape notebook was handed in (UTC), and who has an extension.
SUBMITTED = {"ana": datetime(2026, 9, 30, 11, 0),  # on time
             "ben": datetime(2026, 10, 1, 12, 0),  # 24 h late: one started day
             "cai": datetime(2026, 10, 1, 18, 0),  # 30 h late: two started days, on a raw score of 0
             "dee": datetime(2026, 10, 1, 12, 0)}  # 24 h after the deadline, inside a 48 h extension
EXTENSION_HOURS = {"dee": 48.0}
LATE = {"ben": 24.0, "cai": 30.0}  # hours late, extensions counted


def db_url(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def build_late_class(root: Path) -> Path:
    """The insight class in `root`, its 01_basic_tape deadline, times, extension and penalties in the gradebook."""
    from nbgrader.api import Gradebook

    course = build_class(root)
    url = db_url(course)
    with Gradebook(url) as gb:
        for student, when in SUBMITTED.items():
            gb.find_submission(BASIC, student).timestamp = when
        gb.db.commit()
    lateness.set_due_dates(url, {BASIC: BASIC, TINY: TINY}, {BASIC: DUE})
    lateness.set_extensions(url, {student: {"": hours} for student, hours in EXTENSION_HOURS.items()})
    lateness.apply_penalties(url, course_config(course))
    return course
