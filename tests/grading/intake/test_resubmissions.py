"""Submission times, LMS download names, the newest-submission rule and the roster (issue 14, items 2 and 5).

No kernels: `inputs.discover` on folders and zips built in tmp_path, `roster.read_roster` on CSV files.
"""
import os
import struct
import unicodedata
import zipfile
from datetime import datetime, timedelta, timezone

import pytest

from tapelab.grading.intake.archive import MAX_ENTRY_BYTES
from tapelab.grading.intake.discover import InputError, discover, is_older
from tapelab.grading.intake.roster import RosterError, read_roster
from tapelab.grading.statuses import FINAL, GRADED_STATUSES, STATUSES

KNOWN = {"01_basic_tape": "01_basic_tape", "09_fixture": "09_fixture"}
NB = "09_fixture"
OLD, NEW = (2026, 5, 1, 10, 0, 0), (2026, 5, 2, 11, 30, 0)


def _utc(when):
    return datetime(*when, tzinfo=timezone.utc)


def _build(kind, tmp_path, files):
    """The (name, bytes, date_time) files as a zip whose entries carry those times, or as a folder whose
    files have them as mtimes (both read as UTC)."""
    if kind == "zip":
        path = tmp_path / "in.zip"
        with zipfile.ZipFile(path, "w") as zf:
            for name, data, when in files:
                zf.writestr(zipfile.ZipInfo(name, when), data)
        return path
    root = tmp_path / "in"
    for name, data, when in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (_utc(when).timestamp(),) * 2)
    return root


def _found(source, tmp_path, prefer=()):
    return {c.source: c for c in discover(source, KNOWN, tmp_path / "scratch", prefer)}


# -- LMS download names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["zip", "folder"])
@pytest.mark.parametrize("name,student,first,last,when", [
    (f"HW1_jdoe_attempt_2026-10-01-13-45-12_{NB}.ipynb", "jdoe", None, None, (2026, 10, 1, 13, 45, 12)),
    (f"Lab 1 - Dropbox_x123y456_attempt_2025-09-07-18-27-28_{NB}.ipynb", "x123y456", None, None,
     (2025, 9, 7, 18, 27, 28)),
    (f"doejane_12345_67890_{NB}.ipynb", "doejane_12345", None, None, None),
    (f"doejane_LATE_12345_67891_{NB}-1.ipynb", "doejane_12345", None, None, None),
    (f"LATE_anon_Xy3Zq_67890_{NB}.ipynb", "anon_Xy3Zq", None, None, None),
    (f"Jane Doe_1234567_assignsubmission_file_/{NB}.ipynb", "1234567", "Jane", "Doe", None),
    (f"Jane Mary Doe_1234567_assignsubmission_file_{NB}.ipynb", "1234567", "Jane", "Mary Doe", None),
    (f"Participant_77_assignsubmission_file_/{NB}.ipynb", "77", None, None, None),
    (f"alice_2026-10-01T13-45-12_{NB}.ipynb", "alice", None, None, (2026, 10, 1, 13, 45, 12)),
    (f"bob_20261001T134512Z_{NB}.ipynb", "bob", None, None, (2026, 10, 1, 13, 45, 12)),
    (f"jo_ann_{NB}.ipynb", "jo_ann", None, None, None),
    (f"carol_2026-13-01T13-45-12_{NB}.ipynb", "carol_2026-13-01T13-45-12", None, None, None),
    (f"dan_9/{NB}.ipynb", "dan_9", None, None, None),
    (f"submitted/doejane_12345_67890/{NB}/{NB}.ipynb", "doejane_12345_67890", None, None, None),
], ids=["blackboard", "blackboard-spaces", "canvas", "canvas-late-copy-number", "canvas-anonymous", "moodle-folder",
        "moodle-flat", "moodle-blind", "iso-time", "compact-time", "no-format", "not-a-date", "folder-no-format",
        "nbgrader-layout"])
