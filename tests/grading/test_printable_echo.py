"""Input echoed by the post-grading verbs, in its one printable form (`tapelab.outside.printable`), and ids
compared in one normal form (NFC). No kernel runs: the class is insight_class's, with three students added
to its gradebook: one whose names hold terminal escapes and a bidi override, one whose id does, and an NFC `José`.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import unicodedata
from pathlib import Path

import pytest

from grade_fixtures import BASIC, TINY
from insight_class import build_class
from tapelab.cli import main
from tapelab.outside import normal, printable

ESC, BEL, RLO = "\x1b", "\x07", "\u202e"
JOSE = "jos\u00e9"  # NFC; NFD is "jose" + U+0301
HOSTILE_ID = f"mal{ESC}[2J"


def _raw(text: str) -> list[str]:
    """The characters of `text` a terminal or spreadsheet would act on (every one but the line ends)."""
    return [c for c in text if not c.isprintable() and c != "\n"]


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    from nbgrader.api import Gradebook

    course = build_class(tmp_path_factory.mktemp("echo"))
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_student("rho", first_name=f"{ESC}]0;owned{BEL}Rho", last_name=f"Evil{RLO}gpj.exe",
                                    lms_user_id="4242")
        gb.update_or_create_student(HOSTILE_ID, lms_user_id="x")
        gb.update_or_create_student(JOSE, lms_user_id="5151")
    return course


def test_printable_shows_every_invisible_character_as_its_escape():
    """Are control characters, bidi overrides, line separators, zero-width characters and undecodable bytes
    shown as escapes, printable text (accents, spaces) kept, and is the form stable when applied twice?"""
    text = f"a{ESC}[2J{BEL}\r\n\t{RLO}\u2028\u200b\udcff é ü"
    shown = printable(text)
    assert shown == "a\\x1b[2J\\x07\\r\\n\\t\\u202e\\u2028\\u200b\\xff é ü"
    assert printable(shown) == shown and not _raw(shown)
    assert printable("x" * 10, 4) == "xxxx... (10 characters)"


def test_normal_is_nfc():
    """Is an NFD id the same as its NFC form after `normal`?"""
    assert normal(unicodedata.normalize("NFD", JOSE)) == JOSE


HOSTILE_ARGUMENTS = {
    "canvas-assignment id": ["export", "canvas", "--canvas-assignment", f"{BASIC}={ESC}[2J"],
    "canvas-assignment pair": ["export", "canvas", "--canvas-assignment", f"{ESC}]0;x{BEL}"],
    "canvas-assignment notebook": ["export", "canvas", "--canvas-assignment", f"{RLO}{BASIC}=12"],
    "gradescope student": ["export", "gradescope", "--student", f"{ESC}]0;x{BEL}", "--notebook", TINY],
    "gradescope notebook": ["export", "gradescope", "--student", "ana", "--notebook", f"{RLO}{TINY}"],
    "review exercise": ["review", f"{ESC}[2J1.1"],
    "export out": ["export", "long", "--out", f"/nowhere{BEL}/{ESC}[2J.csv"],
    "insight out": ["insight", "--out", f"/nowhere/{RLO}/x"],
}


@pytest.mark.parametrize("name", HOSTILE_ARGUMENTS)
def test_a_hostile_argument_is_refused_in_its_printable_form(course, capsys, name):
    """Is an argument holding ESC, BEL or U+202E refused (exit 2) with its escapes shown, no raw control
    character reaching the terminal?"""
    code = main([*HOSTILE_ARGUMENTS[name], "--course", str(course)])
    out, err = capsys.readouterr()
    assert code == 2 and not _raw(out + err), repr(out + err)
    assert ("\\x1b" in err or "\\x07" in err or "\\u202e" in err) and "Traceback" not in err, err


@pytest.mark.parametrize("verb", [["feedback"], ["insight"], ["export", "long"], ["review", "1.1"]])
def test_a_hostile_course_path_is_echoed_in_its_printable_form(tmp_path, capsys, verb):
    """Does every verb name a --course that holds escapes in its printable form?"""
    code = main([*verb, "--course", str(tmp_path / f"no{ESC}]0;x{BEL}where{RLO}")])
    out, err = capsys.readouterr()
    assert code == 2 and not _raw(out + err) and "no\\x1b]0;x\\x07where\\u202e" in err, repr(err)


def test_canvas_cells_and_warnings_hold_no_raw_control_character(course, tmp_path, capsys):
    """Do --section and roster names with escapes land in the Canvas CSV in their printable form (a leading
    `=` still neutralised), and does the warning naming a student without a Canvas id escape that id?"""
    target = tmp_path / "canvas.csv"
    assert main(["export", "canvas", "--course", str(course), "--out", str(target),
                 "--section", f"={ESC}]0;x{BEL}cmd"]) == 0
    out, err = capsys.readouterr()
    text = target.read_text()
    assert not _raw(text) and not _raw(out + err), repr(text)
    rows = list(csv.reader(io.StringIO(text)))
    rho = next(r for r in rows if r[1] == "4242")
    assert rho[0] == "Evil\\u202egpj.exe, \\x1b]0;owned\\x07Rho" and rho[4] == "'=\\x1b]0;x\\x07cmd", rho
    assert printable(HOSTILE_ID) in err


def test_long_csv_and_grades_csv_hold_no_raw_control_character(course, tmp_path, capsys):
    """Do an id with escapes and names with a bidi override reach the long export and grades.csv only in
    their printable form?"""
    copy = shutil.copytree(course, tmp_path / "course")
    assert main(["export", "long", "--course", str(copy), "--out", str(tmp_path)]) == 0
    assert main(["feedback", "--course", str(copy)]) == 0
    capsys.readouterr()
    for path in (tmp_path / "grades-long.csv", copy / "grades.csv"):
        text = path.read_text()
        assert not _raw(text) and printable(HOSTILE_ID) in text, (path, text[:500])
    assert "Evil\\u202egpj.exe" in (copy / "grades.csv").read_text()


def test_an_nfd_student_id_finds_the_nfc_one(course, tmp_path, capsys):
    """Does `--student` given in NFD find the student grading stored in NFC?"""
    target = tmp_path / "results.json"
    code = main(["export", "gradescope", "--course", str(course), "--out", str(target),
                 "--student", unicodedata.normalize("NFD", JOSE), "--notebook", TINY])
    assert code == 0, capsys.readouterr().err
    assert json.loads(target.read_text())["output"].startswith(f"{TINY}: 0 of")
