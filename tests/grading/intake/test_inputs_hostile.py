"""Hostile folders and zips (issue 13, class 7) and grades.csv injection (class 8).

Mostly `inputs.discover` on inputs built in tmp_path; one real `tapelab grade` of a hostile zip
with the TensorFlow-free 09_fixture notebook proves the rows reach report.json and grades.csv.
"""
import csv
import dataclasses
import json
import os
import struct
import unicodedata
import zipfile
from datetime import datetime, timezone

import nbformat
import pytest

from grade_fixtures import TINY, fill, load_report, make_course, run_grade, tiny
from tapelab.grading.intake import archive
from tapelab.grading.intake.discover import InputError, discover
from tapelab.grading.grades.standings import Standing, write_grades_csv
from tapelab.grading.statuses import FINAL, GRADED_STATUSES, STATUSES

KNOWN = {"01_basic_tape": "01_basic_tape", TINY: TINY}
NB = f"_{TINY}.ipynb"
NFC, NFD = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
WHEN = (2026, 5, 1, 10, 0, 0)  # every file's time: the newest-wins rule never depends on when a test wrote it


def _standing(student: str, score: float, max_score: float = 1.0) -> Standing:
    """A grades.csv row of the 09_fixture notebook."""
    return Standing(student, None, None, TINY, TINY, None, score, 0.0, score, max_score, False, False, True)


def _zip(path, entries, compression=zipfile.ZIP_DEFLATED):
    """A zip of (name or ZipInfo, bytes) pairs, every named entry dated WHEN; a name ending in `/` is a folder."""
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in entries:
            if isinstance(name, str):
                name = zipfile.ZipInfo(name, WHEN)
                name.compress_type = compression
            zf.writestr(name, data)
    return path


def _folder(root, entries):
    """The entries as files and folders under `root`, every file dated WHEN."""
    for name, data in entries:
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            os.utime(path, (datetime(*WHEN, tzinfo=timezone.utc).timestamp(),) * 2)
    return root


def _build(kind, tmp_path, entries):
    """The same entries as a zip or as a folder."""
    return _zip(tmp_path / "in.zip", entries) if kind == "zip" else _folder(tmp_path / "in", entries)


def _rows(source, tmp_path):
    return {c.source: c for c in discover(source, KNOWN, tmp_path / "scratch")}


def _patch(path, old: bytes, new: bytes):
    """Replace bytes in both the local and the central header (names, sizes) of a written zip."""
    data = path.read_bytes()
    assert data.count(old) >= 1, old
    path.write_bytes(data.replace(old, new))
    return path


# -- one row per entry that cannot be read ------------------------------------------------------------
def _bad_crc(tmp_path):
    path = _zip(tmp_path / "a.zip", [(f"alice{NB}", b"{}"), (f"bob{NB}", b"BOB-NOTEBOOK")], zipfile.ZIP_STORED)
    return _patch(path, b"BOB-NOTEBOOK", b"BOB-NOTEBOOX")


def _bad_deflate(tmp_path):
    path = _zip(tmp_path / "a.zip", [(f"alice{NB}", b"{}"), (f"bob{NB}", b"0123456789" * 50)])
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(f"bob{NB}")
    start = info.header_offset + 30 + len(info.filename)
    data = bytearray(path.read_bytes())
    data[start:start + info.compress_size] = b"\xff" * info.compress_size
    path.write_bytes(bytes(data))
    return path


def _encrypted(tmp_path):
    path = _zip(tmp_path / "a.zip", [(f"alice{NB}", b"{}"), (f"bob{NB}", b"{}")])
    with zipfile.ZipFile(path) as zf:
        local = zf.getinfo(f"bob{NB}").header_offset
    data = bytearray(path.read_bytes())
    for flags in (local + 6, data.rindex(b"PK\x01\x02") + 8):  # bob's local header and directory entry
        data[flags] |= 0x1
    path.write_bytes(bytes(data))
    return path