def test_lms_name_gives_student_names_and_time(tmp_path, kind, name, student, first, last, when):
    """Does each LMS download name give its stable student id, the names it carries and its time (the
    file's own time when the name has none), and is a name that matches no format left as it is?"""
    cand = _found(_build(kind, tmp_path, [(name, b"{}", OLD)]), tmp_path)[name]
    assert (cand.status, cand.notebook, cand.assignment) == (None, NB, NB), cand
    assert (cand.student, cand.first_name, cand.last_name) == (student, first, last)
    expected = (_utc(when), "file name") if when else (_utc(OLD), "file time")
    assert (cand.submitted_at, cand.time_origin) == expected


def test_name_whose_lms_id_is_a_path_is_bad_name(tmp_path):
    """Is a Blackboard-shaped name whose username is `..` refused as `bad_name`, never used as a folder?"""
    name = f"HW_.._attempt_2026-10-01-13-45-12_{NB}.ipynb"
    cand = _found(_build("zip", tmp_path, [(name, b"{}", OLD)]), tmp_path)[name]
    assert cand.status == "bad_name" and "starts with a dot" in cand.reason, cand


# -- the newest submission wins -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["zip", "folder"])
@pytest.mark.parametrize("files,winner,loser,words", [
    ([(f"bob/{NB}.ipynb", b"OLD", OLD), (f"bob_{NB}.ipynb", b"NEW", NEW)],
     f"bob_{NB}.ipynb", f"bob/{NB}.ipynb", ["2026-05-02 11:30:00 UTC (file time)", "2026-05-01 10:00:00 UTC (file time)"]),
    ([(f"bob_2026-10-02T09-00-00_{NB}.ipynb", b"NEW", OLD), (f"bob_2026-10-01T09-00-00_{NB}.ipynb", b"OLD", NEW)],
     f"bob_2026-10-02T09-00-00_{NB}.ipynb", f"bob_2026-10-01T09-00-00_{NB}.ipynb",
     ["2026-10-02 09:00:00 UTC (file name)", "2026-10-01 09:00:00 UTC (file name)"]),
], ids=["file-time", "name-time"])
def test_newest_file_wins_and_the_older_is_superseded(tmp_path, kind, files, winner, loser, words):
    """Of two files of one student and notebook, is the newer graded (by the time in its name over the
    file's time) and the older `superseded`, its reason naming the newer file and both times?"""
    rows = _found(_build(kind, tmp_path, files), tmp_path)
    assert rows[winner].status is None and rows[winner].path.read_bytes() == b"NEW"
    assert rows[loser].status == "superseded" and rows[loser].student == rows[winner].student == "bob"
    assert f"`{winner}`" in rows[loser].reason and all(w in rows[loser].reason for w in words), rows[loser].reason
    assert f"--prefer '{loser}'" in rows[loser].reason


@pytest.mark.parametrize("kind", ["zip", "folder"])
def test_timestamp_txt_outranks_the_file_time(tmp_path, kind):
    """Does nbgrader's timestamp.txt decide which copy is newer, even against the files' own times?"""
    rows = _found(_build(kind, tmp_path, [
        (f"bob/{NB}/{NB}.ipynb", b"A", NEW), (f"bob/{NB}/timestamp.txt", b"2026-04-01 08:00:00", NEW),
        (f"submitted/bob/{NB}/{NB}.ipynb", b"B", OLD), (f"submitted/bob/{NB}/timestamp.txt", b"2026-06-01 08:00:00", OLD),
    ]), tmp_path)
    graded, older = rows[f"submitted/bob/{NB}/{NB}.ipynb"], rows[f"bob/{NB}/{NB}.ipynb"]
    assert (graded.status, graded.time_origin, graded.submitted_at) == (None, "timestamp.txt", _utc((2026, 6, 1, 8, 0, 0)))
    assert graded.path.read_bytes() == b"B"
    assert older.status == "superseded" and "2026-04-01 08:00:00 UTC (timestamp.txt)" in older.reason


