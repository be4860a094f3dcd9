"""Feedback follows the gradebook, and the course folder holds an exchange (issue 14, items 4 and 5).

One `tapelab grade` of two tiny submissions (ada right, bob wrong) in a module fixture; each test
works on its own copy of that course folder (the exchange moves with it), so none depends on another.
"""
import html
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import notebook_hash

from grade_fixtures import TINY, TINY_HIDDEN, fill, make_course, run_grade, tiny, write
from tapelab.grading.handback import refresh
from tapelab.grading.course import CONFIG_FILE, MOVED_CONFIG_PATHS, SETUP_MARKER, ensure_exchange, open_course
from tapelab.grading.handback.page import write_feedback
from tapelab.grading.handback.refresh import FEEDBACK_STATE, refresh_feedback
from tapelab.grading.intake.stored import ensure_submission_files
from tapelab.paths import GRADER
from tapelab.release import EXCHANGE_CONFIG, course_config, nbgrader_env

STUDENTS = ("ada", "bob")
KEYS = [f"{s}/{TINY}/{TINY}" for s in STUDENTS]
COMMENT = "Nice work; see me about answer() on Friday."


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course folder after one `tapelab grade` of ada (answer 42) and bob (answer 41)."""
    base = tmp_path_factory.mktemp("refresh")
    root = make_course(base)
    inbox = base / "inbox"
    write(fill(root, TINY, tiny()), inbox / f"ada_{TINY}.ipynb")
    write(fill(root, TINY, tiny("41")), inbox / f"bob_{TINY}.ipynb")
    result = run_grade(inbox, root)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root


@pytest.fixture
def course(graded, tmp_path):
    """A copy of the graded course, opened, with its feedback refreshed once (the state settled)."""
    root = shutil.copytree(graded, tmp_path / "course", symlinks=True)
    opened = open_course(root)
    refresh_feedback(opened)
    yield opened
    opened.close()


def _page(course, student):
    return course.path("feedback", student, TINY, TINY, ext=".html")


def _text(page: str) -> str:
    """What a reader sees, whitespace removed."""
    return re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", page)))


def _api(root) -> NbGraderAPI:
    config = course_config(root)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def test_a_manual_score_and_comment_rewrite_only_that_students_page(course):
    """After a manual score, extra credit and a manual comment for ada in the gradebook, is exactly ada's
    page rewritten, showing them without the hidden test, and bob's left as it was?"""
    bob_before = _page(course, "bob").read_bytes(), _page(course, "bob").stat().st_mtime_ns
    with Gradebook(course.db_url) as gb:
        grade = gb.find_grade("ex9_1_test", TINY, TINY, "ada")
        grade.manual_score, grade.extra_credit = 0.5, 0.25
        gb.find_comment("ex9_1_answer", TINY, TINY, "ada").manual_comment = COMMENT
        gb.db.commit()
    done = refresh_feedback(course)
    assert (done.written, done.unchanged, done.failed) == (KEYS[:1], KEYS[1:], [])
    assert done.paths == [_page(course, "ada")]
    page = _page(course, "ada").read_text()
    assert "Score: 0.75 / 1.0" in html.unescape(page)
    assert _text(COMMENT) in _text(page)
    assert re.sub(r"\s+", "", TINY_HIDDEN) not in _text(page)
    assert (_page(course, "bob").read_bytes(), _page(course, "bob").stat().st_mtime_ns) == bob_before


def test_nothing_changed_writes_nothing_and_force_writes_all(course):
    """Does a second refresh with nothing changed write no page, and does `force` write every one, each
    as `write_feedback` alone renders it (one exporter shared by the pages leaks nothing between them)?"""
    again = refresh_feedback(course)
    assert (again.written, again.unchanged, again.paths) == ([], KEYS, [])
    forced = refresh_feedback(course, force=True)
    assert (forced.written, forced.unchanged) == (KEYS, [])
    assert forced.paths == [_page(course, s) for s in STUDENTS]
    shared = {s: _page(course, s).read_text() for s in STUDENTS}
    assert {s: write_feedback(course, s, TINY, TINY).read_text() for s in STUDENTS} == shared
    assert shared["ada"] != shared["bob"]


