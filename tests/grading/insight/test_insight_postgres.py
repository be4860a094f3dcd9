"""Class insight, every export and review read a PostgreSQL gradebook as they read SQLite.

The late class (late_class: known mistakes, a deadline, late and penalised notebooks), plus two
assignments whose names ICU's `en-US` collation orders unlike SQLite's bytes, is written into SQLite
without a kernel run, then copied row by row into a PostgreSQL database with that collation (how many
servers order text); a second course folder names that database. The after-grading commands run
in-process on both folders and every file and text they write is compared, byte for byte.
"""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from grade_fixtures import BASIC
from late_class import LATE, build_late_class, db_url
from services import PostgresServer
from tapelab.cli import main
from tapelab.grading.grades import standings
from tapelab.grading.grades.attempts import exercise_label
from tapelab.grading.grades.cells import cell_grades
from tapelab.grading.records import STATE_FILE, State

# Released, never submitted: names that bytes and ICU's en-US order apart (bytes put A_10 and ex7_10_test first).
APART = {"A_10": ("ex7_10_test", "ex7_1_test"), "a_1": ("ex8_10_test", "ex8_1_test")}


@pytest.fixture(scope="module")
def server():
    postgres = PostgresServer()
    yield postgres
    postgres.stop()


def _database(server: PostgresServer, name: str) -> str:
    """A new database on `server` that orders text by ICU's en-US collation; its URL."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=server.port, user=server.USER, password=server.password,
                         dbname="postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' "
                           "LOCALE 'C.UTF-8'")
    return server.url(name)


def _copy_gradebook(source: str, target: str) -> None:
    """nbgrader's tables, its alembic stamp and every row, from `source` into the empty database `target`."""
    from nbgrader.api import Base
    from sqlalchemy import create_engine, insert, select, text

    read_from, write_to = create_engine(source), create_engine(target)
    try:
        Base.metadata.create_all(write_to)  # as nbgrader's Gradebook makes them
        with read_from.connect() as reading, write_to.begin() as writing:
            version = reading.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
            writing.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            writing.execute(text("INSERT INTO alembic_version (version_num) VALUES (:version)"), {"version": version})
            for table in Base.metadata.sorted_tables:
                rows = [dict(row) for row in reading.execute(select(table)).mappings()]
                if rows:
                    writing.execute(insert(table), rows)
    finally:
        read_from.dispose()
        write_to.dispose()


def _add_names_ordered_apart(url: str) -> None:
    """The assignments and grade cells of APART, as a release would record them."""
    from nbgrader.api import Gradebook

    with Gradebook(url) as gb:
        for assignment, cells in APART.items():
            gb.update_or_create_assignment(assignment)
            gb.update_or_create_notebook(assignment, assignment)
            for cell in cells:
                gb.update_or_create_grade_cell(cell, assignment, assignment, max_score=1.0, cell_type="code")


def _run(*args: str) -> str:
    """`tapelab ARGS` in this process; its standard output (it must exit 0)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(args)) == 0, args
    return out.getvalue()


def _outputs(course: Path, url: str, work: Path) -> dict[str, str]:
    """Everything the after-grading commands write for `course` (gradebook `url`): the insight's files (its
    time stamp blanked), the Canvas and long CSVs, each submitted notebook's results.json and each
    exercise's review."""
    work.mkdir()
    _run("insight", "--course", str(course), "--out", str(work / "insight"))
    stamp = json.loads((work / "insight" / "insight.json").read_text())["generated"]
    files = {f"insight/{p.name}": p.read_text().replace(stamp, "<generated>") for p in (work / "insight").iterdir()}
    _run("export", "canvas", "--course", str(course), "--out", str(work / "canvas.csv"), "--section", "A",
         "--canvas-assignment", f"{BASIC}=4101")
    _run("export", "long", "--course", str(course), "--out", str(work / "long.csv"))
    files |= {name: (work / name).read_text() for name in ("canvas.csv", "long.csv")}
    rows = standings.read(url, State(course / STATE_FILE).entries)
    for row in (r for r in rows if r.submitted):
        target = work / f"{row.student}-{row.notebook}.json"
        _run("export", "gradescope", "--course", str(course), "--student", row.student, "--notebook", row.notebook,
             "--out", str(target))
        files[target.name] = target.read_text()
    cells, _ = cell_grades(url)
    files |= {f"review {gid}": _run("review", exercise_label(gid), "--course", str(course)) for *_, gid, _ in cells}
    return files


@pytest.fixture(scope="module")
def both(server, tmp_path_factory):
    """The after-grading outputs of the late class on its SQLite gradebook and on its PostgreSQL copy."""
    root = tmp_path_factory.mktemp("insight-postgres")
    on_sqlite = build_late_class(root / "sqlite")
    _add_names_ordered_apart(db_url(on_sqlite))
    url = _database(server, "late_class")
    _copy_gradebook(db_url(on_sqlite), url)
    on_postgres = Path(shutil.copytree(on_sqlite, root / "postgres", symlinks=True))
    (on_postgres / "gradebook.db").unlink()
    config = on_postgres / "nbgrader_config.py"
    config.write_text(f"{config.read_text()}\nc.CourseDirectory.db_url = {url!r}\n")
    return (_outputs(on_sqlite, db_url(on_sqlite), root / "out-sqlite"),
            _outputs(on_postgres, url, root / "out-postgres"))


def test_every_after_grading_output_is_identical_on_sqlite_and_postgresql(both):
    """Do insight (JSON, CSVs, HTML), the Canvas, long and Gradescope exports and every review come out the
    same, byte for byte, from the SQLite gradebook and from its PostgreSQL copy?"""
    on_sqlite, on_postgres = both
    assert sorted(on_postgres) == sorted(on_sqlite)
    assert [name for name in sorted(on_sqlite) if on_sqlite[name] != on_postgres[name]] == []


def test_the_compared_outputs_are_the_whole_class(both):
    """Are the compared outputs the class's own (students, late notebooks, a Canvas row each, reviews, the
    names ordered apart), not two empty reports that would agree about nothing?"""
    _, on_postgres = both
    data = json.loads(on_postgres["insight/insight.json"])
    late = next(a for a in data["assignments"] if a["notebook"] == BASIC)["late_policy"]
    assert data["students"] == 5 and late["late"] == len(LATE) and late["penalised"] == 1
    assert {c["cause"] for e in data["exercises"] for c in e["causes"]} >= {"outside-tape", "swapped-arguments"}
    assert on_postgres["canvas.csv"].splitlines()[0].endswith(f",{BASIC} (4101),09_fixture,A_10,a_1")
    assert len(on_postgres["canvas.csv"].splitlines()) == 2 + 5
    results = [json.loads(text) for name, text in on_postgres.items() if name.endswith(".json") and "/" not in name]
    assert len(results) == 8 and all(r["tests"] for r in results)  # 4 submitters of each notebook
    assert "== outside-tape" in on_postgres["review ex1_1_test"]
    assert [e["grade_id"] for e in data["exercises"] if e["assignment"] in APART] == [
        "ex7_10_test", "ex7_1_test", "ex8_10_test", "ex8_1_test"]
