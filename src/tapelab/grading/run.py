"""The coordinator of `tapelab grade`: inputs -> sanitize -> workers execute -> gradebook -> outputs.

Only this process writes the gradebook, the course folder and the records; workers (a local
process pool, or a Dask cluster with `scheduler`) get a notebook as JSON plus settings and return
the executed notebook plus facts.
"""
from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tapelab.grading import finalize, guard, handback, report as reports, sanitize
from tapelab.grading.course import Course, open_course
from tapelab.grading.gradebook import redact
from tapelab.grading.inputs import Candidate, discover
from tapelab.grading.pools import LocalPool
from tapelab.grading.progress import Progress
from tapelab.grading.records import LOG_FILE, STATE_FILE, JsonLog, State, content_hash
from tapelab.grading.sandbox import Sandbox, protections
from tapelab.grading.statuses import FINAL, worst
from tapelab.grading.worker import Settings
from tapelab.paths import GRADER, REPO, SOLUTIONS

__all__ = ["Options", "grade"]

OUTPUT_LIMIT = 10 * 1024**2
_REPO_PRIVATE = (SOLUTIONS, GRADER, REPO / ".git", REPO / "tests", REPO / "test-output", REPO / "bench")


@dataclass
class Options:
    source: Path
    course: Path = GRADER / "course"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: int = 600  # seconds per notebook
    force: bool = False
    report: Path | None = None
    output_limit: int = OUTPUT_LIMIT
    isolate: bool | None = None  # None: whatever this machine supports
    notebooks: list[str] | None = None  # to release when the course folder is new
    progress_stream: object = None
    guard: bool = True
    scheduler: str | None = None  # tcp://HOST:PORT of a Dask scheduler; None: the local pool
    db_url: str | None = None  # the gradebook of a new course folder (default: its gradebook.db)


def _pool(options: Options):
    if options.scheduler:
        from tapelab.grading.cluster import DaskPool

        return DaskPool(options.scheduler)
    return LocalPool(options.jobs)


def _sandbox(options: Options, course: Course, available: dict[str, str]) -> Sandbox:
    isolate = not available["namespaces"] and not available["user"]
    if options.isolate is not None:
        isolate = isolate and options.isolate
    hide = {str(p) for p in _REPO_PRIVATE if p.exists()} | {str(course.root), str(options.source.resolve())}
    return Sandbox(isolate=isolate, rlimits=not available["rlimits"], hide=tuple(sorted(hide)))


def _cell_timeout(course: Course, notebook_timeout: int) -> int:
    configured = course.config.Execute.get("timeout") or course.config.ExecutePreprocessor.get("timeout") or 30
    return max(1, min(int(configured), notebook_timeout))


def _entry(cand: Candidate, status: str, reason: str = "", flags=(), score=None, max_score=None, **extra) -> dict:
    return {"student": cand.student, "assignment": cand.assignment, "notebook": cand.notebook, "status": status,
            "score": score, "max_score": max_score, "reason": reason, "flags": list(flags),
            "source": cand.source, **extra}


def _student_cells(nb, release) -> list[tuple[str, str]]:
    given = {c.source.strip() for c in release.cells if c.cell_type == "code"}
    return [(c.get("id") or str(i), c.source) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and c.source.strip() not in given]


