"""Helpers for the diagnose tests: the line of a marked statement in a test's own source."""
import inspect

import pytest


@pytest.fixture
def line_of():
    """`line_of(fn, marker)`: the file line number of the line in `fn`'s source that contains `marker`."""
    def find(fn, marker: str) -> int:
        lines, first = inspect.getsourcelines(fn)
        hits = [first + i for i, line in enumerate(lines) if marker in line]
        assert len(hits) == 1, f"{marker!r} marks {len(hits)} lines of {fn.__name__}"
        return hits[0]
    return find
