"""The coordinator's book of outcomes: an entry for every input, the resume state, the log, the end.

Mixed into `run.Coordinator`, which owns execution. Here: what becomes of inputs that are not
executed (judged at discovery, older than what is graded, missing), how each outcome is recorded
(state, history, log, progress), and the end of a run, where every score is read back from the
gradebook (`outputs.refresh`), so report.json, grades.csv and the feedback agree with it.
"""
from __future__ import annotations

import functools
import time

from tapelab.grading import report as reports
from tapelab.grading import outputs as refreshed
from tapelab.grading.grades import autograde
from tapelab.grading.grades import lateness
from tapelab.grading.gradebook import redact
from tapelab.grading.intake.discover import Candidate, is_older, student_problem
from tapelab.grading.records import LOG_FILE, STATE_FILE, State, WriteFailed
from tapelab.grading.statuses import GRADED_STATUSES

__all__ = ["Outcomes", "entry_of", "what"]

REPORT_FILE = "report.json"
# A file the student sent that could not be graded: a 0 with the reason in the gradebook, unless it
# already holds a submission of that notebook (never replaced by a file that was not graded).
_UNGRADABLE = frozenset({"invalid_notebook", "too_large", "unreadable", "unsafe_path"})


def what(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"


def entry_of(cand: Candidate, status: str, reason: str = "", flags=(), score=None, max_score=None, **extra) -> dict:
    when = cand.submitted_at.isoformat() if cand.submitted_at else None
    return {"student": cand.student, "assignment": cand.assignment, "notebook": cand.notebook, "status": status,
            "score": score, "max_score": max_score, "reason": reason, "flags": list(flags),
            "source": cand.source, "submitted_at": when, **extra}


class Outcomes:
    """Recording and closing for `run.Coordinator` (which sets every attribute used here)."""

    @functools.cached_property
    def maxima(self) -> dict[str, float]:
        """Max score per notebook, from the gradebook (empty, with a warning, when it cannot be read)."""
        try:
            return autograde.max_scores(self.course)
        except Exception as error:
            self._warn(f"the max scores could not be read from the gradebook {redact(self.course.db_url)} "
                       f"({what(error)}): missing notebooks are listed without one; rerun to fill them in")
            return {}

    def _rejected(self, cand: Candidate, status: str | None = None, reason: str | None = None) -> dict:
        """The entry of a file that is not executed. A missing notebook scores 0 of its max score; a file
        of a known student and notebook that could not be graded gets a 0 with the reason in the gradebook
        (`autograde.record_ungraded`), so formgrader, export and grades.csv list the student."""
        status, reason = status or cand.status, reason or cand.reason
        score = max_score = None
        if status == "missing_notebook" or (status in _UNGRADABLE and cand.student and cand.notebook):
            score, max_score = 0.0, self.maxima.get(cand.notebook) if cand.notebook else None
        entry = entry_of(cand, status, reason, score=score, max_score=max_score)
        if status in _UNGRADABLE | {"missing_notebook"} and cand.student and cand.notebook and cand.assignment:
            key = State.key(cand.student, cand.assignment, cand.notebook)
            stored = self.state.entries.get(key)
            if stored is None or stored.get("status") not in GRADED_STATUSES:
                if status != "missing_notebook":
                    autograde.record_ungraded(self.course, cand.student, cand.assignment, cand.notebook, reason,
                                             cand.submitted_at)
                self._complete(key, entry)
                return entry
            earlier = stored.get("input") or "an earlier run"
            entry["score"] = None  # the gradebook keeps the grade of the earlier submission
            entry["reason"] = f"{reason}; the grade of the earlier submission ({earlier}) is kept"
        self._log("submission", entry)
        return entry

    def _superseded(self, cand: Candidate, key: str, digest: str) -> dict | None:
        """The entry of an input that must not be graded over the submission graded for its key: one whose
        content was graded before and replaced since (whatever the clocks say: a rerun of an old zip), or
        one older than it; None when `--prefer` names it, or it is the graded file itself."""
        stored = self.state.entries.get(key)
        if (not stored or stored.get("status") not in GRADED_STATUSES or cand.preferred
                or digest == stored.get("hash")):
            return None
        again = f"not regraded; pass --prefer '{cand.source}' to grade this one instead"
        if digest in stored.get("graded_hashes", []):
            return self._rejected(cand, "superseded", (
                f"this file was graded before, and {stored.get('input') or 'a later submission'} (submitted "
                f"{stored.get('submitted_at') or 'at an unknown time'}) has been graded since: {again}"))
        if is_older(cand.submitted_at, stored.get("submitted_at")):
            return self._rejected(cand, "superseded", (
                f"submitted {cand.submitted_at.isoformat()} ({cand.time_origin}), before the submission already "
                f"graded ({stored.get('input') or 'an earlier run'}, submitted {stored['submitted_at']}): {again}"))
        return None

    def _graded_hashes(self, key: str, digest: str) -> list[str]:
        """Every content hash graded for `key` so far, `digest` last (a state of an earlier version has
        only the last one's)."""
        stored = self.state.entries.get(key) or {}
        earlier = stored.get("graded_hashes") or (
            [stored["hash"]] if stored.get("status") in GRADED_STATUSES and stored.get("hash") else [])
        return [h for h in earlier if h != digest] + [digest]

    def _complete(self, key: str, entry: dict) -> None:
        kept = {k: v for k, v in entry.items() if k != "regraded"}
        earlier = (self.state.entries.get(key) or {}).get("graded_hashes")
        if earlier and "graded_hashes" not in kept:  # a failed or ungraded input keeps what was graded
            kept["graded_hashes"] = earlier
        try:
            self.state.complete(key, {**kept, "input": self._input(entry["source"])})
        except WriteFailed as error:
            if not any(w.startswith(STATE_FILE) for w in self.warnings):
                self._warn(f"{STATE_FILE} could not be updated ({error}): the gradebook and report.json hold this "
                           "run's grades, but the next run regrades what this one graded")
        self._log("submission", entry)

    def _log(self, event: str, entry: dict) -> None:
        self.log.write(event, student=entry["student"], assignment=entry["assignment"], notebook=entry["notebook"],
                       outcome=entry["status"], score=entry["score"], duration=entry.get("seconds"),
                       flags=entry["flags"], source=entry["source"])

    def _write_outputs(self, candidates: list[Candidate]) -> dict:
        self._add_missing(candidates)
        if self.log.failed:
            self._warn(f"{LOG_FILE} could not be written ({self.log.failed}): the report lists every submission")
        try:
            autograde.name_students(self.course, self.people)
        except Exception as error:
            self._warn(f"the students' names could not be written to the gradebook ({what(error)}): rerun")
        late = None
        try:
            late = lateness.settle(self.course.db_url, self.course.config,
                                   self.roster.extensions() if self.roster else {})
        except Exception as error:
            self._warn(f"the late penalties could not be updated in the gradebook ({what(error)}): rerun")
        self.progress.say("refreshing feedback and grades.csv from the gradebook")
        outputs = refreshed.refresh(self.course, self.state.entries, written_earlier=self.pages_written)
        for problem in outputs.problems:
            self._warn(problem)
        self._rescore(outputs.rows)
        try:
            self.state.save()  # the history of this run's inputs
        except WriteFailed as error:
            self._warn(f"{STATE_FILE} could not be updated ({error}): this run's input history is only in "
                       "report.json")
        report_path = self.options.report or self.course.root / REPORT_FILE
        written = {**outputs.written, "report.json": str(report_path), "log": str(self.log.path)}
        report = reports.build_report(self.run_id, self.protections, self.entries, self.seconds, self.skipped,
                                      time.monotonic() - self.started, outputs.rows, self.state.inputs, written)
        report.update(execution=self.pool.description, warnings=self.warnings, interrupted=self.stopped,
                      nothing_to_grade=not candidates, lateness=late)
        report["timing"]["course_set_up"] = self.course.set_up  # the wall time includes it
        try:
            reports.write_report(report_path, report)
        except WriteFailed as error:  # a full disk: the previous report.json stays whole; the caller says so
            del written["report.json"]
            report["report_unwritten"] = str(error)
        self.log.write("end", counts=report["counts"], timing=report["timing"], interrupted=self.stopped)
        return report

    def _rescore(self, rows) -> None:
        """The score of every entry that has a grade is the gradebook's now (manual scores included)."""
        if rows is None:
            return
        current = {row.key: row for row in rows if row.submitted}
        for entry in self.entries:
            row = current.get(State.key(entry["student"], entry["assignment"], entry["notebook"]))
            if row is not None and entry["score"] is not None:
                entry["score"], entry["max_score"] = row.score, row.max_score

    def _name(self, candidates: list[Candidate]) -> None:
        """Every student who sent anything for a released notebook (or a student folder), and every roster
        student, joins the gradebook; names from the roster (ids were resolved against it by `discover`),
        else those an LMS file name carries. An `unknown_notebook` file's student is only a guess: not added."""
        if self.roster is not None:
            self.people.update({p.id: p.names() for p in self.roster.people})
        for cand in candidates:
            if (cand.student and cand.status not in ("bad_name", "unknown_notebook")
                    and student_problem(cand.student) is None):
                self.people.setdefault(cand.student, {"first_name": cand.first_name, "last_name": cand.last_name})

    def _input(self, source: str) -> str:
        """The input file named `source` in PATH as the instructor finds it again: PATH/name, or zip:entry."""
        path = self.options.source.resolve()
        if not source:  # a row tapelab added (missing notebook), not a file
            return ""
        return f"{path}/{source}" if path.is_dir() else f"{path}:{source}"

    def _record(self, cand: Candidate, entry: dict) -> None:
        self.entries.append(entry)
        self.recorded.add(id(cand))
        if cand.source:
            self.state.seen(self._input(cand.source), {"run_id": self.run_id, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                          "status": entry["status"], "student": entry["student"],
                                          "notebook": entry["notebook"], "submitted_at": entry.get("submitted_at"),
                                          "hash": entry.get("hash")})
        score = f" {entry['score']:g}/{entry['max_score']:g}" if entry["score"] is not None and entry["max_score"] else ""
        self.progress.advance(f"{cand.student} {cand.notebook}: {entry['status']}{score}")

    def _add_missing(self, candidates: list[Candidate]) -> None:
        """A student who submitted some notebooks of this run but not another that others submitted, and
        has never handed that one in before (a partial run is not a missing notebook)."""
        notebooks = {(c.assignment, c.notebook) for c in candidates if c.notebook and c.assignment}
        students = {c.student for c in candidates if c.student and c.notebook}
        have = {(c.student, c.notebook) for c in candidates if c.student and c.notebook}
        for student in sorted(students):
            for assignment, notebook in sorted(notebooks):
                key = State.key(student, assignment, notebook)
                earlier = self.state.entries.get(key, {}).get("status", "missing_notebook")
                if (student, notebook) in have or earlier != "missing_notebook":
                    continue
                cand = Candidate("", None, student, assignment, notebook)
                entry = entry_of(cand, "missing_notebook", f"no `{notebook}` from {student} in {self.options.source.resolve()}",
                                 score=0.0, max_score=self.maxima.get(notebook))
                self._complete(key, entry)
                self.entries.append(entry)
