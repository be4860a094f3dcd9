"""Grade an answer in-process as a student's notebook does, and read a notebook's exercises.

A run executes the notebook's setup cell, the answer cell (with its source registered for
`inspect`, see answers.define), then the exercise's locked test cell: the visible part, then the
hidden part, with `tapelab.checker.exercise._user_namespace` pointed at that namespace (as
tests/exercises/test_checkers.py does). Like nbgrader, the test cell fails on any exception and
on any output to stderr; an error in the answer cell itself is recorded but not graded.

`grade_twice` grades an answer as a student sees it under `tapelab grade` (the checks recording, TAPELAB_RECORD=1)
and as the grader's judge does from those records alone (tapelab.checker.replay), to compare the two.
"""
from __future__ import annotations

import ast
import io
import os
import re
import signal
import threading
import time
import warnings
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

import tapelab.checker.exercise
from answers import define, exercise_named
from course import grade_cell_of
from tapelab.checker import replay
from tapelab.checker.messages import Feedback, NotAttempted
from tapelab.paths import SOLUTIONS
from tapelab.quiet import StderrFd

__all__ = ["Exercise", "Verdict", "HarnessError", "exercises", "grade", "grade_twice", "recorded"]

TIMEOUT = 120  # seconds, nbgrader's per-cell timeout in grader/nbgrader_config.py
_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*$")
_HIDDEN = "### BEGIN HIDDEN TESTS"


class HarnessError(RuntimeError):
    """A notebook the harness cannot judge: no setup cell, an answer without its test cell, ..."""


@dataclass(frozen=True)
class Exercise:
    """One exercise of a solution notebook, as the harness needs it."""

    notebook: str
    answer_id: str
    test_id: str
    reference: str  # the answer cell, solution markers removed (as answers.reference_answers)
    region: frozenset[int]  # lines of `reference` inside the solution region: what students write
    setup: str
    visible: str
    hidden: str


def exercises(notebook: str, solutions: Path = SOLUTIONS) -> list[Exercise]:
    """Every answer cell of `solutions/<notebook>.ipynb` with its test cell, in notebook order."""
    nb = nbformat.read(solutions / f"{notebook}.ipynb", as_version=4)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    setup = next((c.source for c in code_cells if c.get("id") == "setup"), None)
    if setup is None:
        raise HarnessError(f"{notebook}: no code cell with id `setup`.")
    graded = {c.metadata["nbgrader"].get("grade_id"): c.source for c in code_cells if "nbgrader" in c.metadata}
    found = []
    for cell in code_cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution"):
            continue
        answer_id = meta.get("grade_id", "")
        test_id = grade_cell_of(answer_id)
        if test_id == answer_id or test_id not in graded:
            raise HarnessError(f"{notebook}: answer cell `{answer_id}` has no test cell `{test_id}`.")
        reference, region = _strip_markers(cell.source)
        visible, marker, hidden = graded[test_id].partition(_HIDDEN)
        found.append(Exercise(notebook, answer_id, test_id, reference, region, setup, visible, marker + hidden))
    if not found:
        raise HarnessError(f"{notebook}: no answer cells (nbgrader solution cells).")
    return found


def _strip_markers(source: str) -> tuple[str, frozenset[int]]:
    kept, region, inside = [], set(), False
    for line in source.splitlines(True):
        marker = _MARKER.match(line.rstrip("\n"))
        if marker:
            inside = marker.group(1) == "BEGIN"
            continue
        kept.append(line)
        if inside:
            region.add(len(kept))
    # A cell without markers is all solution (nbgrader replaces the whole cell).
    return "".join(kept), frozenset(region or range(1, len(kept) + 1))


@dataclass(frozen=True)
class Verdict:
    """How the test cell ended for one answer.

    outcome: passed | incorrect | not_attempted (a tapelab Feedback) | raw_exception (anything
    else escaped the test cell: the student would see a traceback) | stderr (the checks passed but
    the cell wrote to stderr, which nbgrader scores zero) | timeout.
    """

    outcome: str
    part: str  # visible | hidden: the part of the test cell that failed ("" if passed)
    message: str
    answer_error: str = ""
    seconds: float = 0.0
    cause: str | None = None  # the cause code tapelab's feedback established (tapelab.causes), if any

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def visible_message(self) -> str:
        """What the visible test said, if it failed."""
        return self.message if self.part == "visible" else ""


class _Timeout(BaseException):
    """Raised by SIGALRM; a BaseException so that the checker's `except Exception` cannot wrap it."""


def grade(exercise: Exercise, code: str, label: str, timeout: float | None = TIMEOUT, seed: int | None = None) -> Verdict:
    """Run `code` as the answer of `exercise` and its whole test cell, checked against the variant of `seed`
    (None: the notebook's own numbers); return how the cell ended."""
    started = time.perf_counter()
    namespace: dict = {"__name__": "__main__"}
    answer_error = ""
    with redirect_stdout(io.StringIO()), _user_namespace(namespace), _deadline(timeout), \
            _variant(exercise.test_id.removesuffix("_test"), seed):
        try:
            exec(compile(exercise.setup, f"<setup {exercise.notebook}>", "exec"), namespace)
            try:
                define(code, f"{exercise.notebook}:{exercise.answer_id}:{label}", namespace)
            except Exception as error:  # an error in the answer cell is not graded; the test cell is
                answer_error = f"{type(error).__name__}: {error}"
            for part, source in (("visible", exercise.visible), ("hidden", exercise.hidden)):
                outcome, message, cause = _run_test_part(source, exercise.test_id, namespace)
                if outcome != "passed":
                    return Verdict(outcome, part, message, answer_error, time.perf_counter() - started, cause)
        except _Timeout:
            return Verdict("timeout", "", f"no result after {timeout} s", answer_error, time.perf_counter() - started)
    return Verdict("passed", "", "", answer_error, time.perf_counter() - started)


