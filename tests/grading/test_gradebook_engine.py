"""`gradebook.one_engine`: the gradebooks a grading run opens on its course's URL share one SQLAlchemy engine
(one pool of connections, statements compiled once); nbgrader's own behaviour everywhere else."""
import pytest
from nbgrader import api
from sqlalchemy import event
from sqlalchemy.pool import Pool

from tapelab.grading.gradebook import one_engine
from tapelab.release import nbgrader_env


@pytest.fixture(autouse=True)
def alembic_on_path(monkeypatch):
    monkeypatch.setenv("PATH", nbgrader_env()["PATH"])  # nbgrader runs `alembic` to stamp a new gradebook


@pytest.fixture
def connections():
    """How many database connections are opened (any engine, any pool) while the test runs."""
    opened = []

    def count(*_):
        opened.append(1)
    event.listen(Pool, "connect", count)
    yield opened
    event.remove(Pool, "connect", count)


def _open_five(url: str) -> list:
    engines = []
    for n in range(5):
        with api.Gradebook(url) as gb:
            gb.update_or_create_student(f"s{n}")
            engines.append(gb.engine)
    return engines


def test_gradebooks_on_the_runs_url_share_one_engine_and_one_connection(tmp_path, connections):
    """Do five gradebooks opened and closed one after another on the URL share the engine `one_engine` made,
    and one connection of its pool, where nbgrader alone opens a connection (and an engine) each time?"""
    alone, shared = f"sqlite:///{tmp_path / 'alone.db'}", f"sqlite:///{tmp_path / 'shared.db'}"
    engines = _open_five(alone)
    assert len(set(map(id, engines))) == 5 and len(connections) >= 5
    del connections[:]
    with one_engine(shared) as engine:
        assert {id(e) for e in _open_five(shared)} == {id(engine)}
        with api.Gradebook(shared) as gb:  # what each wrote, the next reads
            assert sorted(s.id for s in gb.students) == ["s0", "s1", "s2", "s3", "s4"]
    assert len(connections) == 1


def test_other_urls_and_what_follows_the_run_are_nbgraders_own(tmp_path):
    """Does a gradebook on another URL get an engine of its own while `one_engine` lasts, and are nbgrader's
    create_engine and Gradebook.close its own again afterwards, also when the run raised?"""
    make, close = api.create_engine, api.Gradebook.close
    url, other = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    with pytest.raises(RuntimeError, match="the run failed"):
        with one_engine(url) as engine:
            with api.Gradebook(other) as gb:
                assert gb.engine is not engine
            raise RuntimeError("the run failed")
    assert (api.create_engine, api.Gradebook.close) == (make, close)
    with api.Gradebook(url) as first, api.Gradebook(url) as second:
        assert first.engine is not second.engine
