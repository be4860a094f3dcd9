"""The coordinator of `tapelab grade`: intake -> prepare -> workers execute -> gradebook -> outputs.

Only this process writes the gradebook, the course folder and the records; workers (a local
process pool, or a Dask cluster with `scheduler`) get a notebook as JSON plus settings and return
the executed notebook plus facts.

Faults of the grader end in a named status, never in a lost run. Every place the run writes is
probed before the first notebook is read. A worker's result is checked against RESULT_SCHEMA, and
any exception between a result and its report entry makes that one submission `infra_error`; a
failing pool, an interrupt (Ctrl-C, SIGTERM) or a file that disappears mid-run does the same for
the submissions it touched. Whatever happens, report.json and grades.csv are written.

The gradebook is the one source of scores: at the end of every run the feedback pages and
grades.csv are refreshed from it (`outputs`), and the report's scores are read back from it.
The newest submission of a student's notebook wins (`intake.resubmissions`); an input older than the one already
graded is `superseded`, never graded over it, unless `--prefer` names it.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import nbformat

from tapelab.grading import outputs
from tapelab.grading.grades import autograde
from tapelab.grading.integrity.scan import scan
from tapelab.grading.insight import page as insight_page
from tapelab.grading.grades import lateness
from tapelab.grading.prepare import sanitize
from tapelab.grading.course import Course, open_course
from tapelab.grading.gradebook import one_engine, redact
from tapelab.grading.intake.discover import Candidate, InputError, discover
from tapelab.grading.outcomes import REPORT_FILE, Outcomes, entry_of, what
from tapelab.grading.execution.pools import LocalPool
from tapelab.grading.progress import Progress
from tapelab.grading.schedule import LongestFirst
from tapelab.outside import printable
from tapelab.grading.records import (LOG_FILE, STATE_FILE, JsonLog, State, atomic_write_text, check_writable,
                                     content_hash, metadata_checked_once)
from tapelab.grading.handback.refresh import refresh_feedback
from tapelab.grading.intake.stored import ensure_submission_files
from tapelab.grading.intake.roster import read_roster
from tapelab.grading.execution.sandbox import Sandbox, protections
from tapelab.grading.statuses import FINAL, worst
from tapelab.grading.execution.worker import Settings
from tapelab.paths import GRADER, REPO, SOLUTIONS

__all__ = ["Options", "grade"]

OUTPUT_LIMIT = 10 * 1024**2
GRADES_FILE = outputs.GRADES_FILE
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
    prefer: tuple[str, ...] = ()  # inputs that win for their student and notebook whatever their time
    roster: Path | None = None  # CSV of nbgrader's `db student import` format: ids and names
    due: dict[str, datetime] = field(default_factory=dict)  # notebook -> deadline, written into the gradebook


def _pool(options: Options):
    if options.scheduler:
        from tapelab.grading.execution.cluster import DaskPool

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


def _student_cells(nb, release) -> list[tuple[str, str]]:
    given = {c.source.strip() for c in release.cells if c.cell_type == "code"}
    return [(c.get("id") or str(i), c.source) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and c.source.strip() not in given]


class Coordinator(Outcomes):
    def __init__(self, options: Options):
        self.options = options
        self.started = time.monotonic()  # the wall time includes the course set-up
        self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.warnings: list[str] = []
        self.log: JsonLog | None = None
        self.progress = Progress(0, options.progress_stream)
        if options.report:  # first: nothing is started when the report could not be written
            check_writable(options.report.resolve(), "--report")
        self.roster = read_roster(options.roster) if options.roster else None
        self.pool = _pool(options)  # before the course: a bad --scheduler stops the run before it is touched
        self.course = None
        try:
            self.progress.say(f"opening the course folder {options.course.resolve()}")
            self.course = open_course(options.course, options.notebooks, options.db_url, say=self.progress.say)
            for name in (STATE_FILE, LOG_FILE, GRADES_FILE, REPORT_FILE):
                check_writable(self.course.root / name, "the course file")
            self.log = JsonLog(self.course.root / LOG_FILE, self.run_id)
            self.state = State(self.course.root / STATE_FILE)
            lateness.set_due_dates(self.course.db_url, self.course.known, options.due)
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
        self._settings_of: dict[tuple[str, str], Settings] = {}
        self.entries: list[dict] = []
        self.recorded: set[int] = set()  # id() of every candidate with an entry
        self.seconds: list[float] = []
        self.skipped = 0
        self.pages_written: set[str] = set()  # feedback pages rendered as their notebooks were graded
        self.queue = LongestFirst()  # longest notebooks first (schedule.py)
        self.in_flight: dict[int, tuple[Candidate, tuple]] = {}  # id(candidate) -> (candidate, task)
        self.stopped: str | None = None  # the signal that interrupted the run
        self.people: dict[str, dict] = {}  # student id -> names (roster, LMS file names) for the gradebook

    def _warn(self, message: str) -> None:
        """Tell the instructor now (stderr) and later (report.json `warnings`, the log)."""
        self.warnings.append(message)
        print(f"tapelab grade: warning: {printable(message)}", file=self.options.progress_stream or sys.stderr,
              flush=True)
        if self.log is not None:
            self.log.write("warning", message=message)

    # -- before execution ---------------------------------------------------------------------------
    def _settings(self, assignment: str, notebook: str) -> Settings:
        """One notebook's execution settings, read from its instructor's version once per run."""
        key = (assignment, notebook)
        if key not in self._settings_of:
            imports = tuple(self.course.trusted_imports(assignment, notebook)) if self.options.guard else None
            self._settings_of[key] = Settings(self.cell_timeout, self.options.timeout, self.options.output_limit,
                                              self.sandbox, imports,
                                              self.course.imported_packages(assignment, notebook))
        return self._settings_of[key]

    def _prepare(self, cand: Candidate):
        """An entry (done without execution) or a task (key, digest, prepared, scan flags)."""
        if cand.status:
            return self._rejected(cand)
        key = State.key(cand.student, cand.assignment, cand.notebook)
        try:
            raw = cand.path.read_bytes()
        except OSError as error:
            entry = entry_of(cand, "infra_error", f"`{cand.source}` disappeared or became unreadable after it was "
                           f"found ({error.strerror}): it was not graded; put it back and rerun `tapelab grade`",
                           regraded=True)
            self._complete(key, entry)
            return entry
        digest = content_hash(raw, self.settings_key)
        if (older := self._superseded(cand, key, digest)) is not None:
            return older
        stored = None if self.options.force else self.state.unchanged(key, digest, FINAL)
        if stored:
            self.skipped += 1
            entry = {**stored, "source": cand.source, "regraded": False, "unchanged": True}
            self._log("skipped", entry)
            return entry
        try:
            nb = sanitize.read_notebook(raw)
            target = self.course.path("submitted", cand.student, cand.assignment, cand.notebook)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.resolve() != cand.path.resolve():
                atomic_write_text(target, raw)
                secret = cand.path.parent / "submission_secret.txt"  # nbgrader's exchange layout
                if secret.is_file():
                    atomic_write_text(target.parent / secret.name, secret.read_bytes())
            ensure_submission_files(self.course, cand.student, cand.assignment, cand.submitted_at)
            prepared = sanitize.prepare(self.course, nb, cand.student, cand.assignment, cand.notebook,
                                        output_limit=self.options.output_limit)
        except sanitize.Invalid as error:
            return self._rejected(cand, "invalid_notebook", str(error))
        flags = prepared.flags + scan(_student_cells(prepared.nb, prepared.release))
        return (key, digest, prepared, flags)

    def _prepared(self, cand: Candidate):
        key = State.key(cand.student, cand.assignment, cand.notebook)
        try:
            return self._prepare(cand)
        except OSError as error:  # the course folder, not the file: retried next run
            entry = entry_of(cand, "infra_error", f"preparing it failed ({what(error)}); {_RERUN}", regraded=True)
        except Exception as error:  # the student's file parsed (read_notebook): a failure now is the grader's
            entry = entry_of(cand, "infra_error", f"preparing it failed ({what(error)}); {_RERUN}", regraded=True)
        self._complete(key, entry)
        return entry

    # -- after execution ----------------------------------------------------------------------------
    def _finish(self, cand: Candidate, task, result: dict, started: float) -> dict:
        key, digest, prepared, flags = task
        executed = autograde.executed_notebook(result)
        facts = result["facts"]
        flags = flags + facts.get("flags", [])
        if executed is None:
            entry = entry_of(cand, "infra_error", f"not executed: {facts.get('infra_error')}", flags,
                           hash=digest, regraded=True, worker=result.get("worker"), kernel=facts.get("kernel"))
            self._complete(key, entry)
            return entry
        status, reason = ("tampered" if prepared.tampered else "graded"), "; ".join(prepared.flags)
        for fact, why in (("timed_out", f"time limit reached (cell {self.cell_timeout} s, notebook "
                                        f"{self.options.timeout} s)"),
                          ("kernel_died", "the kernel exited before the end"),
                          ("output_limit", facts.get("stopped_by", "the output limit"))):  # bytes or messages
            if facts.get(fact):
                status, reason = worst(status, fact), "; ".join(filter(None, [why, reason]))
        if prepared.stripped:
            status, reason = worst(status, "output_limit"), "; ".join(filter(None, [prepared.stripped, reason]))
        submitted = self.course.path("submitted", cand.student, cand.assignment, cand.notebook)
        autograde.record_submission(self.course, cand.student, cand.assignment, submitted)
        autograde.save_grades(self.course, executed, cand.student, cand.assignment, cand.notebook, review=bool(flags))
        if flags:
            autograde.explain(self.course, cand.student, cand.assignment, cand.notebook, autograde.review_note(
                flags, submitted.relative_to(self.course.root), prepared.originals))
        self.pages_written.update(refresh_feedback(self.course, only={key}).written)  # now, while kernels run;
        # a failure is retried by the refresh at the end, which counts these pages as written, not unchanged
        score, max_score = autograde.scores(self.course, cand.student, cand.assignment, cand.notebook)
        seconds = round(result["seconds"] + (time.monotonic() - started), 2)
        self.seconds.append(seconds)
        entry = entry_of(cand, status, reason, flags, score, max_score, hash=digest, seconds=seconds, regraded=True,
                         worker=result.get("worker"), kernel=facts.get("kernel"),  # "warm" or "cold"
                         graded_hashes=self._graded_hashes(key, digest))
        self._complete(key, entry)
        return entry

    def _finished(self, cand: Candidate, task, result) -> dict:
        """The entry of one result: any fault of the result or of saving it is that submission's infra_error."""
        try:
            return self._finish(cand, task, result, time.monotonic())
        except autograde.MalformedResult as error:
            why = f"the worker returned a malformed result ({error})"
        except Exception as error:
            why = f"saving the executed notebook failed ({what(error)})"
        worker = result.get("worker") if isinstance(result, dict) else None
        entry = entry_of(cand, "infra_error", f"{why}; {_RERUN}", hash=task[1], regraded=True,
                       worker=worker if isinstance(worker, str) else None)
        self._complete(task[0], entry)
        return entry

    # -- the run --------------------------------------------------------------------------------------
    def run(self) -> dict:
        try:
            # the run's gradebooks share one engine; nbgrader's metadata schema is checked once
            with one_engine(self.course.db_url), metadata_checked_once():
                return self._run()
        except InputError:
            raise
        except Exception as error:
            self.log.write("crash", error=what(error), traceback=traceback.format_exc())
            error.add_note(f"report a bug with the `crash` record of run {self.run_id} in {self.log.path}, "
                           "which holds the traceback")
            raise
        finally:
            self.log.close()
            self.course.close()

    def _run(self) -> dict:
        self.log.write("start", source=str(self.options.source), timeout=self.options.timeout,
                       force=self.options.force, protections=self.protections, execution=self.pool.description,
                       gradebook=redact(self.course.db_url))
        incoming = self.course.root / f".incoming-{self.run_id}"
        try:
            self.progress.say(f"reading {self.options.source}")
            candidates = discover(self.options.source.resolve(), self.course.known, incoming,
                                  prefer=self.options.prefer, identify=self.roster.identify if self.roster else None)
            self._name(candidates)
            self.log.write("discovered", files=len(candidates))
            self.progress.say(f"{len(candidates)} input(s) found; grading with {self.pool.description.get('jobs') or 'the Dask workers'}"
                              " at a time" if candidates else f"nothing to grade in {self.options.source}")
            self.progress.begin(len(candidates))
            self.queue = LongestFirst(candidates)
            try:
                self._execute_all()
            except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (the CLI turns it into this)
                self.stopped = str(stop) or "SIGINT"
                self._give_up(f"the run was stopped by {self.stopped} first", also_queued=True)
            self.progress.close()
            return self._write_outputs(candidates)
        finally:
            try:
                self.pool.close()
            except Exception as error:
                self._warn(f"the worker pool did not stop cleanly ({what(error)})")
            shutil.rmtree(incoming, ignore_errors=True)

    def _start(self, cand: Candidate) -> None:
        """Prepare `cand` and send it to the pool, or record why it needs no execution."""
        prepared = self._prepared(cand)
        if isinstance(prepared, dict):
            self._record(cand, prepared)
            return
        try:
            settings = self._settings(cand.assignment, cand.notebook)
            if prepared[2].variant is not None:  # the worker pins the checks to the student's variant
                settings = replace(settings, variant=prepared[2].variant)
            self.pool.submit(cand, nbformat.writes(prepared[2].nb), settings)
        except Exception as error:
            entry = entry_of(cand, "infra_error", f"could not be sent to a worker ({what(error)}); {_RERUN}",
                           hash=prepared[1], regraded=True)
            self._complete(prepared[0], entry)
            self._record(cand, entry)
            return
        self.in_flight[id(cand)] = (cand, prepared)

    def _execute_all(self) -> None:
        plotting = False  # the report's plotting modules, loaded while the last notebooks run
        while self.queue or self.in_flight:
            while self.queue and len(self.in_flight) < self.pool.capacity:
                self._start(self.queue.peek())
                self.queue.take()  # after: a Ctrl-C while it starts leaves it queued (ends as not graded)
            if not self.in_flight:
                continue
            if not self.queue and not plotting:
                plotting = True
                try:
                    insight_page.load_plotting()
                except Exception:  # never costs the grading: the insight at the end reports the same failure
                    pass
            if not len(self.pool):
                self._give_up("the worker pool ended its executions without a result")
                continue
            try:
                finished = [(self.in_flight[id(tag)], result) for tag, result in self.pool.finished()]
            except Exception as error:
                self._give_up(f"the worker pool failed ({what(error)})", also_queued=True)
                return
            for (cand, task), result in finished:
                self.queue.timed(cand, result.get("seconds") if isinstance(result, dict) else None)
                self._record(cand, self._finished(cand, task, result))
                del self.in_flight[id(cand)]

    def _give_up(self, why: str, also_queued: bool = False) -> None:
        """Every submission in flight (and, with `also_queued`, still queued) ends as infra_error: not graded."""
        lost = {id(cand): cand for cand, _ in self.in_flight.values()}
        if also_queued:
            lost.update((id(cand), cand) for cand in self.queue.clear())
        self.in_flight = {}
        missed = 0
        for cand in lost.values():
            if id(cand) in self.recorded:
                continue
            if cand.status:  # judged at discovery: nothing to grade
                self._record(cand, self._rejected(cand))
                continue
            entry = entry_of(cand, "infra_error", f"not graded: {why}; rerun `tapelab grade` to grade it")
            self._complete(State.key(cand.student, cand.assignment, cand.notebook), entry)
            self._record(cand, entry)
            missed += 1
        if missed:
            self._warn(f"{missed} submission(s) were not graded: {why}. They are `infra_error` in the report; "
                       "rerun the same command to grade them (what was graded is skipped)")


def grade(options: Options) -> dict:
    """Grade everything in `options.source`; return the report (also written to disk)."""
    return Coordinator(options).run()
