"""The files nbgrader's exchange keeps beside a stored submission: timestamp.txt and submission_secret.txt.

`nbgrader submit` writes both into submitted/<student>/<assignment>/; a submission tapelab stores there
from a folder or an LMS zip gets them here (`ensure_submission_files`), so the gradebook reads its
submission time from the first and `nbgrader release_feedback` names the handed-back page after the
second. Runs in the coordinator.
"""
from __future__ import annotations

import secrets
from datetime import datetime, timezone

from tapelab.grading.course import Course
from tapelab.grading.records import atomic_write_text

__all__ = ["SECRET_FILE", "TIMESTAMP_FILE", "ensure_submission_files", "nbgrader_timestamp"]

TIMESTAMP_FILE, SECRET_FILE = "timestamp.txt", "submission_secret.txt"


def nbgrader_timestamp(course: Course, when: datetime | None = None) -> str:
    """`when` (default: now; naive means UTC, as nbgrader reads it) in the course's Exchange.timestamp_format
    and Exchange.timezone, as `nbgrader submit` writes timestamp.txt."""
    from dateutil.tz import gettz
    from nbgrader.exchange import ExchangeFactory

    exchange = ExchangeFactory(config=course.config).exchange(config=course.config)  # the class nbgrader uses
    zone = gettz(exchange.timezone)
    if zone is None:
        raise ValueError(f"c.Exchange.timezone = {exchange.timezone!r} in {course.root / 'nbgrader_config.py'} is "
                         "not a time zone: use a name such as 'UTC' or 'Europe/Paris'")
    when = datetime.now(zone) if when is None else when
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(zone).strftime(
        exchange.timestamp_format)


def ensure_submission_files(course: Course, student: str, assignment: str, submitted_at: datetime | None) -> None:
    """Give submitted/<student>/<assignment>/ the timestamp.txt and submission_secret.txt that `nbgrader
    submit` writes: the gradebook's submission time comes from the first, and `nbgrader release_feedback`
    names the handed-back page after the second.

    A known `submitted_at` is the submission's time: it replaces a timestamp.txt that says another time
    (left by an older submission). Without one, an existing timestamp.txt is kept (nbgrader's own),
    else now is written. An existing secret is kept, so the feedback's name in the exchange stays.
    """
    from nbgrader.coursedir import CourseDirectory

    folder = course.root / "submitted" / student / assignment
    stamp = folder / TIMESTAMP_FILE
    try:
        existing = CourseDirectory(config=course.config).get_existing_timestamp(str(folder))
    except ValueError:  # empty or not a time: replaced
        existing = None
    wanted = None if submitted_at is None else _utc(submitted_at)
    if existing is None or (wanted is not None and wanted != existing):
        atomic_write_text(stamp, nbgrader_timestamp(course, submitted_at))
    if not (folder / SECRET_FILE).is_file():
        atomic_write_text(folder / SECRET_FILE, secrets.token_hex(64))


def _utc(when: datetime) -> datetime:
    """Naive UTC, as nbgrader's gradebook and `get_existing_timestamp` give times."""
    return when if when.tzinfo is None else when.astimezone(timezone.utc).replace(tzinfo=None)
