"""Student notebooks are generated, not edited: no drift from solutions/, and nothing leaks."""
import re

import nbformat
import pytest

from tapelab.paths import NOTEBOOKS, SOLUTIONS, assignment_names
from tapelab.release import ReleaseError, release

NAMES = assignment_names()
_REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)


@pytest.fixture(scope="module")
def fresh_release(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebooks")
    release(out=out)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_release_reproduces_committed_notebooks(fresh_release, name):
    """Does regenerating from solutions/ give exactly the committed notebooks/ (run `make release` if not)?"""
    fresh = nbformat.read(fresh_release / f"{name}.ipynb", as_version=4)
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    stale = [f.get("id") for f, c in zip(fresh.cells, committed.cells) if f != c]
    assert fresh == committed, f"notebooks/{name}.ipynb is stale (cells {stale}): run `make release`, commit it"


def test_every_solution_has_a_student_notebook_and_no_strays():
    """Is there one student notebook per solution notebook, and nothing else in notebooks/?"""
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == NAMES


def _split(name):
    """(secret lines, public text) of a solution notebook: solution and hidden-test lines, the rest."""
    nb = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
    public = "\n".join(_REGION.sub("", cell.source) for cell in nb.cells)
    secrets = {line.strip() for cell in nb.cells for _, body in _REGION.findall(cell.source)
               for line in body.splitlines() if len(line.strip()) > 12}
    return secrets, public


SECRETS = {line for name in NAMES for line in _split(name)[0]}


@pytest.mark.parametrize("name", NAMES)
def test_no_solution_or_hidden_test_leaks_into_notebooks(name):
    """Does a student notebook contain a line of any solution or hidden test that its own teaching text does not show?"""
    assert _split(name)[0], "found no solution regions: the leak check would be vacuous"
    text = (NOTEBOOKS / f"{name}.ipynb").read_text()
    public = _split(name)[1]
    leaked = sorted(line for line in SECRETS if line in text and line not in public)
    assert not leaked, f"notebooks/{name}.ipynb contains: {leaked}"
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text


@pytest.mark.parametrize("name", NAMES)
def test_student_notebooks_have_no_outputs(name):
    """Are the released notebooks free of stored outputs (answers could hide in them)?"""
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_release_of_an_unknown_notebook_names_the_choices(tmp_path):
    """Does releasing a notebook that does not exist fail with the known names, writing nothing?"""
    with pytest.raises(ReleaseError, match="Known notebooks: 01_basic_tape"):
        release(["99_nothing"], out=tmp_path)
    assert not list(tmp_path.iterdir())


def _checkout(root, full: bool):
    """A copy of the repository's parts a release reads (`full`), or only what marks a tapelab checkout."""
    import shutil

    from tapelab.paths import REPO

    root.mkdir()
    shutil.copy(REPO / "pyproject.toml", root)
    if not full:
        (root / "solutions").mkdir()
        return root
    for part in ("src", "solutions", "grader", "answers", "notebooks"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return root


def test_release_writes_into_the_checkout_it_is_run_in_and_refuses_another(tmp_path):
    """With two checkouts, does `tapelab release` run from a folder inside the one tapelab is installed from
    write there, and, run from the other (or with --repo naming it), refuse (exit 2) naming both, writing nothing?"""
    import os
    import subprocess
    import sys

    installed, other = _checkout(tmp_path / "a", full=True), _checkout(tmp_path / "b", full=False)
    name = NAMES[0]
    (installed / "notebooks" / f"{name}.ipynb").unlink()
    env = {**os.environ, "PYTHONPATH": str(installed / "src")}

    def release_in(cwd, *args):
        return subprocess.run([sys.executable, "-m", "tapelab.cli", "release", name, *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)

    for refused in (release_in(other), release_in(installed / "notebooks", "--repo", str(other))):
        assert refused.returncode == 2, refused.stderr
        assert str(other) in refused.stderr and str(installed) in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in other.iterdir()) == ["pyproject.toml", "solutions"]
    assert not (installed / "notebooks" / f"{name}.ipynb").exists()

    done = release_in(installed / "notebooks")
    assert done.returncode == 0, done.stderr
    fresh = nbformat.read(installed / "notebooks" / f"{name}.ipynb", as_version=4)
    assert fresh == nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
