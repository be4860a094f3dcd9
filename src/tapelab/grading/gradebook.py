"""The gradebook's address and its first use, for any SQLAlchemy URL nbgrader accepts.

SQLite in the course folder is the default. A database server (PostgreSQL) lets several graders,
each with a course folder of their own, grade into one gradebook at once: each writes only the
rows of its own students. The first use of an empty database (nbgrader creates its tables and
course rows, `generate_assignment` the assignments) is not safe to run twice at once, so it runs
under a lock: a PostgreSQL advisory lock, or a lock file beside an SQLite database.

nbgrader adds its tables to any database it is given, so an existing gradebook is first looked at
read-only (`inspect_gradebook`): a damaged SQLite file (SQLite's own `quick_check`) or a schema
revision this nbgrader's alembic scripts do not end at is refused, naming the fix, and left as it is.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import sqlite3
from pathlib import Path
from urllib.parse import quote

from tapelab.errors import UsageError

__all__ = ["GradebookError", "check_url", "redact", "setup_lock", "inspect_gradebook", "first_use", "one_engine"]

# nbgrader's API logs each database error it re-raises (a full disk: "database or disk is full") with its
# traceback through tornado's application logger; tapelab says it in a line of its own (a status, a warning).
_NBGRADER_LOG = logging.getLogger("tornado.application")
_NBGRADER_LOG.addHandler(logging.NullHandler())
_NBGRADER_LOG.propagate = False

# pg_advisory_lock key: any fixed 64-bit number that other applications are unlikely to use.
_ADVISORY_KEY = 0x7A9E1AB


class GradebookError(UsageError, ValueError):
    """The gradebook URL cannot be used (bad syntax, driver not installed, server unreachable)."""


def redact(url: str) -> str:
    """The URL with its password hidden, for messages, logs and reports."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL at all: show only its scheme
        return url.split("://", 1)[0] + "://..."


def check_url(url: str) -> None:
    """Refuse a URL that SQLAlchemy cannot parse or whose driver is not installed, naming the fix."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        create_engine(url).dispose()
    except (ArgumentError, NoSuchModuleError) as error:
        raise GradebookError(f"--db {redact(url)} is not a database URL SQLAlchemy knows ({error}): write "
                             "sqlite:////path/to/gradebook.db or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB"
                             ) from None
    except ModuleNotFoundError as error:
        raise GradebookError(f"--db {redact(url)} needs the Python driver `{error.name}`, which is not installed: "
                             "install it, or for PostgreSQL use postgresql+psycopg://... (psycopg 3, installed "
                             "by `make venv`)") from None


@contextlib.contextmanager
def setup_lock(url: str):
    """Hold the gradebook's setup lock: one process at a time sets up or first opens it."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        engine = create_engine(url)
        try:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _ADVISORY_KEY})
                try:
                    yield
                finally:
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _ADVISORY_KEY})
        except Exception as error:
            if _is_connection_error(error):
                raise GradebookError(_unreachable(url, error)) from None
            raise
        finally:
            engine.dispose()
    elif parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        lock = Path(parsed.database).with_name(Path(parsed.database).name + ".setup-lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield
    else:  # other servers: set the gradebook up from one grader before the others start
        yield


def _sqlite_file(url: str) -> Path | None:
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _schema_problem(revision: str | None) -> str | None:
    """Why a gradebook at alembic `revision` is not one this nbgrader reads, or None."""
    from alembic.script import ScriptDirectory
    from nbgrader import __version__
    from nbgrader.dbutil import ALEMBIC_DIR

    script = ScriptDirectory(ALEMBIC_DIR)
    heads = script.get_heads()
    if revision in heads:
        return None
    if revision is None:
        return ("has tables but no nbgrader schema revision (no alembic_version row): it is not an nbgrader "
                "gradebook. Point the course at its real gradebook, or restore gradebook.db from a backup")
    if revision in {r.revision for r in script.walk_revisions()}:
        return (f"is at nbgrader schema revision {revision}, older than this nbgrader's ({__version__}, revision "
                f"{heads[0]}): back it up, then run `nbgrader db upgrade` in the course folder")
    return (f"is at schema revision {revision}, which nbgrader {__version__} does not know: it was written by "
            "a newer nbgrader or another program. Grade with that nbgrader version, or restore a backup")


def _damaged(url: str, why: str) -> str:
    return (f"the gradebook {redact(url)} cannot be read ({why}): it is damaged or not an nbgrader gradebook, "
            "and was left as it is. Restore it from a backup (for SQLite, `sqlite3 gradebook.db .recover` may "
            "save the grades), or move it away and set up a new course in an empty --course folder")


def _first_line(error: Exception) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def inspect_gradebook(url: str) -> bool:
    """Look at the gradebook without changing it; return whether it holds any tables.

    Raises GradebookError when it is damaged, of a schema this nbgrader does not read, or its
    server is unreachable.
    """
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.exc import SQLAlchemyError

    path = _sqlite_file(url)
    if path is not None and not path.exists():
        return False
    # mode=rw: never creates the file; rolls back the journal a killed writer left, as nbgrader would.
    engine = (create_engine("sqlite://", creator=lambda: sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True))
              if path is not None else create_engine(url))
    try:
        with engine.connect() as connection:
            if path is not None:
                problems = [row[0] for row in connection.exec_driver_sql("PRAGMA quick_check")]
                if problems != ["ok"]:
                    raise GradebookError(_damaged(url, "; ".join(problems[:3])))
            if not inspect(connection).get_table_names():
                return False
            problem = _schema_problem(MigrationContext.configure(connection).get_current_revision())
    except SQLAlchemyError as error:
        if path is None and _is_connection_error(error):
            raise GradebookError(_unreachable(url, error)) from None
        raise GradebookError(_damaged(url, _first_line(error))) from None
    finally:
        engine.dispose()
    if problem:
        raise GradebookError(f"the gradebook {redact(url)} {problem}")
    return True


