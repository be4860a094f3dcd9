"""Hostile submissions before execution: nbgrader metadata changed by the student, stored bytes, blank
notebooks. Unit tests of `sanitize.prepare` on a course (no kernel), then one `tapelab grade` of the
TF-free 09_fixture to prove the scores end to end.
"""
import copy
import json
import re

import nbformat
import pytest

from grade_fixtures import (BASIC, TINY, TINY_HIDDEN, by_student, fill, load_report, make_course, reference,
                            run_grade, tiny)
from tapelab.grading.prepare import sanitize
from tapelab.grading.course import open_course
from tapelab.grading.run import OUTPUT_LIMIT

pytestmark = pytest.mark.heavy(60)  # seconds, about: scheduled first (tests/conftest.py)

WIDGET_MARK = "widget-state-marker-7f3a"


def _dict(course_dir, notebook: str, answers: dict[str, str]) -> dict:
    """A filled-in released notebook as plain JSON, ready for hostile edits."""
    return json.loads(nbformat.writes(fill(course_dir, notebook, answers)))


def _cell(nb: dict, gid: str) -> dict:
    return next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == gid)


def _prepare(course, nb: dict, notebook: str = BASIC, output_limit: int = OUTPUT_LIMIT) -> sanitize.Prepared:
    raw = json.dumps(nb).encode()
    return sanitize.prepare(course, sanitize.read_notebook(raw), "mallory", notebook, notebook,
                            output_limit=output_limit)


def _graded(nb) -> dict:
    """What nbgrader grades: every cell with nbgrader metadata, by grade id."""
    return {c.metadata.nbgrader["grade_id"]: (c.cell_type, dict(c.metadata), c.source)
            for c in nb.cells if "nbgrader" in c.metadata}


# -- hostile edits, each on a notebook with honest answers ------------------------------------------
def _points(nb):
    _cell(nb, "ex1_1_test")["metadata"]["nbgrader"]["points"] = 100


def _answer_locked(nb):
    _cell(nb, "ex1_1_answer")["metadata"]["nbgrader"]["locked"] = True


def _answer_graded(nb):
    _cell(nb, "ex1_1_answer")["metadata"]["nbgrader"].update(grade=True, points=50)


def _answer_as_test(nb):
    _cell(nb, "ex1_1_answer")["metadata"]["nbgrader"].update(grade=True, points=50, locked=True, solution=False)


def _grade_off(nb):
    _cell(nb, "ex1_2_test")["metadata"]["nbgrader"]["grade"] = False


def _solution_on(nb):
    _cell(nb, "ex1_2_test")["metadata"]["nbgrader"]["solution"] = True


def _unlocked(nb):
    meta = _cell(nb, "ex1_2_test")
    meta["metadata"]["nbgrader"]["locked"] = False
    meta["source"] = "pass\n"


def _checksum(nb):
    _cell(nb, "ex1_3_test")["metadata"]["nbgrader"]["checksum"] = "0" * 32


def _as_type(kind):
    def edit(nb):
        _retype(_cell(nb, "ex1_3_test"), kind)
    return edit


def _pasted_same_id(nb):
    twin = copy.deepcopy(_cell(nb, "ex1_4_test"))
    twin.update(id="pasted", source="pass\n")
    nb["cells"].insert(0, twin)


def _pasted_new_id(nb):
    twin = copy.deepcopy(_cell(nb, "ex1_4_test"))
    twin["id"] = "pasted"
    twin["metadata"]["nbgrader"].update(grade_id="ex1_9_test", points=40)
    nb["cells"].append(twin)


def _ordinary_graded(nb):
    nb["cells"][1]["metadata"]["nbgrader"] = {"grade": True, "solution": False, "locked": False, "points": 10,
                                              "grade_id": "bonus", "schema_version": 3}


def _renamed(nb):
    _cell(nb, "ex1_4_test")["metadata"]["nbgrader"]["grade_id"] = "ex1_4_test_mine"


def _old_schema(nb):
    _cell(nb, "ex1_4_test")["metadata"]["nbgrader"]["schema_version"] = 0


def _skip_tag(nb):
    _cell(nb, "ex1_4_test")["metadata"]["tags"] = ["skip-execution"]


