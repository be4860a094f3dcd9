"""One lock drives make, CI, Binder and environment.yml: do they agree?"""
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tapelab.paths import REPO

sys.path.insert(0, str(REPO / "tools"))
from lock import DEV_MARKER, course_section  # noqa: E402

LOCK = (REPO / "requirements.lock").read_text()


def _pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            name = name.split("[")[0]  # psycopg[binary] is locked as psycopg (+ psycopg-binary)
            pins[name.lower().replace("_", "-").replace(".", "-")] = version.strip()
    return pins


def test_binder_requirements_are_the_course_part_of_the_lock():
    """Is binder/requirements.txt exactly the lock's course section, dev tools excluded?"""
    assert (REPO / "binder" / "requirements.txt").read_text() == course_section(LOCK)
    assert "pytest" not in _pins(course_section(LOCK))


def test_top_level_pins_are_in_the_lock():
    """Does every pin of pyproject.toml's extras appear in the lock with the same version, in the right section
    (the `course` extra in the course section), with no base dependency outside them?"""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    course, rest = LOCK.split(DEV_MARKER)
    extras = project["optional-dependencies"]
    for section, requirements in ((course, extras["course"]), (rest, extras["cluster"] + extras["dev"])):
        assert _pins("\n".join(requirements)).items() <= _pins(section).items()
    assert project["dependencies"] == []  # the base install is the linter alone (tests/lint/test_light_install.py)


def test_python_version_agrees_everywhere():
    """Do Binder's runtime, environment.yml and pyproject.toml all ask for Python 3.11?"""
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    assert "- python=3.11" in (REPO / "environment.yml").read_text()
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"] == ">=3.11,<3.12"
    assert sys.version_info[:2] == (3, 11)


def test_environment_yml_installs_the_lock_and_the_package():
    """Does environment.yml install from the same lock file, plus tapelab and its answers (a self-study
    install, like make's venv and Binder)?"""
    lines = [line.strip() for line in (REPO / "environment.yml").read_text().splitlines()]
    assert {"- -r requirements.lock", "- -e .", "- -e ./answers"} <= set(lines)


def test_the_running_environment_matches_the_lock():
    """Is every locked package installed at exactly its locked version (make built .venv from it)?"""
    installed = {d.metadata["Name"].lower().replace("_", "-").replace(".", "-"): d.version
                 for d in metadata.distributions()}
    wrong = {name: (version, installed.get(name)) for name, version in _pins(LOCK).items()
             if installed.get(name) != version}
    assert not wrong, f"installed versions differ from requirements.lock (locked, installed): {wrong}"


def test_binder_start_script_quiets_tensorflow():
    """Does Binder's start script set TensorFlow's log variables and then run the server command?"""
    start = (REPO / "binder" / "start").read_text()
    assert "TF_CPP_MIN_LOG_LEVEL=2" in start and "TF_ENABLE_ONEDNN_OPTS=0" in start and 'exec "$@"' in start


def test_repo2docker_plans_its_build_from_binder():
    """Does repo2docker (without building) plan to install binder/requirements.txt, run postBuild and use start?"""
    r2d = Path(sys.executable).parent / "repo2docker"
    result = subprocess.run([str(r2d), "--no-build", "--debug", str(REPO)], capture_output=True, text=True,
                            timeout=300)
    plan = result.stdout + result.stderr
    assert result.returncode == 0, plan[-2000:]
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in plan
    assert "./binder/postBuild" in plan and "binder/start" in plan
    assert "python=3.11" in plan


@pytest.mark.parametrize("target", ["lab", "test"])
def test_makefile_builds_the_venv_from_the_lock(target):
    """Do both README commands depend on the venv that is installed from requirements.lock?"""
    makefile = (REPO / "Makefile").read_text()
    assert f"\n{target}: venv" in makefile
    recipe = makefile.split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert "pip install --python $(BIN)/python -q --compile-bytecode -r requirements.lock" in recipe
