"""Class insight: what the class got right, what it got wrong and why, from the gradebook and the
cause codes tapelab's checkers print.

Every score and every "correct" comes from nbgrader's gradebook (a test cell is correct when its
score is its max score). What was wrong comes from the autograded notebooks (`attempts`): the cause
code of the last feedback bundle of the test cell's visible part, or "not attempted" when the answer
is the released stub (or the checker said so). Student code can forge a bundle, so a cause is an
analytics count only, never a grade. Students are anonymised (`student 7`, in an order that follows
a hash of the id, not the alphabet) unless `names`; an example answer has its comments removed and
the student's id and names replaced.

Each assignment carries its late policy as the gradebook holds it (`lateness.lateness`): the deadline,
the late notebooks and the penalties stored on them. Anonymised, a late notebook shows no student
label: its extension would say whose it is, and the label would then name that student's examples.

Rows are ordered here, in Python, never by the database: SQLite orders text by its bytes and a
PostgreSQL server by its collation (`en_US` puts `ex1_1_test` before `ex1_10_test`, bytes the other
way round), so ORDER BY would make one gradebook two different reports.

`build` returns the insight as one dict (insight.json); `write` also writes insight-assignments.csv,
insight-exercises.csv, insight-causes.csv and the HTML report (`page`), comparing with the
insight.json it replaces.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import statistics
import time
import tokenize
from collections import Counter, defaultdict
from pathlib import Path

from tapelab.causes import CAUSES
from tapelab.grading.grades import attempts as attempts_
from tapelab.grading.grades import lateness
from tapelab.grading.records import LOG_FILE, atomic_write_text
from tapelab.grading.grades.cells import cell_grades, classify
from tapelab.grading.grades.standings import Standing, csv_value, distribution

__all__ = ["INSIGHT_DIR", "OUTCOMES", "build", "write", "example_code", "read_attempts_of"]

INSIGHT_DIR = "insight"
# What a student's test cell ended as, in the order the report shows them.
OUTCOMES = ("correct", "named", "unnamed", "hidden_only", "not_attempted")
_EXAMPLE_LINES = 40


def _labels(students: list[str], names: bool) -> dict[str, str]:
    """What the report calls each student, in the report's order: the id with `names`, else `student N`
    numbered in the order of a hash of the id (so neither the alphabet nor the roster shows through)."""
    if names:
        return {s: s for s in sorted(students)}
    ordered = sorted(students, key=lambda s: hashlib.sha256(s.encode("utf-8", "backslashreplace")).hexdigest())
    return {s: f"student {i}" for i, s in enumerate(ordered, 1)}


def example_code(source: str, identities: list[str]) -> str:
    """An answer fit to show the class: comments dropped, the student's id and names replaced, 40 lines at most."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
        text = tokenize.untokenize(tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        text = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
    lines = _scrub("\n".join(line.rstrip() for line in text.splitlines() if line.strip()), identities).splitlines()
    return "\n".join(lines[:_EXAMPLE_LINES] + (["..."] if len(lines) > _EXAMPLE_LINES else []))


def _grading_time(log: Path) -> dict[str, dict]:
    """Seconds spent executing each notebook, over every run the log records."""
    seconds: dict[str, list[float]] = defaultdict(list)
    try:
        lines = log.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        duration = record.get("duration") if isinstance(record, dict) else None
        if record.get("event") == "submission" and isinstance(duration, (int, float)) and isinstance(
                record.get("notebook"), str):
            seconds[record["notebook"]].append(float(duration))
    return {nb: {"executions": len(v), "total_seconds": round(sum(v), 2),
                 "median_seconds": round(statistics.median(v), 2)} for nb, v in seconds.items()}


def _share(count: int, whole: int) -> float | None:
    return round(count / whole, 4) if whole else None


def read_attempts_of(root: Path, rows: list[Standing]) -> dict[tuple, attempts_.Attempt]:
    cache: dict = {}
    return {(row.student, row.assignment, row.notebook, gid): attempt for row in rows if row.submitted
            for gid, attempt in attempts_.read_submission(root, row.student, row.assignment, row.notebook,
                                                          cache).items()}


def _exercise(cell: tuple, rows: list[Standing], grades: dict, seen: dict, labels: dict, people: dict) -> dict:
    assignment, notebook, gid, top = cell
    counts: Counter = Counter()
    causes: dict[str, list[str]] = defaultdict(list)
    submitted = [r for r in rows if r.assignment == assignment and r.notebook == notebook and r.submitted]
    for row in submitted:
        key = (row.student, assignment, notebook, gid)
        score, cell_top = grades.get(key, (0.0, float(top or 0.0)))
        outcome, cause = classify(score, cell_top, seen.get(key))
        counts[outcome] += 1
        if cause:
            causes[cause].append(row.student)
    whole = len(submitted)
    entry = {"assignment": assignment, "notebook": notebook, "exercise": attempts_.exercise_label(gid),
             "grade_id": gid, "max_score": float(top or 0.0), "submitted": whole,
             **{k: counts[k] for k in OUTCOMES}, **{f"share_{k}": _share(counts[k], whole) for k in OUTCOMES},
             "causes": []}
    for code, who in sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        first = min(who, key=list(labels).index)  # the first of them in the report's order
        attempt = seen[(first, assignment, notebook, gid)]
        entry["causes"].append({
            "cause": code, "title": CAUSES[code].title, "fix": CAUSES[code].fix, "students": len(who),
            "share": _share(len(who), whole),
            "example": {"student": labels[first], "answer": example_code(attempt.answer, people.get(first, [first])),
                        "message": _scrub(attempt.message, people.get(first, [first]))}})
    return entry


def _scrub(text: str, identities: list[str]) -> str:
    """`text` with each of the student's identities (id, first and last name; 3 characters or more) replaced."""
    for identity in sorted({i for i in identities if i and len(i) >= 3}, key=len, reverse=True):
        text = re.sub(re.escape(identity), "<student>", text, flags=re.IGNORECASE)
    return text


def _ranking(exercises: list[dict]) -> dict:
    """Exercises by the share of submitters not correct; causes by how many students, over all exercises."""
    ranked = sorted((e for e in exercises if e["submitted"]),
                    key=lambda e: (-(1 - e["share_correct"]), e["notebook"], e["grade_id"]))
    by_cause: dict[str, dict] = {}
    for e in exercises:
        for c in e["causes"]:
            slot = by_cause.setdefault(c["cause"], {"cause": c["cause"], "title": c["title"], "fix": c["fix"],
                                                    "students": 0, "exercises": []})
            slot["students"] += c["students"]
            slot["exercises"].append(e["exercise"])
    return {"exercises": [{"notebook": e["notebook"], "exercise": e["exercise"], "grade_id": e["grade_id"],
                           "share_not_correct": round(1 - e["share_correct"], 4), "submitted": e["submitted"]}
                          for e in ranked if e["share_correct"] < 1],
            "causes": sorted(by_cause.values(), key=lambda c: (-c["students"], c["cause"]))}


def _late(late: dict, assignment: str, notebook: str, rows: list[Standing], labels: dict, names: bool) -> dict:
    """One notebook's deadline (UTC, None without one) and its late submissions: hours late, extension,
    raw score, the penalty stored in the gradebook and the score after it; labelled only with `names`."""
    scores = {(r.student, r.assignment, r.notebook): r.score for r in rows}
    mine = [r for r in late["late"] if (r["assignment"], r["notebook"]) == (assignment, notebook)]
    shown = [{**({"student": labels[r["student"]]} if names else {}), "hours_late": r["hours_late"],
              "extension_hours": r["extension_hours"], "raw_score": r["raw_score"], "penalty": r["penalty"],
              "score": scores[(r["student"], assignment, notebook)]} for r in mine]
    shown.sort(key=lambda r: (-r["hours_late"], -r["penalty"], r.get("student", "")))
    return {"deadline": late["deadlines"].get(assignment), "late": len(shown),
            "penalised": sum(1 for r in shown if r["penalty"] > 0),
            "points_deducted": round(float(sum(r["penalty"] for r in shown)), 4), "submissions": shown}


def _change(previous: dict | None, exercises: list[dict]) -> dict:
    """What moved since the insight.json this one replaces: share correct and students per cause."""
    if not isinstance(previous, dict) or not isinstance(previous.get("exercises"), list):
        return {"previous": None, "exercises": [], "causes": []}
    before = {(e.get("notebook"), e.get("grade_id")): e for e in previous["exercises"] if isinstance(e, dict)}
    moved, causes = [], []
    for e in exercises:
        old = before.get((e["notebook"], e["grade_id"]), {})
        was, now = old.get("share_correct"), e["share_correct"]
        if was != now or old.get("submitted") != e["submitted"]:
            moved.append({"notebook": e["notebook"], "exercise": e["exercise"], "submitted_before": old.get("submitted"),
                          "submitted_now": e["submitted"], "share_correct_before": was, "share_correct_now": now})
        old_causes = {c.get("cause"): c.get("students", 0) for c in old.get("causes", []) if isinstance(c, dict)}
        new_causes = {c["cause"]: c["students"] for c in e["causes"]}
        for code in sorted(set(old_causes) | set(new_causes), key=str):
            if old_causes.get(code, 0) != new_causes.get(code, 0):
                causes.append({"notebook": e["notebook"], "exercise": e["exercise"], "cause": code,
                               "students_before": old_causes.get(code, 0), "students_now": new_causes.get(code, 0)})
    return {"previous": previous.get("generated"), "exercises": moved, "causes": causes}


def build(root: Path, db_url: str, rows: list[Standing], names: bool = False, previous: dict | None = None) -> dict:
    """The insight of a course folder: per assignment (late policy included), per exercise, the ranking and the
    change since `previous`."""
    from tapelab.release import course_config

    cells, grades = cell_grades(db_url)
    late = lateness.lateness(db_url, course_config(root))
    seen = read_attempts_of(root, rows)
    students = sorted({r.student for r in rows})
    labels = _labels(students, names)
    people = {r.student: [r.student, r.first_name or "", r.last_name or ""] for r in rows}
    timing = _grading_time(root / LOG_FILE)
    assignments = []
    for d in distribution(rows):
        mine = [r for r in rows if r.notebook == d["notebook"]]
        assignments.append({**d, "assignment": mine[0].assignment, "completion": _share(d["submitted"], d["students"]),
                            "statuses": dict(sorted(Counter(r.status for r in mine).items())),
                            "grading": timing.get(d["notebook"], {"executions": 0, "total_seconds": 0.0,
                                                                  "median_seconds": None}),
                            "late_policy": _late(late, mine[0].assignment, d["notebook"], rows, labels, names)})
    exercises = [_exercise(cell, rows, grades, seen, labels, people) for cell in cells]
    return {"generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "names": names, "students": len(students),
            "late_rule": late["rule"], "assignments": assignments, "exercises": exercises,
            "ranking": _ranking(exercises), "change": _change(previous, exercises)}


ASSIGNMENT_FIELDS = ("assignment", "notebook", "students", "submitted", "completion", "max_score", "mean", "median",
                     "min", "max", "deadline", "late", "penalised", "points_deducted", "executions", "grading_seconds")
EXERCISE_FIELDS = ("assignment", "notebook", "exercise", "grade_id", "max_score", "submitted", *OUTCOMES,
                   *(f"share_{k}" for k in OUTCOMES))
CAUSE_FIELDS = ("assignment", "notebook", "exercise", "cause", "title", "students", "share")


def _csv(fields: tuple, rows: list[dict]) -> str:

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_value(row.get(k)) for k in fields})
    return buffer.getvalue()


