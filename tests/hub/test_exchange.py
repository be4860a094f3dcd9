"""The hub's submit (grader/hub/exchange.py): nbgrader's, then the submission closed to other students."""
from __future__ import annotations

import stat
import sys
from pathlib import Path

import nbformat
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader" / "hub"))
from exchange import FILE_MODE, FOLDER_MODE, PrivateSubmit  # noqa: E402


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_submission_reaches_the_inbound_closed_to_other_users(tmp_path: Path) -> None:
    """Does a submission land in inbound/ with 0750 folders and 0640 files, where nbgrader leaves 0777/0644?"""
    exchange = tmp_path / "exchange"
    released = exchange / "course" / "outbound" / "a1"
    released.mkdir(parents=True)
    (exchange / "course" / "inbound").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), released / "a1.ipynb")
    work = tmp_path / "student" / "a1"
    (work / "data").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), work / "a1.ipynb")
    (work / "data" / "notes.txt").write_text("mine")
    config = Config()
    config.Exchange.root = str(exchange)
    config.Exchange.cache = str(tmp_path / "cache")
    config.Exchange.assignment_dir = str(tmp_path / "student")
    config.CourseDirectory.course_id = "course"
    coursedir = CourseDirectory(config=config, assignment_id="a1")
    PrivateSubmit(coursedir=coursedir, authenticator=Authenticator(config=config), config=config).start()

    [submission] = (exchange / "course" / "inbound").iterdir()
    folders = [submission, *(p for p in submission.rglob("*") if p.is_dir())]
    files = [p for p in submission.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"a1.ipynb", "notes.txt", "timestamp.txt", "submission_secret.txt"}
    assert {mode(p) for p in folders} == {FOLDER_MODE} and FOLDER_MODE & stat.S_IRWXO == 0
    assert {mode(p) for p in files} == {FILE_MODE} and FILE_MODE & stat.S_IRWXO == 0
