"""The coordinator of `tapelab grade`: inputs -> sanitize -> workers execute -> gradebook -> outputs.

Only this process writes the gradebook, the course folder and the records; workers (a local
process pool, or a Dask cluster with `scheduler`) get a notebook as JSON plus settings and return
the executed notebook plus facts.

Faults of the grader end in a named status, never in a lost run. Every place the run writes is
probed before the first notebook is read. A worker's result is checked against RESULT_SCHEMA, and
any exception between a result and its report entry makes that one submission `infra_error`; a
failing pool, an interrupt (Ctrl-C, SIGTERM) or a file that disappears mid-run does the same for
the submissions it touched. Whatever happens, report.json and grades.csv are written.
"""
from __future__ import annotations

import functools
import os
import shutil
import sys
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tapelab.grading import finalize, guard, handback, report as reports, sanitize
from tapelab.grading.course import Course, open_course
from tapelab.grading.gradebook import redact
from tapelab.grading.inputs import Candidate, InputError, discover
from tapelab.grading.pools import LocalPool
from tapelab.grading.progress import Progress
from tapelab.grading.records import LOG_FILE, STATE_FILE, JsonLog, State, check_writable, content_hash
from tapelab.grading.sandbox import Sandbox, protections
from tapelab.grading.statuses import FINAL, worst
from tapelab.grading.worker import Settings
from tapelab.paths import GRADER, REPO, SOLUTIONS

__all__ = ["Options", "grade"]

OUTPUT_LIMIT = 10 * 1024**2
REPORT_FILE, GRADES_FILE = "report.json", "grades.csv"
_REPO_PRIVATE = (SOLUTIONS, GRADER, REPO / ".git", REPO / "tests", REPO / "test-output", REPO / "bench")
_RERUN = "the grader's fault, not the student's: rerun `tapelab grade` to grade it"


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
    progress_stream: object = None  # progress bar and warnings (default: stderr)
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