def grade_twice(exercise: Exercise, code: str, label: str, timeout: float | None = TIMEOUT,
                seed: int | None = None) -> tuple[Verdict, Verdict]:
    """(live, judged): `code` graded through the test cell with the checks recording (the outcome the student
    sees under `tapelab grade`), then each of the cell's `exN_M.check(...)` calls judged in order by
    `replay.judge` on a fresh checker from the records the live run left (the grader's outcome). A `seed` is
    written into the cell's check calls of an exercise that varies, as `tapelab.release_variants.pin` does: a
    recording check reads no practice variant."""
    if seed is not None:
        exercise = replace(exercise, visible=_seeded(exercise.visible, seed), hidden=_seeded(exercise.hidden, seed))
    live, records = recorded(exercise, code, label, timeout)
    with redirect_stdout(io.StringIO()), _deadline(timeout):
        try:
            return live, _judged(exercise, iter(records))
        except _Timeout:
            return live, Verdict("timeout", "", f"no judgement after {timeout} s")


def recorded(exercise: Exercise, code: str, label: str, timeout: float | None = TIMEOUT) -> tuple[Verdict, list[str]]:
    """`code` graded through the test cell with the checks recording, as in a grading kernel: the live verdict and
    the records the judge reads (`replay.taken`)."""
    replay.taken()  # the records of earlier checks in this process are no part of this answer's
    saved = os.environ.get(replay.ENV)
    os.environ[replay.ENV] = "1"
    try:
        return grade(exercise, code, label, timeout), replay.taken()
    finally:
        if saved is None:
            del os.environ[replay.ENV]
        else:
            os.environ[replay.ENV] = saved


def _judged(exercise: Exercise, records) -> Verdict:
    """The test cell's outcome from the records alone: the first check call the judge fails, or passed."""
    for part, source in (("visible", exercise.visible), ("hidden", exercise.hidden)):
        for name, kwargs in _check_calls(source):
            found = replay.judge(type(exercise_named(name))(), kwargs, next(records, None))
            if isinstance(found, NotAttempted):
                return Verdict("not_attempted", part, str(found))
            if isinstance(found, Feedback):
                return Verdict("incorrect", part, str(found), cause=found.cause)
    return Verdict("passed", "", "")


def _check_calls(source: str) -> list[tuple[str, dict]]:
    """(exercise name, keyword arguments) of each `exN_M.check(...)` call of a test part, in order."""
    calls = [node for node in ast.walk(ast.parse(source)) if _is_check(node)]
    if any(call.args for call in calls):
        raise HarnessError("a check call of the test cell passes a positional argument")
    return [(call.func.value.id, {k.arg: ast.literal_eval(k.value) for k in call.keywords})
            for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]


def _seeded(source: str, seed: int) -> str:
    """`source` with `seed=` added to each check call of an exercise that varies."""
    tree = ast.parse(source)
    for call in ast.walk(tree):
        if _is_check(call) and exercise_named(call.func.value.id).space.varies:
            call.keywords.append(ast.keyword("seed", ast.Constant(seed)))
    return ast.unparse(tree) + "\n" if source.strip() else source


def _is_check(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"
            and isinstance(node.func.value, ast.Name) and re.fullmatch(r"ex\d+_\d+", node.func.value.id) is not None)


def _run_test_part(source: str, test_id: str, namespace: dict) -> tuple[str, str, str | None]:
    if not source.strip():
        return "passed", "", None
    with _stderr() as written, warnings.catch_warnings(record=True) as caught:
        _kernel_warning_filters()
        try:
            exec(compile(source, f"<test {test_id}>", "exec"), namespace)
        except NotAttempted as feedback:
            return "not_attempted", str(feedback), None
        except Feedback as feedback:
            return "incorrect", str(feedback), feedback.cause
        except Exception as error:
            return "raw_exception", f"{type(error).__name__}: {error}", None
    noise = written[0] + "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    return ("stderr", noise.strip(), None) if noise.strip() else ("passed", "", None)


def _kernel_warning_filters() -> None:
    """Python's default warning filters, as in a fresh kernel: a warning shown goes to stderr."""
    warnings.simplefilter("default")
    for category in (PendingDeprecationWarning, ImportWarning, ResourceWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")


@contextmanager
def _variant(name: str, seed: int | None):
    """Check exercise `name` against the variant of `seed` (the setup cell binds the same checker), then go back
    to the notebook's own numbers."""
    if seed is None:  # the notebook's own numbers: nothing to set (a toy exercise has no checker to look up)
        yield
        return
    checker = exercise_named(name)
    checker._variant = checker.space.variant(seed)
    try:
        yield
    finally:
        checker._variant = None


@contextmanager
def _user_namespace(namespace: dict):
    saved = tapelab.checker.exercise._user_namespace
    tapelab.checker.exercise._user_namespace = lambda: namespace
    try:
        yield
    finally:
        tapelab.checker.exercise._user_namespace = saved


@contextmanager
def _stderr():
    """Collect what is written to stderr, by Python and at the file-descriptor level (TF's C++ logs), the
    latter with the checkers' own capture (tapelab.quiet.StderrFd)."""
    written = [""]
    buffer, fd = io.StringIO(), StderrFd()
    try:
        with fd, redirect_stderr(buffer):
            yield written
    finally:
        written[0] = buffer.getvalue() + "".join(f"{line}\n" for line in getattr(fd, "lines", []))


@contextmanager
def _deadline(seconds: float | None):
    """Raise _Timeout after `seconds` (main thread only; elsewhere no limit)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