TAMPERING = {
    "points_raised": (_points, "ex1_1_test: nbgrader 'points' was 2, the submission has 100"),
    "answer_locked": (_answer_locked, "ex1_1_answer: nbgrader 'locked' was False"),
    "answer_graded": (_answer_graded, "ex1_1_answer: nbgrader 'grade' was False"),
    "answer_as_test": (_answer_as_test, "ex1_1_answer: nbgrader 'solution' was True"),
    "grade_flag_off": (_grade_off, "ex1_2_test: nbgrader 'grade' was True"),
    "solution_flag_on": (_solution_on, "ex1_2_test: nbgrader 'solution' was False"),
    "unlocked_and_edited": (_unlocked, "changed locked cell ex1_2_test"),
    "checksum_edited": (_checksum, "ex1_3_test: nbgrader 'checksum'"),
    "test_as_markdown": (_as_type("markdown"), "ex1_3_test: cell_type was 'code', the submission has 'markdown'"),
    "test_as_raw": (_as_type("raw"), "ex1_3_test: cell_type was 'code', the submission has 'raw'"),
    "test_pasted_same_id": (_pasted_same_id, "duplicated cell ex1_4_test (2 copies"),
    "test_pasted_new_id": (_pasted_new_id, "grade id 'ex1_9_test') removed"),
    "ordinary_cell_graded": (_ordinary_graded, "grade id 'bonus') removed"),
    "grade_id_renamed": (_renamed, "ex1_4_test: nbgrader 'grade_id' was 'ex1_4_test'"),
    "schema_version": (_old_schema, "ex1_4_test: nbgrader 'schema_version' was 3"),
    "skip_execution_tag": (_skip_tag, "ex1_4_test: tags ['skip-execution'] differ"),
}


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("sanitize"))


@pytest.fixture(scope="module")
def course(course_dir):
    """The loaded course, its lock released at once so the module's `tapelab grade` can take it."""
    loaded = open_course(course_dir)
    loaded.close()
    return loaded


@pytest.fixture(scope="module")
def honest(course, course_dir):
    return _prepare(course, _dict(course_dir, BASIC, reference()))


@pytest.mark.parametrize("name", sorted(TAMPERING))
def test_changed_nbgrader_metadata_is_restored_and_flagged(course, course_dir, honest, name):
    """Is each change of nbgrader metadata undone from the release, flagged by name, and the honest
    answers graded exactly as in the untouched notebook (never invalid_notebook)?"""
    edit, words = TAMPERING[name]
    nb = _dict(course_dir, BASIC, reference())
    edit(nb)
    prepared = _prepare(course, nb)
    assert prepared.tampered and any(words in flag for flag in prepared.flags), prepared.flags
    assert _graded(prepared.nb) == _graded(honest.nb)


def test_honest_submission_has_no_flags(honest):
    """Is an untouched submission left unflagged, with the gradebook's hidden tests in its test cells?"""
    assert not honest.flags and not honest.tampered and not honest.stripped
    assert all("BEGIN HIDDEN TESTS" in source for kind, meta, source in _graded(honest.nb).values()
               if meta["nbgrader"]["grade"])


# -- blank notebooks: every released test comes back, from the gradebook ----------------------------
def _drop_ids(nb):
    nb["nbformat_minor"] = 4
    for cell in nb["cells"]:
        cell.pop("id", None)


def _cells(edit):
    def apply(nb):
        for cell in nb["cells"]:
            edit(cell)
    return apply


def _retype(cell, kind="markdown"):
    cell["cell_type"] = kind
    cell.pop("outputs", None)
    cell.pop("execution_count", None)


def _tests_as_raw(nb):
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade"):
            _retype(cell, "raw")


BLANK = {
    "no_cells": lambda nb: nb.update(cells=[]),
    "no_nbgrader_metadata": _cells(lambda c: c["metadata"].pop("nbgrader", None)),
    "only_markdown": _cells(_retype),
    "tests_as_raw": _tests_as_raw,
    "notebook_nbgrader_metadata": lambda nb: nb["metadata"].update(nbgrader={"grade": True, "points": 99}),
    "no_notebook_metadata": lambda nb: nb.update(metadata={}),
    "kernel_not_python": lambda nb: nb["metadata"].update(
        kernelspec={"name": "ir", "display_name": "R", "language": "R"}, language_info={"name": "R"}),
    "empty_sources": _cells(lambda c: c.update(source=[])),
    "nbformat_minor_4": _drop_ids,
    "nbformat_minor_huge": lambda nb: nb.update(nbformat_minor=10**6),
    "skip_execution_tags": _cells(lambda c: c["metadata"].update(tags=["skip-execution"])),
}