def _what(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"


class Coordinator:
    def __init__(self, options: Options):
        self.options = options
        self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.warnings: list[str] = []
        self.log: JsonLog | None = None
        if options.report:  # first: nothing is started when the report could not be written
            check_writable(options.report.resolve(), "--report")
        self.pool = _pool(options)  # before the course: a bad --scheduler stops the run before it is touched
        self.course = None
        try:
            self.course = open_course(options.course, options.notebooks, options.db_url)
            for name in (STATE_FILE, LOG_FILE, GRADES_FILE, REPORT_FILE):
                check_writable(self.course.root / name, "the course file")
            self.log = JsonLog(self.course.root / LOG_FILE, self.run_id)
            self.state = State(self.course.root / STATE_FILE)
        except BaseException:
            if self.log is not None:
                self.log.close()
            if self.course is not None:
                self.course.close()
            self.pool.close()
            raise
        for note in self.course.notes:
            self._warn(note)
        if self.state.set_aside:
            self._warn(self.state.set_aside)
        self.sandbox = _sandbox(options, self.course, self.pool.available)
        self.protections = protections(self.sandbox, self.pool.available)
        self.cell_timeout = _cell_timeout(self.course, options.timeout)
        self.settings_key = f"{options.timeout}/{self.cell_timeout}/{options.output_limit}/{options.guard}"
        self.entries: list[dict] = []
        self.recorded: set[int] = set()  # id() of every candidate with an entry
        self.seconds: list[float] = []
        self.skipped = 0
        self.queue: list[Candidate] = []
        self.in_flight: dict[int, tuple[Candidate, tuple]] = {}  # id(candidate) -> (candidate, task)
        self.stopped: str | None = None  # the signal that interrupted the run
        self.progress = Progress(0, options.progress_stream)

    def _warn(self, message: str) -> None:
        """Tell the instructor now (stderr) and later (report.json `warnings`, the log)."""
        self.warnings.append(message)
        print(f"tapelab grade: warning: {message}", file=self.options.progress_stream or sys.stderr, flush=True)
        if self.log is not None:
            self.log.write("warning", message=message)

    # -- before execution ---------------------------------------------------------------------------
    def _settings(self, assignment: str, notebook: str) -> Settings:
        imports = tuple(self.course.trusted_imports(assignment, notebook)) if self.options.guard else None
        return Settings(self.cell_timeout, self.options.timeout, self.options.output_limit, self.sandbox, imports)

    @functools.cached_property
    def maxima(self) -> dict[str, float]:
        """Max score per notebook, from the gradebook (empty, with a warning, when it cannot be read)."""
        try:
            return finalize.max_scores(self.course)
        except Exception as error:
            self._warn(f"the max scores could not be read from the gradebook {redact(self.course.db_url)} "
                       f"({_what(error)}): missing notebooks are listed without one; rerun to fill them in")
            return {}

    def _rejected(self, cand: Candidate) -> dict:
        """The entry of a file judged at discovery; a missing notebook scores 0 of its max score."""
        score = max_score = None
        if cand.status == "missing_notebook":
            score, max_score = 0.0, self.maxima.get(cand.notebook) if cand.notebook else None
        entry = _entry(cand, cand.status, cand.reason, score=score, max_score=max_score)
        self._log("submission", entry)
        return entry

    def _prepare(self, cand: Candidate):
        """An entry (done without execution) or a task (key, digest, prepared, scan flags)."""
        if cand.status:
            return self._rejected(cand)
        key = State.key(cand.student, cand.assignment, cand.notebook)
        try:
            raw = cand.path.read_bytes()
        except OSError as error:
            entry = _entry(cand, "infra_error", f"`{cand.source}` disappeared or became unreadable after it was "
                           f"found ({error.strerror}): it was not graded; put it back and rerun `tapelab grade`",
                           regraded=True)
            self._complete(key, entry)
            return entry
        digest = content_hash(raw, self.settings_key)
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
            prepared = sanitize.prepare(self.course, nb, cand.student, cand.assignment, cand.notebook,
                                        output_limit=self.options.output_limit)
        except sanitize.Invalid as error:
            entry = _entry(cand, "invalid_notebook", str(error), hash=digest, regraded=True)
            self._complete(key, entry)
            return entry
        release = self.course.release_notebook(cand.assignment, cand.notebook)
        flags = prepared.flags + guard.scan(_student_cells(prepared.nb, release))
        return (key, digest, prepared, flags)

    def _prepared(self, cand: Candidate):
        key = State.key(cand.student, cand.assignment, cand.notebook)
        try:
            return self._prepare(cand)
        except OSError as error:  # the course folder, not the file: retried next run
            entry = _entry(cand, "infra_error", f"preparing it failed ({_what(error)}); {_RERUN}", regraded=True)
        except Exception as error:  # the student's file parsed (read_notebook): a failure now is the grader's
            entry = _entry(cand, "infra_error", f"preparing it failed ({_what(error)}); {_RERUN}", regraded=True)
        self._complete(key, entry)
        return entry

    # -- after execution ----------------------------------------------------------------------------
    def _finish(self, cand: Candidate, task, result: dict, started: float) -> dict:
        key, digest, prepared, flags = task
        executed = finalize.executed_notebook(result)
        facts = result["facts"]
        flags = flags + facts.get("flags", [])
        if executed is None:
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
        if prepared.stripped:
            status, reason = worst(status, "output_limit"), "; ".join(filter(None, [prepared.stripped, reason]))
        submitted = self.course.path("submitted", cand.student, cand.assignment, cand.notebook)
        finalize.record_submission(self.course, cand.student, cand.assignment, submitted)
        finalize.save_grades(self.course, executed, cand.student, cand.assignment, cand.notebook, review=bool(flags))
        handback.write_feedback(self.course, cand.student, cand.assignment, cand.notebook)
        score, max_score = finalize.scores(self.course, cand.student, cand.assignment, cand.notebook)
        seconds = round(result["seconds"] + (time.monotonic() - started), 2)
        self.seconds.append(seconds)
        entry = _entry(cand, status, reason, flags, score, max_score, hash=digest, seconds=seconds, regraded=True,
                       worker=result.get("worker"))
        self._complete(key, entry)
        return entry

    def _finished(self, cand: Candidate, task, result) -> dict:
        """The entry of one result: any fault of the result or of saving it is that submission's infra_error."""
        try:
            return self._finish(cand, task, result, time.monotonic())
        except finalize.MalformedResult as error:
            why = f"the worker returned a malformed result ({error})"
        except Exception as error:
            why = f"saving the executed notebook failed ({_what(error)})"
        worker = result.get("worker") if isinstance(result, dict) else None
        entry = _entry(cand, "infra_error", f"{why}; {_RERUN}", hash=task[1], regraded=True,
                       worker=worker if isinstance(worker, str) else None)
        self._complete(task[0], entry)
        return entry

    def _complete(self, key: str, entry: dict) -> None:
        try:
            self.state.complete(key, {k: v for k, v in entry.items() if k not in ("source", "regraded")})
        except OSError as error:
            if not any(w.startswith(STATE_FILE) for w in self.warnings):
                self._warn(f"{STATE_FILE} could not be updated ({error.strerror}): the gradebook and report.json "
                           "hold this run's grades, but the next run regrades what this one graded")
        self._log("submission", entry)

    def _log(self, event: str, entry: dict) -> None:
        self.log.write(event, student=entry["student"], assignment=entry["assignment"], notebook=entry["notebook"],
                       outcome=entry["status"], score=entry["score"], duration=entry.get("seconds"),
                       flags=entry["flags"], source=entry["source"])

    # -- the run --------------------------------------------------------------------------------------
    def run(self) -> dict:
        try:
            return self._run()
        except InputError:
            raise
        except Exception as error:
            self.log.write("crash", error=_what(error), traceback=traceback.format_exc())
            error.add_note(f"report a bug with the `crash` record of run {self.run_id} in {self.log.path}, "
                           "which holds the traceback")
            raise
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
            self.log.write("discovered", files=len(candidates))
            self.progress = Progress(len(candidates), self.options.progress_stream)
            self.queue = list(candidates)
            try:
                self._execute_all()
            except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (the CLI turns it into this)
                self.stopped = str(stop) or "SIGINT"
                self._give_up(f"the run was stopped by {self.stopped} first", also_queued=True)
            self.progress.close()
            return self._write_outputs(candidates, start)
        finally:
            try:
                self.pool.close()
            except Exception as error:
                self._warn(f"the worker pool did not stop cleanly ({_what(error)})")
            shutil.rmtree(incoming, ignore_errors=True)

    def _write_outputs(self, candidates: list[Candidate], start: float) -> dict:
        self._add_missing(candidates)
        if self.log.failed:
            self._warn(f"{LOG_FILE} could not be written ({self.log.failed}): the report lists every submission")
        report = reports.build_report(self.run_id, self.protections, self.entries, self.seconds,
                                      self.skipped, time.monotonic() - start)
        report.update(execution=self.pool.description, warnings=self.warnings, interrupted=self.stopped)
        reports.write_grades_csv(self.course.root / GRADES_FILE, self.entries)
        reports.write_report(self.options.report or self.course.root / REPORT_FILE, report)
        self.log.write("end", counts=report["counts"], timing=report["timing"], interrupted=self.stopped)
        return report

    def _record(self, cand: Candidate, entry: dict) -> None:
        self.entries.append(entry)
        self.recorded.add(id(cand))
        self.progress.advance(f"{cand.student} {cand.notebook}")

    def _start(self, cand: Candidate) -> None:
        """Prepare `cand` and send it to the pool, or record why it needs no execution."""
        prepared = self._prepared(cand)
        if isinstance(prepared, dict):
            self._record(cand, prepared)
            return
        try:
            settings = self._settings(cand.assignment, cand.notebook)
            self.pool.submit(cand, nbformat.writes(prepared[2].nb), settings)
        except Exception as error:
            entry = _entry(cand, "infra_error", f"could not be sent to a worker ({_what(error)}); {_RERUN}",
                           hash=prepared[1], regraded=True)
            self._complete(prepared[0], entry)
            self._record(cand, entry)
            return
        self.in_flight[id(cand)] = (cand, prepared)

    def _execute_all(self) -> None:
        while self.queue or self.in_flight:
            while self.queue and len(self.in_flight) < self.pool.capacity:
                self._start(self.queue[0])
                self.queue.pop(0)
            if not self.in_flight:
                continue
            if not len(self.pool):
                self._give_up("the worker pool ended its executions without a result")
                continue
            try:
                finished = [(self.in_flight[id(tag)], result) for tag, result in self.pool.finished()]
            except Exception as error:
                self._give_up(f"the worker pool failed ({_what(error)})", also_queued=True)
                return
            for (cand, task), result in finished:
                self._record(cand, self._finished(cand, task, result))
                del self.in_flight[id(cand)]

    def _give_up(self, why: str, also_queued: bool = False) -> None:
        """Every submission in flight (and, with `also_queued`, still queued) ends as infra_error: not graded."""
        lost = {id(cand): cand for cand, _ in self.in_flight.values()}
        if also_queued:
            lost.update((id(cand), cand) for cand in self.queue)
            self.queue = []
        self.in_flight = {}
        missed = 0
        for cand in lost.values():
            if id(cand) in self.recorded:
                continue
            if cand.status:  # judged at discovery: nothing to grade
                self._record(cand, self._rejected(cand))
                continue
            entry = _entry(cand, "infra_error", f"not graded: {why}; rerun `tapelab grade` to grade it")
            self._log("submission", entry)
            self._record(cand, entry)
            missed += 1
        if missed:
            self._warn(f"{missed} submission(s) were not graded: {why}. They are `infra_error` in the report; "
                       "rerun the same command to grade them (what was graded is skipped)")

    def _add_missing(self, candidates: list[Candidate]) -> None:
        """A student who submitted some notebooks of this run but not another that others submitted."""
        notebooks = {(c.assignment, c.notebook) for c in candidates if c.notebook and c.assignment}
        students = {c.student for c in candidates if c.student and c.notebook}
        have = {(c.student, c.notebook) for c in candidates if c.student and c.notebook}
        for student in sorted(students):
            for assignment, notebook in sorted(notebooks):
                if (student, notebook) not in have:
                    cand = Candidate("", None, student, assignment, notebook)
                    entry = _entry(cand, "missing_notebook", f"no `{notebook}` from {student} in this run",
                                   score=0.0, max_score=self.maxima.get(notebook))
                    self._log("submission", entry)
                    self.entries.append(entry)


def grade(options: Options) -> dict:
    """Grade everything in `options.source`; return the report (also written to disk)."""
    return Coordinator(options).run()
