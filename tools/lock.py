"""Rebuild requirements.lock from the top-level pins in pyproject.toml's extras.

The lock has two sections: the course (the `course` extra, what Binder installs; binder/requirements.txt is
a copy of it) and the rest: the multi-machine grader (`cluster`: Dask, PostgreSQL driver) and the dev tools
(`dev`). Each is the `pip freeze` of a fresh virtual environment. The base `dependencies` (empty: lint needs
none) would go into both.
"""
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV_MARKER = "# --- dev: the multi-machine grader's, maintainers' and CI's tools (not installed on Binder) ---"
HEADER = """\
# tapelab's one pinned lock: make, CI, Binder and environment.yml all install from it.
# Course section: what a student's JupyterLab needs (binder/requirements.txt is a copy of it).
# Regenerate with `make lock` after changing the top-level pins in pyproject.toml.
"""


def _key(line: str) -> str:
    return re.sub(r"[-_.]+", "-", line.split("==")[0]).lower()


def _freeze(requirements: list[str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "venv", tmp], check=True)
        pip = [f"{tmp}/bin/pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "install", *requirements], check=True)
        out = subprocess.run([*pip, "freeze"], check=True, capture_output=True, text=True).stdout
    return {_key(line): line for line in out.splitlines() if "==" in line}


def main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    course = _freeze(project["dependencies"] + extras["course"])
    full = _freeze(project["dependencies"] + extras["course"] + extras["cluster"] + extras["dev"])
    drift = {k: (course[k], full[k]) for k in course if course[k] != full.get(k)}
    if drift:
        sys.exit(f"dev tools change course pins, adjust pyproject.toml: {drift}")
    dev = sorted(set(full) - set(course))
    text = HEADER + "\n" + "\n".join(course[k] for k in sorted(course))
    text += "\n\n" + DEV_MARKER + "\n" + "\n".join(full[k] for k in dev) + "\n"
    (ROOT / "requirements.lock").write_text(text)
    (ROOT / "binder" / "requirements.txt").write_text(course_section(text))


def course_section(lock_text: str) -> str:
    """The course part of the lock, as Binder installs it."""
    body = lock_text.split(DEV_MARKER)[0]
    pins = [line for line in body.splitlines() if line and not line.startswith("#")]
    return "# Generated from requirements.lock by `make lock`; do not edit.\n" + "\n".join(pins) + "\n"


if __name__ == "__main__":
    main()