def _bzip2(tmp_path):
    info = zipfile.ZipInfo(f"bob{NB}")
    info.compress_type = zipfile.ZIP_BZIP2
    return _zip(tmp_path / "a.zip", [(f"alice{NB}", b"{}"), (info, b"{}")])


@pytest.mark.parametrize("build,words", [
    (_bad_crc, "Bad CRC-32"), (_bad_deflate, "decompressing"), (_encrypted, "encrypted"),
    (_bzip2, "compression method 12"),
], ids=["bad-crc", "corrupt-deflate", "encrypted", "bzip2"])
def test_unreadable_zip_entry_gets_its_own_row(tmp_path, build, words):
    """Is a zip entry that cannot be read (bad CRC, corrupt data, encryption, bzip2) `unreadable` on its
    own row, with no file left behind, while the other entries are read?"""
    rows = _rows(build(tmp_path), tmp_path)
    bob, alice = rows[f"bob{NB}"], rows[f"alice{NB}"]
    assert (bob.status, bob.student, bob.path) == ("unreadable", "bob", None), bob
    assert words in bob.reason, bob.reason
    assert alice.status is None and alice.path.read_bytes() == b"{}"
    assert [p.name for p in (tmp_path / "scratch").rglob("*") if p.is_file()] == ["submission.ipynb"]


def test_zip_bomb_is_refused_from_its_header_without_writing(tmp_path):
    """Is an entry that expands past the bound for one notebook `too_large` before a byte is written?"""
    bomb = archive.MAX_ENTRY_BYTES + 1
    path = _zip(tmp_path / "a.zip", [(f"alice{NB}", b"{}"), (f"bob{NB}", b"\0" * bomb)])
    assert path.stat().st_size < bomb // 100
    rows = _rows(path, tmp_path)
    bob = rows[f"bob{NB}"]
    assert bob.status == "too_large" and str(bomb) in bob.reason and bob.path is None, bob
    assert rows[f"alice{NB}"].status is None
    assert sum(p.stat().st_size for p in (tmp_path / "scratch").rglob("*") if p.is_file()) == 2


def test_zip_total_bound_stops_reading_but_not_discovery(tmp_path):
    """Once the archive's bound on bytes read in all is reached, is each later entry `too_large`?"""
    path = _zip(tmp_path / "a.zip", [(f"s{i}{NB}", b"x" * 1000) for i in range(3)])
    with archive.Archive(path, max_bytes=1500) as zf:
        zf.copy(0, tmp_path / "0")
        for index in (1, 2):
            with pytest.raises(archive.EntryError, match="bound of 1500 bytes read in all") as error:
                zf.copy(index, tmp_path / str(index))
            assert error.value.status == "too_large" and not (tmp_path / str(index)).exists()
    assert (tmp_path / "0").read_bytes() == b"x" * 1000


def test_header_that_understates_the_size_is_unreadable(tmp_path):
    """Is an entry whose header claims fewer bytes than it holds `unreadable` (the CRC fails at the
    declared size), never read on past it, with nothing left behind?"""
    path = _zip(tmp_path / "a.zip", [(f"bob{NB}", b"x" * 1000)], zipfile.ZIP_STORED)
    _patch(path, struct.pack("<II", 1000, 1000), struct.pack("<II", 1000, 10))  # compressed, uncompressed size
    with archive.Archive(path) as zf:
        assert zf.entries[0].size == 10
        with pytest.raises(archive.EntryError, match="CRC") as error:
            zf.copy(0, tmp_path / "out")
        assert error.value.status == "unreadable" and not (tmp_path / "out").exists()


