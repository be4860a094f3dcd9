"""Late policy on nbgrader's own mechanism: deadlines, extensions and penalties live in the gradebook.

- A deadline is the assignment's `duedate` in the gradebook, as `nbgrader db assignment add NAME
  --duedate=...` and formgrader's assignment page set it; `tapelab grade --due NOTEBOOK=ISO8601`
  writes it there (`set_due_dates`). A time without a zone is UTC, as nbgrader reads it.
- An extension is the submission's `extension` in the gradebook, from the roster's `extension_hours`
  columns (`set_extensions`), so nbgrader's `SubmittedAssignment.duedate` and `total_seconds_late`
  include it.
- A submission's time is nbgrader's timestamp.txt, written from the LMS download name when the name
  carries one (`intake.discover`, `intake.stored.ensure_submission_files`).
- The penalty is computed by `LatePenalty`, an nbgrader LateSubmissionPlugin that the course's
  nbgrader_config.py names (`release.LATENESS_CONFIG`), so stock `nbgrader autograde` and tapelab apply
  the same rule and store it in `late_submission_penalty`; `nbgrader export`, formgrader, grades.csv
  and every tapelab export read score = max(0, raw - penalty) from there.

`apply_penalties` recomputes every stored penalty with the course's configured plugin, because a
deadline, an extension or a manual score may have changed since a notebook was autograded.
"""
from __future__ import annotations

import math
import warnings
from datetime import datetime, timedelta, timezone

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float

from tapelab.errors import UsageError

__all__ = ["DueError", "LatePenalty", "apply_penalties", "lateness", "parse_due", "set_due_dates",
           "set_extensions", "settle"]

_DAY = 86400.0


class DueError(UsageError, ValueError):
    """A `--due` value that is not NOTEBOOK=ISO8601, or names no released notebook."""


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's `none` and `zero` methods, plus `per_day`: `percent_per_day` of the notebook's score
    for each started day after the deadline (extension included), past `grace_minutes`, at most all of it."""

    penalty_method = Enum(("none", "zero", "per_day"), default_value="per_day",
                          help="none: no penalty; zero: the whole score; per_day: percent_per_day of the score "
                               "per started day late").tag(config=True)
    percent_per_day = Float(10.0, help="per_day: the share of the score taken per started day late").tag(config=True)
    grace_minutes = Float(0.0, help="per_day: minutes after the deadline that cost nothing").tag(config=True)

    def days_late(self, total_seconds_late: float) -> int:
        """Started days late beyond the grace period (0 when within it)."""
        beyond = total_seconds_late - 60.0 * self.grace_minutes
        return math.ceil(beyond / _DAY) if beyond > 0 else 0

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        if self.penalty_method != "per_day":
            return super().late_submission_penalty(student_id, score, total_seconds_late)
        return score * min(1.0, self.days_late(total_seconds_late) * self.percent_per_day / 100.0)

    def describe(self) -> str:
        """The rule in one line, for the summary and the report."""
        if self.penalty_method == "none":
            return "no penalty (penalty_method none)"
        if self.penalty_method == "zero":
            return "a late notebook scores 0 (penalty_method zero)"
        grace = f", after {self.grace_minutes:g} minute(s) of grace" if self.grace_minutes else ""
        return f"{self.percent_per_day:g}% of the score per started day late{grace}, at most the whole score"


def parse_due(text: str) -> tuple[str, datetime]:
    """`09_fixture=2026-05-01T12:00:00Z` -> ("09_fixture", aware UTC time); a time without zone is UTC."""
    notebook, sep, when = text.partition("=")
    if not sep or not notebook.strip():
        raise DueError(f"--due {text!r}: write NOTEBOOK=DATE, e.g. --due 01_basic_tape=2026-10-01T23:59:00+02:00")
    try:
        due = datetime.fromisoformat(when.strip())
    except ValueError:
        raise DueError(f"--due {text!r}: {when!r} is not an ISO 8601 date and time "
                       "(e.g. 2026-10-01T23:59:00+02:00; without a zone it is UTC)") from None
    return notebook.strip(), (due if due.tzinfo else due.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _naive(when: datetime) -> datetime:
    return when.astimezone(timezone.utc).replace(tzinfo=None)  # how nbgrader stores times


def set_due_dates(db_url: str, known: dict[str, str], dues: dict[str, datetime]) -> None:
    """Write each notebook's deadline as its assignment's duedate in the gradebook; DueError for a
    notebook not released (`known`: notebook -> assignment)."""
    from nbgrader.api import Gradebook

    unknown = sorted(set(dues) - set(known))
    if unknown:
        raise DueError(f"--due {', '.join(unknown)}: not a released notebook of this course (released: "
                       f"{', '.join(sorted(known))})")
    if not dues:
        return
    with Gradebook(db_url) as gb:
        for notebook, due in dues.items():
            gb.find_assignment(known[notebook]).duedate = _naive(due)
        gb.db.commit()


def set_extensions(db_url: str, extensions: dict[str, dict[str, float]]) -> None:
    """Store each student's extension (hours; key "" for every assignment, else an assignment's name)
    on their submissions in the gradebook; a student without one keeps what formgrader or nbgrader set."""
    from nbgrader.api import Gradebook, Student, SubmittedAssignment

    if not extensions:
        return
    with Gradebook(db_url) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sub in gb.db.query(SubmittedAssignment).join(SubmittedAssignment.student).filter(
                Student.id.in_(list(extensions))):
            hours = extensions[sub.student.id]
            given = hours.get(sub.assignment.name, hours.get(""))
            if given is not None:
                sub.extension = timedelta(hours=given)
        gb.db.commit()


def _preprocessor(config):
    """nbgrader's AssignLatePenalties with the course's configuration, its plugin loaded."""
    from nbgrader.preprocessors import AssignLatePenalties

    assign = AssignLatePenalties(config=config)
    assign.init_plugin()
    return assign


def apply_penalties(db_url: str, config) -> int:
    """Recompute every submitted notebook's late penalty as `nbgrader autograde` would now (the course's
    plugin, nbgrader's bounds 0..score), in one session; return how many penalties changed."""
    from nbgrader.api import Gradebook, SubmittedNotebook

    assign = _preprocessor(config)
    changed = 0
    with Gradebook(db_url) as gb:
        for nb in gb.db.query(SubmittedNotebook):
            late = nb.assignment.total_seconds_late
            penalty = None
            if late > 0:
                penalty = assign.plugin_inst.late_submission_penalty(nb.assignment.student.id, nb.score, late)
                penalty = None if penalty is None else assign._check_late_penalty(nb, penalty)
            if penalty != nb.late_submission_penalty:
                nb.late_submission_penalty, changed = penalty, changed + 1
        gb.db.commit()
    return changed