def write(root: Path, db_url: str, rows: list[Standing], out: Path | None = None, names: bool = False) -> dict[str, str]:
    """Write insight.json, insight-exercises.csv, insight-causes.csv and insight.html into `out`
    (default COURSE/insight/); returns what -> where."""
    from tapelab.grading.insight.page import render

    out = out or root / INSIGHT_DIR
    try:
        previous = json.loads((out / "insight.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        previous = None
    insight = build(root, db_url, rows, names=names, previous=previous)
    cause_rows = [{**e, **c} for e in insight["exercises"] for c in e["causes"]]
    assignment_rows = [{**a, **a["late_policy"], "executions": a["grading"]["executions"],
                        "grading_seconds": a["grading"]["total_seconds"]} for a in insight["assignments"]]
    files = {"insight.json": json.dumps(insight, indent=1),
             "insight-assignments.csv": _csv(ASSIGNMENT_FIELDS, assignment_rows),
             "insight-exercises.csv": _csv(EXERCISE_FIELDS, insight["exercises"]),
             "insight-causes.csv": _csv(CAUSE_FIELDS, cause_rows), "insight.html": render(insight)}
    for name, text in files.items():
        atomic_write_text(out / name, text)
    return {"insight": f"{out / 'insight.html'} (and insight.json, insight-assignments.csv, insight-exercises.csv, "
                       "insight-causes.csv)"}
