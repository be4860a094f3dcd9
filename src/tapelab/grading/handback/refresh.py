"""Feedback that follows the gradebook: every page regenerated when what it shows has changed.

`refresh_feedback` walks the gradebook's submissions (every student and assignment ever graded)
and renders feedback/<student>/<assignment>/<notebook>.html with `page.write_feedback`, so a
manual score, extra credit or comment given in formgrader reaches the page. A page is skipped
when its inputs are those it was last rendered from: a digest of the autograded notebook's bytes,
every grade and comment of the submission in the gradebook, the late penalty and the renderer
(template, handback code, nbgrader and nbconvert versions), kept in feedback-state.json in the
course folder. That file is only a cache: when it is unreadable every page is rendered again.

Beside each page go the two files `nbgrader release_feedback` reads from feedback/: timestamp.txt
and submission_secret.txt, copied from submitted/ (`intake.stored` writes them there). The secret
must not reach students, so the folder to upload to an LMS is handback/: the same pages, alone, at
handback/<student>/<assignment>/<notebook>.html (copied when written, or when the copy is missing).
"""
from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import jsonschema

from tapelab.grading import hidden
from tapelab.grading.handback import page as handback
from tapelab.grading.course import Course
from tapelab.grading.records import State, WriteFailed, atomic_write_text, schema_check
from tapelab.grading.grades.standings import submission_rows
from tapelab.grading.intake.stored import SECRET_FILE, TIMESTAMP_FILE, nbgrader_timestamp

__all__ = ["FEEDBACK_STATE", "HANDBACK", "Failure", "Refreshed", "refresh_feedback"]

FEEDBACK_STATE = "feedback-state.json"
HANDBACK = "handback"  # the pages alone, to upload to an LMS (feedback/ also holds nbgrader's secrets)
_SCHEMA = {"type": "object", "required": ["version", "pages"],
           "properties": {"version": {"const": 1},
                          "pages": {"type": "object", "additionalProperties": {"type": "string"}}}}
_check_state = schema_check(_SCHEMA)
_RENDERER_FILES = (handback.PAGE, Path(handback.__file__), Path(hidden.__file__))


class Failure(NamedTuple):
    """A page that could not be rendered, and why (with what to do)."""

    student: str
    assignment: str
    notebook: str
    reason: str


@dataclass
class Refreshed:
    """What `refresh_feedback` did: keys are student/assignment/notebook."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)  # the pages written
    notes: list[str] = field(default_factory=list)  # for the instructor


class _Page(NamedTuple):
    student: str
    assignment: str
    notebook: str
    facts: str  # what the gradebook says about the submitted notebook, as canonical JSON
    timestamp: datetime | None


def _submission_file(course: Course, page: _Page, name: str) -> str:
    """The text of `name` for the feedback folder: autograded/'s copy, else submitted/'s. A course graded
    before these files existed gets a secret in submitted/ (kept for later refreshes) and, for the
    timestamp, the gradebook's submission time (release_feedback only logs it)."""
    for kind in ("autograded", "submitted"):
        path = course.root / kind / page.student / page.assignment / name
        if path.is_file():
            return path.read_text()
    if name == TIMESTAMP_FILE:
        return nbgrader_timestamp(course, page.timestamp)
    text = secrets.token_hex(64)
    atomic_write_text(course.root / "submitted" / page.student / page.assignment / name, text)
    return text


def _copy_for_upload(course: Course, page: _Page, target: Path, written: bool) -> None:
    """The page at handback/<student>/<assignment>/<notebook>.html, beside no other file."""
    upload = course.path(HANDBACK, page.student, page.assignment, page.notebook, ext=".html")
    if written or not upload.is_file():
        atomic_write_text(upload, target.read_text(encoding="utf-8"))


def _hand_in_files(course: Course, page: _Page) -> None:
    """timestamp.txt and submission_secret.txt beside the page, where `nbgrader release_feedback` reads them."""
    folder = course.root / "feedback" / page.student / page.assignment
    for name in (TIMESTAMP_FILE, SECRET_FILE):
        text = _submission_file(course, page, name)
        target = folder / name
        if not target.is_file() or target.read_text() != text:
            atomic_write_text(target, text)


# -- digests ---------------------------------------------------------------------------------------


