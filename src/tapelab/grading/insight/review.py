"""Review by exercise: every student's answer to one exercise, grouped by what went wrong, so an
instructor can read or comment on one exercise across the class (manual scores still go through
formgrader, into nbgrader's gradebook).

Groups follow `grades.cells.classify`: each named cause (largest first), then wrong with no cause named,
wrong on hidden inputs only, not attempted, and correct last. The text is for a terminal: every
character a student wrote that a terminal would interpret (escape sequences, control characters) is
shown as `?`.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.causes import CAUSES
from tapelab.grading.grades import attempts as attempts_
from tapelab.grading.grades.cells import cell_grades, classify
from tapelab.outside import printable
from tapelab.grading.grades.standings import Standing

__all__ = ["ReviewError", "find_exercise", "review"]

_HEADINGS = {"unnamed": "wrong, no cause named", "hidden_only": "wrong on the hidden inputs only",
             "not_attempted": "not attempted", "correct": "correct"}


class ReviewError(UsageError, ValueError):
    """The exercise asked for is not in the gradebook; the message lists the ones that are."""


def find_exercise(cells: list[tuple], exercise: str) -> tuple:
    """The released grade cell named by `exercise`: its number (`1.2`) or its grade id (`ex1_2_test`)."""
    found = [c for c in cells if exercise in (c[2], attempts_.exercise_label(c[2]))]
    if len(found) != 1:
        known = ", ".join(attempts_.exercise_label(c[2]) for c in cells)
        raise ReviewError(f"no single exercise {exercise!r} in the gradebook; pass one of: {known}")
    return found[0]


def review(root: Path, db_url: str, rows: list[Standing], exercise: str) -> str:
    """The review of one exercise as text: a heading per group, then each student's score and answer."""
    cells, grades = cell_grades(db_url)
    assignment, notebook, gid, top = find_exercise(cells, exercise)
    cache: dict = {}
    groups: dict[str, list[tuple[Standing, float, str]]] = defaultdict(list)
    for row in rows:
        if not (row.submitted and row.assignment == assignment and row.notebook == notebook):
            continue
        attempt = attempts_.read_submission(root, row.student, assignment, notebook, cache).get(gid)
        score, _ = grades.get((row.student, assignment, notebook, gid), (0.0, float(top or 0.0)))
        outcome, cause = classify(score, float(top or 0.0), attempt)
        groups[cause or outcome].append((row, score, attempt.answer if attempt else "(no autograded notebook)"))
    order = sorted((k for k in groups if k in CAUSES), key=lambda k: (-len(groups[k]), k))
    order += [k for k in _HEADINGS if k in groups]
    label = attempts_.exercise_label(gid)
    lines = [f"{notebook} exercise {label} ({gid}, {float(top or 0):g} point(s)): "
             f"{sum(len(v) for v in groups.values())} submission(s)"]
    for key in order:
        title = f"{key}: {CAUSES[key].title}" if key in CAUSES else _HEADINGS[key]
        lines += ["", f"== {title} ({len(groups[key])} student(s))"]
        if key in CAUSES:
            lines.append(f"   fix: {CAUSES[key].fix}")
        for row, score, answer in sorted(groups[key], key=lambda item: item[0].student):
            name = " ".join(p for p in (row.first_name, row.last_name) if p)
            lines.append(f"-- {printable(row.student)}{f' ({printable(name)})' if name else ''}: "
                         f"{score:g} of {float(top or 0):g}")
            lines += [f"   {printable(line)}" for line in answer.rstrip().splitlines()]
    lines += ["", "Give manual scores and comments in formgrader (section 4 of the instructor guide), then run "
              "`tapelab feedback` so feedback, grades.csv and the insight follow."]
    return "\n".join(lines)
