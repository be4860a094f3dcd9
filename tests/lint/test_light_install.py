"""The base install is the linter alone, as the pre-commit hook gets it (`language: python`: pip installs the
repository): no TensorFlow, nbgrader or JupyterLab, which are the `course` extra.

Proved in a clean virtual environment without network: a wheel of this checkout (built by this interpreter's
setuptools, without build isolation, from a copy so the checkout gets no build/ folder), installed with
`--no-index` and no configuration, which succeeds only if the wheel requires nothing outside its extras.
"""
import email
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tapelab.cli.main import VERBS
from tapelab.paths import REPO

COURSE_ONLY = ("tensorflow", "keras", "numpy", "nbgrader", "nbformat", "jupyterlab", "notebook", "jsonschema")
# Every verb but lint, with arguments that get it past argparse (DIR: an empty folder).
COURSE_VERBS = {
    "release": ["--out", "DIR"],
    "grade": ["DIR"],
    "feedback": ["--course", "DIR"],
    "insight": ["--course", "DIR"],
    "export": ["long", "--course", "DIR"],
    "review": ["1.2", "--course", "DIR"],
    "copies": ["--course", "DIR"],
}
STEP = ("import tensorflow as tf\nx = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\n"
        "print(tape.gradient(y, x))\n")


def _offline() -> dict[str, str]:
    """The environment without this run's PYTHONPATH and with pip reading no configuration (no index, no
    find-links, no constraints)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    return dict(env, PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")


def _run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=_offline(), timeout=120,
                          **kwargs)


@pytest.fixture(scope="module")
def light(tmp_path_factory) -> dict:
    """A clean venv with this checkout's wheel installed by `pip install --no-index`: its paths and the wheel."""
    tmp = tmp_path_factory.mktemp("light")
    project = tmp / "project"
    shutil.copytree(REPO / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-index", "--no-deps", "--no-build-isolation",
                  "-w", tmp / "dist", project])
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp / "dist").glob("tapelab-*.whl")
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv])  # the base interpreter, no site packages
    assert made.returncode == 0, made.stderr
    installed = _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q",
                      "--no-index", wheel])  # with dependencies: any required one would fail here
    assert installed.returncode == 0, installed.stderr
    (tmp / "step.py").write_text(STEP)
    (tmp / "empty").mkdir()
    return {"bin": venv / "bin", "wheel": wheel, "tmp": tmp}


def test_the_wheel_requires_nothing_outside_its_extras(light):
    """Does the wheel's METADATA list every Requires-Dist under an extra, with TensorFlow and nbgrader in
    `course` (so `pip install 'tapelab[course]'` still gets the course)?"""
    with zipfile.ZipFile(light["wheel"]) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(wheel.read(name))
    requires = metadata.get_all("Requires-Dist")
    assert [r for r in requires if "extra ==" not in r] == []
    course = {r.split("==")[0] for r in requires if r.endswith('extra == "course"')}
    assert {"tensorflow-cpu", "nbgrader", "jupyterlab"} <= course


def test_lint_runs_where_the_course_packages_are_not_installed(light):
    """In the clean venv, is none of TensorFlow, Keras, NumPy, nbgrader, JupyterLab, jsonschema importable, and
    does `tapelab lint FILE` still print the file's finding and exit 1?"""
    probe = "import importlib.util, sys; print([m for m in sys.argv[1:] if importlib.util.find_spec(m)])"
    found = _run([light["bin"] / "python", "-c", probe, *COURSE_ONLY])
    assert found.returncode == 0 and found.stdout.strip() == "[]", found.stdout + found.stderr
    linted = _run([light["bin"] / "tapelab", "lint", light["tmp"] / "step.py"])
    assert linted.returncode == 1, linted.stderr
    assert "step.py:5:24: TPL101 [not-watched]" in linted.stdout and linted.stderr == ""


def test_every_other_verb_names_the_course_extra(light):
    """Without the course's packages, does each verb other than lint still print its --help, and when run exit 2
    with one line naming the missing package and `pip install 'tapelab[course]'`, not a traceback?"""
    assert set(COURSE_VERBS) == set(VERBS) - {"lint"}
    for verb, arguments in COURSE_VERBS.items():
        helped = _run([light["bin"] / "tapelab", verb, "--help"])
        assert helped.returncode == 0 and helped.stdout.startswith(f"usage: tapelab {verb}"), helped.stderr
        ran = _run([light["bin"] / "tapelab", verb, *[light["tmp"] / "empty" if a == "DIR" else a
                                                      for a in arguments]], cwd=light["tmp"])
        assert ran.returncode == 2, (verb, ran.stderr)
        said = ran.stderr.strip()
        assert said.startswith(f"tapelab {verb}: needs the package `") and "\n" not in said, said
        assert "pip install 'tapelab[course]'" in said
