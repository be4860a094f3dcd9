"""`tapelab grade` on a course whose disk fills: one line says so, the previous report.json is kept whole,
what was not graded is named, and a rerun after freeing space grades everything. The course lives on a
tmpfs mounted for the test and filled to its last byte (no injected fault: SQLite, nbgrader and tapelab's
own writes all meet the real ENOSPC)."""
from __future__ import annotations

import subprocess

import pytest

from grade_fixtures import TINY, by_student, fill, load_report, make_course, run_grade, tiny, write

pytestmark = pytest.mark.heavy(90)  # two runs of `tapelab grade` (one kernel each time for each input)
PREVIOUS = '{"run_id": "an earlier run"}'


@pytest.fixture
def disk(tmp_path):
    where = tmp_path / "disk"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tapelab-test", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(where) -> list:
    """Take every free byte of the tmpfs at `where`; returns the files that hold them."""
    fillers = [where / "filler", where / "filler-tail"]
    with open(fillers[0], "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass
    subprocess.run(["dd", "if=/dev/zero", f"of={fillers[1]}", "bs=1", "count=65536"], capture_output=True,
                   check=False)
    return fillers


def test_a_full_disk_keeps_the_previous_report_names_what_was_not_graded_and_a_rerun_grades_it(disk, tmp_path):
    """With the course's disk full, does `tapelab grade` exit 1 without a traceback, its last line naming
    report.json, the cause and every input not graded, the previous report.json byte for byte; and does the
    same command, once space is free, grade every input?"""
    course = make_course(disk)
    (course / "report.json").write_text(PREVIOUS)
    inbox = tmp_path / "inbox"
    for student, value in (("ann", "42"), ("bob", "41")):
        write(fill(course, TINY, tiny(value)), inbox / f"{student}_{TINY}.ipynb")
    fillers = _fill(disk)
    result = run_grade(inbox, course, "--timeout", "60")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert str(course / "report.json") in last and "no space is left on the disk" in last, last
    assert f"ann/{TINY}" in last and f"bob/{TINY}" in last and "rerun" in last, last
    assert (course / "report.json").read_text() == PREVIOUS
    assert "wrote report.json" not in result.stdout

    for filler in fillers:
        filler.unlink()
    again = run_grade(inbox, course, "--timeout", "60")
    assert again.returncode == 0, again.stderr[-3000:]
    report = load_report(course / "report.json")
    assert [by_student(report, s, TINY)["status"] for s in ("ann", "bob")] == ["graded", "graded"]
    assert [by_student(report, s, TINY)["score"] for s in ("ann", "bob")] == [1, 0]
