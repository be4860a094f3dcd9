"""Faults of the grader itself, through the real CLI: each ends in a named status or one paragraph on
stderr (exit 2, or 1 when retrying helps), never a traceback, and loses nothing already graded.

Faults that need a precise moment (a file deleted between discovery and preparation, a malformed
worker result, a failing pool, SIGTERM mid-run) are injected by FAULTS, a wrapper that patches one
function of the coordinator's process and then runs `tapelab.cli.main` unchanged.
"""
import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from grade_fixtures import TINY, by_student, fill, load_report, make_course, run_grade, tiny, write
from tapelab.grading.progress import Progress
from tapelab.paths import assignment_names
from tapelab.release import nbgrader_env

pytestmark = pytest.mark.heavy(90)  # seconds, about: scheduled first (tests/conftest.py)

FAULTS = r'''
import json, os, signal, sys
from tapelab.grading import outcomes, run
from tapelab.grading.execution import pools
from tapelab.grading.insight import page as insight_html

spec = json.loads(os.environ.get("TAPELAB_TEST_FAULTS", "{}"))
found = run.discover


def discover(*args, **kwargs):
    candidates = found(*args, **kwargs)
    for path in spec.get("vanish", []):
        os.unlink(path)
    for path in spec.get("swap", []):
        os.unlink(path)
        os.mkdir(path)
    return candidates


def broken(result, how):
    facts = result["facts"]
    return {"none": lambda: None,
            "facts_list": lambda: {**result, "facts": ["timed_out"]},
            "flags_int": lambda: {**result, "facts": {**facts, "flags": 7}},
            "nb_garbage": lambda: {**result, "nb": "{not a notebook"},
            "nb_not_nb": lambda: {**result, "nb": json.dumps({"cells": 3, "nbformat": 4})},
            "forge": lambda: {**result, "facts": {**facts, "flags": facts["flags"] + spec["forged"]}}}[how]()


calls = 0
finished = pools.LocalPool.finished


def faulty(self):
    global calls
    calls += 1
    if calls == spec.get("sigterm_on_call"):
        os.kill(os.getpid(), signal.SIGTERM)
    if calls == spec.get("raise_on_call"):
        raise RuntimeError("injected pool fault")
    out = []
    for tag, result in finished(self):
        how = spec.get("mutate", {}).get(tag.student)
        if how != "drop":
            out.append((tag, broken(result, how) if how else result))
    return out


def crash(*args, **kwargs):
    raise RuntimeError("injected grader bug")


def no_plotting():
    raise ImportError("injected: matplotlib cannot be imported")


if __name__ == "__main__":  # not in the pool's worker processes, which import this file again
    if spec.get("crash"):
        outcomes.reports.build_report = crash
    if spec.get("no_plotting"):
        insight_html.load_plotting = no_plotting
    run.discover = discover
    pools.LocalPool.finished = faulty
    from tapelab.cli import main
    sys.exit(main(sys.argv[1:]))
'''
MALFORMED = {"m_none": "none", "m_facts_list": "facts_list", "m_flags_int": "flags_int",
             "m_nb_garbage": "nb_garbage", "m_nb_not_nb": "nb_not_nb"}
# Text a student controls (ids, file names, outputs) that must not end or forge a log record.
FORGED = ['x"}\n{"event": "end", "run_id": "forged"}', "line\u2028separator\u2029", "nul\x00byte",
          "carriage\rreturn", "lone \udcff surrogate", "quote \" and backslash \\"]
WEIRD_NAMES = ['quo"te', "line\u2028sep", "new\nline", os.fsdecode(b"\xff\xfeodd")]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    script = tmp_path_factory.mktemp("wrapper") / "faulty_cli.py"
    script.write_text(FAULTS)
    return script


def _faulty_grade(script, course, inbox, spec, *args):
    cmd = [sys.executable, str(script), "grade", str(inbox), "--course", str(course), "--timeout", "60", *args]
    env = {**nbgrader_env(), "TAPELAB_TEST_FAULTS": json.dumps(spec)}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)


def _run_records(course, run_id):
    raw = (course / "grading.log.jsonl").read_bytes()
    records = [json.loads(line) for line in raw.decode("ascii").split("\n") if line]
    return raw, [r for r in records if r["run_id"] == run_id]