@pytest.mark.parametrize("kind", ["zip", "folder"])
def test_bad_timestamp_txt_falls_through_to_the_next_time(tmp_path, kind):
    """Is a timestamp.txt that holds no time, or is not UTF-8, ignored for the time in the name, then the file's?"""
    rows = _found(_build(kind, tmp_path, [
        (f"x/alice_2026-10-01T13-45-12_{NB}.ipynb", b"{}", OLD), ("x/timestamp.txt", b"yesterday-ish", OLD),
        (f"y/bob_{NB}.ipynb", b"{}", OLD), ("y/timestamp.txt", b"\xff\xfe2026", OLD)]), tmp_path)
    alice, bob = rows[f"x/alice_2026-10-01T13-45-12_{NB}.ipynb"], rows[f"y/bob_{NB}.ipynb"]
    assert (alice.submitted_at, alice.time_origin) == (_utc((2026, 10, 1, 13, 45, 12)), "file name")
    assert (bob.submitted_at, bob.time_origin) == (_utc(OLD), "file time")


def test_linked_timestamp_txt_is_not_followed(tmp_path):
    """Is a timestamp.txt that is a symbolic link never read, so the file's own time is used?"""
    root = _build("folder", tmp_path, [(f"bob/{NB}.ipynb", b"{}", OLD)])
    (tmp_path / "elsewhere.txt").write_text("2030-01-01 00:00:00")
    (root / "bob" / "timestamp.txt").symlink_to(tmp_path / "elsewhere.txt")
    bob = _found(root, tmp_path)[f"bob/{NB}.ipynb"]
    assert (bob.status, bob.submitted_at, bob.time_origin) == (None, _utc(OLD), "file time")


def test_zip_extended_timestamp_is_utc_and_outranks_the_dos_time(tmp_path):
    """Is a zip entry's extended-timestamp field (UTC seconds) its time, rather than its zone-less DOS time?"""
    info = zipfile.ZipInfo(f"bob_{NB}.ipynb", OLD)
    info.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(_utc(NEW).timestamp()))
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zf:
        zf.writestr(info, b"{}")
    bob = _found(tmp_path / "a.zip", tmp_path)[f"bob_{NB}.ipynb"]
    assert (bob.submitted_at, bob.time_origin) == (_utc(NEW), "file time")


@pytest.mark.parametrize("kind", ["zip", "folder"])
def test_canvas_resubmissions_are_one_student_the_last_upload_graded(tmp_path, kind):
    """Are two Canvas files of one student (two attachment ids, one marked LATE and renamed `-1`) one
    student, the higher attachment id graded when both carry the download's time?"""
    first, again = f"doejane_12345_67890_{NB}.ipynb", f"doejane_LATE_12345_67990_{NB}-1.ipynb"
    rows = _found(_build(kind, tmp_path, [(first, b"FIRST", OLD), (again, b"AGAIN", OLD)]), tmp_path)
    assert {c.student for c in rows.values()} == {"doejane_12345"}
    assert rows[again].status is None and rows[again].path.read_bytes() == b"AGAIN"
    assert rows[first].status == "superseded" and "67990 > 67890" in rows[first].reason, rows[first].reason


def test_canvas_resubmission_in_a_later_download_wins_by_time(tmp_path):
    """Does a file from a later download win by its time, whatever its attachment id?"""
    rows = _found(_build("folder", tmp_path, [(f"doejane_12345_900_{NB}.ipynb", b"NEW", NEW),
                                              (f"doejane_12345_67890_{NB}.ipynb", b"OLD", OLD)]), tmp_path)
    assert rows[f"doejane_12345_900_{NB}.ipynb"].status is None
    assert rows[f"doejane_12345_67890_{NB}.ipynb"].status == "superseded"


# -- --prefer ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["zip", "folder"])
@pytest.mark.parametrize("value", [f"bob/{NB}.ipynb", f"{NB}.ipynb"], ids=["source", "base-name"])
def test_prefer_picks_an_older_file(tmp_path, kind, value):
    """Does --prefer (a source, or a base name) grade the older file, the newer `superseded` as not preferred?"""
    rows = _found(_build(kind, tmp_path, [(f"bob/{NB}.ipynb", b"OLD", OLD), (f"bob_{NB}.ipynb", b"NEW", NEW),
                                          (f"carol_{NB}.ipynb", b"C", OLD)]), tmp_path, prefer=[value])
    assert rows[f"bob/{NB}.ipynb"].status is None and rows[f"bob/{NB}.ipynb"].preferred
    assert rows[f"bob/{NB}.ipynb"].path.read_bytes() == b"OLD"
    newer = rows[f"bob_{NB}.ipynb"]
    assert newer.status == "superseded" and "not the file given with --prefer" in newer.reason, newer.reason
    assert rows[f"carol_{NB}.ipynb"].status is None and not rows[f"carol_{NB}.ipynb"].preferred