def lateness(db_url: str, config) -> dict:
    """For the report: the rule, every assignment's deadline, and each late submitted notebook with its
    deadline (extension included), lateness and penalty, as the gradebook holds them."""
    from nbgrader.api import Assignment, Gradebook, SubmittedNotebook

    plugin = _preprocessor(config).plugin_inst
    if isinstance(plugin, LatePenalty):
        rule = plugin.describe()
    else:  # a course folder set up before release.LATENESS_CONFIG, or the instructor's own plugin
        method = getattr(plugin, "penalty_method", None)
        rule = f"{type(plugin).__name__}" + (f" (penalty_method {method})" if method else "")
    with Gradebook(db_url) as gb:
        deadlines = dict(sorted((a.name, a.duedate.isoformat(sep=" ") if a.duedate else None)
                                for a in gb.db.query(Assignment)))  # ordered here: collations differ
        late = []
        for nb in gb.db.query(SubmittedNotebook):
            sub = nb.assignment
            if sub.total_seconds_late <= 0:
                continue
            late.append({"student": sub.student.id, "assignment": sub.assignment.name, "notebook": nb.name,
                         "submitted": sub.timestamp.isoformat(sep=" "), "due": sub.duedate.isoformat(sep=" "),
                         "extension_hours": round(sub.extension.total_seconds() / 3600, 2) if sub.extension else 0,
                         "hours_late": round(sub.total_seconds_late / 3600, 2),
                         "raw_score": float(nb.score), "penalty": float(nb.late_submission_penalty or 0.0)})
    late.sort(key=lambda row: (row["assignment"], row["notebook"], row["student"]))
    return {"rule": rule, "deadlines": deadlines, "late": late}


def settle(db_url: str, config, extensions: dict[str, dict[str, float]]) -> dict:
    """At the end of a run, before grades.csv and the feedback are derived: store the roster's extensions,
    recompute every penalty, and return `lateness` for the report."""
    set_extensions(db_url, extensions)
    apply_penalties(db_url, config)
    return lateness(db_url, config)