def _grades_csv(course):
    return list(csv.DictReader(io.StringIO((course / "grades.csv").read_text())))


def _one_paragraph(result):
    """The CLI's message: no traceback, one paragraph."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip() and "\n\n" not in result.stderr.strip(), result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def main_run(course, faults, tmp_path_factory):
    """One run with every per-submission fault at once; returns (result, report, raw log, this run's records)."""
    inbox = tmp_path_factory.mktemp("inbox")
    for student in ("ann", "ben", "gone", "swapped", "m_dropped", *MALFORMED, *WEIRD_NAMES):
        write(fill(course, TINY, tiny()), inbox / f"{student}_{TINY}.ipynb")
    (inbox / "nobody" / TINY).mkdir(parents=True)
    (inbox / "nobody" / TINY / "notes.txt").write_text("forgot to attach")
    spec = {"vanish": [str(inbox / f"gone_{TINY}.ipynb")], "swap": [str(inbox / f"swapped_{TINY}.ipynb")],
            "mutate": {**MALFORMED, "m_dropped": "drop", "ben": "forge"}, "forged": FORGED}
    result = _faulty_grade(faults, course, inbox, spec, "--jobs", "2")
    report = load_report(course / "report.json")
    raw, records = _run_records(course, report["run_id"])
    return result, report, raw, records


def test_a_submission_deleted_or_replaced_mid_run_is_infra_error_and_the_rest_are_graded(main_run):
    """Is a file that disappears (or becomes a folder) after discovery the grader's `infra_error`, not the
    student's `invalid_notebook`, while every other file is graded?"""
    result, report, _, _ = main_run
    for student in ("gone", "swapped"):
        entry = by_student(report, student, TINY)
        assert entry["status"] == "infra_error", entry
        assert "disappeared or became unreadable after it was found" in entry["reason"] and "rerun" in entry["reason"]
    assert [by_student(report, s, TINY)["score"] for s in ("ann", "ben")] == [1.0, 1.0]
    assert result.returncode == 1, result.stderr[-2000:]


def test_malformed_worker_results_are_infra_error_for_that_submission_only(main_run, course):
    """Does a result that is None, has facts of the wrong shape, or a notebook that is not one, or is never
    returned, end as `infra_error` for that one submission, with report.json and grades.csv written?"""
    result, report, _, _ = main_run
    assert "Traceback" not in result.stderr
    for student in MALFORMED:
        entry = by_student(report, student, TINY)
        assert entry["status"] == "infra_error" and "the worker returned a malformed result" in entry["reason"], entry
        assert entry["score"] is None
    dropped = by_student(report, "m_dropped", TINY)
    assert dropped["status"] == "infra_error" and "without a result" in dropped["reason"], dropped
    rows = {row["student"]: row for row in _grades_csv(course) if row["notebook"] == TINY}
    graded = {student for student, row in rows.items() if row["status"] == "graded"}
    assert {"ann", "ben"} <= graded and not graded & {*MALFORMED, "m_dropped", "gone", "swapped"}
    assert {rows[s]["status"] for s in (*MALFORMED, "m_dropped", "gone", "swapped")} == {"infra_error"}
    assert by_student(report, "ben", TINY)["status"] == "graded"


def test_a_student_folder_without_a_notebook_scores_zero_of_the_notebooks_points(main_run, course):
    """Does a `missing_notebook` row found at discovery score 0 of the notebook's max score, in grades.csv too?"""
    _, report, _, _ = main_run
    entry = by_student(report, "nobody", TINY)
    assert (entry["status"], entry["score"], entry["max_score"]) == ("missing_notebook", 0.0, 1.0)
    rows = [{k: r[k] for k in ("student", "assignment", "notebook", "score", "max_score", "status")}
            for r in _grades_csv(course)]
    assert {"student": "nobody", "assignment": TINY, "notebook": TINY, "score": "0.0", "max_score": "1.0",
            "status": "missing_notebook"} in rows


def test_log_lines_parse_back_to_exactly_the_runs_events(main_run):
    """Can ids with quotes, U+2028, newlines or undecodable bytes, and outputs with NUL, CR or a forged record,
    neither break a log line nor fail the run: every line parses, one record per report row and event?"""
    _, report, raw, records = main_run
    assert all(byte < 128 for byte in raw)  # escaped: no raw U+2028, NUL or CR can split a line
    events = Counter(r["event"] for r in records)
    assert events == Counter({"start": 1, "discovered": 1, "end": 1, "submission": len(report["submissions"]),
                              "warning": len(report["warnings"])}), events
    logged = Counter((r["student"], r["notebook"], r["outcome"], r["source"]) for r in records
                     if r["event"] == "submission")
    assert logged == Counter((s["student"], s["notebook"], s["status"], s["source"]) for s in report["submissions"])
    ben = next(r for r in records if r["event"] == "submission" and r["student"] == "ben")
    assert set(FORGED) <= set(ben["flags"])
    assert [r["counts"] for r in records if r["event"] == "end"] == [report["counts"]]
    for marker in ("quo", "sep", "new", "odd"):  # each weird name has a row of its own
        assert sum(marker in s["source"] for s in report["submissions"]) == 1, marker


def test_progress_labels_cannot_drive_the_terminal():
    """Is a student id with escape sequences or a carriage return shown inert on the progress line?"""
    class Tty(io.StringIO):
        def isatty(self):
            return True
    stream = Tty()
    Progress(2, stream).advance("evil\x1b[2J\x1b]0;title\x07\rnew\u2028id")
    shown = stream.getvalue()
    assert shown.startswith("\r[") and shown.count("\r") == 1
    assert not any(ch in shown for ch in "\x1b\x07\u2028") and "evil\\x1b[2J" in shown


def test_a_failing_pool_ends_the_run_with_a_report_and_the_rest_infra_error(course, faults, tmp_path):
    """When pool.finished() itself raises, is what was graded kept, every other submission `infra_error`,
    and are report.json and grades.csv written?"""
    inbox = tmp_path / "inbox"
    for student in ("p1", "p2", "p3"):
        write(fill(course, TINY, tiny()), inbox / f"{student}_{TINY}.ipynb")
    result = _faulty_grade(faults, course, inbox, {"raise_on_call": 2}, "--jobs", "1", "--report",
                           str(tmp_path / "pool.json"))
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "were not graded: the worker pool failed" in result.stderr
    report = load_report(tmp_path / "pool.json")
    entries = [by_student(report, s, TINY) for s in ("p1", "p2", "p3")]
    statuses = Counter(e["status"] for e in entries)
    assert set(statuses) == {"graded", "infra_error"}, entries
    for entry in entries:
        if entry["status"] == "infra_error":
            assert "the worker pool failed (RuntimeError: injected pool fault)" in entry["reason"], entry
    graded = {e["student"] for e in entries if e["status"] == "graded"}
    assert graded == {row["student"] for row in _grades_csv(course) if row["status"] == "graded"} & {"p1", "p2", "p3"}


def test_sigterm_writes_the_report_of_what_was_done_and_exits_143(course, faults, tmp_path):
    """Does SIGTERM of the coordinator mid-run write report.json and grades.csv of what was graded, list the
    rest as not graded, and exit 128+15 with a message, no traceback?"""
    inbox = tmp_path / "inbox"
    for student in ("t1", "t2", "t3"):
        write(fill(course, TINY, tiny()), inbox / f"{student}_{TINY}.ipynb")
    result = _faulty_grade(faults, course, inbox, {"sigterm_on_call": 2}, "--jobs", "1", "--report",
                           str(tmp_path / "term.json"))
    assert result.returncode == 128 + signal.SIGTERM, result.stderr[-2000:]
    message = _one_paragraph(result)
    assert "stopped by SIGTERM" in message and "Rerun the same command" in message and "term.json" in message
    report = load_report(tmp_path / "term.json")
    assert report["interrupted"] == "SIGTERM"
    entries = {s: by_student(report, s, TINY) for s in ("t1", "t2", "t3")}
    assert entries["t1"]["status"] == "graded", entries
    assert all(e["status"] == "infra_error" and "stopped by SIGTERM" in e["reason"]
               for s, e in entries.items() if s != "t1"), entries
    assert "t1" in {row["student"] for row in _grades_csv(course) if row["status"] == "graded"}


def test_a_bug_in_the_grader_ends_in_a_message_and_a_logged_traceback(course, faults, tmp_path):
    """Does an unexpected exception in the coordinator exit 1 with one paragraph naming the run's `crash`
    record, which holds the traceback, instead of printing one?"""
    (tmp_path / "inbox").mkdir()
    result = _faulty_grade(faults, course, tmp_path / "inbox", {"crash": True})
    assert result.returncode == 1, result
    message = _one_paragraph(result)
    assert "the grader itself failed (RuntimeError: injected grader bug)" in message and "rerun" in message
    assert str(course / "grading.log.jsonl") in message
    run_id = message.split("`crash` record of run ")[1].split()[0]
    crashes = [r for r in _run_records(course, run_id)[1] if r["event"] == "crash"]
    assert len(crashes) == 1 and "injected grader bug" in crashes[0]["traceback"]
    assert "Traceback (most recent call last)" in crashes[0]["traceback"]


def _digests(course):
    names = ("gradebook.db", "report.json", "grades.csv", "grading-state.json")
    return {n: hashlib.sha256((course / n).read_bytes()).hexdigest() for n in names}


def _set_revision(revision):
    def corrupt(db):
        import sqlite3
        with sqlite3.connect(db) as connection:
            connection.execute("UPDATE alembic_version SET version_num = ?", (revision,))
    return corrupt


@pytest.mark.parametrize("corrupt,words", [
    (lambda db: db.write_bytes(os.urandom(8192)), ["cannot be read (file is not a database)", "backup"]),
    (lambda db: db.write_bytes(db.read_bytes()[: 4096 * 5]), ["cannot be read", "malformed", "backup"]),
    (_set_revision("ffffffffffff"), ["schema revision ffffffffffff", "newer nbgrader", "backup"]),
    (_set_revision("b6d005d67074"), ["revision b6d005d67074, older", "nbgrader db upgrade"]),
], ids=["garbage", "truncated", "unknown-revision", "old-revision"])
def test_a_corrupt_gradebook_stops_before_grading_and_is_left_as_it_was(course, main_run, tmp_path, corrupt, words):
    """Is a damaged gradebook, or one nbgrader's alembic scripts do not read, refused (exit 2) with a message
    naming it and the fix, with the gradebook, report, grades and state untouched?"""
    copy = shutil.copytree(course, tmp_path / "course", symlinks=True)
    corrupt(copy / "gradebook.db")
    before = _digests(copy)
    inbox = tmp_path / "inbox"
    write(fill(copy, TINY, tiny()), inbox / f"zed_{TINY}.ipynb")
    result = run_grade(inbox, copy, "--timeout", "60")
    assert result.returncode == 2, result
    message = _one_paragraph(result)
    assert str(copy / "gradebook.db") in message
    for word in words:
        assert word in message, message
    assert _digests(copy) == before
    assert not (copy / "submitted" / "zed").exists()


@pytest.mark.parametrize("content", [b"\x00\xff garbage {", b"[]", json.dumps(
    {"version": 1, "submissions": {f"ann/{TINY}/{TINY}": {"hash": 5, "status": "graded"}}}).encode()],
    ids=["garbage", "a-list", "wrong-types"])
def test_a_corrupt_state_file_is_kept_aside_and_everything_regraded(course, main_run, tmp_path, content):
    """Is an unreadable grading-state.json kept as a .corrupt-<time> copy, said loudly, and is the run then
    regrading from an empty state (exit 0)?"""
    copy = shutil.copytree(course, tmp_path / "course", symlinks=True)
    (copy / "grading-state.json").write_bytes(content)
    inbox = tmp_path / "inbox"
    write(fill(copy, TINY, tiny()), inbox / f"ann_{TINY}.ipynb")
    result = run_grade(inbox, copy, "--timeout", "60")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    kept = list(copy.glob("grading-state.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == content
    assert f"kept as {kept[0].name}" in result.stderr and "every submission is regraded" in result.stderr
    report = load_report(copy / "report.json")
    assert by_student(report, "ann", TINY)["regraded"] is True and report["warnings"]
    assert f"ann/{TINY}/{TINY}" in json.loads((copy / "grading-state.json").read_text())["submissions"]


def _read_only(folder, cmd):
    """`cmd` in a private mount namespace where `folder` is a read-only bind mount (root ignores modes)."""
    script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
    return ["unshare", "--mount", "sh", "-c", script, "sh", str(folder), *cmd]


@pytest.mark.parametrize("case,words", [
    ("missing-folder", ["nowhere/report.json cannot be written", "does not exist", "mkdir -p"]),
    ("a-folder", ["is a folder: pass the name of a file in it"]),
    ("parent-is-a-file", ["is a file, not a folder"]),
    ("read-only-mount", ["cannot be written: the file system is read-only"]),
    ("course-under-a-file", ["--course", "cannot be created", "Not a directory"]),
    ("course-read-only", ["--course", "cannot be written: the file system is read-only"]),
])
def test_unwritable_report_or_course_is_refused_before_grading(course, main_run, tmp_path, case, words):
    """Is a --report or --course that cannot be written refused before anything is graded (exit 2), naming
    the path and the fix, even for root and on a read-only mount?"""
    course = shutil.copytree(course, tmp_path / "course", symlinks=True)
    before = _digests(course)
    inbox = tmp_path / "inbox"
    write(fill(course, TINY, tiny()), inbox / f"zoe_{TINY}.ipynb")
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "out").mkdir()
    report = {"missing-folder": tmp_path / "nowhere" / "report.json", "a-folder": tmp_path / "out",
              "parent-is-a-file": tmp_path / "a-file" / "report.json",
              "read-only-mount": tmp_path / "out" / "report.json"}.get(case)
    target = tmp_path / "a-file" / "course" if case == "course-under-a-file" else course
    cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(target), "--timeout", "60"]
    cmd += ["--report", str(report)] if report else []
    mounted = {"read-only-mount": tmp_path / "out", "course-read-only": course}.get(case)
    result = subprocess.run(_read_only(mounted, cmd) if mounted else cmd, env=nbgrader_env(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 2, result
    message = _one_paragraph(result)
    assert str(report or target) in message
    for word in words:
        assert word in message, message
    assert _digests(course) == before and not (course / "submitted" / "zoe").exists()


def test_a_course_set_up_killed_half_way_is_set_up_again(tmp_path):
    """After SIGKILL during the first run's course set-up, does the next run notice, clear the folder, set it up
    again (saying each step) and tell that the empty inbox holds nothing to grade (exit 2), instead of grading
    against half a course or failing confusingly?"""
    course, inbox = tmp_path / "course", tmp_path / "inbox"
    inbox.mkdir()
    cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(course)]
    proc = subprocess.Popen(cmd, env=nbgrader_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not (course / "source").exists():
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    names = assignment_names()
    released = {p.parent.name for p in (course / "release").glob("*/*.ipynb")}
    assert (course / "nbgrader_config.py").exists() and released != set(names), "not killed half way"

    result = run_grade(inbox, course)  # the inbox is empty: set up, then "nothing to grade" (exit 2)
    assert result.returncode == 2 and "nothing to grade" in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "was interrupted before it completed: it was cleared and set up again" in result.stderr
    assert {p.parent.name for p in (course / "release").glob("*/*.ipynb")} == set(names)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert {a.name for a in gb.assignments} == set(names)
    report = load_report(course / "report.json")
    assert report["warnings"] and report["timing"]["course_set_up"] is True


def test_a_broken_plotting_library_costs_the_insight_only(course, faults, tmp_path):
    """When matplotlib cannot be imported (tried while the last notebooks run, and again for the report),
    is every submission still graded, with grades.csv written and the missing insight named?"""
    target = shutil.copytree(course, tmp_path / "course")
    inbox = tmp_path / "inbox"
    for student in ("ann", "ben"):
        write(fill(target, TINY, tiny()), inbox / f"{student}_{TINY}.ipynb")
    result = _faulty_grade(faults, target, inbox, {"no_plotting": True}, "--jobs", "2")
    report = load_report(target / "report.json")
    assert sorted((e["student"], e["status"]) for e in report["submissions"]) == [("ann", "graded"), ("ben", "graded")]
    assert {"ann", "ben"} <= {r["student"] for r in _grades_csv(target) if r["assignment"] == TINY}  # (and earlier runs')
    assert "the class insight was not written" in result.stdout + result.stderr, result.stdout[-2000:]
    assert "injected: matplotlib cannot be imported" in result.stdout + result.stderr
