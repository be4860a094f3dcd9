"""A course whose nbgrader_config.py another user could write is refused before nbgrader runs it (issue 48,
class 1): `tapelab grade` as root on an instructor's course folder would run the instructor's code as root.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tapelab.release import CONFIG_FILE, ReleaseError, check_owned, course_config

OTHER = 61500  # a uid no one has


@pytest.fixture(autouse=True)
def as_root():
    """chowns files to another uid: as root, as CI runs (a skip would pass for nothing)."""
    if os.geteuid() != 0:
        pytest.fail("chowns files to another uid: run as root, as CI does", pytrace=False)


def course(tmp_path: Path) -> Path:
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / CONFIG_FILE).write_text("c = get_config()\nc.CourseDirectory.course_id = 'x'\n")
    return folder


def test_a_course_of_ones_own_is_read(tmp_path):
    assert course_config(course(tmp_path)).CourseDirectory.course_id == "x"


@pytest.mark.parametrize("attack", ["config_of_another", "folder_of_another", "config_writable_by_group",
                                    "folder_writable_by_all", "config_is_a_link", "parent_of_another"])
def test_a_config_another_user_could_write_is_refused_before_it_runs(tmp_path, attack):
    folder = course(tmp_path)
    config = folder / CONFIG_FILE
    ran = tmp_path / "ran"
    config.write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    if attack == "config_of_another":
        os.chown(config, OTHER, OTHER)
    elif attack == "folder_of_another":
        os.chown(folder, OTHER, OTHER)
    elif attack == "config_writable_by_group":
        os.chmod(config, 0o664)
    elif attack == "folder_writable_by_all":
        os.chmod(folder, 0o777)
    elif attack == "config_is_a_link":
        elsewhere = tmp_path / "elsewhere.py"
        config.rename(elsewhere)
        config.symlink_to(elsewhere)
    else:
        os.chown(tmp_path, OTHER, OTHER)
    with pytest.raises(ReleaseError) as refused:
        course_config(folder)
    assert not ran.exists()
    message = str(refused.value)
    assert str(folder) in message and ("chmod go-w" in message or "chown" in message), message


def test_tapelab_grade_as_root_refuses_an_instructors_course(tmp_path):
    """The command exits 2 and names the fix; the instructor's config never ran."""
    folder = course(tmp_path)
    ran = tmp_path / "ran"
    (folder / CONFIG_FILE).write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    os.chown(folder, OTHER, OTHER)
    os.chown(folder / CONFIG_FILE, OTHER, OTHER)
    (tmp_path / "in").mkdir()
    command = [sys.executable, "-m", "tapelab.cli", "grade", str(tmp_path / "in"), "--course", str(folder)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not to you" in result.stderr and not ran.exists()


def test_check_owned_passes_a_course_without_config(tmp_path):
    check_owned(tmp_path)  # nothing of anyone's would run
