"""The nbgrader course the grader works in: its config, gradebook URL, released notebooks.

A missing or empty course folder is set up from solutions/ (`prepare_course`), so a new
instructor needs only the submissions. A marker file says "started" before the set-up and
"complete" (written atomically) after it: a set-up killed half way is noticed by the next run,
which clears the folder and sets it up again, instead of grading against half a course. A folder
without the marker is an nbgrader course made by hand, used as it is. The folder is made private
(mode 0700): it holds the gradebook and the source notebooks with hidden tests, and it must be
writable (checked by a real probe before anything else). One `tapelab grade` at a time works in a
course folder (a lock file); graders who work at once use a folder each and a shared gradebook.
"""
from __future__ import annotations

import ast
import fcntl
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from traitlets.config import Config

from tapelab.errors import UsageError
from tapelab.grading.gradebook import GradebookError, check_url, first_use, inspect_gradebook, redact, setup_lock
from tapelab.grading.records import Unwritable, atomic_write_text, check_writable
from tapelab.paths import assignment_names
from tapelab.release import CONFIG_FILE, course_config

__all__ = ["Course", "CourseError", "ensure_exchange", "follow_moves", "open_course"]

LOCK_FILE = ".tapelab-grade.lock"
SETUP_MARKER = ".tapelab-setup"  # "started" while tapelab sets the folder up, "complete" after
# Import paths an earlier tapelab wrote into a course's config, and where those names live now.
MOVED_CONFIG_PATHS = {"tapelab.grading.lateness.LatePenalty": "tapelab.grading.grades.lateness.LatePenalty"}
OUTPUT_FOLDERS = ("submitted", "autograded", "feedback", "handback")


class CourseError(UsageError, ValueError):
    """The course folder is not usable (not an nbgrader course, nothing released)."""


