"""Generate student notebooks from solutions/ with nbgrader's generate_assignment.

Each solution notebook is its own assignment, named like the notebook, so an instructor can
release them one at a time. The student version has solutions stubbed, hidden tests removed,
outputs cleared and grade cells locked with checksums, as nbgrader needs for autograding.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tapelab.paths import GRADER, NOTEBOOKS, SOLUTIONS, assignment_names

__all__ = ["ReleaseError", "release", "prepare_course"]


class ReleaseError(RuntimeError):
    """generate_assignment failed or the input is not a course notebook."""


def nbgrader_env() -> dict[str, str]:
    """The environment nbgrader subprocesses need: the venv's bin/ on PATH (alembic), quiet TF."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    return env


def prepare_course(course: Path, names: list[str], solutions: Path = SOLUTIONS, db_url: str | None = None) -> None:
    """Lay out an nbgrader course in `course`: config, source/<name>/<name>.ipynb, gradebook.

    `db_url` (any SQLAlchemy URL) is written into the course's config, so that every nbgrader
    command run there uses that gradebook; by default it is gradebook.db in the folder.
    """
    course.mkdir(parents=True, exist_ok=True)
    config = (GRADER / "nbgrader_config.py").read_text()
    if db_url:
        config += f"\n# The gradebook of this course (set by `tapelab grade --db`).\nc.CourseDirectory.db_url = {db_url!r}\n"
    (course / "nbgrader_config.py").write_text(config)
    for name in names:
        source = solutions / f"{name}.ipynb"
        if not source.is_file():
            known = ", ".join(assignment_names(solutions)) or "none"
            raise ReleaseError(f"No solution notebook `{source}`. Known notebooks: {known}.")
        target = course / "source" / name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target / f"{name}.ipynb")
        _run_nbgrader(["generate_assignment", name, "--force"], course)


def _run_nbgrader(args: list[str], course: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=nbgrader_env(),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise ReleaseError(f"`nbgrader {' '.join(args)}` failed in {course}:\n{result.stdout}{result.stderr}")


def release(names: list[str] | None = None, out: Path = NOTEBOOKS, solutions: Path = SOLUTIONS) -> list[Path]:
    """Write the student version of each named notebook (default: all) into `out`; return the paths."""
    names = names or assignment_names(solutions)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="tapelab-release-") as tmp:
        course = Path(tmp)
        prepare_course(course, names, solutions)
        for name in names:
            target = out / f"{name}.ipynb"
            shutil.copy(course / "release" / name / f"{name}.ipynb", target)
            written.append(target)
    return written