# -- names are data, never paths ------------------------------------------------------------------------
def test_zip_names_never_become_paths(tmp_path):
    """Do an over-long name, a file that is also a folder and traversal each get a row, and is every
    entry copied to a path of the grader's choosing, never one named by the archive?"""
    long_name = "a" * 300 + NB
    clash_inner = f"bob{NB}/eve{NB}"
    link = zipfile.ZipInfo(f"link{NB}")
    link.external_attr = 0o120777 << 16
    path = _zip(tmp_path / "a.zip", [(f"bob{NB}", b"BOB"), (clash_inner, b"EVE"), (long_name, b"L"),
                                     ("x" * 300 + f"/carl{NB}", b"C"), (f"../up{NB}", b"U"), (f"/abs{NB}", b"A"),
                                     (link, b"/etc/passwd")])
    deep = "d/" * 2100 + f"deb{NB}"  # every part short, the whole past what a file system stores
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr(deep, b"D")
    rows = _rows(path, tmp_path)
    statuses = {source: cand.status for source, cand in rows.items()}
    deep_shown = deep[:500] + f"... ({len(deep)} characters)"
    assert statuses == {f"bob{NB}": None, clash_inner: "unsafe_path", long_name: "bad_name",
                        "x" * 300 + f"/carl{NB}": "bad_name", f"../up{NB}": "unsafe_path", f"/abs{NB}": "unsafe_path",
                        f"link{NB}": "unsafe_path", deep_shown: "bad_name"}, statuses
    assert f"`bob{NB}` is both a file and a folder" in rows[clash_inner].reason
    assert "longer than file systems allow" in rows[long_name].reason
    assert "symbolic link" in rows[f"link{NB}"].reason
    written = sorted(p.relative_to(tmp_path / "scratch").as_posix() for p in (tmp_path / "scratch").rglob("*"))
    assert written == ["0", "0/submission.ipynb"] and rows[f"bob{NB}"].path.read_bytes() == b"BOB"
    assert not (tmp_path / f"up{NB}").exists()


def test_duplicate_zip_entries_grade_the_first_copy(tmp_path):
    """Does a zip that holds one name twice grade the first copy and mark the second `duplicate`?"""
    with pytest.warns(UserWarning, match="Duplicate name"):
        path = _zip(tmp_path / "a.zip", [(f"bob{NB}", b"FIRST"), (f"bob{NB}", b"SECOND")])
    cands = discover(path, KNOWN, tmp_path / "scratch")
    assert [(c.source, c.status) for c in cands] == [(f"bob{NB}", None), (f"bob{NB}", "duplicate")]
    assert cands[0].path.read_bytes() == b"FIRST" and "more than once" in cands[1].reason


@pytest.mark.parametrize("kind", ["zip", "folder"])
@pytest.mark.parametrize("first,second,student", [
    (f"{NFD}{NB}", f"{NFC}{NB}", NFC),
    (f"Bob{NB}", f"bob{NB}", "Bob"),
    (f"{NFD}/{TINY}.ipynb", f"{NFC}/{TINY}.ipynb", NFC),
], ids=["normalization", "case", "folders"])
def test_names_equal_after_nfc_and_casefold_are_one_student(tmp_path, kind, first, second, student):
    """Are two files whose student ids differ only by Unicode normalization or case never both graded,
    the second `duplicate` naming the first, and is the graded id NFC?"""
    rows = _rows(_build(kind, tmp_path, [(second, b"2"), (first, b"1")]), tmp_path)
    assert set(rows) == {first, second}, rows
    assert (rows[first].status, rows[first].student) == (None, student)
    assert rows[second].status == "duplicate" and f"`{first}` is graded" in rows[second].reason
    assert rows[first].path.read_bytes() == b"1"


@pytest.mark.parametrize("kind", ["zip", "folder"])
@pytest.mark.parametrize("name,shown,words", [
    (f"bob\x1b[31m{NB}", f"bob\\x1b[31m{NB}", "U+001B"),
    (f"bob\u202e{NB}", f"bob\\u202e{NB}", "U+202E"),
    (f"folder\n/bob{NB}", f"folder\\n/bob{NB}", "U+000A"),
    ("x" * 130 + NB, "x" * 130 + NB, "longer than 128 characters"),
], ids=["escape", "bidi-override", "newline-in-folder", "long-student-id"])
def test_control_characters_and_bad_ids_get_bad_name(tmp_path, kind, name, shown, words):
    """Does a name with a control or invisible character, or a student id nbgrader cannot store, get
    `bad_name` with the name escaped for display, while a clean name beside it is read?"""
    rows = _rows(_build(kind, tmp_path, [(name, b"{}"), (f"alice{NB}", b"{}")]), tmp_path)
    assert set(rows) == {shown, f"alice{NB}"}, rows
    assert rows[shown].status == "bad_name" and words in rows[shown].reason, rows[shown]
    assert rows[f"alice{NB}"].status is None


