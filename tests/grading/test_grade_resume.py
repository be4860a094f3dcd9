"""Resumable, idempotent, safe to kill: `tapelab grade` on the TensorFlow-free 09_fixture notebook."""
import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import nbformat
import pytest

from grade_fixtures import (TINY, by_student, fill, load_report, make_course, orphaned_sandboxes, run_grade, tiny,
                            write)
from tapelab.release import nbgrader_env

pytestmark = pytest.mark.heavy(90)  # seconds, about: scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("resume"))


def _grade(course, inbox, *args):
    result = run_grade(inbox, course, "--jobs", "2", "--timeout", "60", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return load_report(course / "report.json")


def _mtime(course, student):
    return (course / "autograded" / student / TINY / f"{TINY}.ipynb").stat().st_mtime_ns


def test_second_run_skips_changed_file_regraded_force_regrades_all(course, tmp_path):
    inbox = tmp_path / "inbox"
    write(fill(course, TINY, tiny()), inbox / f"ann_{TINY}.ipynb")
    write(fill(course, TINY, tiny()), inbox / f"ben_{TINY}.ipynb")
    first = _grade(course, inbox)
    assert [by_student(first, s, TINY)["score"] for s in ("ann", "ben")] == [1, 1]
    stamp = _mtime(course, "ann")

    second = _grade(course, inbox)
    assert second["counts"]["skipped_unchanged"] == 2 and second["counts"]["executed"] == 0
    assert by_student(second, "ann", TINY)["regraded"] is False and by_student(second, "ann", TINY)["score"] == 1
    assert _mtime(course, "ann") == stamp

    write(fill(course, TINY, tiny("41")), inbox / f"ben_{TINY}.ipynb")
    third = _grade(course, inbox)
    assert (by_student(third, "ben", TINY)["regraded"], by_student(third, "ben", TINY)["score"]) == (True, 0)
    assert by_student(third, "ann", TINY)["regraded"] is False

    forced = _grade(course, inbox, "--force")
    assert forced["counts"]["executed"] == 2 and forced["counts"]["skipped_unchanged"] == 0


def test_killed_run_loses_nothing(course, tmp_path):
    """Kill the whole run after its first completion: the rerun keeps that result and adds no duplicates."""
    inbox = tmp_path / "inbox"
    for student in ("k1", "k2", "k3"):
        write(fill(course, TINY, tiny(sleep=4)), inbox / f"{student}_{TINY}.ipynb")
    log = course / "grading.log.jsonl"
    before = len(log.read_text().splitlines()) if log.exists() else 0
    cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(course), "--jobs", "1",
           "--timeout", "60"]  # the same settings as the rerun: limits are part of the content hash
    proc = subprocess.Popen(cmd, env=nbgrader_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 180
    done = []
    while time.monotonic() < deadline and not done:
        time.sleep(0.2)
        lines = log.read_text().splitlines()[before:] if log.exists() else []
        done = [json.loads(l) for l in lines if '"submission"' in l]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1)
    assert not orphaned_sandboxes(), "a sandboxed kernel outlived its run"
    assert done, "no submission completed before the deadline"
    first = done[0]["student"]
    json.loads((course / "grading-state.json").read_text())  # never half-written
    stamp = _mtime(course, first)

    report = _grade(course, inbox)
    entries = {s: by_student(report, s, TINY) for s in ("k1", "k2", "k3")}
    assert entries[first]["regraded"] is False and _mtime(course, first) == stamp
    assert all(e["status"] == "graded" and e["score"] == 1 for e in entries.values()), entries
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        subs = [s.student.id for s in gb.find_assignment(TINY).submissions]
        for student in ("k1", "k2", "k3"):
            assert subs.count(student) == 1
            assert len(gb.find_submission_notebook(TINY, TINY, student).grades) == 1


def test_lms_zip_with_unsafe_entries(course, tmp_path):
    good = nbformat.writes(fill(course, TINY, tiny()))
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"lms/zoe_{TINY}.ipynb", good)
        zf.writestr(f"../evil_{TINY}.ipynb", good)
        zf.writestr(f"/abs_{TINY}.ipynb", good)
    report = _grade(course, archive)
    assert by_student(report, "zoe", TINY)["status"] == "graded"
    unsafe = {s["source"]: s for s in report["submissions"] if s["status"] == "unsafe_path"}
    assert set(unsafe) == {f"../evil_{TINY}.ipynb", f"/abs_{TINY}.ipynb"}, report["submissions"]
    assert not (tmp_path / f"evil_{TINY}.ipynb").exists()
    assert not list(course.glob(".incoming-*"))