class Coordinator:
    def __init__(self, options: Options):
        self.options = options
        self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.pool = _pool(options)  # first: a bad --scheduler stops the run before the course is touched
        try:
            self.course = open_course(options.course, options.notebooks, options.db_url)
        except BaseException:
            self.pool.close()
            raise
        self.sandbox = _sandbox(options, self.course, self.pool.available)
        self.protections = protections(self.sandbox, self.pool.available)
        self.state = State(self.course.root / STATE_FILE)
        self.log = JsonLog(self.course.root / LOG_FILE, self.run_id)
        self.cell_timeout = _cell_timeout(self.course, options.timeout)
        self.settings_key = f"{options.timeout}/{self.cell_timeout}/{options.output_limit}/{options.guard}"
        self.entries: list[dict] = []
        self.seconds: list[float] = []
        self.skipped = 0

    # -- before execution ---------------------------------------------------------------------------
    def _settings(self, assignment: str, notebook: str) -> Settings:
        imports = tuple(self.course.trusted_imports(assignment, notebook)) if self.options.guard else None
        return Settings(self.cell_timeout, self.options.timeout, self.options.output_limit, self.sandbox, imports)

    def _prepare(self, cand: Candidate):
        """An entry (done without execution) or a task (key, digest, prepared, scan flags)."""
        if cand.status:
            entry = _entry(cand, cand.status, cand.reason)
            self._log("submission", entry)
            return entry
        raw = cand.path.read_bytes()
        digest = content_hash(raw, self.settings_key)
        key = State.key(cand.student, cand.assignment, cand.notebook)
        stored = None if self.options.force else self.state.unchanged(key, digest, FINAL)
        if stored:
            self.skipped += 1
            entry = {**stored, "source": cand.source, "regraded": False}
            self._log("skipped", entry)
            return entry
        try:
            nb = sanitize.read_notebook(raw)
            target = self.course.path("submitted", cand.student, cand.assignment, cand.notebook)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.resolve() != cand.path.resolve():
                target.write_bytes(raw)
                stamp = cand.path.parent / "timestamp.txt"
                if stamp.is_file():
                    shutil.copy(stamp, target.parent / "timestamp.txt")
            prepared = sanitize.prepare(self.course, nb, cand.student, cand.assignment, cand.notebook)
        except sanitize.Invalid as error:
            entry = _entry(cand, "invalid_notebook", str(error), hash=digest, regraded=True)
            self._complete(key, entry)
            return entry
        release = self.course.release_notebook(cand.assignment, cand.notebook)
        flags = prepared.flags + guard.scan(_student_cells(prepared.nb, release))
        return (key, digest, prepared, flags)

    # -- after execution ----------------------------------------------------------------------------
    def _finish(self, cand: Candidate, task, result: dict, started: float) -> dict:
        key, digest, prepared, flags = task
        facts = result["facts"]
        flags = flags + facts.get("flags", [])
        if result["nb"] is None:
            entry = _entry(cand, "infra_error", f"not executed: {facts.get('infra_error')}", flags,
                           hash=digest, regraded=True, worker=result.get("worker"))
            self._complete(key, entry)
            return entry
        status, reason = ("tampered" if prepared.tampered else "graded"), "; ".join(prepared.flags)
        for fact, why in (("timed_out", f"time limit reached (cell {self.cell_timeout} s, notebook "
                                        f"{self.options.timeout} s)"),
                          ("kernel_died", "the kernel exited before the end"),
                          ("output_limit", f"more than {self.options.output_limit} bytes of output")):
            if facts.get(fact):
                status, reason = worst(status, fact), "; ".join(filter(None, [why, reason]))
        submitted = self.course.path("submitted", cand.student, cand.assignment, cand.notebook)
        finalize.record_submission(self.course, cand.student, cand.assignment, submitted)
        finalize.save_grades(self.course, nbformat.reads(result["nb"], as_version=4), cand.student,
                             cand.assignment, cand.notebook, review=bool(flags))
        handback.write_feedback(self.course, cand.student, cand.assignment, cand.notebook)
        score, max_score = finalize.scores(self.course, cand.student, cand.assignment, cand.notebook)
        seconds = round(result["seconds"] + (time.monotonic() - started), 2)
        self.seconds.append(seconds)
        entry = _entry(cand, status, reason, flags, score, max_score, hash=digest, seconds=seconds, regraded=True,
                       worker=result.get("worker"))
        self._complete(key, entry)
        return entry

    def _complete(self, key: str, entry: dict) -> None:
        self.state.complete(key, {k: v for k, v in entry.items() if k not in ("source", "regraded")})
        self._log("submission", entry)

    def _log(self, event: str, entry: dict) -> None:
        self.log.write(event, student=entry["student"], assignment=entry["assignment"], notebook=entry["notebook"],
                       outcome=entry["status"], score=entry["score"], duration=entry.get("seconds"),
                       flags=entry["flags"], source=entry["source"])

    # -- the run --------------------------------------------------------------------------------------
    def run(self) -> dict:
        try:
            return self._run()
        finally:
            self.log.close()
            self.course.close()

    def _run(self) -> dict:
        start = time.monotonic()
        self.log.write("start", source=str(self.options.source), timeout=self.options.timeout,
                       force=self.options.force, protections=self.protections, execution=self.pool.description,
                       gradebook=redact(self.course.db_url))
        incoming = self.course.root / f".incoming-{self.run_id}"
        try:
            candidates = discover(self.options.source.resolve(), self.course.known, incoming)
            progress = Progress(len(candidates), self.options.progress_stream)
            self._execute_all(candidates, progress)
            progress.close()
        finally:
            self.pool.close()
            shutil.rmtree(incoming, ignore_errors=True)
        self._add_missing(candidates)
        report = reports.build_report(self.run_id, self.protections, self.entries, self.seconds,
                                      self.skipped, time.monotonic() - start)
        report["execution"] = self.pool.description
        reports.write_grades_csv(self.course.root / "grades.csv", self.entries)
        reports.write_report(self.options.report or self.course.root / "report.json", report)
        self.log.write("end", counts=report["counts"], timing=report["timing"])
        return report

    def _prepared(self, cand: Candidate):
        try:
            return self._prepare(cand)
        except Exception as error:  # a bad file never stops the others
            entry = _entry(cand, "invalid_notebook", f"could not be prepared: {type(error).__name__}: {error}")
            self._complete(State.key(cand.student, cand.assignment, cand.notebook), entry)
            return entry

    def _finished(self, cand: Candidate, task, result: dict) -> dict:
        try:
            return self._finish(cand, task, result, time.monotonic())
        except Exception as error:  # the gradebook or feedback failed: retried next run
            entry = _entry(cand, "infra_error", f"saving failed: {type(error).__name__}: {error}",
                           hash=task[1], regraded=True, worker=result.get("worker"))
            self._complete(task[0], entry)
            return entry

    def _execute_all(self, candidates: list[Candidate], progress: Progress) -> None:
        queue = list(candidates)
        while queue or len(self.pool):
            while queue and len(self.pool) < self.pool.capacity:
                cand = queue.pop(0)
                prepared = self._prepared(cand)
                if isinstance(prepared, dict):
                    self.entries.append(prepared)
                    progress.advance(f"{cand.student} {cand.notebook}")
                    continue
                settings = self._settings(cand.assignment, cand.notebook)
                self.pool.submit((cand, prepared), nbformat.writes(prepared[2].nb), settings)
            if not len(self.pool):
                continue
            for (cand, task), result in self.pool.finished():
                self.entries.append(self._finished(cand, task, result))
                progress.advance(f"{cand.student} {cand.notebook}")

    def _add_missing(self, candidates: list[Candidate]) -> None:
        """A student who submitted some notebooks of this run but not another that others submitted."""
        notebooks = {(c.assignment, c.notebook) for c in candidates if c.notebook and c.assignment}
        students = {c.student for c in candidates if c.student and c.notebook}
        have = {(c.student, c.notebook) for c in candidates if c.student and c.notebook}
        maxima = self._max_scores()
        for student in sorted(students):
            for assignment, notebook in sorted(notebooks):
                if (student, notebook) not in have:
                    cand = Candidate("", None, student, assignment, notebook)
                    self.entries.append(_entry(cand, "missing_notebook", f"no `{notebook}` from {student} in this run",
                                               score=0.0, max_score=maxima.get(notebook)))

    def _max_scores(self) -> dict[str, float]:
        from nbgrader.api import Gradebook

        with Gradebook(self.course.db_url) as gb:
            return {nb.name: float(nb.max_score) for a in gb.assignments for nb in a.notebooks}


def grade(options: Options) -> dict:
    """Grade everything in `options.source`; return the report (also written to disk)."""
    return Coordinator(options).run()