@pytest.mark.parametrize("prefer,words", [
    (["nobody_09_fixture.ipynb"], "'nobody_09_fixture.ipynb' names no gradable file"),
    (["huge_09_fixture.ipynb"], "'huge_09_fixture.ipynb' names no gradable file"),
    ([f"bob/{NB}.ipynb", f"bob_{NB}.ipynb"], f"and --prefer 'bob/{NB}.ipynb' name two files of bob's {NB}"),
    ([f"{NB}.ipynb"], f"'{NB}.ipynb' names two files of bob's {NB} (`bob/{NB}.ipynb`, `submitted/bob/{NB}/{NB}.ipynb`)"),
], ids=["no-such-file", "not-gradable", "two-values", "one-value-two-files"])
def test_bad_prefer_is_an_input_error_naming_it(tmp_path, prefer, words):
    """Is a --prefer that names no gradable file, or two files of one student and notebook, refused
    with the value and the fix in the message?"""
    root = _build("folder", tmp_path, [(f"bob/{NB}.ipynb", b"1", OLD), (f"bob_{NB}.ipynb", b"2", NEW),
                                       (f"submitted/bob/{NB}/{NB}.ipynb", b"3", OLD)])
    with open(root / f"huge_{NB}.ipynb", "wb") as handle:
        handle.truncate(MAX_ENTRY_BYTES + 1)  # too_large: not gradable
    with pytest.raises(InputError, match="as the report's `source` shows it") as error:
        discover(root, KNOWN, tmp_path / "scratch", prefer)
    assert words in str(error.value), error.value


# -- across runs ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("candidate,graded,older", [
    (_utc(OLD), _utc(NEW).isoformat(), True),
    (_utc(NEW), _utc(OLD).isoformat(), False),
    (_utc(OLD), _utc(OLD).isoformat(), False),
    (_utc(OLD), "2026-05-01T12:00:00+02:00", False),  # the same instant in another zone
    (_utc(OLD), "2026-05-01T12:00:01+02:00", True),
    (_utc(OLD), "2026-05-01T10:00:01", True),  # naive: UTC
    (_utc(OLD) + timedelta(microseconds=1), _utc(OLD).isoformat(), False),
    (None, _utc(NEW).isoformat(), False),
    (_utc(OLD), None, False),
    (_utc(OLD), "", False),
    (_utc(OLD), "not a time", False),
], ids=["older", "newer", "equal", "other-zone", "other-zone-later", "naive-stored", "microsecond-newer", "unknown-file",
        "unknown-graded", "empty-graded", "unreadable-graded"])
def test_is_older_compares_with_the_graded_time(candidate, graded, older):
    """Is a file older than the graded submission only when both times are known and it is strictly earlier?"""
    assert is_older(candidate, graded) is older


def test_superseded_is_final_unscored_and_says_what_to_do():
    """Is `superseded` a final status without a score, whose text says what happened and what to do?"""
    meaning, todo = STATUSES["superseded"]
    assert "newer" in meaning and "--prefer" in todo
    assert "superseded" in FINAL and "superseded" not in GRADED_STATUSES


# -- the roster ------------------------------------------------------------------------------------------------
def _roster(tmp_path, text, encoding="utf-8"):
    path = tmp_path / "class.csv"
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def test_roster_reads_nbgrader_import_csv(tmp_path):
    """Does a roster in nbgrader's import format (BOM, any column order, extra columns, blank cells and an
    empty line) give each person's id, names, email and LMS id, unknown values as None?"""
    path = _roster(tmp_path, "lms_user_id, id ,last_name,first_name,email,section\r\n"
                             "12345, alice ,Doe,Alice,alice@example.org,A\r\n"
                             ",José,,,,B\r\n,,,,,\r\n", "utf-8-sig")
    people = {p.id: p for p in read_roster(path).people}
    assert set(people) == {"alice", unicodedata.normalize("NFC", "José")}
    alice = people["alice"]
    assert (alice.first_name, alice.last_name, alice.email, alice.lms_user_id) == ("Alice", "Doe", "alice@example.org",
                                                                                   "12345")
    assert people["José"].names() == {"first_name": None, "last_name": None, "email": None, "lms_user_id": None}