@pytest.mark.parametrize("name", sorted(BLANK))
def test_blank_variant_gets_every_released_test_from_the_gradebook(course, course_dir, name):
    """Whatever was done to a blank notebook's cells and metadata, does every released test cell come
    out as the gradebook has it (hidden tests, release metadata, no tags) and no other cell graded?"""
    blank = _dict(course_dir, TINY, {})
    BLANK[name](blank)
    prepared = _prepare(course, blank, TINY)
    reference_cells = _graded(_prepare(course, _dict(course_dir, TINY, {}), TINY).nb)
    graded = _graded(prepared.nb)
    tests = {gid for gid, (_, meta, _) in reference_cells.items() if meta["nbgrader"]["grade"]}
    assert tests and all(graded.get(gid) == reference_cells[gid] for gid in tests)
    assert TINY_HIDDEN in graded["ex9_1_test"][2] and set(graded) <= set(reference_cells)
    assert prepared.nb.nbformat_minor == 5 and len({c.id for c in prepared.nb.cells}) == len(prepared.nb.cells)


def test_deleted_test_comes_back_after_its_answer(course, course_dir):
    """Is a deleted test cell put back right after the nearest earlier released cell still present?"""
    nb = _dict(course_dir, BASIC, reference())
    nb["cells"].remove(_cell(nb, "ex1_2_test"))
    prepared = _prepare(course, nb)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in prepared.nb.cells]
    assert ids.index("ex1_2_test") == ids.index("ex1_2_answer") + 1
    assert "deleted cell ex1_2_test (restored)" in prepared.flags and prepared.tampered


def test_copied_answer_cell_is_not_tampering(course, course_dir):
    """Does an answer cell pasted twice (JupyterLab copies its metadata) run both copies, grade the
    last (as nbgrader's DeduplicateIds does), and leave the submission unflagged?"""
    nb = _dict(course_dir, TINY, tiny("41"))
    twin = copy.deepcopy(_cell(nb, "ex9_1_answer"))
    twin.update(id="second-try", source="def answer():\n    return 42\n")
    nb["cells"].insert(nb["cells"].index(_cell(nb, "ex9_1_answer")) + 1, twin)
    prepared = _prepare(course, nb, TINY)
    sources = [c.source for c in prepared.nb.cells]
    assert not prepared.flags and tiny("41")["ex9_1_answer"] in sources
    assert _graded(prepared.nb)["ex9_1_answer"][2] == "def answer():\n    return 42\n"


def test_missing_answer_cell_is_flagged_but_not_tampering(course, course_dir):
    """Is an answer cell without its nbgrader metadata (and another id) run as the student wrote it,
    flagged for review, but not called tampering?"""
    nb = _dict(course_dir, TINY, tiny())
    answer = _cell(nb, "ex9_1_answer")
    answer.update(id="my-own-cell")
    del answer["metadata"]["nbgrader"]
    prepared = _prepare(course, nb, TINY)
    assert not prepared.tampered and any("answer cell ex9_1_answer not found" in f for f in prepared.flags)
    mine = next(c for c in prepared.nb.cells if c.id == "my-own-cell")
    assert mine.source == tiny()["ex9_1_answer"] and not mine.metadata


# -- stored bytes ------------------------------------------------------------------------------------
def _with_attachment(course_dir, size: int) -> dict:
    nb = _dict(course_dir, TINY, tiny())
    nb["cells"].insert(1, nbformat.v4.new_markdown_cell(
        "![plot](attachment:plot.png)", attachments={"plot.png": {"image/png": "A" * size}}))
    return json.loads(nbformat.writes(nbformat.from_dict(nb)))


def test_attachment_past_the_output_limit_is_stripped_with_a_reason(course, course_dir):
    """Is a stored attachment larger than the run's output limit stripped, with a reason that names
    its size and the limit, while the answers are still graded?"""
    prepared = _prepare(course, _with_attachment(course_dir, 20_000), TINY, output_limit=10_000)
    assert "stored attachments of 20," in prepared.stripped and "(limit 10,000)" in prepared.stripped
    assert "AAAA" not in nbformat.writes(prepared.nb)
    assert _graded(prepared.nb)["ex9_1_answer"][2] == tiny()["ex9_1_answer"].strip() + "\n"