def test_one_student_keeps_one_spelling_across_notebooks(tmp_path):
    """Are `Bob`'s and `bob`'s different notebooks both graded under one id (the first spelling), so the
    course never holds two folders that a case-insensitive file system would merge?"""
    rows = _rows(_zip(tmp_path / "a.zip", [("bob_01_basic_tape.ipynb", b"1"), (f"Bob{NB}", b"2")]), tmp_path)
    assert [(c.status, c.student, c.notebook) for _, c in sorted(rows.items())] == [
        (None, "Bob", TINY), (None, "Bob", "01_basic_tape")]


def test_timestamp_beside_a_zipped_notebook_is_read_within_a_bound(tmp_path):
    """Does nbgrader's timestamp.txt beside a zipped notebook give its submission time, and is one past
    1 KB ignored (the entry's own time used) while the notebook is still read?"""
    rows = _rows(_zip(tmp_path / "a.zip", [
        (f"submitted/bob/{TINY}/{TINY}.ipynb", b"{}"), (f"submitted/bob/{TINY}/timestamp.txt", b"2026-05-02 09:30:00"),
        (f"submitted/eve/{TINY}/{TINY}.ipynb", b"{}"), (f"submitted/eve/{TINY}/timestamp.txt", b"9" * 2000)]), tmp_path)
    bob, eve = rows[f"submitted/bob/{TINY}/{TINY}.ipynb"], rows[f"submitted/eve/{TINY}/{TINY}.ipynb"]
    assert (bob.submitted_at.isoformat(), bob.time_origin) == ("2026-05-02T09:30:00+00:00", "timestamp.txt")
    assert eve.status is None and eve.path.read_bytes() == b"{}"
    assert (eve.submitted_at.isoformat(), eve.time_origin) == ("2026-05-01T10:00:00+00:00", "file time")


def _undecodable_zip(tmp_path):
    path = _zip(tmp_path / "a.zip", [(f"cafX{NB}", b"{}"), (f"zoXX{NB}", b"{}")])
    _patch(path, b"cafX", b"caf\xe9")  # Latin-1, not UTF-8, and no UTF-8 flag
    return _patch(path, b"zoXX", "zoë".encode())  # UTF-8 without the flag, as Info-ZIP writes it