@pytest.mark.parametrize("text,words", [
    (None, "cannot be read"),
    (b"id,first_name\nalice,Al\xe9\n", "line 2: not UTF-8"),
    ("student,first_name\nalice,Al\n", "line 1: no `id` column (the first line holds student,first_name)"),
    ("", "line 1: no `id` column"),
    ("id,first_name\nalice,Al\n,Bob\n", "line 3: the id is empty"),
    ("id,first_name\nAlice,Al\nbob,Bo\nalice,Ali\n", "line 4: id `alice` is already on line 2"),
    ("id,lms_user_id\nalice,12\nbob,12\n", "line 3: lms_user_id `12` is already on line 2"),
    ("id\n../etc\n", "line 2: the student id is empty, holds `/`"),
    ("id\na\x00b\n", "line 2: the student id holds the control or invisible character U+0000"),
    ("id\nalice\n" + "x" * 200_000 + "\n", "line 3: not a CSV file (field larger than field limit"),
], ids=["missing-file", "not-utf8", "no-id-column", "empty-file", "empty-id", "same-id-twice", "same-lms-id-twice",
        "id-is-a-path", "id-with-control-character", "not-csv"])
def test_roster_errors_name_the_file_the_line_and_the_fix(tmp_path, text, words):
    """Is each unusable roster refused with a RosterError naming the file, the line where it applies, and
    what to do?"""
    path = tmp_path / "class.csv" if text is None else _roster(tmp_path, text)
    with pytest.raises(RosterError) as error:
        read_roster(path)
    message = str(error.value)
    assert str(path) in message and words in message, message
    assert any(fix in message for fix in ("rerun", "delete the line", "keep one line", "--roster")), message


@pytest.mark.parametrize("student,expected", [
    ("alice", "alice"), ("ALICE", "alice"), (unicodedata.normalize("NFD", "josé"), "José"),
    ("doejane_12345", "alice"), ("smithbob_777", "bob"), ("doejane_999", None), ("12345_777", None), ("carol", None),
], ids=["id", "id-case", "id-nfd", "lms-token", "lms-token-other", "no-match", "two-people", "unknown"])
def test_roster_matches_by_id_then_by_lms_user_id_token(tmp_path, student, expected):
    """Is a submission's student id matched to the roster by id (ignoring case and normalization), else by
    an LMS user id equal to one `_`-separated part of it, and never to two people at once?"""
    roster = read_roster(_roster(tmp_path, "id,lms_user_id\nalice,12345\nbob,777\nJosé,\n"))
    person = roster.match(student)
    assert (person.id if person else None) == expected


def test_roster_ids_are_settled_before_files_are_compared(tmp_path):
    """With the roster's `identify`, are a Canvas file (matched by LMS user id), a folder and an empty
    folder of one person one student under the roster's id, the newest file graded?"""
    roster = read_roster(_roster(tmp_path, "id,lms_user_id\nalice,12345\n"))
    root = _build("folder", tmp_path, [(f"doejane_12345_67890_{NB}.ipynb", b"OLD", OLD), (f"Alice/{NB}.ipynb", b"NEW", NEW),
                                       ("doejane_12345_1_assignment/notes.txt", b"x", OLD)])
    rows = {c.source: c for c in discover(root, KNOWN, tmp_path / "scratch", identify=roster.identify)}
    assert {c.student for c in rows.values()} == {"alice"}, rows
    assert rows[f"Alice/{NB}.ipynb"].status is None
    assert rows[f"doejane_12345_67890_{NB}.ipynb"].status == "superseded"
    assert set(rows) == {f"Alice/{NB}.ipynb", f"doejane_12345_67890_{NB}.ipynb"}  # alice sent a notebook: not missing