def test_attachment_under_the_output_limit_is_kept(course, course_dir):
    """Is a small pasted image (honest markdown content) kept, with nothing reported stripped?"""
    prepared = _prepare(course, _with_attachment(course_dir, 2_000), TINY, output_limit=10_000)
    assert not prepared.stripped and "A" * 2_000 in nbformat.writes(prepared.nb)


def test_metadata_past_the_output_limit_counts_and_is_named(course, course_dir):
    """Do stored widget state and unknown cell metadata count against the output limit, and is the
    reason about metadata?"""
    nb = _dict(course_dir, TINY, tiny())
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"x": "W" * 30_000}}}
    nb["cells"][0]["metadata"]["junk"] = "J" * 30_000
    assert sum(sanitize.stored_bytes(sanitize.read_notebook(json.dumps(nb).encode()))) > 60_000
    prepared = _prepare(course, nb, TINY, output_limit=50_000)
    assert prepared.stripped.startswith("stored metadata of ") and "(limit 50,000)" in prepared.stripped


def test_only_needed_metadata_is_kept(course, course_dir):
    """Are notebook metadata (widget state, unknown keys) and every ordinary cell's metadata (tags,
    raw_mimetype, unknown keys) dropped, even under the limit, leaving only the release's?"""
    nb = _dict(course_dir, TINY, tiny())
    nb["metadata"].update(widgets={"state": WIDGET_MARK}, mine=WIDGET_MARK)
    nb["cells"].insert(1, {"cell_type": "raw", "id": "rawhtml", "source": "<b>x</b>",
                           "metadata": {"raw_mimetype": "text/html", "tags": [WIDGET_MARK]}})
    nb["cells"][2]["metadata"]["anything"] = WIDGET_MARK
    prepared = _prepare(course, nb, TINY)
    text = nbformat.writes(prepared.nb)
    assert WIDGET_MARK not in text and not prepared.stripped
    release = nbformat.read(course_dir / "release" / TINY / f"{TINY}.ipynb", as_version=4)
    assert set(prepared.nb.metadata) == set(release.metadata)


def test_unknown_keys_of_a_newer_nbformat_are_dropped(course, course_dir):
    """Does a submission claiming a newer nbformat_minor (so nbformat allows extra keys) come out in
    the release's format, without the extra keys, counted as stored metadata?"""
    nb = _dict(course_dir, TINY, tiny())
    nb.update(nbformat_minor=99, extra="E" * 5_000)
    nb["cells"][1]["extra"] = "E" * 5_000
    read = sanitize.read_notebook(json.dumps(nb).encode())
    assert sanitize.stored_bytes(read)[1] > 10_000
    prepared = _prepare(course, nb, TINY)
    nbformat.validate(prepared.nb)
    assert prepared.nb.nbformat_minor == 5 and "EEEE" not in nbformat.writes(prepared.nb)