def test_an_unreadable_state_file_regenerates_every_page_with_a_note(course):
    """Is a feedback-state.json that is not JSON noted for the instructor, every page rendered again,
    and the file rewritten so the next refresh writes nothing?"""
    (course.root / FEEDBACK_STATE).write_text("{not json")
    done = refresh_feedback(course)
    assert done.written == KEYS
    assert len(done.notes) == 1 and FEEDBACK_STATE in done.notes[0] and "regenerated" in done.notes[0]
    assert refresh_feedback(course).written == []


def test_a_changed_template_renders_every_page_again(course, tmp_path, monkeypatch):
    """Does a change of what renders the page (the template) make every page be rendered again?"""
    template = tmp_path / "page.html.j2"
    template.write_text("one")
    monkeypatch.setattr(refresh, "_RENDERER_FILES", (template,))
    assert refresh_feedback(course).written == KEYS
    assert refresh_feedback(course).written == []
    template.write_text("two")
    assert refresh_feedback(course).written == KEYS


@pytest.mark.parametrize("damage", ["not JSON", "deleted"])
def test_a_page_that_cannot_render_is_failed_and_the_others_written(course, damage):
    """Is bob's page, whose autograded notebook is not JSON or was deleted, reported in `failed` with the
    file and what to do, while ada's page is still written?"""
    notebook = course.path("autograded", "bob", TINY, TINY)
    if damage == "deleted":
        notebook.unlink()
    else:
        notebook.write_text("{not json")
    done = refresh_feedback(course, force=True)
    assert done.written == KEYS[:1]
    assert [(f.student, f.assignment, f.notebook) for f in done.failed] == [("bob", TINY, TINY)]
    assert str(notebook) in done.failed[0].reason and "tapelab grade --force" in done.failed[0].reason


