"""Every `# tapelab: ignore[...]` pragma in the course's solution notebooks is needed: without it, lint reports
exactly the rule it names on exactly that line. So a pragma can never hide a rule that does not fire there."""
import json
from pathlib import Path

import pytest

from tapelab.lint import find_rule, lint_text
from tapelab.lint.suppress import pragmas

SOLUTIONS = Path(__file__).parents[2] / "solutions"


def _pragmas():
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        for position, cell in enumerate(code, start=1):
            source = "".join(cell["source"])
            for line, codes in pragmas(source).items():
                for name in sorted(codes):
                    yield pytest.param(path, position, line, name, id=f"{path.stem}-{cell['id']}-{line}-{name}")


PRAGMAS = list(_pragmas())


def test_the_course_has_pragmas_to_prove():
    """Do the solution notebooks hold pragmas at all (so the proof below is not vacuous)?"""
    assert len(PRAGMAS) >= 5


def _without(path: Path, position: int, line: int) -> str:
    book = json.loads(path.read_text())
    cell = [c for c in book["cells"] if c["cell_type"] == "code"][position - 1]
    lines = "".join(cell["source"]).split("\n")
    lines[line - 1] = lines[line - 1][: lines[line - 1].index("# tapelab:")].rstrip()
    cell["source"] = "\n".join(lines)
    return json.dumps(book)


@pytest.mark.parametrize("path, position, line, name", PRAGMAS)
def test_pragma_is_needed_for_the_rule_it_names(path, position, line, name):
    """With this pragma removed, does lint report the rule it names (once or more), and only that rule, on that line?"""
    rule = find_rule(name)
    found, _ = lint_text(_without(path, position, line), str(path))
    assert {f.code for f in found if (f.cell, f.line) == (position, line)} == {rule.code}