def test_deeply_nested_json_is_invalid_with_a_reason():
    """Is JSON nested past Python's recursion limit an invalid notebook with a message, not a crash?"""
    with pytest.raises(sanitize.Invalid, match="nested too deeply"):
        sanitize.read_notebook(b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


# -- end to end: the scores ---------------------------------------------------------------------------
E2E_BLANK = ["no_cells", "no_nbgrader_metadata", "only_markdown", "tests_as_raw", "kernel_not_python",
             "empty_sources", "nbformat_minor_4", "nbformat_minor_huge", "skip_execution_tags"]


def _tiny_tamper(gid: str, **changes):
    def edit(nb):
        _cell(nb, gid)["metadata"]["nbgrader"].update(changes)
    return edit


E2E_HONEST = {
    "points": _tiny_tamper("ex9_1_test", points=100),
    "answergraded": _tiny_tamper("ex9_1_answer", grade=True, points=50),
    "answerlocked": _tiny_tamper("ex9_1_answer", locked=True, solution=False),
    "newtest": lambda nb: nb["cells"].append({**copy.deepcopy(_cell(nb, "ex9_1_test")), "id": "mine", "metadata": {
        "nbgrader": {**_cell(nb, "ex9_1_test")["metadata"]["nbgrader"], "grade_id": "ex9_9_test", "points": 9}}}),
    "testmarkdown": lambda nb: _retype(_cell(nb, "ex9_1_test")),
}


@pytest.fixture(scope="module")
def run(course, course_dir, tmp_path_factory):
    inbox = tmp_path_factory.mktemp("inbox")
    for name in E2E_BLANK:
        nb = _dict(course_dir, TINY, {})
        BLANK[name](nb)
        (inbox / f"{name.replace('_', '')}_{TINY}.ipynb").write_text(json.dumps(nb))
    for name, edit in E2E_HONEST.items():
        nb = _dict(course_dir, TINY, tiny())
        edit(nb)
        (inbox / f"{name}_{TINY}.ipynb").write_text(json.dumps(nb))
    widgets = _dict(course_dir, TINY, tiny())
    widgets["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": WIDGET_MARK}}
    (inbox / f"widgets_{TINY}.ipynb").write_text(json.dumps(widgets))
    (inbox / f"bigimage_{TINY}.ipynb").write_text(json.dumps(_with_attachment(course_dir, OUTPUT_LIMIT + 1)))
    result = run_grade(inbox, course_dir, "--jobs", "2", "--timeout", "60")
    assert result.returncode == 0, result.stderr[-3000:]
    return load_report(course_dir / "report.json")


@pytest.mark.parametrize("name", E2E_BLANK)
def test_blank_variant_scores_zero(run, name):
    """Does a notebook without answers score 0 of 1, whatever was done to its cells and metadata?"""
    entry = by_student(run, name.replace("_", ""), TINY)
    assert (entry["score"], entry["max_score"]) == (0.0, 1.0), entry


@pytest.mark.parametrize("name", sorted(E2E_HONEST))
def test_changed_metadata_keeps_the_honest_points(run, name):
    """Does a right answer in a notebook whose nbgrader metadata was changed earn exactly the released
    points, with status `tampered` (not invalid_notebook)?"""
    entry = by_student(run, name, TINY)
    assert (entry["status"], entry["score"], entry["max_score"]) == ("tampered", 1.0, 1.0), entry


def test_stored_widget_state_reaches_neither_autograded_nor_feedback(run, course_dir):
    """Is a submission's stored widget state kept out of autograded/ and the feedback HTML, and the
    notebook graded normally?"""
    entry = by_student(run, "widgets", TINY)
    assert (entry["status"], entry["score"]) == ("graded", 1.0), entry
    autograded = course_dir / "autograded" / "widgets" / TINY / f"{TINY}.ipynb"
    feedback = course_dir / "feedback" / "widgets" / TINY / f"{TINY}.html"
    assert WIDGET_MARK not in autograded.read_text() and WIDGET_MARK not in feedback.read_text()


def test_stored_image_past_the_limit_is_stripped_with_status_output_limit(run, course_dir):
    """Does a notebook storing an image larger than the output limit end as `output_limit`, with the
    reason naming the stripped bytes, the answers still graded and the image in no output file?"""
    entry = by_student(run, "bigimage", TINY)
    assert (entry["status"], entry["score"]) == ("output_limit", 1.0), entry
    stored = re.search(r"stored attachments of ([\d,]+) bytes", entry["reason"])
    assert stored and int(stored[1].replace(",", "")) > OUTPUT_LIMIT, entry
    autograded = course_dir / "autograded" / "bigimage" / TINY / f"{TINY}.ipynb"
    assert autograded.stat().st_size < 100_000


def test_a_release_the_gradebook_does_not_know_is_the_graders_fault(course, course_dir, monkeypatch):
    """When release/ names a graded cell the gradebook lacks, is that a CourseMismatch (the grader's
    infra_error with the fix), never the student's invalid_notebook?"""
    release = course.release_notebook(BASIC, BASIC)
    extra = copy.deepcopy(next(c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1_1_test"))
    extra.metadata.nbgrader.grade_id = "ex1_99_test"
    extra["id"] = "not-in-the-gradebook"
    release.cells.append(extra)
    monkeypatch.setattr(type(course), "release_notebook", lambda self, a, n: copy.deepcopy(release))
    with pytest.raises(sanitize.CourseMismatch, match="generate_assignment"):
        _prepare(course, _dict(course_dir, BASIC, reference()))