def _undecodable_folder(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    for name in (b"caf\xe9" + NB.encode(), "zoë".encode() + NB.encode()):
        (root / os.fsdecode(name)).write_bytes(b"{}")
    return root


@pytest.mark.parametrize("build", [_undecodable_zip, _undecodable_folder], ids=["zip", "folder"])
def test_undecodable_names_are_escaped_and_reported(tmp_path, build):
    """Is a name whose bytes are not UTF-8 `bad_name`, shown as `\\xNN` in report.json and grades.csv
    without a crash, while a UTF-8 name (even without the zip's flag) is read as UTF-8?"""
    rows = _rows(build(tmp_path), tmp_path)
    assert set(rows) == {f"caf\\xe9{NB}", f"zoë{NB}"}, rows
    bad = rows[f"caf\\xe9{NB}"]
    assert (bad.status, bad.student) == ("bad_name", "caf\\xe9") and "not UTF-8" in bad.reason
    assert rows[f"zoë{NB}"].status is None and rows[f"zoë{NB}"].student == "zoë"
    json.dumps([dataclasses.asdict(c) | {"path": str(c.path)} for c in rows.values()], ensure_ascii=False, default=str)
    write_grades_csv(tmp_path / "g.csv", [_standing(bad.student, 0.0)])
    assert "caf\\xe9" in (tmp_path / "g.csv").read_text(encoding="utf-8")


def test_folder_links_and_special_files_get_rows(tmp_path):
    """Is a symlinked notebook or student folder and a fifo in a folder `unsafe_path` on its own row
    (today a link is skipped silently), never followed?"""
    root, outside = tmp_path / "in", tmp_path / "outside"
    _folder(outside, [(f"carol/{TINY}.ipynb", b"{}"), ("secret.ipynb", b"{}")])
    _folder(root, [(f"alice{NB}", b"{}")])
    (root / f"bob{NB}").symlink_to(outside / "secret.ipynb")
    (root / "carol").symlink_to(outside / "carol")
    os.mkfifo(root / f"dan{NB}")
    rows = _rows(root, tmp_path)
    assert {s: (c.status, c.student) for s, c in rows.items()} == {
        f"alice{NB}": (None, "alice"), f"bob{NB}": ("unsafe_path", "bob"), "carol": ("unsafe_path", None),
        f"dan{NB}": ("unsafe_path", "dan")}, rows
    assert "symbolic link" in rows["carol"].reason and "not a regular file" in rows[f"dan{NB}"].reason


def test_unlistable_folder_is_a_row_not_a_crash(tmp_path, monkeypatch):
    """Does a folder that cannot be listed get an `unreadable` row while its siblings are read?"""
    root = _folder(tmp_path / "in", [(f"alice/{TINY}.ipynb", b"{}"), (f"bob/{TINY}.ipynb", b"{}")])
    real = os.scandir

    def scandir(path):
        if os.fspath(path) == str(root / "bob"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    rows = _rows(root, tmp_path)
    assert rows[f"alice/{TINY}.ipynb"].status is None
    assert rows["bob/"].status == "unreadable" and "Permission denied" in rows["bob/"].reason


def test_folder_file_past_the_bound_is_too_large(tmp_path):
    """Is a notebook file bigger than the bound for one notebook `too_large` from its size alone?"""
    root = _folder(tmp_path / "in", [(f"alice{NB}", b"{}")])
    with open(root / f"bob{NB}", "wb") as handle:
        handle.truncate(archive.MAX_ENTRY_BYTES + 1)  # sparse: no bytes written
    rows = _rows(root, tmp_path)
    assert rows[f"bob{NB}"].status == "too_large" and rows[f"alice{NB}"].status is None


# -- a student folder without a notebook ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["zip", "folder"])
def test_student_folder_without_notebook_is_missing_notebook(tmp_path, kind):
    """Does an empty assignment folder, one with only a .txt, or a student folder with only a .pdf get a
    `missing_notebook` row naming the student (and the notebook the layout names)?"""
    rows = _rows(_build(kind, tmp_path, [
        ("submitted/bob/01_basic_tape/", b""), ("submitted/carol/09_fixture/notes.txt", b"hi"),
        ("submitted/erin/09_fixture/09_fixture.ipynb", b"{}"), ("dan/report.pdf", b"%PDF"),
        ("frank/.ipynb_checkpoints/09_fixture-checkpoint.ipynb", b"{}"), ("__MACOSX/", b""),
    ]), tmp_path)
    missing = {s: (c.student, c.assignment, c.notebook) for s, c in rows.items() if c.status == "missing_notebook"}
    assert missing == {"submitted/bob/01_basic_tape/": ("bob", "01_basic_tape", "01_basic_tape"),
                       "submitted/carol/09_fixture/": ("carol", TINY, TINY),
                       "dan/": ("dan", None, None), "frank/": ("frank", None, None)}, rows
    assert "only notes.txt" in rows["submitted/carol/09_fixture/"].reason
    assert "only report.pdf" in rows["dan/"].reason and "ask dan" in rows["dan/"].reason
    assert rows[f"submitted/erin/{TINY}/{TINY}.ipynb"].status is None


def test_empty_folder_is_not_missing_when_the_notebook_is_elsewhere(tmp_path):
    """Is no `missing_notebook` row made for a student whose notebook came under another name?"""
    root = _folder(tmp_path / "in", [("bob/", b""), (f"Bob{NB}", b"{}"), ("carol/09_fixture/", b""),
                                     (f"carol{NB}", b"{}")])
    assert [(c.source, c.status) for c in discover(root, KNOWN, tmp_path / "s")] == [
        (f"Bob{NB}", None), (f"carol{NB}", None)]


def test_unusable_archive_is_an_input_error(tmp_path):
    """Is a file that is not a zip refused as a whole, with the fix in the message?"""
    (tmp_path / "bad.zip").write_text("not a zip")
    with pytest.raises(InputError, match="extract it yourself"):
        discover(tmp_path / "bad.zip", KNOWN, tmp_path / "out")


def test_new_statuses_say_what_to_do():
    """Does every status name its meaning and what to do, and are the new ones final and unscored?"""
    new = {"bad_name", "too_large", "unreadable"}
    assert new <= set(STATUSES) and all(all(STATUSES[s]) for s in STATUSES)
    assert new <= FINAL and not new & GRADED_STATUSES


# -- grades.csv is safe to open -----------------------------------------------------------------------------
def test_grades_csv_neutralises_formulas_and_keeps_numbers(tmp_path):
    """Does a student id that starts with `=`, `+`, `-` or `@` reach grades.csv as text (a leading `'`), one
    that starts with a tab or CR in its printable form (`\\t`, `\\r`), while scores stay plain numbers?"""
    ids = ['=HYPERLINK("http://x","y")', "@SUM(1)", "+1", "-2", "\tx", "\rx", "plain"]
    write_grades_csv(tmp_path / "g.csv", [_standing(s, -1.5 if s == "plain" else 1.0) for s in ids])
    with open(tmp_path / "g.csv", newline="", encoding="utf-8") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert set(rows) == {"'" + s for s in ids[:4]} | {"\\tx", "\\rx", "plain"}, rows
    assert rows["plain"]["score"] == "-1.5" and rows["'@SUM(1)"]["score"] == "1.0"
    assert all(r["max_score"] == "1.0" for r in rows.values())


# -- one real run: the rows reach report.json and grades.csv ----------------------------------------------------
@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    course = make_course(root)
    good = nbformat.writes(fill(course, TINY, tiny())).encode()
    path = _zip(root / "lms.zip", [(f"alice{NB}", good), (f"=1+1{NB}", good), (f"ALICE{NB}", good),
                                   (f"bob{NB}", b"BOB-NOTEBOOK"), (f"eve\x07{NB}", good), ("dan/notes.txt", b"x")],
                zipfile.ZIP_STORED)
    _patch(path, b"BOB-NOTEBOOK", b"BOB-NOTEBOOX")
    result = run_grade(path, course, "--jobs", "2", "--timeout", "60")
    assert result.returncode == 0, result.stderr[-3000:]
    with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
        return load_report(course / "report.json"), list(csv.DictReader(handle))


def test_hostile_zip_rows_reach_report_and_csv(hostile_run):
    """Does a hostile zip end with one named row per entry in report.json, and grades.csv with the
    honest scores and a formula-like id neutralised?"""
    report, grades = hostile_run
    rows = {s["source"]: (s["status"], s["student"]) for s in report["submissions"]}
    assert rows == {f"ALICE{NB}": ("graded", "ALICE"), f"=1+1{NB}": ("graded", "=1+1"),
                    f"alice{NB}": ("duplicate", "ALICE"), f"bob{NB}": ("unreadable", "bob"),
                    f"eve\\x07{NB}": ("bad_name", "eve\\x07"), "dan/": ("missing_notebook", "dan")}, rows
    assert {(g["student"], g["score"]) for g in grades} >= {("ALICE", "1.0"), ("'=1+1", "1.0")}, grades
    assert not [g for g in grades if g["student"].startswith(("=", "+", "-", "@")) or g["student"] == "alice"]