@dataclass
class Course:
    """An nbgrader course folder, loaded once by the coordinator."""

    root: Path
    config: Config
    db_url: str
    known: dict[str, str] = field(default_factory=dict)  # notebook -> assignment
    lock: object = None  # the open lock file, held while this process grades here
    notes: list[str] = field(default_factory=list)  # what opening the folder did that the instructor should know
    set_up: bool = False  # this run released the notebooks into the folder (a new or interrupted course)
    exporter: object = field(default=None, repr=False, compare=False)  # feedback pages' (handback.page.feedback_exporter)

    def close(self) -> None:
        """Let another `tapelab grade` work in this folder."""
        if self.lock is not None:
            self.lock.close()
            self.lock = None

    def path(self, kind: str, student: str, assignment: str, notebook: str, ext: str = ".ipynb") -> Path:
        """submitted/, autograded/ or feedback/ path of one notebook, in nbgrader's layout."""
        return self.root / kind / student / assignment / f"{notebook}{ext}"

    def release_notebook(self, assignment: str, notebook: str) -> nbformat.NotebookNode:
        """The student version as released: the reference for tamper checks and restored cells."""
        return nbformat.read(self.root / "release" / assignment / f"{notebook}.ipynb", as_version=4)

    def _source_imports(self, assignment: str, notebook: str) -> list[ast.Import | ast.ImportFrom]:
        """Every import statement of the instructor's notebook (cells that do not parse are skipped)."""
        nb = nbformat.read(self.root / "source" / assignment / f"{notebook}.ipynb", as_version=4)
        found = []
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                continue
            found += [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
        return found

    def trusted_imports(self, assignment: str, notebook: str) -> list[str]:
        """The `tapelab` import statements of the instructor's notebook, re-run before each test."""
        lines: list[str] = []
        for node in self._source_imports(assignment, notebook):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [a.name for a in node.names] if not module else []
            if (module or "").startswith("tapelab") or any(n.startswith("tapelab") for n in names):
                statement = ast.unparse(node)
                if statement not in lines:
                    lines.append(statement)
        return lines

    def imported_packages(self, assignment: str, notebook: str) -> frozenset[str]:
        """The top-level packages the instructor's notebook imports (`import a.b`, `from a.b import c`: "a");
        the warm kernels of this notebook preload what they name (zygote.preload_for)."""
        roots = set()
        for node in self._source_imports(assignment, notebook):
            if isinstance(node, ast.ImportFrom):
                roots |= {node.module.split(".")[0]} if node.module and not node.level else set()
            else:
                roots |= {alias.name.split(".")[0] for alias in node.names}
        return frozenset(roots)


def _db_url(config: Config, root: Path) -> str:
    from nbgrader.coursedir import CourseDirectory

    return CourseDirectory(config=config).db_url or f"sqlite:///{root / 'gradebook.db'}"


def _lock(root: Path):
    handle = open(root / LOCK_FILE, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise CourseError(f"another `tapelab grade` is running in {root}: wait for it to finish, or let each "
                          "grader use a course folder of their own with one shared gradebook (--db)") from None
    return handle


def open_course(root: Path, notebooks: list[str] | None = None, db_url: str | None = None,
                say: Callable[[str], None] = lambda message: None) -> Course:
    """Load the course in `root`, setting it up from solutions/ first when it is missing or empty.

    `db_url` (`--db`) names the gradebook of a new course folder and is written into its config;
    an existing course keeps the gradebook its config names. `say` is told each step of a set-up.
    """
    root = root.resolve()
    if root.exists() and not root.is_dir():
        raise CourseError(f"--course {root} is a file: pass a folder (an empty one is set up for you)")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CourseError(f"--course {root} cannot be created ({error.strerror}): pass a folder in a place you "
                          "can write (an empty one is set up for you)") from None
    _check_writable(root)
    lock = _lock(root)
    try:
        course = _open_locked(root, notebooks, db_url, say)
    except (GradebookError, CourseError):
        lock.close()
        raise
    course.lock = lock
    return course


def _check_writable(root: Path) -> None:
    """Every folder of the course a run writes into takes a new file (probed, as root ignores modes)."""
    for folder in (root, *(root / name for name in OUTPUT_FOLDERS)):
        if folder.exists():
            try:
                check_writable(folder / LOCK_FILE, "the course folder")
            except Unwritable as error:
                raise CourseError(f"--course {root}: {error}") from None


def _setup_state(root: Path) -> str:
    """The folder's set-up: empty, started (and interrupted) or ready (complete, or an nbgrader course made by hand)."""
    if not any(p.name != LOCK_FILE for p in root.iterdir()):
        return "empty"
    marker = root / SETUP_MARKER
    if not marker.exists():
        return "ready"
    return "ready" if marker.read_text(errors="replace").strip() == "complete" else "started"


def _set_up(root: Path, notebooks: list[str] | None, db_url: str | None, say: Callable[[str], None]) -> None:
    """Release the solution notebooks into `root`, between the "started" and "complete" markers."""
    from tapelab.release import ReleaseError, prepare_course

    names = notebooks or assignment_names()
    if not names:
        raise CourseError("no solution notebooks to release in solutions/")
    atomic_write_text(root / SETUP_MARKER, "started\n")
    say(f"setting up the new course folder {root} from solutions/: releasing {len(names)} notebook(s) with "
        "nbgrader (several seconds each, once per course folder)")
    try:
        with setup_lock(db_url or f"sqlite:///{root / 'gradebook.db'}"):
            prepare_course(root, names, db_url=db_url, say=say)
    except ReleaseError as error:
        raise CourseError(str(error)) from None
    atomic_write_text(root / SETUP_MARKER, "complete\n")


def _clear_interrupted(root: Path) -> None:
    """Remove what an interrupted set-up left (nothing was graded there: grading waits for "complete")."""
    for path in root.iterdir():
        if path.name in (LOCK_FILE, SETUP_MARKER):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _open_locked(root: Path, notebooks: list[str] | None, db_url: str | None, say: Callable[[str], None]) -> Course:
    if db_url:
        check_url(db_url)
    notes = []
    state = _setup_state(root)
    if state == "started":
        _clear_interrupted(root)
        notes.append(f"the set-up of course folder {root} by an earlier run was interrupted before it completed: "
                     "it was cleared and set up again from solutions/")
    if state != "ready":
        if db_url:
            inspect_gradebook(db_url)
        os.chmod(root, 0o700)
        _set_up(root, notebooks, db_url, say)
    if not (root / CONFIG_FILE).is_file():
        raise CourseError(
            f"--course {root} is not an nbgrader course (no {CONFIG_FILE}): pass an empty or new "
            "folder to have one set up, or the folder where you ran `nbgrader generate_assignment`")
    os.chmod(root, 0o700)
    notes += follow_moves(root)
    config = course_config(root)
    configured = _db_url(config, root)
    if db_url and db_url != configured:
        raise CourseError(f"--db {redact(db_url)} is not the gradebook of {root}, which is {redact(configured)}: "
                          f"drop --db, set c.CourseDirectory.db_url in {root / CONFIG_FILE}, or pass an empty "
                          "--course folder to set up a new course on that gradebook")
    known = first_use(configured)
    if not known and any((root / "release").glob("*/*.ipynb")):
        raise CourseError(f"the gradebook {redact(configured)} of {root} is empty, but release/ holds released "
                          "notebooks: the gradebook was deleted or replaced. Restore it from a backup, or run "
                          "`nbgrader generate_assignment NAME --force` there for each notebook (grades are lost)")
    if not known:
        raise CourseError(f"the gradebook {redact(configured)} of {root} has no released notebooks: run "
                          "`nbgrader generate_assignment NAME` there, or start from an empty folder")
    exchange = ensure_exchange(root, known)
    if exchange:  # the config may have been extended
        notes += exchange
        config = course_config(root)
    return Course(root, config, configured, known, notes=notes, set_up=state != "ready")


def follow_moves(root: Path) -> list[str]:
    """Rewrite the import paths of MOVED_CONFIG_PATHS in the course's config (as written by an earlier
    tapelab) to where the names live now, so nbgrader finds them; return notes for the instructor."""
    config_file = root / CONFIG_FILE
    text = config_file.read_text()
    moved = {old: new for old, new in MOVED_CONFIG_PATHS.items() if repr(old) in text or f'"{old}"' in text}
    if not moved:
        return []
    for old, new in moved.items():
        text = text.replace(repr(old), repr(new)).replace(f'"{old}"', f'"{new}"')
    atomic_write_text(config_file, text, mode=config_file.stat().st_mode & 0o777)
    return [f"{config_file} named {old}, which this tapelab keeps at {new}: the config now names {new}"
            for old, new in moved.items()]


def ensure_exchange(root: Path, known: dict[str, str]) -> list[str]:
    """Give a course folder tapelab set up its nbgrader exchange, with every assignment of `known`
    (notebook -> assignment) released into it; return notes for the instructor.

    A folder set up before the exchange existed gets release.EXCHANGE_CONFIG appended to its config.
    A course made by hand, or one whose exchange is outside its folder (shared with students), is left
    alone. Cheap once done: the config is read and each assignment's outbound folder looked at.
    """
    from tapelab import release

    marker = root / SETUP_MARKER
    if not marker.is_file() or _setup_state(root) != "ready":
        return []
    notes = []
    config_file = root / CONFIG_FILE
    if "root" not in course_config(root).Exchange:
        atomic_write_text(config_file, f"{config_file.read_text()}\n{release.EXCHANGE_CONFIG}",
                          mode=config_file.stat().st_mode & 0o777)
        notes.append(f"{config_file} now puts an nbgrader exchange in {root / 'exchange'} (this course folder was "
                     "set up by an earlier tapelab), so `nbgrader release_feedback NAME` run there hands feedback back")
    try:
        released = release.release_to_exchange(root, known.values())
    except release.ReleaseError as error:
        return [*notes, f"{error}; until then formgrader lists that assignment as draft"]
    if released:
        notes.append(f"released {', '.join(released)} into the exchange in {root / 'exchange'} (private to the "
                     "course folder: students cannot fetch from it), so formgrader lists them as released")
    return notes