def test_release_feedback_puts_one_page_per_student_in_the_exchange(course):
    """Does `nbgrader release_feedback 09_fixture` in the course folder succeed and put each student's page
    in exchange/tapelab/feedback/, named after the student's submission secret?"""
    result = subprocess.run([sys.executable, "-m", "nbgrader", "release_feedback", TINY], cwd=course.root,
                            env=nbgrader_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    released = course.root / "exchange" / "tapelab" / "feedback"
    expected = {}
    for student in STUDENTS:
        secret = (course.root / "feedback" / student / TINY / "submission_secret.txt").read_text()
        assert secret == (course.root / "submitted" / student / TINY / "submission_secret.txt").read_text()
        expected[f"{notebook_hash(secret=secret, notebook_id=TINY)}.html"] = _page(course, student).read_bytes()
    assert {p.name: p.read_bytes() for p in released.iterdir()} == expected


def test_formgrader_lists_every_assignment_as_released(course):
    """Does formgrader's API (NbGraderAPI, as its assignment list uses it) find the exchange and say
    "released" for every assignment of the course?"""
    api = _api(course.root)
    assert not api.exchange_missing
    assert {a: api.get_assignment(a)["status"] for a in sorted(set(course.known.values()))} == {
        a: "released" for a in sorted(set(course.known.values()))}


def test_the_exchange_follows_the_course_folder(course):
    """Is the exchange of a copied course folder inside the copy (the config names it from its own path),
    from the very lines of grader/nbgrader_config.py?"""
    assert EXCHANGE_CONFIG in (GRADER / CONFIG_FILE).read_text()
    assert course_config(course.root).Exchange.root == str(course.root / "exchange")


def test_a_config_naming_moved_modules_still_loads(course):
    """Does a course config an earlier tapelab wrote, before grading was split by stage (the late-penalty
    plugin at tapelab.grading.lateness, feedback set up from tapelab.grading.handback), still load, and is
    the plugin path, which nbgrader imports by name, rewritten once to where the class lives now?"""
    from traitlets.utils.importstring import import_item

    from tapelab.grading.grades.lateness import LatePenalty

    course.close()
    config = course.root / CONFIG_FILE
    text = config.read_text()
    old = text.replace("from tapelab.grading.handback.page import", "from tapelab.grading.handback import")
    for then, now in MOVED_CONFIG_PATHS.items():
        assert repr(now) in text or f'"{now}"' in text
        old = old.replace(now, then)
    assert old != text
    config.write_text(old)
    reopened = open_course(course.root)
    reopened.close()
    assert [n for n in reopened.notes if "tapelab.grading.lateness.LatePenalty" in n]
    assert import_item(course_config(course.root).AssignLatePenalties.plugin_class) is LatePenalty
    assert "from tapelab.grading.handback import" in config.read_text()  # the package's face keeps it working
    again = open_course(course.root)
    again.close()
    assert not [n for n in again.notes if "LatePenalty" in n]


def _old_style(root) -> None:
    """The course folder as an earlier tapelab's set-up left it: marker "complete", no exchange, none in
    the config."""
    (root / SETUP_MARKER).write_text("complete\n")
    shutil.rmtree(root / "exchange")
    config = root / CONFIG_FILE
    config.write_text(config.read_text().replace(EXCHANGE_CONFIG, ""))
    assert "root" not in course_config(root).Exchange


def test_ensure_exchange_sets_up_an_old_course_once(course, monkeypatch):
    """Does `ensure_exchange` give a course set up by an earlier tapelab its exchange config and every
    assignment released (with notes saying so), and does a second call neither release nor start a process?"""
    _old_style(course.root)
    notes = ensure_exchange(course.root, course.known)
    assert len(notes) == 2 and "exchange" in notes[0] and "released" in notes[1], notes
    assert course_config(course.root).Exchange.root == str(course.root / "exchange")
    assert _api(course.root).get_assignment(TINY)["status"] == "released"
    config = (course.root / CONFIG_FILE).read_text()

    def refuse(*args, **kwargs):
        raise AssertionError("ensure_exchange released again or started a process")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr("nbgrader.exchange.default.ExchangeReleaseAssignment.copy_files", refuse)
    assert ensure_exchange(course.root, course.known) == []
    assert (course.root / CONFIG_FILE).read_text() == config


def test_ensure_exchange_leaves_a_hand_made_course_alone(course):
    """Is a course folder tapelab did not set up (no marker) left without an exchange and its config untouched?"""
    _old_style(course.root)
    (course.root / SETUP_MARKER).unlink()
    config = (course.root / CONFIG_FILE).read_text()
    assert ensure_exchange(course.root, course.known) == []
    assert (course.root / CONFIG_FILE).read_text() == config and not (course.root / "exchange").exists()


def test_submission_files_are_written_in_nbgraders_format_and_kept(course):
    """Does `ensure_submission_files` write a timestamp.txt nbgrader reads back as the submission time and a
    submission secret like `nbgrader submit`'s, keep both when called again without a time, and take a
    newer submission's time while keeping the secret?"""
    folder = course.root / "submitted" / "cy" / TINY
    first = datetime(2024, 3, 1, 12, 30, tzinfo=timezone.utc)
    ensure_submission_files(course, "cy", TINY, first)
    reader = CourseDirectory(config=course.config)
    assert (folder / "timestamp.txt").read_text() == "2024-03-01 12:30:00.000000 UTC"
    assert reader.get_existing_timestamp(str(folder)) == first.replace(tzinfo=None)
    secret = (folder / "submission_secret.txt").read_text()
    assert re.fullmatch(r"[0-9a-f]{128}", secret)
    ensure_submission_files(course, "cy", TINY, None)
    assert reader.get_existing_timestamp(str(folder)) == first.replace(tzinfo=None)
    later = datetime(2024, 3, 2, 9, 0)  # naive: UTC, as nbgrader reads it
    ensure_submission_files(course, "cy", TINY, later)
    assert reader.get_existing_timestamp(str(folder)) == later
    assert (folder / "submission_secret.txt").read_text() == secret