def _pages(course: Course, only: Collection[str] | None = None) -> list[_Page]:
    """Every submitted notebook in the gradebook (of the keys `only`, when given), with every grade and
    comment it holds (three queries, whatever the size of the class)."""
    from nbgrader.api import (Assignment, BaseCell, Comment, Grade, Gradebook, Notebook, Student, SubmittedAssignment,
                              SubmittedNotebook)
    from sqlalchemy import and_, false, or_

    where = None
    if only is not None:  # a key is student/assignment/notebook; a student id never holds `/`
        where = or_(false(), *(and_(Student.id == student, Assignment.name == assignment, Notebook.name == notebook)
                               for student, assignment, notebook in (key.rsplit("/", 2) for key in only)))
    with Gradebook(course.db_url) as gb:
        notebooks = submission_rows(gb, SubmittedNotebook.late_submission_penalty, SubmittedAssignment.timestamp,
                                    start=SubmittedNotebook, where=where)
        grades = submission_rows(gb, BaseCell.name, Grade.auto_score, Grade.manual_score, Grade.extra_credit,
                                 Grade.needs_manual_grade, Grade.max_score, start=Grade, via=(Grade.notebook, Grade.cell),
                                 where=where)
        comments = submission_rows(gb, BaseCell.name, Comment.auto_comment, Comment.manual_comment, start=Comment,
                                   via=(Comment.notebook, Comment.cell), where=where)
    facts: dict[tuple, dict] = {tuple(key): {"grades": [], "comments": [], "late_penalty": penalty}
                                for *key, penalty, _ in notebooks}
    for *key, cell, auto, manual, extra, needs, most in grades:
        facts[tuple(key)]["grades"].append([cell, auto, manual, extra, bool(needs), most])
    for *key, cell, auto, manual in comments:
        facts[tuple(key)]["comments"].append([cell, auto, manual])
    pages = []
    for *key, _, when in notebooks:
        known = facts[tuple(key)]
        known["grades"].sort()  # cell names are unique in a notebook: no None is ever compared
        known["comments"].sort()
        pages.append(_Page(*key, json.dumps(known, sort_keys=True, default=str), when))
    return sorted(pages)


def _renderer() -> str:
    """Digest of what turns a notebook and its grades into a page."""
    import nbconvert
    import nbgrader

    digest = hashlib.sha256(f"{nbgrader.__version__}\0{nbconvert.__version__}".encode())
    for path in _RENDERER_FILES:
        digest.update(b"\0" + path.read_bytes())
    return digest.hexdigest()


def _digest(renderer: str, notebook: bytes, page: _Page) -> str:
    return hashlib.sha256(f"{renderer}\0{hashlib.sha256(notebook).hexdigest()}\0{page.facts}".encode()).hexdigest()


def _load_state(path: Path) -> tuple[dict[str, str], str | None]:
    """The stored digests, and a note when the file exists but cannot be used."""
    try:
        data = json.loads(path.read_bytes())
        _check_state(data)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, RecursionError, jsonschema.ValidationError) as error:
        why = error.message if isinstance(error, jsonschema.ValidationError) else str(error)
        return {}, (f"{path} could not be read ({type(error).__name__}: {why[:200]}): every feedback page was "
                    "regenerated from the gradebook and the file rewritten; nothing else to do")
    return data["pages"], None


# -- the refresh -----------------------------------------------------------------------------------


def refresh_feedback(course: Course, force: bool = False, only: Collection[str] | None = None) -> Refreshed:
    """Regenerate the feedback page of every submitted notebook whose inputs changed (all with `force`);
    with `only`, of those keys (student/assignment/notebook) alone: `tapelab grade` renders each page as
    its notebook is graded, while kernels run, and the refresh at its end finds them unchanged."""
    done = Refreshed()
    state_path = course.root / FEEDBACK_STATE
    stored, note = _load_state(state_path)
    if note:
        done.notes.append(note)
    renderer, digests = _renderer(), ({} if only is None else dict(stored))
    for page in _pages(course, only):
        key = State.key(page.student, page.assignment, page.notebook)
        source = course.path("autograded", page.student, page.assignment, page.notebook)
        target = course.path("feedback", page.student, page.assignment, page.notebook, ext=".html")
        try:
            raw = source.read_bytes()
        except FileNotFoundError:
            if target.exists():  # graded once, then its notebook went away: the page may be stale
                done.failed.append(Failure(*page[:3], f"{source} is missing, so {target} (kept) may show old "
                                           "scores: regrade the submission with `tapelab grade --force`"))
            continue  # never autograded: no page to make
        except OSError as error:
            done.failed.append(Failure(*page[:3], f"{source} cannot be read ({error.strerror}): make it readable "
                                       "and run `tapelab feedback` again"))
            continue
        digest = _digest(renderer, raw, page)
        fresh = force or stored.get(key) != digest or not target.is_file()
        if not fresh:
            done.unchanged.append(key)
        else:
            try:
                done.paths.append(handback.write_feedback(course, *page[:3]))
            except WriteFailed:  # a full disk: no other page can be written either
                raise
            except Exception as error:  # a notebook nbformat or the template cannot take: that page only
                done.failed.append(Failure(*page[:3], f"{target} was not rendered from {source} "
                                           f"({type(error).__name__}: {str(error)[:300]}): regrade the submission "
                                           "with `tapelab grade --force`, then run `tapelab feedback`"))
                continue
            done.written.append(key)
        digests[key] = digest
        try:
            _copy_for_upload(course, page, target, written=fresh)
        except (OSError, ValueError) as error:
            done.notes.append(f"{course.root / HANDBACK} lacks the page {target.name} of {page.student} ({error}): "
                              "fix the cause and run `tapelab feedback` again before uploading that folder")
        try:
            _hand_in_files(course, page)
        except (OSError, ValueError) as error:
            done.notes.append(f"{target.parent} lacks its timestamp.txt or submission_secret.txt ({error}), so "
                              f"`nbgrader release_feedback {page.assignment}` fails there: fix the cause and run "
                              "`tapelab feedback` again")
    if digests != stored or note:
        try:
            atomic_write_text(state_path, json.dumps({"version": 1, "pages": digests}, indent=1, sort_keys=True))
        except WriteFailed as error:
            done.notes.append(f"{error}: the feedback pages are up to date, but the next refresh renders them all "
                              "again")
    return done
