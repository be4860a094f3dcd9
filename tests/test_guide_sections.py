"""The instructor guide's sections 1, 3, 4 and 6 run as written (issue 34): each command is taken from the
guide's text and run in a fresh shell after the guide's PATH line, in a throwaway clone of the repository
(`guide.clone`) with HOME a folder of its own, so nothing is written into the repository under test.

One walk-through for the module, in the order an instructor goes:
  1. `tapelab release --answers locked-until:... --out release-2026/` releases the six notebooks, locked;
     then the clone gets one new, TensorFlow-free course notebook (09_fixture) in place of the six, and
     `make release` + `git add notebooks answers && git commit` publish it;
  3. students fill the committed notebooks/09_fixture.ipynb: ana and ben in ~/Downloads/submissions.zip (the
     default course grader/course/), cy and dee in inbox/ (`--course ~/tapelab-2026`); each of the guide's
     course folders is set up by `tapelab grade` itself from the clone's solutions/;
  4. `jupyter lab` in ~/tapelab-2026 serves formgrader on that course, and is stopped;
  6. `nbgrader export` writes ~/tapelab-grades.csv.
Trimming solutions/ to one notebook after the locked release keeps every later release and course set-up
at one `generate_assignment`. CPU measured on 2 shared cores: the locked release of the six, 21 s (six
`generate_assignment`s; `make release` of the six costs the same); `make release` of the one and the commit,
7 s; section 3's two grade lines with their two course set-ups, 19 s; the lab server, 4 s; the export,
3 s: about 55 s for the module.
"""
from __future__ import annotations

import csv
import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import nbformat
import pytest

from grading.grade_fixtures import TINY, TINY_HIDDEN, fill_copy, tiny, tiny_solution
from guide import GUIDE, blocks, clone, run_as_written, start_as_written, stop
from tapelab.paths import REPO, assignment_names

pytestmark = pytest.mark.heavy(60)  # seconds, about: scheduled first (tests/conftest.py)

SIX = assignment_names()  # the repository's course notebooks, released by the locked release
ZIPPED = {"ana": "42", "ben": "41"}  # what answer() returns in each student's notebook: 42 is right
INBOX = {"cy": "42", "dee": "41"}
TEXTS = '\n["9.1"]\nwhy = "The fixture wants the number 42."\nlast_hint = "`return 42`."\n'
# A headless machine: no browser to open. The guide's command runs unchanged; this is the instructor's config.
NO_BROWSER = "c.ServerApp.open_browser = False\n"
SERVER_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/lab\?token=(\w+)")


def block(heading: str, words: str, fence: str = "bash") -> str:
    """The one fenced block of the guide's section `heading` that holds `words`."""
    (found,) = [b for b in blocks(heading, fence) if words in b]
    return found


