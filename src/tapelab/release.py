"""Generate student notebooks from solutions/ with nbgrader's generate_assignment.

Each solution notebook is its own assignment, named like the notebook, so an instructor can
release them one at a time. The student version has solutions stubbed, hidden tests removed,
outputs cleared and grade cells locked with checksums, as nbgrader needs for autograding; its
test cells are tagged `raises-exception`, so Run All goes past an exercise that fails its check.

A grading course also gets an nbgrader exchange in its own folder (EXCHANGE_CONFIG, in
grader/nbgrader_config.py), and every assignment released into it (`release_to_exchange`):
formgrader then lists the assignments as released, and `nbgrader release_feedback` has a place
to put feedback. The release runs nbgrader's exchange class in this process: a file copy per
notebook, where `nbgrader release_assignment` in a subprocess costs about 3 s of CPU each.
`tapelab release` works in a temporary course and skips it.

The course setting `answers` (`c.TapelabCourse.answers` in the course's nbgrader_config.py, or
`tapelab release --answers`) decides what students may see of the answers (tapelab.checker.answers): a
locked course gets the lock in each notebook's setup cell. `tapelab release` also writes the
answers distribution's data (tapelab.release_answers), which only self-study installs include, and the checks'
expected values (tapelab.release_expected): the hidden tests' go into the course's source notebooks only.
"""
from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import nbformat
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from tapelab.errors import UsageError
from tapelab.checker.answers import SELF_STUDY, Lock, parse_setting
from tapelab.paths import GRADER, NOTEBOOKS, SOLUTIONS, assignment_names
from tapelab.release_answers import derive_answers, lock_setup_cell, write_answers
from tapelab.release_predictions import empty_predictions
from tapelab.release_variants import PER_STUDENT, VARIANTS_CONFIG, course_salt, parse_variants, variants_setup_cell
from tapelab.release_expected import HIDDEN, derive_expected, exercise_tests, inline_hidden, write_expected

__all__ = ["ANSWERS_CONFIG", "EXCHANGE_CONFIG", "LATENESS_CONFIG", "ReleaseError", "answers_lock", "check_owned", "course_config",
           "exchange_outbound", "nbgrader_env", "prepare_course", "release", "release_to_exchange", "tag_test_cells",
           "TEST_CELL_TAG", "write_course_config"]

TEST_CELL_TAG = "raises-exception"

CONFIG_FILE = "nbgrader_config.py"
# The lines of grader/nbgrader_config.py that put the exchange in the course folder; appended to the
# config of a course set up before they existed (tapelab.grading.course.ensure_exchange). The path is
# found from the config file itself, so a course folder that is moved or copied keeps its exchange.
EXCHANGE_CONFIG = '''\
# The nbgrader exchange lives in the course folder, private like it: formgrader lists the released
# assignments, and `nbgrader release_feedback NAME` copies feedback into exchange/<course_id>/feedback/.
import os  # noqa: E402

c.Exchange.root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")
'''

# The late policy of a grading course (tapelab.grading.grades.lateness): `nbgrader autograde` and `tapelab grade`
# price lateness with the same plugin; deadlines are the assignments' duedates in the gradebook.
LATENESS_CONFIG = '''\
# Late policy: a penalty for a notebook submitted after its assignment's duedate (plus the student's
# extension), stored by nbgrader as late_submission_penalty. penalty_method: none, zero or per_day.
c.AssignLatePenalties.plugin_class = "tapelab.grading.grades.lateness.LatePenalty"
c.LatePenalty.penalty_method = "per_day"
c.LatePenalty.percent_per_day = 10.0
c.LatePenalty.grace_minutes = 0.0
'''


# What students may see of the answers (tapelab.checker.answers), written into a course's config when the release is
# given a setting; otherwise the setting of grader/nbgrader_config.py holds, and without one, self-study.
ANSWERS_CONFIG = '''\
# Answers (solution() and the last hint): "self-study", "locked-until:YYYY-MM-DD" or "locked". A locked
# release writes the lock into each student notebook's setup cell; leave the tapelab-answers
# distribution out of the students' environment until the answers may be seen.
c.TapelabCourse.answers = {setting!r}
'''


class ReleaseError(UsageError, RuntimeError):
    """generate_assignment failed or the input is not a course notebook."""