def first_use(url: str):
    """Open the gradebook once under the setup lock (nbgrader creates what is missing); return
    {notebook: assignment} of what has been released into it."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SQLAlchemyError

    with setup_lock(url):
        inspect_gradebook(url)
        try:
            with Gradebook(url) as gb:
                return {nb.name: a.name for a in gb.assignments for nb in a.notebooks}
        except SQLAlchemyError as error:
            if _sqlite_file(url) is None and _is_connection_error(error):
                raise GradebookError(_unreachable(url, error)) from None
            raise GradebookError(_damaged(url, _first_line(error))) from None


@contextlib.contextmanager
def one_engine(url: str):
    """While it lasts, every nbgrader `Gradebook` this process opens on `url` (tapelab's, and those nbgrader's
    own preprocessors open) uses one SQLAlchemy engine, whose pooled connections and compiled statements
    outlive each gradebook. nbgrader makes an engine per gradebook and disposes of it on closing: a grading
    run opens about nine per submission, each compiling its queries afresh. Sessions stay one per gradebook;
    other URLs, and engines made with other options, are nbgrader's own; the engine is disposed of at the end."""
    from nbgrader import api
    from sqlalchemy import create_engine

    options = {"echo": False, "future": True}  # what nbgrader's Gradebook asks of create_engine
    engine = create_engine(url, **options)
    make, close = api.create_engine, api.Gradebook.close

    def made(db_url, *args, **kwargs):
        return engine if db_url == url and not args and kwargs == options else make(db_url, *args, **kwargs)

    def closed(self) -> None:
        if self.engine is engine:
            self.db.remove()  # the session's connection goes back to the shared pool
        else:
            close(self)

    api.create_engine, api.Gradebook.close = made, closed
    try:
        yield engine
    finally:
        api.create_engine, api.Gradebook.close = make, close
        engine.dispose()


def _is_connection_error(error: Exception) -> bool:
    from sqlalchemy.exc import OperationalError

    return isinstance(error, OperationalError)


def _unreachable(url: str, error: Exception) -> str:
    return (f"cannot open the gradebook {redact(url)}: {_first_line(error)}. Check that the database server runs "
            "and that the URL's host, port, user, password and database name are right")