def _ok(name: str, result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    if result.returncode != 0:
        raise AssertionError(f"{name} exited {result.returncode}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60).stdout


def _untouched(repo: Path) -> str:
    """What the guide's commands could change in `repo`: its HEAD and the state of the paths they write."""
    return _git(repo, "rev-parse", "HEAD") + _git(repo, "status", "--porcelain", "--ignored", "--", "notebooks",
                                                  "answers", "grader", "release-2026", "inbox")


def _one_new_notebook(repo: Path) -> None:
    """The clone's course becomes the TensorFlow-free 09_fixture alone, with its answer texts."""
    for solution in (repo / "solutions").glob("[0-9][0-9]_*.ipynb"):
        solution.unlink()
    nbformat.write(tiny_solution(), repo / "solutions" / f"{TINY}.ipynb")
    with (repo / "solutions" / "answers.toml").open("a") as texts:
        texts.write(TEXTS)


def _hand_ins(home: Path, repo: Path) -> None:
    """Students' copies of the committed notebooks/09_fixture.ipynb: a zip from the LMS, and an inbox/ folder."""
    student_copy = nbformat.read(repo / "notebooks" / f"{TINY}.ipynb", as_version=4)
    (home / "Downloads").mkdir()
    with zipfile.ZipFile(home / "Downloads" / "submissions.zip", "w") as archive:
        for student, value in ZIPPED.items():
            archive.writestr(f"{student}_{TINY}.ipynb", nbformat.writes(fill_copy(student_copy, tiny(value))))
    for student, value in INBOX.items():
        (repo / "inbox" / student).mkdir(parents=True)
        nbformat.write(fill_copy(student_copy, tiny(value)), repo / "inbox" / student / f"{TINY}.ipynb")


def _get(url: str, token: str) -> tuple[int, str, str]:
    """The status, the address answered (after redirects) and the body of a GET sent with `token`."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.url, response.read().decode()


def _formgrader(home: Path, repo: Path, timeout: float = 120) -> dict:
    """Section 4's command started as written; once it prints its URL, what formgrader answers; always stopped."""
    (home / ".jupyter").mkdir(exist_ok=True)
    (home / ".jupyter" / "jupyter_server_config.py").write_text(NO_BROWSER)
    log = home / "lab.log"
    server = start_as_written(block("## 4. Review", "jupyter lab", fence="text"), home, log, repo=repo)
    try:
        deadline = time.monotonic() + timeout
        while not (found := SERVER_URL.search(log.read_text())):
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"jupyter lab never printed its URL (exit {server.poll()}):\n{log.read_text()}")
            time.sleep(0.5)
        base, token = f"http://127.0.0.1:{found.group(1)}", found.group(2)
        page = _get(f"{base}/formgrader", token)
        assignments = json.loads(_get(f"{base}/formgrader/api/assignments", token)[2])
        submissions = json.loads(_get(f"{base}/formgrader/api/submissions/{TINY}", token)[2])
        stranger = _get(f"{base}/formgrader", "not-the-token")
    finally:
        stop(server)
    try:
        _get(f"{base}/api/status", token)
        after = "answered"
    except urllib.error.URLError as error:
        after = str(error.reason)
    return {"page": page, "assignments": assignments, "submissions": submissions, "stranger": stranger,
            "after_stop": after}


@pytest.fixture(scope="module")
def walk(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text("[user]\n\tname = Ines Instructor\n\temail = ines@example.org\n")
    repo = clone(tmp_path_factory.mktemp("clone") / "tapelab")
    before = _untouched(REPO)
    steps = {"locked": _ok("the locked release", run_as_written(
        block("## 1. Release", "tapelab release --answers"), home, repo=repo))}
    steps["locked_left"] = _git(repo, "status", "--porcelain", "notebooks", "answers")
    _one_new_notebook(repo)
    released_at = _git(repo, "rev-parse", "HEAD")
    steps["release"] = _ok("make release and the commit", run_as_written(
        block("## 1. Release", "make release"), home, repo=repo))
    _hand_ins(home, repo)
    steps["grade"] = _ok("section 3's grade block", run_as_written(
        block("## 3. Grade", "tapelab grade ~/Downloads/submissions.zip"), home, repo=repo))
    steps["formgrader"] = _formgrader(home, repo)
    steps["export"] = _ok("section 6's export", run_as_written(
        block("## 6. Export", "nbgrader export", fence="text"), home, repo=repo))
    return {"home": home, "repo": repo, "steps": steps, "before": before, "after": _untouched(REPO),
            "released_at": released_at.strip()}


def _setup_cell(nb: nbformat.NotebookNode) -> str:
    return next(c.source for c in nb.cells if c.get("id") == "setup")


def test_the_locked_release_writes_the_six_notebooks_with_the_lock(walk):
    """Does the guide's `tapelab release --answers locked-until:DATE --out release-2026/` write the six student
    notebooks into release-2026/, each with the `lock_answers(until="DATE")` call the guide names in its setup
    cell, and leave notebooks/ (what Binder opens) and answers/ as committed?"""
    command = block("## 1. Release", "tapelab release --answers")
    date = re.search(r"--answers locked-until:(\d{4}-\d{2}-\d{2}) --out release-2026/", command).group(1)
    call = f'lock_answers(until="{date}")'
    assert f"`{call}`" in GUIDE.read_text()
    out = walk["repo"] / "release-2026"
    assert sorted(p.stem for p in out.glob("*.ipynb")) == SIX and len(SIX) == 6
    unlocked = [n for n in SIX if call not in _setup_cell(nbformat.read(out / f"{n}.ipynb", as_version=4))]
    assert unlocked == [], unlocked
    assert walk["steps"]["locked_left"] == ""


def test_make_release_and_the_commit_publish_the_new_notebook(walk):
    """Do `make release` and `git add notebooks answers && git commit` commit the new notebook's student
    version (no hidden test) and its answers data, as the throwaway HOME's instructor?"""
    repo = walk["repo"]
    assert _git(repo, "rev-parse", "HEAD~1").strip() == walk["released_at"]
    assert _git(repo, "log", "-1", "--format=%an <%ae>").strip() == "Ines Instructor <ines@example.org>"
    assert set(_git(repo, "show", "--name-only", "--format=", "HEAD").split()) == {
        f"notebooks/{TINY}.ipynb", f"answers/src/tapelab_answers/data/{TINY}.json"}
    committed = _git(repo, "show", f"HEAD:notebooks/{TINY}.ipynb")
    assert "answer()" in committed and TINY_HIDDEN not in committed


def _grades(course: Path) -> dict:
    with (course / "grades.csv").open(newline="") as handle:
        return {(r["student"], r["notebook"]): float(r["score"]) for r in csv.DictReader(handle)}


def test_the_default_course_is_set_up_in_the_checkout_and_grades_the_zip(walk):
    """Does `tapelab grade ~/Downloads/submissions.zip` set up grader/course/ of the checkout it runs in, from
    its solutions/, and grade ana right and ben wrong?"""
    course = walk["repo"] / "grader" / "course"
    assert sorted(p.name for p in (course / "source").iterdir()) == [TINY]
    assert _grades(course) == {(s, TINY): float(v == "42") for s, v in ZIPPED.items()}
    inputs = json.loads((course / "report.json").read_text())["inputs"]
    assert sorted(inputs) == [f"{walk['home'] / 'Downloads' / 'submissions.zip'}:{s}_{TINY}.ipynb" for s in ZIPPED]


def test_the_named_course_grades_the_inbox_with_the_given_jobs_and_timeout(walk):
    """Does `tapelab grade inbox/ --course ~/tapelab-2026 --jobs 4 --timeout 300` set up that course and grade
    cy right and dee wrong, with the pool and the timeout it was given?"""
    course = walk["home"] / "tapelab-2026"
    assert _grades(course) == {(s, TINY): float(v == "42") for s, v in INBOX.items()}
    report = json.loads((course / "report.json").read_text())
    assert report["execution"]["jobs"] == 4, report["execution"]
    assert {s["student"]: s["status"] for s in report["submissions"]} == {s: "graded" for s in INBOX}


def test_nothing_was_written_into_the_repository_under_test(walk):
    """Did the release, the commit and the default-course grade leave this repository's HEAD, notebooks/,
    answers/ and grader/ as they were?"""
    assert walk["after"] == walk["before"]


def test_jupyter_lab_serves_formgrader_on_the_course(walk):
    """Does the guide's `jupyter lab` line, run in ~/tapelab-2026, serve formgrader's page (200 with the token it
    printed, refused without it) listing that course's released notebook and its two submissions?"""
    seen = walk["steps"]["formgrader"]
    status, url, page = seen["page"]
    assert status == 200 and urllib.parse.urlsplit(url).path.startswith("/formgrader"), (url, page[:500])
    assert "<title>nbgrader formgrade</title>" in page, page[:500]
    assert urllib.parse.urlsplit(seen["stranger"][1]).path == "/login", seen["stranger"][1]  # no token: log in
    assert [(a["name"], a["status"]) for a in seen["assignments"]] == [(TINY, "released")]
    assert sorted(s["student"] for s in seen["submissions"]) == sorted(INBOX)


def test_the_lab_server_is_stopped_afterwards(walk):
    """Once stopped (its process group terminated), does the lab server's address refuse connections?"""
    assert "refused" in walk["steps"]["formgrader"]["after_stop"].lower(), walk["steps"]["formgrader"]


def test_nbgrader_export_has_the_scores_of_grades_csv(walk):
    """Does `nbgrader export --to ~/tapelab-grades.csv` in ~/tapelab-2026 write a row per student and notebook,
    with the scores grades.csv gives?"""
    with (walk["home"] / "tapelab-grades.csv").open(newline="") as handle:
        exported = {(r["student_id"], r["assignment"]): float(r["score"]) for r in csv.DictReader(handle)}
    assert exported == _grades(walk["home"] / "tapelab-2026")