def nbgrader_env() -> dict[str, str]:
    """The environment nbgrader subprocesses need: the venv's bin/ on PATH (alembic), quiet TF."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    return env


def prepare_course(course: Path, names: list[str], solutions: Path = SOLUTIONS, db_url: str | None = None,
                   exchange: bool = True, say: Callable[[str], None] = lambda message: None,
                   answers: str | None = None, variants: str | None = None) -> None:
    """Lay out an nbgrader course in `course`: config, source/<name>/<name>.ipynb, gradebook.

    `db_url` (any SQLAlchemy URL) is written into the course's config, so that every nbgrader
    command run there uses that gradebook; by default it is gradebook.db in the folder.
    `answers` (a setting of tapelab.checker.answers) and `variants` (tapelab.release_variants) are written there
    too; by default the config's own hold.
    `exchange` releases every assignment into the course's exchange (off for `tapelab release`).
    `say` is told before each notebook (a few seconds each).
    """
    write_course_config(course, db_url, answers, variants)
    lock = answers_lock(course)  # before any notebook: a bad setting stops the set-up at once
    salt = variants_salt(course)
    for number, name in enumerate(names, 1):
        source = solutions / f"{name}.ipynb"
        if not source.is_file():
            known = ", ".join(assignment_names(solutions)) or "none"
            raise ReleaseError(f"No solution notebook `{source}`. Known notebooks: {known}.")
        target = course / "source" / name
        target.mkdir(parents=True, exist_ok=True)
        tag_test_cells(source, target / f"{name}.ipynb", lock, salt)
        say(f"generating the student version of {name} ({number} of {len(names)}) with nbgrader")
        _run_nbgrader(["generate_assignment", name, "--force"], course)
    if exchange:
        release_to_exchange(course, names)


def write_course_config(course: Path, db_url: str | None = None, answers: str | None = None,
                        variants: str | None = None) -> None:
    """Write the course's nbgrader_config.py: grader/nbgrader_config.py, the late policy, then the gradebook
    URL and the answers and variants settings when they are given (a bad setting raises ReleaseError, writing
    nothing)."""
    if answers is not None:
        _parse_answers(answers)
    if variants is not None:
        _parse_variants(variants)
    course.mkdir(parents=True, exist_ok=True)
    config = f"{(GRADER / CONFIG_FILE).read_text()}\n{LATENESS_CONFIG}"
    if db_url:
        config += f"\n# The gradebook of this course (set by `tapelab grade --db`).\nc.CourseDirectory.db_url = {db_url!r}\n"
    if answers is not None:
        config += f"\n{ANSWERS_CONFIG.format(setting=answers)}"
    if variants is not None:
        config += f"\n{VARIANTS_CONFIG.format(setting=variants)}"
    (course / CONFIG_FILE).write_text(config)


def tag_test_cells(source: Path, target: Path, lock: Lock | None = None, salt: str | None = None) -> None:
    """Copy a solution notebook to `target` with every locked test cell tagged `raises-exception`, the
    course's answers `lock` and, with per-student variants, the call that gives them (`salt`) in its setup cell
    (tapelab.release_answers.lock_setup_cell, tapelab.release_variants), the stored expected values of its
    hidden tests in their calls (tapelab.release_expected.inline_hidden), and every prediction emptied
    (tapelab.release_predictions: the student makes their own).

    A failing check raises, and JupyterLab's Run All stops at the first cell that raises, so one
    untouched exercise would keep every later cell (widgets included) from running. For a cell with
    this tag JupyterLab asks the kernel not to stop on its error (`stop_on_error` false), so Run All
    goes on; the cell still ends in an error output, which nbgrader scores as failed. The tag is set
    on the course's source, so the gradebook, the release and every student copy agree on it.
    """
    nb = nbformat.read(source, as_version=4)
    for cell in exercise_tests(nb):
        tags = cell.metadata.setdefault("tags", [])
        if TEST_CELL_TAG not in tags:
            tags.append(TEST_CELL_TAG)
    try:
        empty_predictions(nb)
        lock_setup_cell(nb, lock)
        if salt is not None:
            variants_setup_cell(nb, salt)
        inline_hidden(nb, source.parent / HIDDEN / f"{source.stem}.json")
    except ValueError as error:
        raise ReleaseError(f"{source.name}: {error}") from None
    nbformat.write(nb, target)


def check_owned(course: Path) -> None:
    """Refuse a course whose config this process would run as code on another user's word.

    nbgrader executes the course's nbgrader_config.py. It runs here only when the config (not a link), the course
    folder and every folder above (links resolved) are owned by this user or root, and writable by no one else
    (a folder with the sticky bit, like /tmp, may be writable by all: no one renames another's entry).
    Root grading a course that an instructor can write would run the instructor's code as root.
    """
    me = os.geteuid()
    real = course.resolve()
    config = real / CONFIG_FILE
    for path in (config, real, *real.parents):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            if path == config:
                return  # no config: nbgrader's defaults, nothing of anyone's runs
            raise
        sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
        problem = ("is a symbolic link" if stat.S_ISLNK(info.st_mode)
                   else f"belongs to uid {info.st_uid}, not to you (uid {me}) or root" if info.st_uid not in (me, 0)
                   else "is writable by other users" if info.st_mode & 0o022 and not sticky else None)
        if problem:
            raise ReleaseError(
                f"Course folder {course}: {path} {problem}, so its {CONFIG_FILE} could run another user's code as "
                f"yours. Grade a copy that you own (`cp -r {course} <new folder>`), or make {path} yours and closed "
                f"(`chown {me} {path}` and `chmod go-w {path}`), then rerun.")


def _run_nbgrader(args: list[str], course: Path) -> None:
    # -P: the course folder (the working directory) is not put on sys.path, so no file in it is imported.
    result = subprocess.run([sys.executable, "-P", "-m", "nbgrader", *args], cwd=course, env=nbgrader_env(),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise ReleaseError(f"`nbgrader {' '.join(args)}` failed in {course}:\n{result.stdout}{result.stderr}")


def answers_lock(course: Path) -> Lock | None:
    """The lock of the course's setting `c.TapelabCourse.answers` (None: self-study, also when it is unset)."""
    setting = course_config(course).TapelabCourse.get("answers", SELF_STUDY)
    return _parse_answers(setting, f"c.TapelabCourse.answers in {course / CONFIG_FILE}")


def variants_salt(course: Path) -> str | None:
    """The salt of the course's per-student variants (tapelab.release_variants), or None when every student gets
    the notebook's numbers (the setting `c.TapelabCourse.variants`, "notebook" when unset)."""
    where = f"c.TapelabCourse.variants in {course / CONFIG_FILE}"
    if _parse_variants(course_config(course).TapelabCourse.get("variants", "notebook"), where) != PER_STUDENT:
        return None
    try:
        return course_salt(course)
    except (OSError, ValueError) as error:
        raise ReleaseError(f"{course}: the course's variants secret: {error}") from None


def _parse_variants(setting: object, where: str = "") -> str:
    try:
        return parse_variants(setting)
    except ValueError as error:
        raise ReleaseError(f"{where}: {error}" if where else str(error)) from None


def _parse_answers(setting: object, where: str = "") -> Lock | None:
    try:
        return parse_setting(str(setting))
    except ValueError as error:
        raise ReleaseError(f"{where}: {error}" if where else str(error)) from None


def course_config(course: Path) -> Config:
    """The course's nbgrader_config.py as nbgrader reads it, rooted at `course`, once `check_owned` allows it."""
    check_owned(course)
    config = PyFileConfigLoader(CONFIG_FILE, path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    return config


def _quiet_log() -> logging.Logger:
    """A logger for nbgrader's exchange classes: their failures come back as ExchangeError, not as log lines."""
    log = logging.getLogger("tapelab.release.exchange")
    log.propagate = False
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    return log


def exchange_outbound(course: Path, config: Config) -> Path | None:
    """exchange/<course_id>/outbound/ of a course whose exchange is a folder inside `course`, else None
    (an exchange elsewhere is shared with students: releasing into it is the instructor's decision)."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeFactory

    coursedir = CourseDirectory(config=config)
    root = getattr(ExchangeFactory(config=config).ReleaseAssignment(coursedir=coursedir, config=config), "root", None)
    if not isinstance(root, str) or not coursedir.course_id:
        return None
    root_path = Path(root).resolve()
    if not root_path.is_relative_to(course.resolve()):
        return None
    return root_path / coursedir.course_id / "outbound"


def release_to_exchange(course: Path, assignments: Iterable[str]) -> list[str]:
    """Release each assignment not yet in the course's exchange, as `nbgrader release_assignment` does;
    return the ones released. Does nothing when the exchange is not inside `course`."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError, ExchangeFactory

    config = course_config(course)
    outbound = exchange_outbound(course, config)
    if outbound is None:
        return []
    released = []
    for name in sorted(set(assignments)):
        if (outbound / name).is_dir():
            continue
        coursedir = CourseDirectory(config=config, assignment_id=name)
        try:
            ExchangeFactory(config=config).ReleaseAssignment(coursedir=coursedir, config=config,
                                                            log=_quiet_log()).start()
        except (ExchangeError, OSError) as error:
            raise ReleaseError(f"releasing {name} into the exchange {outbound.parent.parent} failed ({error}): "
                               f"run `nbgrader release_assignment {name} --force` in {course} to see why") from None
        released.append(name)
    return released


def release(names: list[str] | None = None, out: Path = NOTEBOOKS, solutions: Path = SOLUTIONS,
            answers: str | None = None, answer_data: Path | None = None,
            expected_data: Path | None = None) -> list[Path]:
    """Write the student version of each named notebook (default: all) into `out`, with the answers
    setting `answers` applied (default: grader/nbgrader_config.py's, else self-study); with `answer_data`,
    also the answers distribution's data of those notebooks into that folder; with `expected_data`, first the
    checks' expected values (the visible cases' into that folder, the hidden ones' into solutions/expected/).
    Return the paths written."""
    names = names or assignment_names(solutions)
    written = []
    if expected_data:
        try:
            expected = {name: derive_expected(name, solutions) for name in names}
        except ValueError as error:
            raise ReleaseError(str(error)) from None
        for name, (visible, hidden) in expected.items():
            written += write_expected(name, visible, hidden, expected_data, solutions)
    with tempfile.TemporaryDirectory(prefix="tapelab-release-") as tmp:
        course = Path(tmp)
        prepare_course(course, names, solutions, exchange=False, answers=answers)
        try:  # derived before anything is written, so that a missing text stops the release cleanly
            derived = {name: derive_answers(name, solutions) for name in names} if answer_data else {}
        except ValueError as error:
            raise ReleaseError(str(error)) from None
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            target = out / f"{name}.ipynb"
            shutil.copy(course / "release" / name / f"{name}.ipynb", target)
            written.append(target)
    if answer_data:
        written += write_answers(derived, answer_data)
    return written
