"""The gradebook's address and its first use, for any SQLAlchemy URL nbgrader accepts.

SQLite in the course folder is the default. A database server (PostgreSQL) lets several graders,
each with a course folder of their own, grade into one gradebook at once: each writes only the
rows of its own students. The first use of an empty database (nbgrader creates its tables and
course rows, `generate_assignment` the assignments) is not safe to run twice at once, so it runs
under a lock: a PostgreSQL advisory lock, or a lock file beside an SQLite database.
"""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path

__all__ = ["GradebookError", "check_url", "redact", "setup_lock", "first_use"]

# pg_advisory_lock key: any fixed 64-bit number that other applications are unlikely to use.
_ADVISORY_KEY = 0x7A9E1AB


class GradebookError(ValueError):
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


def first_use(url: str):
    """Open the gradebook once under the setup lock (nbgrader creates what is missing); return
    {notebook: assignment} of what has been released into it."""
    from nbgrader.api import Gradebook

    with setup_lock(url):
        try:
            with Gradebook(url) as gb:
                return {nb.name: a.name for a in gb.assignments for nb in a.notebooks}
        except Exception as error:
            if _is_connection_error(error):
                raise GradebookError(_unreachable(url, error)) from None
            raise


def _is_connection_error(error: Exception) -> bool:
    from sqlalchemy.exc import OperationalError

    return isinstance(error, OperationalError)


def _unreachable(url: str, error: Exception) -> str:
    first = str(getattr(error, "orig", error)).strip().splitlines()[0]
    return (f"cannot open the gradebook {redact(url)}: {first}. Check that the database server runs "
            "and that the URL's host, port, user, password and database name are right")
