"""`make hub` refuses a checkout whose answers other users can reach (issue 48, class 4), and hands files to a
user only through the user's own tar (grader/hub/users.py), so a link the user planted reaches nothing of root's;
its course's variants setting is one of tapelab's.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader" / "hub"))
import hubctl  # noqa: E402
from users import hand_over, open_to_others  # noqa: E402


@pytest.fixture
def tmp_path(tmp_path):
    """A folder every user can enter (pytest's own are root's alone), removed afterwards."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for place in ("solutions/expected", "answers/src"):
        (repo / place).mkdir(parents=True)
    (repo / "solutions" / "expected" / "01.json").write_text("{}")
    for folder in (tmp_path, repo, *repo.rglob("*")):
        os.chmod(folder, 0o755 if folder.is_dir() else 0o644)
    return repo


def test_an_open_checkout_stops_make_hub_with_the_fix(tmp_path, monkeypatch, capsys):
    repo = checkout(tmp_path)
    monkeypatch.setattr(hubctl, "REPO", repo)
    with pytest.raises(SystemExit):
        hubctl.check_checkout()
    error = capsys.readouterr().err
    assert f"{repo / 'solutions'}, {repo / 'answers'}" in error and "chmod o-rwx" in error


@pytest.mark.parametrize("closed", ["places", "checkout", "a folder above"])
def test_a_closed_checkout_passes(tmp_path, monkeypatch, closed):
    repo = checkout(tmp_path)
    monkeypatch.setattr(hubctl, "REPO", repo)
    targets = {"places": [repo / "solutions", repo / "answers"], "checkout": [repo], "a folder above": [tmp_path]}
    for path in targets[closed]:
        os.chmod(path, 0o750)
    assert not open_to_others(repo / "solutions")
    hubctl.check_checkout()


def test_hand_over_writes_as_the_user_so_a_planted_link_reaches_nothing_of_roots(tmp_path):
    """The user links the target's file to a root-only file; the hand-over writes through it as the user: refused."""
    if os.geteuid() != 0:
        pytest.fail("runs tar as another user: run as root, as CI does", pytrace=False)
    target = tmp_path / "home"
    target.mkdir()
    os.chown(target, 65534, 65534)  # nobody's
    victim = tmp_path / "root-only"
    victim.write_text("root's")
    os.chmod(victim, 0o600)
    (target / "report.json").symlink_to(victim)
    os.lchown(target / "report.json", 65534, 65534)
    source = tmp_path / "given"
    source.mkdir()
    (source / "report.json").write_text("from root")
    nobody = subprocess.run(["getent", "passwd", "65534"], capture_output=True, text=True).stdout.split(":")[0]
    try:
        hand_over(source, nobody, target)
    except SystemExit:
        pass  # tar may refuse, or replace the link: either way root's file is untouched
    assert victim.read_text() == "root's"


def test_the_hub_offers_the_course_settings_of_variants_per_student_first():
    """`make hub`'s `--variants` choices are tapelab's own settings, the per-student one the default."""
    from tapelab.release_variants import NOTEBOOK, PER_STUDENT

    assert hubctl.VARIANTS == (PER_STUDENT, NOTEBOOK)
