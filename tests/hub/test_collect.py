"""The hub's checked collect (grader/hub/collect.py), on an exchange made here (issue 48, classes 2 and 3).

Folders belong to made-up uids (root chowns them; no user is needed). Each attack is one folder, and the
whole class is collected in one call: every other student is still collected, each bad folder gets its
own status, and nothing is followed.
"""
from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader" / "hub"))
from collect import collect, held  # noqa: E402


A = "01_basic_tape"
STUDENTS = {61001: "s1", 61002: "s2", 61003: "s3", 61004: "s4", 61005: "s5", 61006: "s6", 61007: "s7"}
UID = {name: uid for uid, name in STUDENTS.items()}


@pytest.fixture(autouse=True)
def as_root():
    """chowns folders to other uids: as root, as CI runs (a skip would pass for nothing)."""
    if os.geteuid() != 0:
        pytest.fail("chowns folders to other uids: run as root, as CI does", pytrace=False)


def notebook(text: str) -> str:
    return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(text)]))


def submit(inbound: Path, name: str, owner: str, text: str = "x = 1", secret: str | None = None) -> Path:
    """A folder as `nbgrader submit` run by `owner` leaves it, named `name`."""
    folder = inbound / name
    folder.mkdir()
    (folder / f"{A}.ipynb").write_text(notebook(text))
    (folder / "submission_secret.txt").write_text(secret or f"secret-of-{owner}-{name}")
    (folder / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
    for path in (folder, *folder.iterdir()):
        os.chown(path, UID[owner], UID[owner], follow_symlinks=False)
    return folder


@pytest.fixture
def exchange(tmp_path: Path):
    inbound = tmp_path / "inbound"
    inbound.mkdir()
    secret_source = tmp_path / "source.ipynb"  # the instructor's source notebook, hidden tests and all
    secret_source.write_text(notebook("HIDDEN_TEST = 'the instructor source'"))
    return inbound, secret_source, tmp_path / "submitted"


def by_folder(rows: list[dict]) -> dict[str, dict]:
    return {row["folder"]: row for row in rows}


def stored(submitted: Path, student: str) -> str:
    return (submitted / student / A / f"{A}.ipynb").read_text()


def test_a_submission_is_its_owners_whatever_its_name_says(exchange):
    """`nbgrader submit --student s2` run by s1: graded as s1's, noted; s2 gets nothing from it."""
    inbound, _, submitted = exchange
    submit(inbound, f"s2+{A}+2026-01-01 00:00:00.000000 UTC+ab", owner="s1", text="by s1")
    [row] = collect(inbound, A, STUDENTS, [A], submitted)
    assert row["status"] == "collected" and row["student"] == "s1"
    assert any("named for 's2'" in flag for flag in row["flags"])
    assert "by s1" in stored(submitted, "s1") and not (submitted / "s2").exists()


def test_links_fifos_and_devices_are_never_followed(exchange):
    """A notebook that is a link to the instructor's source, a folder that is a link to a classmate's
    submission, a secret that links to another's secret, a fifo and /dev/zero as the notebook: each folder
    gets its own status, nothing behind a link reaches the grading copy, and the call does not hang."""
    inbound, source, submitted = exchange
    honest = submit(inbound, f"s1+{A}+t+1", owner="s1", text="honest s1", secret="s1-secret")
    linked = submit(inbound, f"s2+{A}+t+2", owner="s2")
    (linked / f"{A}.ipynb").unlink()
    (linked / f"{A}.ipynb").symlink_to(source)
    os.symlink(honest, inbound / f"s3+{A}+t+3")  # a folder that is a link to s1's
    os.lchown(inbound / f"s3+{A}+t+3", UID["s3"], UID["s3"])
    thief = submit(inbound, f"s4+{A}+t+4", owner="s4", text="s4 work")
    (thief / "submission_secret.txt").unlink()
    (thief / "submission_secret.txt").symlink_to(honest / "submission_secret.txt")
    fifo = submit(inbound, f"s5+{A}+t+5", owner="s5")
    (fifo / f"{A}.ipynb").unlink()
    os.mkfifo(fifo / f"{A}.ipynb")
    os.chown(fifo / f"{A}.ipynb", UID["s5"], UID["s5"])
    zero = submit(inbound, f"s6+{A}+t+6", owner="s6")
    (zero / f"{A}.ipynb").unlink()
    (zero / f"{A}.ipynb").symlink_to("/dev/zero")
    rows = by_folder(collect(inbound, A, STUDENTS, [A], submitted))  # a fifo opened blocking would hang here
    assert rows[f"s1+{A}+t+1"]["status"] == "collected"
    assert rows[f"s2+{A}+t+2"]["status"] == "no_notebook"
    assert rows[f"s3+{A}+t+3"]["status"] == "not_a_folder"
    assert rows[f"s5+{A}+t+5"]["status"] == "no_notebook" and rows[f"s6+{A}+t+6"]["status"] == "no_notebook"
    assert rows[f"s4+{A}+t+4"]["status"] == "collected" and held(list(rows.values())) == {"s4"}
    assert not (submitted / "s4" / A / "submission_secret.txt").exists()
    everything = "".join(p.read_text() for p in submitted.rglob("*") if p.is_file())
    assert "the instructor source" not in everything and everything.count("s1-secret") == 1  # s1's own
    assert sorted(p.name for p in submitted.iterdir()) == ["s1", "s4"]


def test_time_comes_from_what_no_student_can_set(exchange):
    """A forged name and timestamp.txt (year 2000) are ignored; an edit after submitting dates the submission."""
    inbound, _, submitted = exchange
    before = datetime.now(timezone.utc)
    folder = submit(inbound, f"s1+{A}+2000-01-01 00:00:00.000000 UTC+zz", owner="s1")
    time.sleep(0.05)
    edited_at = datetime.now(timezone.utc)
    (folder / f"{A}.ipynb").write_text(notebook("edited later"))
    os.utime(folder / f"{A}.ipynb", (0, 0))  # mtime set back: ctime still moves
    [row] = collect(inbound, A, STUDENTS, [A], submitted)
    assert datetime.fromisoformat(row["submitted_at"]) >= edited_at > before
    stamp = (submitted / "s1" / A / "timestamp.txt").read_text()
    assert not stamp.startswith("2000") and "edited later" in stored(submitted, "s1")


def test_a_resubmission_after_a_grading_round_is_collected(exchange):
    inbound, _, submitted = exchange
    submit(inbound, f"s1+{A}+t+first", owner="s1", text="first")
    collect(inbound, A, STUDENTS, [A], submitted)
    assert "first" in stored(submitted, "s1")
    time.sleep(0.05)
    submit(inbound, f"s1+{A}+t+again", owner="s1", text="second")
    rows = by_folder(collect(inbound, A, STUDENTS, [A], submitted))
    assert rows[f"s1+{A}+t+again"]["status"] == "collected" and rows[f"s1+{A}+t+first"]["status"] == "superseded"
    assert "second" in stored(submitted, "s1")


def test_one_students_folder_never_stops_the_class(exchange):
    """An odd name, a 2 GB (sparse) file, an unreadable folder, a dangling link, a huge linked folder, a
    shared secret and a folder that is not a student's: everyone else is collected, each odd one has a status."""
    inbound, _, submitted = exchange
    submit(inbound, f"s1+{A}+t+ok", owner="s1", text="s1 ok", secret="same")
    big = submit(inbound, f"s2+{A}+t+big", owner="s2", text="s2 ok", secret="same")
    with open(big / "huge.bin", "wb") as handle:
        handle.truncate(2 * 1024**3)
    os.chown(big / "huge.bin", UID["s2"], UID["s2"])
    os.symlink("/usr", big / "linked-folder")
    os.symlink("/nowhere", big / "dangling")
    shut = submit(inbound, f"s3+{A}+t+shut", owner="s3", text="s3 ok")
    os.chmod(shut, 0)
    odd = inbound / f"s4\n\x1b[31m+{A}+t+odd"
    odd.mkdir()
    os.chown(odd, UID["s4"], UID["s4"])
    (inbound / "s5-not-a-submission").mkdir()
    os.chown(inbound / "s5-not-a-submission", UID["s5"], UID["s5"])
    (inbound / f"root+{A}+t+x").mkdir()  # not a student's
    rows = collect(inbound, A, STUDENTS, [A], submitted)
    statuses = {row["folder"]: row["status"] for row in rows}
    assert statuses[f"s1+{A}+t+ok"] == statuses[f"s2+{A}+t+big"] == statuses[f"s3+{A}+t+shut"] == "collected"
    assert statuses[r"s4\n\x1b[31m+" + f"{A}+t+odd"] == "no_notebook"
    assert statuses["s5-not-a-submission"] == "bad_name" and statuses[f"root+{A}+t+x"] == "not_a_student"
    big_row = next(row for row in rows if row["student"] == "s2")
    assert big_row["size"] >= 2 * 1024**3 and any("not followed" in flag for flag in big_row["flags"])
    assert held(rows) == {"s1", "s2"}  # one secret for two students: both pages would share a name
    assert sorted(p.name for p in submitted.iterdir()) == ["s1", "s2", "s3"]
    assert sorted(p.name for p in (submitted / "s2" / A).iterdir()) == [f"{A}.ipynb", "submission_secret.txt",
                                                                        "timestamp.txt"]
    json.dumps(rows)  # the report can be written as it is
