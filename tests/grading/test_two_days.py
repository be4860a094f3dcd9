"""Two days of a course, as the instructor guide's section 7 runs them (issue 14): the guide's own
commands, run verbatim with HOME set to a folder holding the downloads and the roster, plus a
manual score given through formgrader's real server between the second day's runs, and its
"Generate Feedback" button pressed (through the same HTTP API as the button).

One course and one walk-through for the module. After each step it keeps grades.csv, report.json
and `nbgrader export`, so every test reads what the instructor would have seen then. The students,
in the TensorFlow-free 09_fixture notebook:
  ana right (1/1); ben wrong on day one, right in a late file; cy a file that is not a notebook;
  dee right, but she edited the locked test cell (tampered); fay on the roster, sent nothing.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import subprocess
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert import HTMLExporter

from formgrader import formgrader
from grade_fixtures import TINY, TINY_HIDDEN, fill, make_course, tiny, write
from guide import GUIDE, blocks, run_as_written
from tapelab.grading.handback.page import PAGE
from tapelab.release import nbgrader_env

pytestmark = pytest.mark.heavy(55)  # seconds, about: scheduled first (tests/conftest.py)

SECTION = "## 7. The second day"
ROSTER = {"ana": ("Ana", "Lima"), "ben": ("Ben", "Nevis"), "cy": ("Cy", "Young"), "dee": ("Dee", "Ray"),
          "fay": ("Fay", "Wray")}
DAY_ONE = datetime(2026, 11, 30, 10, 0, 0)  # the zip entries' time (zip times carry no zone: taken as UTC)
LATE = datetime(2026, 12, 1, 9, 30, 0, tzinfo=timezone.utc)  # ben's late file
MANUAL = 0.5  # dee's manual score for the test cell she edited
COMMENT = "Please leave the test cells as they are."
EDITED_TEST = "assert True  # dee's edit\n"


def guide_blocks() -> list[str]:
    """The ```bash blocks of the guide's section 7, in order."""
    return blocks(SECTION)


def _dee(nb: nbformat.NotebookNode) -> None:
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex9_1_test")
    test.source = EDITED_TEST


def _inputs(home: Path, course: Path) -> None:
    """~/Downloads/day1.zip, ~/Downloads/late/, ~/roster.csv as the instructor has them."""
    downloads = home / "Downloads"
    downloads.mkdir()
    notebooks = {"ana": fill(course, TINY, tiny()), "ben": fill(course, TINY, tiny("41")),
                 "dee": fill(course, TINY, tiny(), edit=_dee)}
    with zipfile.ZipFile(downloads / "day1.zip", "w") as archive:
        for student, nb in notebooks.items():
            archive.writestr(zipfile.ZipInfo(f"{student}_{TINY}.ipynb", DAY_ONE.timetuple()[:6]), nbformat.writes(nb))
        archive.writestr(zipfile.ZipInfo(f"cy_{TINY}.ipynb", DAY_ONE.timetuple()[:6]), "this is not a notebook")
    late = write(fill(course, TINY, tiny()), downloads / "late" / f"ben_{TINY}.ipynb")
    os.utime(late, (LATE.timestamp(), LATE.timestamp()))
    with (home / "roster.csv").open("w", newline="") as handle:  # `nbgrader db student import`'s format
        writer = csv.writer(handle)
        writer.writerow(["id", "first_name", "last_name", "email"])
        writer.writerows([s, first, last, f"{s}@example.org"] for s, (first, last) in ROSTER.items())


def _bash(block: str, home: Path) -> subprocess.CompletedProcess:
    return run_as_written(block, home)


def _export(course: Path, target: Path) -> list[dict]:
    """What `nbgrader export --to target` writes: its CSV plugin on the course's gradebook, in this process."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(target)).export(gb)
    return list(csv.DictReader(target.open(newline="")))


def _snapshot(name: str, course: Path, result: subprocess.CompletedProcess, store: Path) -> dict:
    """What the instructor can read after a step: its output, grades.csv, report.json, nbgrader export."""
    grades = (course / "grades.csv").read_text()
    return {"name": name, "result": result, "grades": list(csv.DictReader(io.StringIO(grades))),
            "report": json.loads((course / "report.json").read_text()),
            "export": _export(course, store / f"export-{name}.csv")}


def _manual_score(server) -> dict:
    """dee's test cell scored by hand and commented, through formgrader's API as its boxes do."""
    notebooks = server.api("GET", f"/formgrader/api/submitted_notebooks/{TINY}/{TINY}")
    dee = next(nb for nb in notebooks if nb["student"] == "dee")
    (grade,) = server.api("GET", f"/formgrader/api/grades?submission_id={dee['id']}")
    server.api("PUT", f"/formgrader/api/grade/{grade['id']}", {"manual_score": MANUAL})
    comments = server.api("GET", f"/formgrader/api/comments?submission_id={dee['id']}")
    server.api("PUT", f"/formgrader/api/comment/{comments[0]['id']}", {"manual_comment": COMMENT})
    return {"comments": comments}


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("home")
    course = make_course(home, "tapelab-2026")
    _inputs(home, course)
    store = tmp_path_factory.mktemp("snapshots")
    first, late, rerun, handback = guide_blocks()
    steps = {"first": _snapshot("first", course, _bash(first, home), store)}
    steps["partial"] = _snapshot("partial", course, _bash(late, home), store)
    steps["resubmission"] = _snapshot("resubmission", course, _bash(rerun, home), store)
    with formgrader(course) as server:
        seen = {"assignments": server.api("GET", "/formgrader/api/assignments"),
                "students": server.api("GET", "/formgrader/api/students"),
                "submissions": server.api("GET", f"/formgrader/api/submissions/{TINY}"),
                **_manual_score(server)}
        seen["button"] = server.api("POST", f"/formgrader/api/assignment/{TINY}/dee/generate_feedback")
        seen["button_page"] = _page(course, "dee")
    steps["manual"] = _snapshot("manual", course, _bash(handback, home), store)
    pages = {student: _page(course, student) for student in ("ana", "ben", "cy", "dee")}
    command = subprocess.run(["nbgrader", "generate_feedback", TINY, "--force"], cwd=course, env=nbgrader_env(),
                             capture_output=True, text=True, timeout=300)
    nbgrader_pages = {student: _page(course, student) for student in pages}
    prefer = f"{rerun.strip()} --prefer ben_{TINY}.ipynb"  # the guide's own override, last
    steps["prefer"] = _snapshot("prefer", course, _bash(prefer, home), store)
    return {"home": home, "course": course, "steps": steps, "formgrader": seen, "pages": pages,
            "nbgrader_pages": nbgrader_pages, "command": command}


def _page(course: Path, student: str) -> str:
    return (course / "feedback" / student / TINY / f"{TINY}.html").read_text()


def _shows(page: str, line: str) -> bool:
    """Does a reader of the page see `line` (tags dropped, entities decoded, whitespace ignored)?"""
    squash = functools.partial(re.sub, r"\s+", "")
    return squash(line) in squash(BeautifulSoup(page, "html.parser").get_text())


def _scores(rows: list[dict], student="student_id", score="score") -> dict:
    return {(r[student], r["assignment"]): (float(r[score]), float(r["max_score"])) for r in rows}


def test_the_guide_has_the_four_blocks_this_test_runs():
    """Does section 7 of the guide hold the commands of the two days, each a `tapelab` or `nbgrader` line?"""
    blocks = guide_blocks()
    assert len(blocks) == 4
    assert all(line.strip().startswith(("tapelab ", "cd ")) for block in blocks for line in block.splitlines())


@pytest.mark.parametrize("step", ["first", "partial", "resubmission", "manual", "prefer"])
def test_every_command_of_the_guide_succeeds(days, step):
    """Does each block of the guide exit 0?"""
    result = days["steps"][step]["result"]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.parametrize("step", ["first", "partial", "resubmission", "manual", "prefer"])
def test_grades_csv_agrees_with_nbgrader_export_cell_by_cell(days, step):
    """After a first run, a partial regrade, a resubmission, a manual score and a --prefer regrade, does
    grades.csv give every student and assignment of `nbgrader export` the same score and max score, and no
    other row?"""
    snapshot = days["steps"][step]
    exported = _scores(snapshot["export"])
    assert _scores(snapshot["grades"], student="student") == exported
    assert {s for s, _ in exported} == set(ROSTER)


def test_a_partial_regrade_still_covers_the_class(days):
    """Does grading one late file leave grades.csv and report.json with the whole class, and ben's new score?"""
    partial = days["steps"]["partial"]
    assert [s["student"] for s in partial["report"]["submissions"]] == ["ben"]
    assert {row["student"] for row in partial["report"]["gradebook"]} == set(ROSTER)
    assert _scores(partial["grades"], student="student")[("ben", TINY)] == (1.0, 1.0)


def test_an_older_file_is_superseded_and_the_newer_grade_kept(days):
    """Rerunning the day-one zip after ben's late file: is his old file `superseded` (recognised by its
    content, which was graded and replaced), naming the late one, with his grade of 1 kept in the gradebook,
    grades.csv and the report?"""
    rerun = days["steps"]["resubmission"]
    ben = next(s for s in rerun["report"]["submissions"] if s["student"] == "ben")
    assert ben["status"] == "superseded" and f"late/ben_{TINY}.ipynb" in ben["reason"], ben
    assert "this file was graded before" in ben["reason"]  # known by its content, whatever the clocks say
    assert _scores(rerun["grades"], student="student")[("ben", TINY)] == (1.0, 1.0)
    history = [h["status"] for h in rerun["report"]["inputs"][f"{days['home'] / 'Downloads' / 'day1.zip'}:ben_{TINY}.ipynb"]]
    assert history == ["graded", "superseded"], history


def test_a_student_whose_only_file_was_broken_is_listed_with_zero_and_the_reason(days):
    """Is cy, whose only file is not a notebook, in grades.csv (0, invalid_notebook, why), in `nbgrader
    export` and in formgrader's submissions?"""
    first = days["steps"]["first"]
    (row,) = [r for r in first["grades"] if r["student"] == "cy" and r["notebook"] == TINY]
    assert (float(row["score"]), row["status"]) == (0.0, "invalid_notebook") and "not JSON" in row["reason"], row
    assert ("cy", TINY) in _scores(first["export"])
    assert "cy" in {s["student"] for s in days["formgrader"]["submissions"]}


def test_a_student_who_sent_nothing_is_not_submitted(days):
    """Is fay, on the roster only, a 0 with status not_submitted?"""
    rows = [r for r in days["steps"]["manual"]["grades"] if r["student"] == "fay"]
    assert {(r["notebook"], float(r["score"]), r["status"]) for r in rows} == {
        (TINY, 0.0, "not_submitted"), ("01_basic_tape", 0.0, "not_submitted")}


def test_a_manual_score_reaches_grades_csv_feedback_and_report(days):
    """After a manual score and comment in formgrader and `tapelab feedback`, do grades.csv, the report and
    dee's feedback page show them, with no hidden test?"""
    manual = days["steps"]["manual"]
    (row,) = [r for r in manual["grades"] if r["student"] == "dee" and r["notebook"] == TINY]
    assert (float(row["score"]), row["manual"]) == (MANUAL, "yes"), row
    page = days["pages"]["dee"]
    assert f"Score: {MANUAL} / 1.0" in page and COMMENT in page
    assert not _shows(page, TINY_HIDDEN)
    assert "feedback" in manual["result"].stdout and "grades.csv" in manual["result"].stdout


def test_feedback_is_handed_back_through_the_courses_exchange(days):
    """Did `nbgrader release_feedback` put a page for each graded student into the course's exchange?"""
    pages = list((days["course"] / "exchange" / "tapelab" / "feedback").glob("*.html"))
    assert len(pages) == 4, pages  # ana, ben, cy (its 0 and the reason), dee


def test_formgrader_shows_released_assignments_names_and_times(days):
    """Does formgrader list every assignment as released, the roster's names, and each submission's time
    (the zip entry's for day one, the file's for ben's late one)?"""
    seen = days["formgrader"]
    assert {a["status"] for a in seen["assignments"]} == {"released"}
    assert {s["id"]: (s["first_name"], s["last_name"]) for s in seen["students"]} == ROSTER
    times = {s["student"]: s["timestamp"] for s in seen["submissions"] if s["timestamp"]}
    assert (times["ana"], times["ben"]) == (DAY_ONE.isoformat(), LATE.replace(tzinfo=None).isoformat()), times


def test_a_tampered_submission_says_why_in_formgrader(days):
    """Does dee's comment box (formgrader's placeholder: the auto comment) say what was changed, where her
    file is kept, and quote her version of the locked cell?"""
    (comment,) = [c for c in days["formgrader"]["comments"] if c["auto_comment"]]
    text = comment["auto_comment"]
    assert text.startswith("tapelab:") and "ex9_1_test" in text, text
    assert f"submitted/dee/{TINY}/{TINY}.ipynb" in text and EDITED_TEST.strip() in text
    assert (days["course"] / "submitted" / "dee" / TINY / f"{TINY}.ipynb").is_file()


def test_the_summary_names_who_needs_what_and_where_it_wrote(days):
    """Does the day-one summary give the score distribution, the students behind each non-graded status
    with what to do, and the paths written; and did progress start before the first notebook?"""
    result = days["steps"]["first"]["result"]
    out = result.stdout
    assert re.search(rf"invalid_notebook\s+1\s+cy \(cy_{TINY}\.ipynb\)", out), out
    assert re.search(r"tampered\s+1\s+dee", out) and "ask the student to resubmit" in out, out
    assert re.search(rf"{TINY}\s+4/5\s", out), out  # 4 of the 5 roster students submitted
    assert f"wrote grades.csv: {days['course'] / 'grades.csv'}" in out
    progress = result.stderr
    assert progress.index("opening the course folder") < progress.index("[1/4]"), progress


def test_feedback_is_rendered_as_each_notebook_is_graded(days):
    """Is ben's late page rendered when his notebook is graded (while kernels run), so the refresh at the end
    of the run finds every page unchanged, and does the page show his new score?"""
    partial = days["steps"]["partial"]
    assert "(1 page(s) written, 3 unchanged, 0 failed)" in partial["report"]["written"]["feedback"], partial["report"]
    assert "Score: 1.0 / 1.0" in days["pages"]["ben"]


@pytest.mark.parametrize("step, pages, graded, unchanged", [
    ("first", (4, 0), 2, 0),  # ana and ben graded, dee tampered, cy invalid: four pages created
    ("partial", (1, 3), 1, 0),  # ben's late file: his page rewritten, the other three kept
    ("resubmission", (0, 4), 0, 2)])  # day one again: ana and dee unchanged, ben superseded, cy invalid again
def test_the_summary_counts_what_the_run_did(days, step, pages, graded, unchanged):
    """Do the printed summary and report.json count the pages this run wrote (as each notebook was graded or
    at the end) apart from those it found unchanged, the files graded this run apart from those skipped as
    unchanged (never both for one file), and say "course set-up included" only on a run that set one up?"""
    snapshot = days["steps"][step]
    out, report = snapshot["result"].stdout, snapshot["report"]
    written = f"({pages[0]} page(s) written, {pages[1]} unchanged, 0 failed)"
    assert written in report["written"]["feedback"] and written in out, out
    assert (report["counts"].get("graded", 0), report["counts"]["skipped_unchanged"]) == (graded, unchanged)
    rows = dict(re.findall(r"^(graded|unchanged)\s+(\d+)", out, re.M))
    assert rows == {k: str(v) for k, v in (("graded", graded), ("unchanged", unchanged)) if v}, out
    assert report["timing"]["course_set_up"] is False and "set-up" not in out, out


def test_formgraders_button_writes_tapelabs_page_with_no_hidden_test(days):
    """Does formgrader's "Generate Feedback" button write, right after the manual score, the page `tapelab
    feedback` writes (tapelab's Content-Security-Policy, the manual score, no hidden test), where stock
    nbconvert on the same autograded notebook shows the hidden test (so the check can fail)?"""
    button = days["formgrader"]
    assert button["button"]["success"], button["button"]
    autograded = nbformat.read(days["course"] / "autograded" / "dee" / TINY / f"{TINY}.ipynb", as_version=4)
    assert _shows(HTMLExporter().from_notebook_node(autograded)[0], TINY_HIDDEN)
    assert not _shows(button["button_page"], TINY_HIDDEN)
    assert button["button_page"] == days["pages"]["dee"]
    policy = re.search(r'Content-Security-Policy\\" content=\\"([^"\\]+)\\"', PAGE.read_text()).group(1)
    meta = BeautifulSoup(button["button_page"], "html.parser").find("meta", attrs={"http-equiv": "Content-Security-Policy"})
    assert meta is not None and meta["content"] == policy


def test_nbgrader_generate_feedback_writes_tapelabs_pages(days):
    """Does `nbgrader generate_feedback --force` in the course folder write, for every student, the page
    `tapelab feedback` wrote, with no hidden test?"""
    assert days["command"].returncode == 0, days["command"].stderr[-3000:]
    assert days["nbgrader_pages"] == days["pages"]
    assert [s for s, page in days["pages"].items() if _shows(page, TINY_HIDDEN)] == []


def test_prefer_grades_the_named_older_file_over_the_newer_grade(days):
    """With --prefer naming ben's day-one file, is that file graded again (his 0 replaces the late 1)?"""
    prefer = days["steps"]["prefer"]
    ben = next(s for s in prefer["report"]["submissions"] if s["student"] == "ben")
    assert (ben["status"], ben["score"]) == ("graded", 0.0), ben
    assert _scores(prefer["grades"], student="student")[("ben", TINY)] == (0.0, 1.0)


def test_the_folder_to_upload_holds_the_pages_alone(days):
    """Does handback/, the folder the guide says to upload, hold every feedback page as feedback/ has it now
    and no other file, no submission secret in any of them, while feedback/ keeps the secrets nbgrader's
    release_feedback reads (the test above shows it still hands back)?"""
    course = days["course"]
    pages = {p.relative_to(course / "feedback"): p.read_bytes() for p in (course / "feedback").rglob("*.html")}
    uploads = {p.relative_to(course / "handback"): p for p in (course / "handback").rglob("*") if p.is_file()}
    assert len(pages) == 4 and {name: p.read_bytes() for name, p in uploads.items()} == pages
    secrets = [p.read_text().strip() for p in (course / "feedback").rglob("submission_secret.txt")]
    assert len(secrets) == 4 and all(secrets)
    assert not [name for name, p in uploads.items() if any(s in p.read_text() for s in secrets)]
    guide = GUIDE.read_text()
    assert "uploading `handback/`" in guide and "Never upload `feedback/`" in guide
