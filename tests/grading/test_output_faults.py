"""Every verb that writes after grading, against the faults of its output: a read-only folder, a full disk,
and an `--out` that is a folder, a file or a path under a file. No kernel runs: the class is insight_class's.

The faults are real: a tmpfs mounted for the test (root ignores file modes, not a read-only mount), remounted
read-only or filled to its last byte. Each run asserts the exit status, one line on stderr naming the path,
no traceback, and the files written before left whole.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from grade_fixtures import TINY
from insight_class import build_class
from tapelab.cli import main

_SIZE = 32 * 1024**2  # the tmpfs; filled to its last byte for the full-disk cases

# verb -> (its arguments given the course and the output folder, the files it writes there)
VERBS = {
    "export long": (lambda c, o: ["export", "long", "--course", str(c), "--out", str(o)], ["grades-long.csv"]),
    "export canvas": (lambda c, o: ["export", "canvas", "--course", str(c), "--out", str(o)], ["canvas.csv"]),
    "export gradescope": (lambda c, o: ["export", "gradescope", "--course", str(c), "--out", str(o), "--student",
                                        "ana", "--notebook", TINY], ["results.json"]),
    "insight": (lambda c, o: ["insight", "--course", str(c), "--out", str(o)],
                ["insight.html", "insight.json", "insight-assignments.csv"]),
}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return build_class(tmp_path_factory.mktemp("faults"))


@pytest.fixture
def disk(tmp_path):
    """A fresh tmpfs of its own, unmounted after the test."""
    where = tmp_path / "disk"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={_SIZE}", "tapelab-test", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)


def _fill(where: Path) -> None:
    """Take every free byte of the tmpfs at `where`."""
    with open(where / "filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    subprocess.run(["dd", "if=/dev/zero", f"of={where / 'filler-tail'}", "bs=1", "count=65536"],
                   capture_output=True, check=False)


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith("filler")}


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("verb", VERBS)
def test_a_read_only_output_folder_is_refused_before_any_work(course, disk, capsys, verb):
    """Is a verb whose output folder is on a read-only file system refused up front (exit 2), in one line
    naming the folder and the cause, with the files already there untouched?"""
    argv, files = VERBS[verb]
    assert _run(capsys, argv(course, disk))[0] == 0
    before = _digests(disk)
    assert set(files) <= set(before)
    _read_only(disk)
    code, _, err = _run(capsys, argv(course, disk))
    line = _one_line(err)
    assert code == 2 and str(disk) in line and "read-only" in line, line
    assert _digests(disk) == before


@pytest.mark.parametrize("verb", VERBS)
def test_a_full_disk_fails_in_one_line_and_keeps_the_previous_file(course, disk, capsys, verb):
    """When the disk fills during the write, does the verb end with exit 1 and one line naming the file, the
    cause in words and the fix, leaving every previous file whole and no temporary file behind?"""
    argv, _ = VERBS[verb]
    assert _run(capsys, argv(course, disk))[0] == 0
    before = _digests(disk)
    _fill(disk)
    code, _, err = _run(capsys, argv(course, disk))
    line = _one_line(err)
    assert code == 1 and str(disk) in line and "no space is left on the disk" in line and "free space" in line, line
    assert "the previous file is unchanged" in line
    assert _digests(disk) == before
    assert not [p.name for p in disk.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("fault,code,says", [(_fill, 1, "no space is left on the disk"), (_read_only, 2, "read-only")],
                         ids=["full-disk", "read-only"])
def test_feedback_on_a_faulty_disk_fails_in_one_line_and_keeps_the_pages(course, disk, capsys, fault, code, says):
    """Does `tapelab feedback --force` end in one line naming the feedback folder, with every page, grades.csv
    and the insight as they were: exit 1 when the disk is full part way, exit 2 when the course folder is
    read-only (refused before any work)?"""
    copy = shutil.copytree(course, disk / "course")
    assert _run(capsys, ["feedback", "--course", str(copy)])[0] == 0
    before = _digests(copy)
    fault(disk)
    got, _, err = _run(capsys, ["feedback", "--course", str(copy), "--force"])
    line = _one_line(err)
    assert got == code and str(copy / "feedback") in line and says in line, line
    assert _digests(copy) == before


@pytest.mark.parametrize("verb", [v for v in VERBS if v.startswith("export")])
def test_export_out_naming_a_folder_writes_the_default_name_inside_it(course, tmp_path, capsys, verb):
    """Does `export --out FOLDER` write FOLDER/<the format's file name>, and say where?"""
    argv, files = VERBS[verb]
    code, out, err = _run(capsys, argv(course, tmp_path))
    assert code == 0 and err == "" and out.strip().endswith(str(tmp_path / files[0]))
    assert (tmp_path / files[0]).stat().st_size > 0


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("case", ["under-a-file", "missing-folder"])
def test_out_under_a_file_or_in_a_missing_folder_is_refused_before_any_work(course, tmp_path, capsys, verb, case):
    """Is an --out whose folder is a file, or does not exist, refused up front (exit 2) in one line naming it?"""
    argv, _ = VERBS[verb]
    (tmp_path / "a-file").write_text("kept")
    out = tmp_path / "a-file" / "out" if case == "under-a-file" else tmp_path / "nowhere" / "deeper" / "out"
    code, _, err = _run(capsys, argv(course, out))
    line = _one_line(err)
    assert code == 2 and str(out) in line, line
    assert ("is a file, not a folder" if case == "under-a-file" else "does not exist") in line, line
    assert (tmp_path / "a-file").read_text() == "kept" and not (tmp_path / "nowhere").exists()


def test_insight_out_naming_a_file_is_refused_before_any_work(course, tmp_path, capsys):
    """Is `insight --out FILE` refused up front (exit 2), the file left as it was?"""
    target = tmp_path / "insight.html"
    target.write_text("kept")
    code, _, err = _run(capsys, VERBS["insight"][0](course, target))
    line = _one_line(err)
    assert code == 2 and str(target) in line and "is a file, not a folder" in line, line
    assert target.read_text() == "kept"


def test_insight_out_naming_a_new_folder_creates_it(course, tmp_path, capsys):
    """Is `insight --out DIR` with DIR missing (its parent a folder) created and written?"""
    code, _, _ = _run(capsys, VERBS["insight"][0](course, tmp_path / "new"))
    assert code == 0 and (tmp_path / "new" / "insight.html").is_file()
